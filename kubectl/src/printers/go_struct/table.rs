//! The field table in `order.txt` (written by `hack/go-field-order/extract.py` from upstream's
//! kubectl binary), parsed once on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

/// A Go field's type, as far as its JSON encoding cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    String,
    Int,
    Float,
    Bool,
    /// `[]byte`: a base64 string.
    Bytes,
    /// An interface or anything else: written as it comes.
    Any,
    Ptr(Box<Ty>),
    /// A slice or array.
    List(Box<Ty>),
    /// A map with string keys.
    Map(Box<Ty>),
    /// A struct of the table, by its `group/version.Name` key.
    Struct(&'static str),
    /// A type with its own MarshalJSON (Time, Quantity, IntOrString...).
    Marshaller(&'static str),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: &'static str,
    pub omitempty: bool,
    /// An embedded struct whose fields Go promotes into this one (TypeMeta, ObjectMeta...).
    pub embedded: bool,
    pub ty: Ty,
}

static TABLE: LazyLock<HashMap<&'static str, Vec<Field>>> =
    LazyLock::new(|| parse(include_str!("order.txt")));

/// The fields of struct `name` in declaration order.
pub fn fields(name: &str) -> Option<&'static [Field]> {
    TABLE.get(name).map(Vec::as_slice)
}

fn parse(text: &'static str) -> HashMap<&'static str, Vec<Field>> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let mut words = line.split(' ').filter(|w| !w.is_empty());
            let name = words.next()?;
            Some((name, words.filter_map(field).collect()))
        })
        .collect()
}

/// `name[,o][,e]=TYPE`
fn field(word: &'static str) -> Option<Field> {
    let (head, ty) = word.split_once('=')?;
    let mut parts = head.split(',');
    let name = parts.next()?;
    let marks: Vec<&str> = parts.collect();
    Some(Field {
        name,
        omitempty: marks.contains(&"o"),
        embedded: marks.contains(&"e"),
        ty: ty_of(ty)?,
    })
}

fn ty_of(text: &'static str) -> Option<Ty> {
    let boxed = |rest| ty_of(rest).map(Box::new);
    Some(match text {
        "s" => Ty::String,
        "i" => Ty::Int,
        "f" => Ty::Float,
        "b" => Ty::Bool,
        "B" => Ty::Bytes,
        "?" => Ty::Any,
        _ => {
            if let Some(rest) = text.strip_prefix('*') {
                Ty::Ptr(boxed(rest)?)
            } else if let Some(rest) = text.strip_prefix("[]") {
                Ty::List(boxed(rest)?)
            } else if let Some(rest) = text.strip_prefix("m:") {
                Ty::Map(boxed(rest)?)
            } else if let Some(rest) = text.strip_prefix('@') {
                Ty::Struct(rest)
            } else if let Some(rest) = text.strip_prefix('!') {
                Ty::Marshaller(rest)
            } else {
                return None;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_parses_and_every_struct_reference_resolves() {
        let text = include_str!("order.txt");
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(TABLE.len(), lines.len());
        for line in lines {
            let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
            let words = rest.split(' ').filter(|w| !w.is_empty()).count();
            let fields = fields(name).unwrap();
            assert_eq!(fields.len(), words, "{name}");
            for field in fields {
                let mut ty = &field.ty;
                while let Ty::Ptr(inner) | Ty::List(inner) | Ty::Map(inner) = ty {
                    ty = inner;
                }
                if let Ty::Struct(inner) = ty {
                    assert!(super::fields(inner).is_some(), "{name}.{}", field.name);
                }
            }
        }
    }

    #[test]
    fn deployment_spec_in_go_order() {
        let names: Vec<&str> = fields("apps/v1.DeploymentSpec")
            .unwrap()
            .iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            names,
            [
                "replicas",
                "selector",
                "template",
                "strategy",
                "minReadySeconds",
                "revisionHistoryLimit",
                "paused",
                "progressDeadlineSeconds"
            ]
        );
        let meta = &fields("meta/v1.ObjectMeta").unwrap()[8];
        assert_eq!(meta.name, "deletionTimestamp");
        assert_eq!(meta.ty, Ty::Ptr(Box::new(Ty::Marshaller("meta/v1.Time"))));
    }
}
