//! `--use-service-account-credentials`: each controller talks to the apiserver as its own
//! service account in kube-system, as upstream's controller manager does (its
//! `DynamicControllerClientBuilder`): the account is created if missing, a token is obtained
//! from the TokenRequest API and renewed before it expires.
//!
//! The token lives in a file of a private directory; kube's `token_file` authentication
//! rereads that file (at most a minute after each change), so renewing is rewriting the file.

use super::ControllerContext;
use super::serviceaccount::is_already_exists;
use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::config::AuthInfo;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The namespace of the controllers' accounts.
const NAMESPACE: &str = "kube-system";
/// Upstream's default token lifetime for controller credentials.
const TOKEN_SECONDS: i64 = 3600;
/// How soon a failed renewal is retried.
const RETRY: Duration = Duration::from_secs(10);

/// A client authenticated as `kube-system/<service_account>`.
pub async fn service_account_client(
    ctx: &ControllerContext,
    service_account: &str,
) -> anyhow::Result<kube::Client> {
    let admin = ctx.client.clone();
    ensure_account(&admin, service_account).await?;
    let (token, expires) = request_token(&admin, service_account).await?;
    let dir = private_dir(service_account)?;
    let token_file = dir.join("token");
    write_token(&token_file, &token)?;

    let mut config = (*ctx.client_config).clone();
    config.kube.auth_info = AuthInfo {
        token_file: Some(token_file.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let client = config.build_client().with_context(|| {
        format!("building the client of service account {NAMESPACE}/{service_account}")
    })?;

    let shutdown = ctx.shutdown.clone();
    let name = service_account.to_string();
    tokio::spawn(async move {
        let mut expires = expires;
        loop {
            let wait = renew_after(expires, jiff::Timestamp::now());
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(wait) => {}
            }
            match request_token(&admin, &name).await {
                Ok((token, new_expiry)) => match write_token(&token_file, &token) {
                    Ok(()) => expires = new_expiry,
                    Err(err) => tracing::warn!(service_account = %name, "{err:#}"),
                },
                Err(err) => {
                    tracing::warn!(service_account = %name, "renewing the token: {err:#}");
                    // Retry soon, yet never spin: pretend the token expires a little later.
                    expires = jiff::Timestamp::now()
                        + jiff::SignedDuration::from_secs(RETRY.as_secs() as i64 * 5);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
    Ok(client)
}

/// When to renew a token expiring at `expires`: after 80% of what is left, as client-go's
/// token cache does, and never in less than a second.
pub(crate) fn renew_after(expires: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    let left = expires.as_second() - now.as_second();
    Duration::from_secs((left.max(0) as u64 * 4 / 5).max(1))
}

async fn ensure_account(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    if api
        .get_opt(name)
        .await
        .with_context(|| format!("getting service account {NAMESPACE}/{name}"))?
        .is_some()
    {
        return Ok(());
    }
    let sa = ServiceAccount {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(NAMESPACE.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &sa).await {
        Ok(_) => Ok(()),
        Err(err) if is_already_exists(&err) => Ok(()),
        Err(err) => {
            Err(err).with_context(|| format!("creating service account {NAMESPACE}/{name}"))
        }
    }
}

async fn request_token(
    client: &kube::Client,
    name: &str,
) -> anyhow::Result<(String, jiff::Timestamp)> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), NAMESPACE);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(TOKEN_SECONDS),
            ..Default::default()
        },
        ..Default::default()
    };
    let response = api
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .with_context(|| format!("requesting a token for service account {NAMESPACE}/{name}"))?;
    let status = response
        .status
        .context("the TokenRequest response has no status")?;
    anyhow::ensure!(
        !status.token.is_empty(),
        "the TokenRequest response has no token"
    );
    Ok((status.token, status.expiration_timestamp.0))
}

/// Token directories of controller managers that died without cleaning up (killed): their
/// tokens are still valid for up to an hour and should not linger.
fn remove_stale_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        if pid != std::process::id() && !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

const DIR_PREFIX: &str = "kube-controller-manager-";

fn private_dir(service_account: &str) -> anyhow::Result<PathBuf> {
    if Path::new("/proc/self").exists() {
        remove_stale_dirs(&std::env::temp_dir());
    }
    let dir = std::env::temp_dir().join(format!(
        "{DIR_PREFIX}{}-{service_account}-{:016x}",
        std::process::id(),
        rand::random::<u64>()
    ));
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Replaces the token file at once, so a reader never sees half a token.
fn write_token(path: &Path, token: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, token).with_context(|| format!("writing {}", tmp.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting {}", tmp.display()))?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_renewed_after_four_fifths_of_their_life() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let at = |s: i64| now + jiff::SignedDuration::from_secs(s);
        let cases = [
            ("an hour", at(3600), 2880),
            ("ten seconds", at(10), 8),
            ("already expired", at(-5), 1),
        ];
        for (what, expires, want) in cases {
            assert_eq!(
                renew_after(expires, now),
                Duration::from_secs(want),
                "{what}"
            );
        }
    }

    #[test]
    fn directories_of_dead_processes_are_removed() {
        let temp = tempfile::tempdir().expect("temp");
        // No process has pid 4294967295; this process is alive.
        let dead = temp.path().join(format!("{DIR_PREFIX}4294967295-sa-00"));
        let mine = temp
            .path()
            .join(format!("{DIR_PREFIX}{}-sa-00", std::process::id()));
        let other = temp.path().join("something-else");
        for dir in [&dead, &mine, &other] {
            std::fs::create_dir(dir).expect("dir");
        }
        remove_stale_dirs(temp.path());
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists());
    }

    #[test]
    fn token_files_are_private_and_replaced_whole() {
        let dir = private_dir("test-account").expect("dir");
        let file = dir.join("token");
        write_token(&file, "one").expect("write");
        write_token(&file, "two").expect("rewrite");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), "two");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dir).expect("meta").permissions().mode();
            assert_eq!(mode & 0o077, 0, "the directory is private");
        }
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
