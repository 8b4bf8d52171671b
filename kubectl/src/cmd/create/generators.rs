//! The `create` generators beyond namespace/configmap/secret generic, and their dispatch.

use super::simple::{CommonArgs, CreateCommand, SecretCommand};
use super::{ingress, policy, rbac, secrets, service, workloads};
use crate::app::options::GlobalOptions;
use clap::Subcommand;

/// Generator subcommands of `kubectl create`.
#[derive(Debug, Clone, Subcommand)]
pub enum GeneratorCommand {
    /// Create a deployment with the specified name
    #[command(alias = "deploy")]
    Deployment(workloads::DeploymentArgs),
    /// Create a job with the specified name
    Job(workloads::JobArgs),
    /// Create a cron job with the specified name
    #[command(alias = "cj")]
    Cronjob(workloads::CronJobArgs),
    /// Create a service using a specified subcommand
    #[command(alias = "svc")]
    Service {
        #[command(subcommand)]
        kind: service::ServiceCommand,
    },
    /// Create a service account with the specified name
    #[command(alias = "sa")]
    Serviceaccount(CommonArgs),
    /// Create a role with single rule
    Role(rbac::RoleArgs),
    /// Create a cluster role
    Clusterrole(rbac::RoleArgs),
    /// Create a role binding for a particular role or cluster role
    Rolebinding(rbac::BindingArgs),
    /// Create a cluster role binding for a particular cluster role
    Clusterrolebinding(rbac::BindingArgs),
    /// Create a quota with the specified name
    #[command(alias = "resourcequota")]
    Quota(policy::QuotaArgs),
    /// Create a pod disruption budget with the specified name
    #[command(alias = "pdb")]
    Poddisruptionbudget(policy::PdbArgs),
    /// Create a priority class with the specified name
    #[command(alias = "pc")]
    Priorityclass(policy::PriorityClassArgs),
    /// Request a service account token
    Token(secrets::TokenArgs),
    /// Create an ingress with the specified name
    #[command(alias = "ing")]
    Ingress(ingress::IngressArgs),
}

/// Runs `command` when it is one of these generators; `None` leaves it to the simple ones.
pub async fn dispatch(
    global: &GlobalOptions,
    command: &CreateCommand,
) -> Option<anyhow::Result<()>> {
    let generator = match command {
        CreateCommand::Generated(g) => g,
        CreateCommand::Secret {
            kind: SecretCommand::Tls(a),
        } => return Some(secrets::run_tls(global, a).await),
        CreateCommand::Secret {
            kind: SecretCommand::DockerRegistry(a),
        } => return Some(secrets::run_docker(global, a).await),
        _ => return None,
    };
    Some(match generator {
        GeneratorCommand::Deployment(a) => workloads::run_deployment(global, a).await,
        GeneratorCommand::Job(a) => workloads::run_job(global, a).await,
        GeneratorCommand::Cronjob(a) => workloads::run_cronjob(global, a).await,
        GeneratorCommand::Service { kind } => service::run_service(global, kind).await,
        GeneratorCommand::Serviceaccount(c) => service::run_serviceaccount(global, c).await,
        GeneratorCommand::Role(a) => rbac::run_role(global, a, false).await,
        GeneratorCommand::Clusterrole(a) => rbac::run_role(global, a, true).await,
        GeneratorCommand::Rolebinding(a) => rbac::run_binding(global, a, false).await,
        GeneratorCommand::Clusterrolebinding(a) => rbac::run_binding(global, a, true).await,
        GeneratorCommand::Quota(a) => policy::run_quota(global, a).await,
        GeneratorCommand::Poddisruptionbudget(a) => policy::run_pdb(global, a).await,
        GeneratorCommand::Priorityclass(a) => policy::run_priority_class(global, a).await,
        GeneratorCommand::Token(a) => secrets::run_token(global, a).await,
        GeneratorCommand::Ingress(a) => ingress::run(global, a).await,
    })
}
