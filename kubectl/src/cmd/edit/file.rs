//! The file the user edits: upstream's comment header (with the reasons a save failed), the
//! comparison that ignores comments, and launching the editor on a temp file.

use std::path::{Path, PathBuf};
use std::process::Command;

const HEADER: &str = "# Please edit the object below. Lines beginning with a '#' will be ignored,
# and an empty file will abort the edit. If an error occurs while saving this file will be
# reopened with the relevant failures.
#
";

const APPLY_HEADER: &str = "# Please edit the 'last-applied-configuration' annotations below.
# Lines beginning with a '#' will be ignored, and an empty file will abort the edit.
#
";

/// Why the last save failed: a headline and its details.
#[derive(Debug, Clone, PartialEq)]
pub struct Reason {
    pub head: String,
    pub other: Vec<String>,
}

/// The header, with each reason as upstream's `editHeader.writeTo` lays it out.
pub fn header(reasons: &[Reason], last_applied: bool) -> String {
    let mut out = if last_applied { APPLY_HEADER } else { HEADER }.to_owned();
    for r in reasons {
        let colon = if r.other.is_empty() { "" } else { ":" };
        out.push_str(&format!("# {}{colon}\n", hash_on_line_break(&r.head)));
        for o in &r.other {
            out.push_str(&format!("# * {}\n", hash_on_line_break(o)));
        }
        out.push_str("#\n");
    }
    out
}

fn hash_on_line_break(s: &str) -> String {
    s.replace('\n', "\n# ")
}

/// Upstream's `ManualStrip`: the file without its comment lines (`#!` kept).
pub fn manual_strip(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with('#') && !t.starts_with("#!") {
            continue;
        }
        out.push_str(line);
        if i < lines.len() - 1 {
            out.push('\n');
        }
    }
    out
}

/// What the file says, comments aside: its documents as JSON when they parse (so formatting
/// does not count as a change), else the stripped text.
pub fn content(text: &str) -> String {
    let stripped = manual_strip(text);
    let docs: Result<Vec<serde_json::Value>, _> = stripped
        .split("\n---")
        .map(serde_yaml::from_str::<serde_json::Value>)
        .collect();
    match docs {
        Ok(docs) => serde_json::to_string(&docs).unwrap_or(stripped),
        Err(_) => stripped,
    }
}

/// Whether the file holds anything but blank and comment lines.
pub fn has_lines(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    })
}

/// Writes `text` to a new `<tmp>/kubectl-edit-<digits>.yaml`, runs the editor on it, and
/// returns what was saved and the file's path.
pub fn launch(text: &str) -> anyhow::Result<(String, PathBuf)> {
    let path = temp_file(text)?;
    let (program, args, shell) = editor();
    let mut command = if shell {
        let mut c = Command::new(&args[0]);
        c.arg(&args[1])
            .arg(format!("{} {:?}", args[2], path.display().to_string()));
        c
    } else {
        let mut c = Command::new(&program);
        c.args(&args[1..]).arg(&path);
        c
    };
    let status = command.status();
    if !status.as_ref().is_ok_and(|s| s.success()) {
        anyhow::bail!("there was a problem with the editor \"{}\"", args.join(" "));
    }
    let edited = std::fs::read_to_string(&path)?;
    Ok((edited, path))
}

/// `$KUBE_EDITOR`, `$EDITOR`, `vi`: split on spaces, or run by a shell when quoted.
fn editor() -> (String, Vec<String>, bool) {
    let value = ["KUBE_EDITOR", "EDITOR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| "vi".to_owned());
    if !value.contains(' ') {
        return (value.clone(), vec![value], false);
    }
    if !value.contains(['"', '\'', '\\']) {
        let args: Vec<String> = value.split(' ').map(str::to_owned).collect();
        return (args[0].clone(), args, false);
    }
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/bash".to_owned());
    (shell.clone(), vec![shell, "-c".to_owned(), value], true)
}

fn temp_file(text: &str) -> anyhow::Result<PathBuf> {
    let base = std::env::temp_dir();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ u64::from(std::process::id());
    for _ in 0..100 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let path = base.join(format!("kubectl-edit-{}.yaml", seed % 10_000_000_000));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                std::io::Write::write_all(&mut f, text.as_bytes())?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e.into()),
        }
    }
    anyhow::bail!("creating a temp file for the editor")
}

/// Upstream's `preservedFile`: say where the edits are kept, if the file is still there.
pub fn preserved(path: Option<&Path>) {
    if let Some(path) = path.filter(|p| p.exists()) {
        eprintln!(
            "A copy of your changes has been stored to {:?}",
            path.display().to_string()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        assert_eq!(header(&[], false), HEADER);
        assert_eq!(header(&[], true), APPLY_HEADER);
        let with = header(
            &[Reason {
                head: "configmaps \"cfg\" was not valid".into(),
                other: vec!["metadata.labels: Invalid value".into()],
            }],
            false,
        );
        assert!(with.ends_with(
            "#\n# configmaps \"cfg\" was not valid:\n# * metadata.labels: Invalid value\n#\n"
        ));
    }

    #[test]
    fn comments_do_not_count() {
        let cases = [
            ("# c\na: 1\n", "a: 1\n", true),
            ("a: 1\n", "a:   1\n# note\n", true),
            ("a: 1\n", "a: 2\n", false),
        ];
        for (left, right, same) in cases {
            assert_eq!(content(left) == content(right), same, "{left:?} {right:?}");
        }
        assert_eq!(manual_strip("# x\n#!keep\na\n"), "#!keep\na\n");
        assert!(!has_lines("# only\n\n"));
        assert!(has_lines("# c\nkind: x\n"));
    }
}
