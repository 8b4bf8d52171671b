//! How the apiserver's keys map to etcd's.
//!
//! Callers use keys starting with `/registry/` (the same keys the embedded backend stores). The
//! etcd backend replaces that leading `/registry` with the configured `--etcd-prefix`, which is
//! the identity with the default prefix `/registry`; keys it reads back get `/registry` again.
//! A key that does not start with `/registry` is sent unchanged.

/// The leading part of every caller's key that the etcd prefix replaces.
pub const CALLER_ROOT: &str = "/registry";

/// Maps callers' keys to etcd's and back.
#[derive(Debug, Clone)]
pub(super) struct KeyMap {
    prefix: String,
}

impl KeyMap {
    pub(super) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.trim_end_matches('/').to_owned(),
        }
    }

    /// The etcd key of a caller's key (or key prefix).
    pub(super) fn etcd_key(&self, key: &str) -> Vec<u8> {
        match key.strip_prefix(CALLER_ROOT) {
            Some(rest) => format!("{}{rest}", self.prefix).into_bytes(),
            None => key.as_bytes().to_vec(),
        }
    }

    /// The caller's key of an etcd key.
    pub(super) fn caller_key(&self, key: &str) -> String {
        match key.strip_prefix(self.prefix.as_str()) {
            Some(rest) => format!("{CALLER_ROOT}{rest}"),
            None => key.to_owned(),
        }
    }
}

/// The end (exclusive) of the range of keys starting with `prefix`: the prefix with its last
/// byte below 0xff incremented and the rest dropped. `\0` (to the end of the key space) when no
/// such byte exists, as etcd reads it.
pub(super) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_prefix_is_identity() {
        let m = KeyMap::new("/registry");
        assert_eq!(m.etcd_key("/registry/pods/a"), b"/registry/pods/a".to_vec());
        assert_eq!(m.caller_key("/registry/pods/a"), "/registry/pods/a");
    }

    #[test]
    fn custom_prefix_replaces_the_root() {
        let m = KeyMap::new("/test-1/");
        assert_eq!(m.etcd_key("/registry/pods/a"), b"/test-1/pods/a".to_vec());
        assert_eq!(m.etcd_key("/registry/"), b"/test-1/".to_vec());
        assert_eq!(m.caller_key("/test-1/pods/a"), "/registry/pods/a");
        assert_eq!(m.etcd_key("/other"), b"/other".to_vec());
    }

    #[test]
    fn prefix_end_increments_the_last_byte() {
        assert_eq!(prefix_end(b"/registry/pods/"), b"/registry/pods0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }
}
