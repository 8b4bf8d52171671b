//! Registry credentials from `imagePullSecrets` (docker config JSON, `.dockerconfigjson` or
//! the legacy `.dockercfg`) matched to an image as upstream's credential keyring does.

use super::images::{DEFAULT_DOMAIN, LEGACY_DEFAULT_DOMAIN, parse_image};
use base64::Engine;
use k8s_cri::v1::AuthConfig;
use k8s_openapi::api::core::v1::Secret;
use std::collections::BTreeMap;

#[derive(serde::Deserialize, Default)]
struct DockerConfigEntry {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    auth: String,
}

#[derive(serde::Deserialize)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, DockerConfigEntry>,
}

/// Registry key of a docker config entry as the keyring stores it: no scheme, `/v1/` and
/// `/v2/` meaning the bare host.
fn registry_key(registry: &str) -> String {
    let s = registry
        .strip_prefix("https://")
        .or_else(|| registry.strip_prefix("http://"))
        .unwrap_or(registry);
    let (host, path) = match s.find('/') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let path = path
        .strip_prefix("/v1/")
        .or_else(|| path.strip_prefix("/v2/"))
        .map_or(path.to_string(), |p| format!("/{p}"));
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        host.to_string()
    } else {
        format!("{host}{path}")
    }
}

/// Shell-style `*` matching inside one host label, as the keyring's globs.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob(tail, &rest[i..]))
        }
    }
}

fn split_host_path(s: &str) -> (&str, &str) {
    match s.find('/') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// Upstream's `URLsMatch`: host labels glob-match one to one, ports equal, and the image's
/// path starts with the key's path.
fn key_matches(key: &str, repository: &str) -> bool {
    let (khost, kpath) = split_host_path(key);
    let (thost, tpath) = split_host_path(repository);
    let (khost, kport) = khost.split_once(':').unwrap_or((khost, ""));
    let (thost, tport) = thost.split_once(':').unwrap_or((thost, ""));
    if kport != tport {
        return false;
    }
    let kparts: Vec<&str> = khost.split('.').collect();
    let tparts: Vec<&str> = thost.split('.').collect();
    kparts.len() == tparts.len()
        && kparts.iter().zip(&tparts).all(|(k, t)| glob(k, t))
        && tpath.starts_with(kpath)
}

fn entry_auth(key: &str, entry: &DockerConfigEntry) -> AuthConfig {
    let (mut username, mut password) = (entry.username.clone(), entry.password.clone());
    if !entry.auth.is_empty()
        && let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(entry.auth.trim())
        && let Ok(text) = String::from_utf8(raw)
        && let Some((u, p)) = text.split_once(':')
    {
        username = u.to_string();
        password = p.to_string();
    }
    AuthConfig {
        username,
        password,
        server_address: key.to_string(),
        ..Default::default()
    }
}

/// Every credential of the pull secrets that applies to `image`, most specific key first;
/// empty when none does (the pull then goes anonymous).
pub fn credentials_for(image: &str, secrets: &[Secret]) -> Vec<AuthConfig> {
    let Ok(parsed) = parse_image(image) else {
        return Vec::new();
    };
    let repository = parsed.repository();
    let mut keyring: Vec<(String, AuthConfig)> = Vec::new();
    for secret in secrets {
        let data = secret.data.clone().unwrap_or_default();
        let entries: BTreeMap<String, DockerConfigEntry> =
            if let Some(b) = data.get(".dockerconfigjson") {
                match serde_json::from_slice::<DockerConfigJson>(&b.0) {
                    Ok(c) => c.auths,
                    Err(_) => continue,
                }
            } else if let Some(b) = data.get(".dockercfg") {
                serde_json::from_slice(&b.0).unwrap_or_default()
            } else {
                continue;
            };
        for (registry, entry) in entries {
            let key = registry_key(&registry);
            let auth = entry_auth(&key, &entry);
            keyring.push((key, auth));
        }
    }
    // Reverse lexical order puts longer (more specific) keys of a host first.
    keyring.sort_by(|a, b| b.0.cmp(&a.0));
    let mut out: Vec<AuthConfig> = keyring
        .iter()
        .filter(|(k, _)| key_matches(k, &repository))
        .map(|(_, a)| a.clone())
        .collect();
    if out.is_empty() && parsed.domain == DEFAULT_DOMAIN {
        out = keyring
            .iter()
            .filter(|(k, _)| k == LEGACY_DEFAULT_DOMAIN)
            .map(|(_, a)| a.clone())
            .collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(key: &str, json: &str) -> Secret {
        Secret {
            data: Some([(key.to_string(), ByteString(json.as_bytes().to_vec()))].into()),
            ..Default::default()
        }
    }

    #[test]
    fn pull_secrets_match_the_image_registry() {
        let auth = base64::engine::general_purpose::STANDARD.encode("bob:pw2");
        let secrets = [
            secret(
                ".dockerconfigjson",
                &format!(
                    r#"{{"auths": {{
                        "https://index.docker.io/v1/": {{"username": "hub", "password": "pw0"}},
                        "my.registry.io": {{"username": "alice", "password": "pw1"}},
                        "my.registry.io/team": {{"auth": "{auth}"}},
                        "*.glob.io": {{"username": "g", "password": "pw3"}},
                        "localhost:5000": {{"username": "l", "password": "pw4"}}
                    }}}}"#
                ),
            ),
            secret(
                ".dockercfg",
                r#"{"other.io": {"username": "o", "password": "pw5"}}"#,
            ),
            secret(".dockerconfigjson", "not json"),
        ];
        let users = |image: &str| -> Vec<String> {
            credentials_for(image, &secrets)
                .into_iter()
                .map(|a| format!("{}:{}@{}", a.username, a.password, a.server_address))
                .collect()
        };
        let cases: [(&str, &[&str]); 8] = [
            ("busybox", &["hub:pw0@index.docker.io"]),
            ("docker.io/foo/bar:1", &["hub:pw0@index.docker.io"]),
            ("my.registry.io/app:1", &["alice:pw1@my.registry.io"]),
            (
                "my.registry.io/team/app",
                &["bob:pw2@my.registry.io/team", "alice:pw1@my.registry.io"],
            ),
            ("a.glob.io/x", &["g:pw3@*.glob.io"]),
            ("localhost:5000/x", &["l:pw4@localhost:5000"]),
            ("other.io/x", &["o:pw5@other.io"]),
            ("nothing.io/x", &[]),
        ];
        for (image, want) in cases {
            assert_eq!(users(image), want, "{image}");
        }
    }
}
