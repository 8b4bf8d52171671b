//! `create secret tls`, `create secret docker-registry` and `create token`.

use super::send::{self, Wrap};
use super::simple::CommonArgs;
use super::sources;
use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use base64::Engine;
use clap::Args;
use serde_json::{Map, Value, json};

/// Flags of `create secret tls`.
#[derive(Debug, Clone, Args)]
pub struct TlsArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Path to PEM encoded public key certificate.
    #[arg(long, value_name = "string")]
    pub cert: Option<String>,
    /// Path to private key associated with given certificate.
    #[arg(long, value_name = "string")]
    pub key: Option<String>,
}

/// Flags of `create secret docker-registry`.
#[derive(Debug, Clone, Args)]
pub struct DockerArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Server location for Docker registry
    #[arg(
        long,
        default_value = "https://index.docker.io/v1/",
        value_name = "string"
    )]
    pub docker_server: String,
    /// Username for Docker registry authentication
    #[arg(long, value_name = "string")]
    pub docker_username: Option<String>,
    /// Password for Docker registry authentication
    #[arg(long, value_name = "string")]
    pub docker_password: Option<String>,
    /// Email for Docker registry
    #[arg(long, value_name = "string")]
    pub docker_email: Option<String>,
    /// Key files can be specified using their file path, or an alternate key name.
    #[arg(long, value_name = "strings", value_delimiter = ',')]
    pub from_file: Vec<String>,
}

/// Flags of `create token`.
#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    /// SERVICE_ACCOUNT_NAME
    pub name: Vec<String>,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Audience of the requested token.
    #[arg(long, value_name = "stringArray")]
    pub audience: Vec<String>,
    /// Requested lifetime of the issued token (e.g. 10m, 1h).
    #[arg(long, value_name = "duration")]
    pub duration: Option<String>,
    /// Kind of an object to bind the token to (Pod, Secret, Node).
    #[arg(long, value_name = "string")]
    pub bound_object_kind: Option<String>,
    /// Name of an object to bind the token to.
    #[arg(long, value_name = "string")]
    pub bound_object_name: Option<String>,
    /// UID of an object to bind the token to.
    #[arg(long, value_name = "string")]
    pub bound_object_uid: Option<String>,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn secret_with(name: &str, secret_type: &str, data: Map<String, Value>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "creationTimestamp": null},
        "type": secret_type, "data": data,
    })
}

/// The `.dockerconfigjson` document, its fields in Go's struct order (it is compared as bytes).
pub fn docker_config(server: &str, user: &str, password: &str, email: &str) -> String {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let auth = b64(format!("{user}:{password}").as_bytes());
    let email = if email.is_empty() {
        String::new()
    } else {
        format!(",\"email\":{}", q(email))
    };
    format!(
        "{{\"auths\":{{{}:{{\"username\":{},\"password\":{}{email},\"auth\":{}}}}}}}",
        q(server),
        q(user),
        q(password),
        q(&auth)
    )
}

pub fn tls_secret(name: &str, args: &TlsArgs) -> anyhow::Result<Value> {
    let (Some(cert), Some(key)) = (&args.cert, &args.key) else {
        anyhow::bail!("key and cert must be specified");
    };
    let cert = std::fs::read(cert).map_err(|e| anyhow::anyhow!("open {cert}: {e}"))?;
    let key = std::fs::read(key).map_err(|e| anyhow::anyhow!("open {key}: {e}"))?;
    for (bytes, what) in [(&cert, "certificate"), (&key, "key")] {
        if !String::from_utf8_lossy(bytes).contains("-----BEGIN ") {
            anyhow::bail!(
                "failed to load key pair tls: failed to find any PEM data in {what} input"
            );
        }
    }
    let mut data = Map::new();
    data.insert("tls.crt".into(), json!(b64(&cert)));
    data.insert("tls.key".into(), json!(b64(&key)));
    Ok(secret_with(name, "kubernetes.io/tls", data))
}

pub fn docker_secret(name: &str, args: &DockerArgs) -> anyhow::Result<Value> {
    let user = args.docker_username.as_deref().unwrap_or("");
    let password = args.docker_password.as_deref().unwrap_or("");
    let mut data = Map::new();
    if args.from_file.is_empty() {
        if user.is_empty() || password.is_empty() || args.docker_server.is_empty() {
            anyhow::bail!(
                "either --from-file or the combination of --docker-username, --docker-password and --docker-server is required"
            );
        }
        let email = args.docker_email.as_deref().unwrap_or("");
        let config = docker_config(&args.docker_server, user, password, email);
        data.insert(".dockerconfigjson".into(), json!(b64(config.as_bytes())));
    } else {
        for (k, v) in sources::collect(&[], &args.from_file, &[])? {
            data.insert(k, json!(b64(&v)));
        }
    }
    Ok(secret_with(name, "kubernetes.io/dockerconfigjson", data))
}

pub async fn run_tls(global: &GlobalOptions, args: &TlsArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "secret tls")?;
    let object = tls_secret(name, args)?;
    let wrap = Wrap::Space("failed to create secret");
    send::send(global, &args.common, object, true, wrap).await
}

