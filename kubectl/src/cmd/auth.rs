//! `kubectl auth whoami` (SelfSubjectReview) and `kubectl auth can-i` (SelfSubjectAccessReview).

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use anyhow::bail;
use clap::{Args, Subcommand};

mod rules;
use http::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Flags of `kubectl auth`.
#[derive(Debug, Clone, Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    pub command: AuthCommand,
}

/// The subcommands of `kubectl auth`.
#[derive(Debug, Clone, Subcommand)]
pub enum AuthCommand {
    /// Check whether an action is allowed
    CanI(CanIArgs),
    /// Experimental: Check self subject attributes
    Whoami(WhoamiArgs),
}

/// Flags of `kubectl auth whoami`.
#[derive(Debug, Clone, Args)]
pub struct WhoamiArgs {
    /// Output format. One of: (json, yaml).
    #[arg(short = 'o', long, value_name = "string")]
    pub output: Option<String>,
}

/// Flags of `kubectl auth can-i`.
#[derive(Debug, Clone, Args)]
pub struct CanIArgs {
    pub args: Vec<String>,
    /// If true, check the specified action in all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// If true, suppress output and just return the exit code.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// SubResource such as pod/log or deployment/scale
    #[arg(long, value_name = "string", default_value = "")]
    pub subresource: String,
    /// If true, prints all allowed actions.
    #[arg(long)]
    pub list: bool,
    /// If true, prints allowed actions without headers
    #[arg(long)]
    pub no_headers: bool,
}

