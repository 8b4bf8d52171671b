//! `-f`: manifests from files, directories (`-R` to recurse), stdin (`-`) or `http(s)://` URLs,
//! split into objects: multi-document YAML, JSON streams, and `List`s expanded into their items.

mod url;

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One object read from a manifest, with where it came from (for messages).
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub source: String,
    pub object: Value,
}

/// Extensions a directory walk picks up, as upstream's `FileExtensions`.
const EXTENSIONS: &[&str] = &["json", "yaml", "yml"];

/// Reads every `-f` argument in order.
pub fn read_all(filenames: &[String], recursive: bool) -> anyhow::Result<Vec<Manifest>> {
    let mut out = Vec::new();
    for name in filenames {
        if name == "-" {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text)?;
            out.extend(parse("STDIN", &text)?);
            continue;
        }
        if name.starts_with("http://") || name.starts_with("https://") {
            let text = url::fetch(name)?;
            out.extend(parse(name, &text)?);
            continue;
        }
        let path = Path::new(name);
        if !path.exists() {
            anyhow::bail!("the path \"{name}\" does not exist");
        }
        if path.is_dir() {
            let mut files = Vec::new();
            walk(path, recursive, &mut files)?;
            for file in files {
                out.extend(read_file(&file)?);
            }
        } else {
            out.extend(read_file(path)?);
        }
    }
    Ok(out)
}

fn walk(dir: &Path, recursive: bool, files: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            if recursive {
                walk(&entry, recursive, files)?;
            }
        } else if entry
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e))
        {
            files.push(entry);
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> anyhow::Result<Vec<Manifest>> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| anyhow::anyhow!("error reading {}: {err}", path.display()))?;
    parse(&path.display().to_string(), &text)
}

/// Splits `text` into objects.
pub fn parse(source: &str, text: &str) -> anyhow::Result<Vec<Manifest>> {
    let mut objects = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        for value in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            let value = value.map_err(|err| anyhow::anyhow!("error parsing {source}: {err}"))?;
            objects.push(value);
        }
    } else {
        for doc in split_documents(text) {
            if doc
                .lines()
                .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
            {
                continue;
            }
            let value: Value = serde_yaml::from_str(&doc).map_err(|err| {
                anyhow::anyhow!(
                    "error parsing {source}: error converting YAML to JSON: yaml: {}",
                    go_yaml_message(&err.to_string())
                )
            })?;
            if !value.is_null() {
                objects.push(value);
            }
        }
    }
    let mut out = Vec::new();
    for object in objects {
        expand(source, object, &mut out);
    }
    Ok(out)
}

/// libyaml's error as go-yaml words it: `line N: problem`, where N is the 0-based line of a
/// parser error's mark and the 1-based line of a scanner error's.
fn go_yaml_message(message: &str) -> String {
    let Some((problem, rest)) = message.split_once(" at line ") else {
        return message.to_owned();
    };
    let line: usize = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let scanner = rest.contains("while scanning");
    let line = if scanner {
        line
    } else {
        line.saturating_sub(1)
    };
    if line == 0 {
        problem.to_owned()
    } else {
        format!("line {line}: {problem}")
    }
}

/// Splits at `---` lines, as upstream's YAML reader.
fn split_documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") || line.trim_end() == "---" {
            docs.push(String::new());
        } else if let Some(doc) = docs.last_mut() {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs
}

/// A `List` (kind `List` or `*List` with `items`) becomes its items.
fn expand(source: &str, object: Value, out: &mut Vec<Manifest>) {
    let is_list = object
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"))
        && object.get("items").is_some_and(Value::is_array);
    if is_list {
        if let Some(Value::Array(items)) = object.get("items") {
            for item in items {
                expand(source, item.clone(), out);
            }
        }
        return;
    }
    out.push(Manifest {
        source: source.to_owned(),
        object,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_streams_and_lists() {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            (
                "kind: A\nmetadata: {name: a}\n---\n# only a comment\n---\nkind: B\n",
                vec!["A", "B"],
            ),
            ("{\"kind\": \"A\"}\n{\"kind\": \"B\"}", vec!["A", "B"]),
            ("kind: List\nitems:\n- kind: A\n- kind: B\n", vec!["A", "B"]),
            (
                "{\"kind\": \"ConfigMapList\", \"items\": [{\"kind\": \"ConfigMap\"}]}",
                vec!["ConfigMap"],
            ),
            ("", vec![]),
        ];
        for (text, kinds) in cases {
            let got: Vec<String> = parse("f", text)
                .unwrap()
                .iter()
                .map(|m| m.object["kind"].as_str().unwrap_or("").to_owned())
                .collect();
            assert_eq!(got, kinds, "{text}");
        }
        assert!(
            parse("bad.yaml", "a: [\n")
                .unwrap_err()
                .to_string()
                .starts_with("error parsing bad.yaml")
        );
        let bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  bad: [\n";
        assert_eq!(
            parse("bad.yaml", bad).unwrap_err().to_string(),
            "error parsing bad.yaml: error converting YAML to JSON: yaml: line 5: did not find expected node content"
        );
    }

    #[test]
    fn directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "kind: A\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "kind: X\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.json"), "{\"kind\": \"B\"}").unwrap();
        let name = dir.path().display().to_string();
        assert_eq!(
            read_all(std::slice::from_ref(&name), false).unwrap().len(),
            1
        );
        assert_eq!(read_all(&[name], true).unwrap().len(), 2);
        assert!(read_all(&["/nonexistent/x.yaml".into()], false).is_err());
    }
}