pub async fn run_docker(global: &GlobalOptions, args: &DockerArgs) -> anyhow::Result<()> {
    let name = send::one_name(&args.common, "secret docker-registry")?;
    let object = docker_secret(name, args)?;
    let wrap = Wrap::Space("failed to create secret");
    send::send(global, &args.common, object, true, wrap).await
}

/// Go's `time.ParseDuration` for the units a token lifetime uses.
fn seconds(text: &str) -> anyhow::Result<i64> {
    let bad = || {
        anyhow::anyhow!(
            "invalid argument {text:?} for \"--duration\" flag: time: invalid duration {text:?}"
        )
    };
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let number: f64 = rest[..split].parse().map_err(|_| bad())?;
        rest = &rest[split..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return Err(bad()),
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    Ok(total as i64)
}

pub async fn run_token(global: &GlobalOptions, args: &TokenArgs) -> anyhow::Result<()> {
    let name = match args.name.as_slice() {
        [name] => name,
        [] => anyhow::bail!("SERVICE_ACCOUNT_NAME is required"),
        _ => anyhow::bail!("exactly one SERVICE_ACCOUNT_NAME is required"),
    };
    let mut spec = json!({"audiences": args.audience});
    if args.audience.is_empty() {
        spec["audiences"] = Value::Null;
    }
    if let Some(d) = &args.duration {
        let secs = seconds(d)?;
        if secs < 0 {
            anyhow::bail!("--duration must be greater than or equal to 0");
        }
        if secs > 0 {
            spec["expirationSeconds"] = json!(secs);
        }
    }
    match (&args.bound_object_kind, &args.bound_object_name) {
        (Some(kind), Some(obj)) => {
            if !matches!(kind.as_str(), "Pod" | "Secret" | "Node") {
                anyhow::bail!("supported --bound-object-kind values are Node, Pod, Secret");
            }
            let mut r = json!({"kind": kind, "apiVersion": "v1", "name": obj});
            if let Some(uid) = &args.bound_object_uid {
                r["uid"] = json!(uid);
            }
            spec["boundObjectRef"] = r;
        }
        (None, Some(_)) => {
            anyhow::bail!("--bound-object-name can only be set if --bound-object-kind is provided")
        }
        (Some(_), None) => {
            anyhow::bail!("--bound-object-name is required if --bound-object-kind is provided")
        }
        (None, None) => {
            if args.bound_object_uid.is_some() {
                anyhow::bail!(
                    "--bound-object-uid can only be set if --bound-object-kind is provided"
                );
            }
        }
    }
    let request = json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "metadata": {"creationTimestamp": null}, "spec": spec, "status": {"expirationTimestamp": null, "token": ""},
    });
    let format = args.print.format()?;
    let factory = Factory::new(global).await?;
    let path = format!(
        "/api/v1/namespaces/{}/serviceaccounts/{name}/token",
        factory.namespace()
    );
    let response = factory
        .request(
            http::Method::POST,
            &path,
            Some((serde_json::to_vec(&request)?, "application/json")),
            None,
        )
        .await
        .map_err(|e| send::wrap_error(e, Wrap::Colon("failed to create token")))?;
    match format {
        Some(format) => {
            let mapper = factory.discovery().mapper().await?;
            let resource = mapper
                .for_kind("authentication.k8s.io/v1", "TokenRequest")
                .unwrap_or_else(|| {
                    let mut r = mapper.resolve("serviceaccounts").unwrap_or_else(|| {
                        crate::discovery::ApiResource {
                            name: "tokenrequests".into(),
                            singular: "tokenrequest".into(),
                            namespaced: true,
                            group: "authentication.k8s.io".into(),
                            version: "v1".into(),
                            kind: "TokenRequest".into(),
                            verbs: vec![],
                            short_names: vec![],
                            categories: vec![],
                            preferred: true,
                        }
                    });
                    r.kind = "TokenRequest".into();
                    r.group = "authentication.k8s.io".into();
                    r
                });
            crate::cmd::mutate::Reporter::new(Some(format))
                .typed()
                .report(&resource, &response, "", crate::cmd::mutate::DryRun::None)?;
        }
        None => {
            let token = response
                .pointer("/status/token")
                .and_then(Value::as_str)
                .unwrap_or("");
            if token.is_empty() {
                anyhow::bail!("failed to create token: no token in server response");
            }
            println!("{token}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_matches_upstream_bytes() {
        let got = docker_config("r.io", "u", "p", "e@x");
        let upstream = "eyJhdXRocyI6eyJyLmlvIjp7InVzZXJuYW1lIjoidSIsInBhc3N3b3JkIjoicCIsImVtYWlsIjoiZUB4IiwiYXV0aCI6ImRUcHcifX19";
        assert_eq!(b64(got.as_bytes()), upstream);
    }

    #[test]
    fn durations() {
        for (text, want) in [
            ("1h", Some(3600)),
            ("10m", Some(600)),
            ("1h30m", Some(5400)),
            ("x", None),
            ("10", None),
        ] {
            assert_eq!(seconds(text).ok(), want, "{text}");
        }
    }
}