/// Runs a `kubectl auth` subcommand.
pub async fn run(global: &GlobalOptions, args: &AuthArgs) -> anyhow::Result<()> {
    match &args.command {
        AuthCommand::Whoami(whoami) => self::whoami(global, whoami).await,
        AuthCommand::CanI(can_i) => {
            if !self::can_i(global, can_i).await? {
                // A "no" is exit 1 with nothing on stderr, which no error value prints.
                std::io::Write::flush(&mut std::io::stdout())?;
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

async fn whoami(global: &GlobalOptions, args: &WhoamiArgs) -> anyhow::Result<()> {
    let format = args.output.as_deref().unwrap_or("");
    if !matches!(format, "" | "json" | "yaml") {
        bail!(
            "error: unable to match a printer suitable for the output format \"{format}\", allowed formats are: json,yaml"
        );
    }
    let factory = Factory::new(global).await?;
    let review = json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "status": {"userInfo": {}},
    });
    let body = serde_json::to_vec(&review)?;
    let response = factory
        .request(
            Method::POST,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            Some((body, "application/json")),
            None,
        )
        .await?;
    let review = typed_review(&response)?;
    match format {
        "json" => println!("{}", crate::cmd::config::go_json(&review)?),
        "yaml" => print!(
            "{}",
            crate::printers::yaml::to_go_yaml(&serde_json::to_value(&review)?)
        ),
        _ => print!("{}", whoami_table(&review.status.user_info)),
    }
    Ok(())
}

/// The review as kubectl prints its typed object: Go's field order (serde_json's maps are
/// sorted, so a struct keeps it), empty fields left out, an unset creation time as null.
#[derive(Serialize)]
struct TypedReview {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: String,
    metadata: Value,
    status: TypedStatus,
}

#[derive(Serialize)]
struct TypedStatus {
    #[serde(rename = "userInfo")]
    user_info: UserInfo,
}

#[derive(Serialize, Deserialize, Default)]
struct UserInfo {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    username: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    extra: BTreeMap<String, Vec<String>>,
}

fn typed_review(response: &Value) -> anyhow::Result<TypedReview> {
    let mut metadata = response["metadata"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    metadata.entry("creationTimestamp").or_insert(Value::Null);
    let user_info = match response["status"].get("userInfo") {
        Some(info) => UserInfo::deserialize(info)?,
        None => UserInfo::default(),
    };
    Ok(TypedReview {
        kind: "SelfSubjectReview",
        api_version: response["apiVersion"]
            .as_str()
            .unwrap_or("authentication.k8s.io/v1")
            .to_string(),
        metadata: Value::Object(metadata),
        status: TypedStatus { user_info },
    })
}

/// Go's `%v` of a string slice.
fn go_list(values: &[String]) -> String {
    format!("[{}]", values.join(" "))
}

fn whoami_table(info: &UserInfo) -> String {
    let mut rows = vec![vec!["ATTRIBUTE".to_string(), "VALUE".to_string()]];
    for (label, value) in [("Username", &info.username), ("UID", &info.uid)] {
        if !value.is_empty() {
            rows.push(vec![label.to_string(), value.clone()]);
        }
    }
    if !info.groups.is_empty() {
        rows.push(vec!["Groups".to_string(), go_list(&info.groups)]);
    }
    for (key, values) in &info.extra {
        rows.push(vec![format!("Extra: {key}"), go_list(values)]);
    }
    crate::cmd::config::tabulate(&rows)
}

/// Verbs the authorizers know, for upstream's warning on anything else.
const RESOURCE_VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "use",
    "bind",
    "impersonate",
    "*",
    "approve",
    "sign",
    "escalate",
    "attest",
];
const NON_RESOURCE_VERBS: &[&str] = &[
    "get", "put", "post", "head", "options", "delete", "patch", "*",
];

async fn can_i(global: &GlobalOptions, args: &CanIArgs) -> anyhow::Result<bool> {
    if args.list {
        return list(global, args).await.map(|()| true);
    }
    if args.no_headers {
        bail!("error: --no-headers cannot be set without --list specified");
    }
    let [verb, target] = args.args.as_slice() else {
        bail!(
            "error: you must specify two arguments: verb resource or verb resource/resourceName.\nSee 'kubectl auth can-i -h' for help and examples."
        );
    };
    let factory = Factory::new(global).await?;
    let namespace = if args.all_namespaces {
        String::new()
    } else {
        factory.namespace().to_string()
    };
    let spec = if target.starts_with('/') {
        if !args.subresource.is_empty() {
            bail!("error: --subresource can not be used with NonResourceURL");
        }
        if !NON_RESOURCE_VERBS.contains(&verb.as_str()) {
            eprintln!("Warning: verb '{verb}' is not a known verb\n");
        }
        json!({"nonResourceAttributes": {"path": target, "verb": verb}})
    } else {
        let (resource_arg, name) = target.split_once('/').unwrap_or((target.as_str(), ""));
        let mapper = factory.discovery().mapper().await?;
        let (resource, group) = match mapper.resolve(resource_arg) {
            Some(found) => {
                if !found.namespaced && !args.all_namespaces {
                    if found.group.is_empty() {
                        eprintln!(
                            "Warning: resource '{}' is not namespace scoped\n",
                            found.name
                        );
                    } else {
                        eprintln!(
                            "Warning: resource '{}' is not namespace scoped in group '{}'\n",
                            found.name, found.group
                        );
                    }
                }
                (found.name, found.group)
            }
            None => {
                // Unknown to discovery: asked about as typed, as upstream does.
                let (resource, group) = resource_arg.split_once('.').unwrap_or((resource_arg, ""));
                if group.is_empty() {
                    eprintln!("Warning: the server doesn't have a resource type '{resource}'\n");
                } else {
                    eprintln!(
                        "Warning: the server doesn't have a resource type '{resource}' in group '{group}'\n"
                    );
                }
                (resource.to_string(), group.to_string())
            }
        };
        if !RESOURCE_VERBS.contains(&verb.as_str()) {
            eprintln!("Warning: verb '{verb}' is not a known verb\n");
        }
        let mut attributes =
            json!({"namespace": namespace, "verb": verb, "group": group, "resource": resource});
        if !args.subresource.is_empty() {
            attributes["subresource"] = json!(args.subresource);
        }
        if !name.is_empty() {
            attributes["name"] = json!(name);
        }
        json!({"resourceAttributes": attributes})
    };
    let review = json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": spec,
    });
    let response = factory
        .request(
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            Some((serde_json::to_vec(&review)?, "application/json")),
            None,
        )
        .await?;
    let status = &response["status"];
    let allowed = status["allowed"].as_bool().unwrap_or(false);
    if !args.quiet {
        if allowed {
            println!("yes");
        } else {
            let mut line = String::from("no");
            for key in ["reason", "evaluationError"] {
                if let Some(text) = status[key].as_str().filter(|t| !t.is_empty()) {
                    line.push_str(" - ");
                    line.push_str(text);
                }
            }
            println!("{line}");
        }
    }
    Ok(allowed)
}

/// `can-i --list`: what the user may do in the namespace, from a SelfSubjectRulesReview.
async fn list(global: &GlobalOptions, args: &CanIArgs) -> anyhow::Result<()> {
    if !args.args.is_empty() {
        bail!("error: list option must be specified with no arguments");
    }
    let factory = Factory::new(global).await?;
    let review = json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {},
        "spec": {"namespace": factory.namespace()},
    });
    let response = factory
        .request(
            Method::POST,
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            Some((serde_json::to_vec(&review)?, "application/json")),
            None,
        )
        .await?;
    let rows = rules::rows(&response["status"]);
    print!("{}", rules::table(&rows, !args.no_headers));
    Ok(())
}
