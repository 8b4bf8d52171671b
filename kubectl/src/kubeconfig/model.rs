//! The kubeconfig file format (upstream's `clientcmd/api/v1`), field for field in upstream's order,
//! so `-o json` prints keys where the real kubectl prints them and `omitempty` fields vanish alike.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

fn is_false(value: &bool) -> bool {
    !*value
}

/// One file, as read from or written to disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(
        default,
        rename = "apiVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    #[serde(default)]
    pub preferences: Preferences,
    #[serde(default)]
    pub clusters: Option<Vec<Named<Cluster>>>,
    #[serde(default)]
    pub users: Option<Vec<Named<AuthInfo>>>,
    #[serde(default)]
    pub contexts: Option<Vec<Named<Context>>>,
    #[serde(default, rename = "current-context")]
    pub current_context: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// A list entry: `{name, cluster|user|context}`; the entry's key differs per list.
#[derive(Debug, Clone, PartialEq)]
pub struct Named<T> {
    pub name: String,
    pub value: T,
}

/// The key under which a list entry keeps its value.
pub trait EntryKey {
    const KEY: &'static str;
}

impl<T: Serialize + EntryKey> Serialize for Named<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry(T::KEY, &self.value)?;
        map.end()
    }
}

impl<'de, T: Deserialize<'de> + EntryKey + Default> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut object = serde_json::Map::<String, Value>::deserialize(deserializer)?;
        let name = match object.remove("name") {
            Some(Value::String(name)) => name,
            Some(Value::Null) | None => String::new(),
            Some(_) => return Err(serde::de::Error::custom("name must be a string")),
        };
        let value = match object.remove(T::KEY) {
            Some(Value::Null) | None => T::default(),
            Some(value) => T::deserialize(value).map_err(serde::de::Error::custom)?,
        };
        Ok(Named { name, value })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preferences {
    #[serde(default, skip_serializing_if = "is_false")]
    pub colors: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    #[serde(default)]
    pub server: String,
    #[serde(
        default,
        rename = "tls-server-name",
        skip_serializing_if = "Option::is_none"
    )]
    pub tls_server_name: Option<String>,
    #[serde(
        default,
        rename = "insecure-skip-tls-verify",
        skip_serializing_if = "is_false"
    )]
    pub insecure_skip_tls_verify: bool,
    #[serde(
        default,
        rename = "certificate-authority",
        skip_serializing_if = "Option::is_none"
    )]
    pub certificate_authority: Option<String>,
    #[serde(
        default,
        rename = "certificate-authority-data",
        skip_serializing_if = "Option::is_none"
    )]
    pub certificate_authority_data: Option<String>,
    #[serde(default, rename = "proxy-url", skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    #[serde(
        default,
        rename = "disable-compression",
        skip_serializing_if = "is_false"
    )]
    pub disable_compression: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

impl EntryKey for Cluster {
    const KEY: &'static str = "cluster";
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AuthInfo {
    #[serde(
        default,
        rename = "client-certificate",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_certificate: Option<String>,
    #[serde(
        default,
        rename = "client-certificate-data",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_certificate_data: Option<String>,
    #[serde(
        default,
        rename = "client-key",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_key: Option<String>,
    #[serde(
        default,
        rename = "client-key-data",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_key_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, rename = "tokenFile", skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub impersonate: Option<String>,
    #[serde(default, rename = "as-uid", skip_serializing_if = "Option::is_none")]
    pub impersonate_uid: Option<String>,
    #[serde(default, rename = "as-groups", skip_serializing_if = "Option::is_none")]
    pub impersonate_groups: Option<Vec<String>>,
    #[serde(
        default,
        rename = "as-user-extra",
        skip_serializing_if = "Option::is_none"
    )]
    pub impersonate_user_extra: Option<BTreeMap<String, Vec<String>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(
        default,
        rename = "auth-provider",
        skip_serializing_if = "Option::is_none"
    )]
    pub auth_provider: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

/// An exec credential plugin; `args` and `env` print as null when unset, as Go's do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecConfig {
    #[serde(default)]
    pub command: String,
    #[serde(default)]
    pub args: Option<Vec<String>>,
    #[serde(default)]
    pub env: Option<Vec<ExecEnvVar>>,
    #[serde(
        default,
        rename = "apiVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_version: String,
    #[serde(
        default,
        rename = "installHint",
        skip_serializing_if = "String::is_empty"
    )]
    pub install_hint: String,
    #[serde(default, rename = "provideClusterInfo")]
    pub provide_cluster_info: bool,
    #[serde(
        default,
        rename = "interactiveMode",
        skip_serializing_if = "String::is_empty"
    )]
    pub interactive_mode: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecEnvVar {
    pub name: String,
    pub value: String,
}

impl EntryKey for AuthInfo {
    const KEY: &'static str = "user";
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Context {
    #[serde(default)]
    pub cluster: String,
    #[serde(default)]
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Value>,
}

impl EntryKey for Context {
    const KEY: &'static str = "context";
}

/// The in-memory shape (upstream's internal `api.Config`): maps keyed by name, which is why every
/// printed or written list comes out sorted by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub preferences: Preferences,
    pub clusters: BTreeMap<String, Cluster>,
    pub auth_infos: BTreeMap<String, AuthInfo>,
    pub contexts: BTreeMap<String, Context>,
    pub current_context: String,
    pub extensions: Option<Value>,
}

fn to_map<T>(list: Option<Vec<Named<T>>>) -> BTreeMap<String, T> {
    list.unwrap_or_default()
        .into_iter()
        .map(|entry| (entry.name, entry.value))
        .collect()
}

fn to_list<T: Clone>(map: &BTreeMap<String, T>) -> Option<Vec<Named<T>>> {
    if map.is_empty() {
        return None;
    }
    Some(
        map.iter()
            .map(|(name, value)| Named {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    )
}

impl From<FileConfig> for Config {
    fn from(file: FileConfig) -> Self {
        Config {
            preferences: file.preferences,
            clusters: to_map(file.clusters),
            auth_infos: to_map(file.users),
            contexts: to_map(file.contexts),
            current_context: file.current_context,
            extensions: file.extensions,
        }
    }
}

impl Config {
    /// The v1 form, as kubectl prints and writes it.
    pub fn to_file(&self) -> FileConfig {
        FileConfig {
            kind: "Config".into(),
            api_version: "v1".into(),
            preferences: self.preferences.clone(),
            clusters: to_list(&self.clusters),
            users: to_list(&self.auth_infos),
            contexts: to_list(&self.contexts),
            current_context: self.current_context.clone(),
            extensions: self.extensions.clone(),
        }
    }
}

/// Standard base64 with padding, as Go encodes `[]byte` fields.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_go() {
        let cases: [(&[u8], &str); 4] =
            [(b"", ""), (b"A", "QQ=="), (b"AB", "QUI="), (b"ABC", "QUJD")];
        for (input, want) in cases {
            assert_eq!(super::base64_encode(input), want);
        }
    }
}
