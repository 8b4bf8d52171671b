//! `kubectl certificate approve|deny`: adds the Approved or Denied condition to
//! CertificateSigningRequests through their `approval` subresource.

use crate::app::options::GlobalOptions;
use crate::cmd::mutate::DryRun;
use crate::errors::ApiError;
use crate::factory::Factory;
use anyhow::bail;
use clap::{Args, Subcommand};
use http::Method;
use serde_json::{Value, json};

/// Flags of `kubectl certificate`.
#[derive(Debug, Clone, Args)]
pub struct CertificateArgs {
    #[command(subcommand)]
    pub command: CertificateCommand,
}

/// The subcommands of `kubectl certificate`.
#[derive(Debug, Clone, Subcommand)]
pub enum CertificateCommand {
    /// Approve a certificate signing request
    Approve(DecisionArgs),
    /// Deny a certificate signing request
    Deny(DecisionArgs),
}

/// Flags of `kubectl certificate approve|deny`.
#[derive(Debug, Clone, Args)]
pub struct DecisionArgs {
    pub names: Vec<String>,
    /// Update the CSR even if it is already approved (or denied).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
}

const COLLECTION: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

pub async fn run(global: &GlobalOptions, args: &CertificateArgs) -> anyhow::Result<()> {
    let (decision, condition, reason, message) = match &args.command {
        CertificateCommand::Approve(d) => (
            d,
            "Approved",
            "KubectlApprove",
            "This CSR was approved by kubectl certificate approve.",
        ),
        CertificateCommand::Deny(d) => (
            d,
            "Denied",
            "KubectlDeny",
            "This CSR was denied by kubectl certificate deny.",
        ),
    };
    if decision.names.is_empty() {
        bail!("error: one or more CSRs must be specified as <name> or -f <filename>");
    }
    let mut reporter = decision.print.reporter()?;
    let factory = Factory::new(global).await?;
    let resource = factory
        .discovery()
        .mapper()
        .await?
        .resolve("certificatesigningrequests.certificates.k8s.io")
        .ok_or_else(|| {
            anyhow::anyhow!(
                "the server doesn't have a resource type \"certificatesigningrequests\""
            )
        })?;
    let verb = condition.to_lowercase();
    // Every name is tried, as upstream's builder continues on errors; they are reported last.
    let mut errors = Vec::new();
    for name in &decision.names {
        match decide(&factory, name, decision.force, condition, reason, message).await {
            // Upstream prints the request as it read it, before the decision.
            Ok(read) => reporter.report(&resource, &read, &verb, DryRun::None)?,
            Err(err) => errors.push(err),
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(crate::errors::Reported(errors).into()),
    }
}

async fn decide(
    factory: &Factory,
    name: &str,
    force: bool,
    condition: &str,
    reason: &str,
    message: &str,
) -> anyhow::Result<Value> {
    // Retry on conflict as upstream does: another writer may update the CSR in between.
    let mut first_read = None;
    for attempt in 0.. {
        let mut csr = factory.get(&format!("{COLLECTION}/{name}")).await?;
        first_read.get_or_insert_with(|| csr.clone());
        // The opposite decision stands, forced or not.
        let opposite = if condition == "Approved" {
            "Denied"
        } else {
            "Approved"
        };
        let decided = csr["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == opposite));
        if decided {
            bail!("certificate signing request \"{name}\" is already {opposite}");
        }
        let already = csr["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == condition));
        if already && !force {
            break;
        }
        if !already {
            let now = k8s_openapi::jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            let entry = json!({
                "type": condition, "status": "True", "reason": reason, "message": message,
                "lastUpdateTime": now, "lastTransitionTime": null,
            });
            let status = csr
                .as_object_mut()
                .map(|o| o.entry("status").or_insert_with(|| json!({})));
            if let Some(Value::Object(status)) = status {
                match status.entry("conditions").or_insert_with(|| json!([])) {
                    Value::Array(list) => list.push(entry),
                    other => *other = json!([entry]),
                }
            }
        }
        let body = serde_json::to_vec(&csr)?;
        let path = format!("{COLLECTION}/{name}/approval");
        match factory
            .request(Method::PUT, &path, Some((body, "application/json")), None)
            .await
        {
            Err(err)
                if attempt < 10
                    && err
                        .downcast_ref::<ApiError>()
                        .is_some_and(ApiError::is_conflict) => {}
            Err(err) => return Err(err),
            Ok(_) => break,
        }
    }
    Ok(first_read.unwrap_or_default())
}
