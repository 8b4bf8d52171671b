//! Small helpers shared by the defaulting functions.

/// Sets a string field when it is absent or empty: upstream's Go fields are plain strings, so
/// `""` means "not set" there.
pub(crate) fn default_str(slot: &mut Option<String>, value: &str) {
    if slot.as_deref().is_none_or(str::is_empty) {
        *slot = Some(value.to_string());
    }
}
