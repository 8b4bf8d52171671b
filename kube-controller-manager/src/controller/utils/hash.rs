//! The hash that names ReplicaSets and ControllerRevisions, as upstream's
//! `controller.ComputeHash`: FNV-32a rendered through `rand.SafeEncodeString`, so names never
//! spell words or hold look-alike characters.

/// Characters that never form words or look alike, as upstream's `rand.SafeEncodeString`.
pub const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// A running 32-bit FNV-1a hash.
pub struct Fnv32a(u32);

impl Default for Fnv32a {
    fn default() -> Self {
        Self::new()
    }
}

impl Fnv32a {
    pub fn new() -> Self {
        Self(0x811c_9dc5)
    }

    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }

    pub fn sum(&self) -> u32 {
        self.0
    }
}

/// The hash's decimal digits mapped onto the safe alphabet, as upstream renders it.
pub fn safe_encode(sum: u32) -> String {
    sum.to_string()
        .bytes()
        .map(|b| SAFE_ALPHABET[usize::from(b) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// FNV-32a over `value`'s JSON then, when set, the collision count's four little-endian
/// bytes, safe-encoded: the ControllerRevision name hash of DaemonSets and StatefulSets.
pub fn json_hash<T: serde::Serialize + ?Sized>(value: &T, collision_count: Option<i32>) -> String {
    let mut hash = Fnv32a::new();
    // Serializing typed k8s-openapi structs cannot fail; an empty body still hashes stably.
    hash.write(&serde_json::to_vec(value).unwrap_or_default());
    if let Some(count) = collision_count {
        hash.write(&count.to_le_bytes());
    }
    safe_encode(hash.sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv32a_matches_reference_vectors() {
        let cases: [(&[u8], u32); 3] = [
            (b"", 0x811c_9dc5),
            (b"a", 0xe40c_292c),
            (b"foobar", 0xbf9c_f968),
        ];
        for (input, want) in cases {
            let mut h = Fnv32a::new();
            h.write(input);
            assert_eq!(h.sum(), want, "{input:?}");
        }
    }

    #[test]
    fn encoding_maps_each_decimal_digit_onto_the_safe_alphabet() {
        assert_eq!(safe_encode(0), "4");
        assert_eq!(safe_encode(1_234_567_890), "56789bcdf4");
    }

    #[test]
    fn revision_hash_values_stay_put() {
        // Pinned: changing them renames every existing ControllerRevision.
        let value = serde_json::json!({"a": 1});
        assert_eq!(json_hash(&value, None), "67868497f7");
        assert_eq!(json_hash(&value, Some(3)), "74d476858b");
    }
}
