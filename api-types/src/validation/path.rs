//! `FieldPath`: the dotted/indexed path of a field inside an object, as upstream's `field.Path`.

use std::fmt;

/// One step of a [`FieldPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Name(String),
    Index(usize),
    Key(String),
}

/// Path of a field, built step by step: `FieldPath::new("spec").child("containers").index(0)`
/// renders as `spec.containers[0]`; `.key("app")` renders as `[app]`.
///
/// The empty path renders as `<nil>`, as upstream's nil `*field.Path` does; label selector
/// parse errors show it that way and kubectl users see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath {
    segments: Vec<Segment>,
}

impl FieldPath {
    /// A path rooted at `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self::root().child(name)
    }

    /// The empty path (upstream's nil path).
    pub fn root() -> Self {
        Self::default()
    }

    /// Builds a path from dotted names: `FieldPath::from_names(&["metadata", "labels"])`.
    pub fn from_names(names: &[&str]) -> Self {
        names.iter().fold(Self::root(), |p, n| p.child(*n))
    }

    /// Appends a named child (`.name`).
    pub fn child(&self, name: impl Into<String>) -> Self {
        self.push(Segment::Name(name.into()))
    }

    /// Appends a list index (`[i]`).
    pub fn index(&self, i: usize) -> Self {
        self.push(Segment::Index(i))
    }

    /// Appends a map key (`[key]`).
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.push(Segment::Key(key.into()))
    }

    /// Whether this is the empty path.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    fn push(&self, s: Segment) -> Self {
        let mut segments = self.segments.clone();
        segments.push(s);
        Self { segments }
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return f.write_str("<nil>");
        }
        for (i, s) in self.segments.iter().enumerate() {
            match s {
                Segment::Name(n) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(n)?;
                }
                Segment::Index(idx) => write!(f, "[{idx}]")?,
                Segment::Key(k) => write!(f, "[{k}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_upstream() {
        let cases = [
            (FieldPath::root(), "<nil>"),
            (
                FieldPath::new("metadata").child("labels"),
                "metadata.labels",
            ),
            (
                FieldPath::new("spec")
                    .child("containers")
                    .index(0)
                    .child("image"),
                "spec.containers[0].image",
            ),
            (
                FieldPath::new("metadata").child("labels").key("app"),
                "metadata.labels[app]",
            ),
            (
                FieldPath::root().child("values").index(1).key("k"),
                "values[1][k]",
            ),
            (FieldPath::from_names(&["a", "b", "c"]), "a.b.c"),
        ];
        for (p, want) in cases {
            assert_eq!(p.to_string(), want);
        }
    }
}
