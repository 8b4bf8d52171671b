//! The static token file of `--token-auth-file`, as upstream's `tokenfile.NewCSV`: CSV records
//! `token,user,uid[,"group1,group2"]`.

use std::collections::HashMap;
use std::path::Path;

use super::user::UserInfo;

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenFileError {
    /// The file cannot be read.
    #[error("reading token file '{path}': {message}")]
    Read { path: String, message: String },
    /// A record has fewer than the three required columns.
    #[error(
        "token file '{path}' must have at least 3 columns (token, user name, user uid), found {found} (line {line})"
    )]
    TooFewColumns {
        path: String,
        found: usize,
        line: usize,
    },
    /// A record is not valid CSV (quotes).
    #[error("token file '{path}': parse error on line {line}: {message}")]
    Csv {
        path: String,
        line: usize,
        message: String,
    },
}

/// Bearer tokens and the users they authenticate.
#[derive(Debug, Clone, Default)]
pub struct TokenFile {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFile {
    /// Reads and parses the file at `path`.
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let display = path.display().to_string();
        let content = std::fs::read_to_string(path).map_err(|e| TokenFileError::Read {
            path: display.clone(),
            message: e.to_string(),
        })?;
        Self::parse(&content, &display)
    }

    /// Parses the file's `content`; `path` only names it in errors. Records with an empty token
    /// are skipped and a repeated token keeps its last record, each with a warning, as upstream.
    pub fn parse(content: &str, path: &str) -> Result<Self, TokenFileError> {
        let mut tokens = HashMap::new();
        for (idx, line) in content.lines().enumerate() {
            let line_no = idx + 1;
            if line.trim().is_empty() {
                continue;
            }
            let record = parse_csv_line(line).map_err(|message| TokenFileError::Csv {
                path: path.to_string(),
                line: line_no,
                message,
            })?;
            if record.len() < 3 {
                return Err(TokenFileError::TooFewColumns {
                    path: path.to_string(),
                    found: record.len(),
                    line: line_no,
                });
            }
            if record[0].is_empty() {
                tracing::warn!(path, line = line_no, "empty token in token file, skipped");
                continue;
            }
            let groups = match record.get(3) {
                Some(g) => g.split(',').map(str::to_string).collect(),
                None => Vec::new(),
            };
            let user = UserInfo {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                ..Default::default()
            };
            if tokens.insert(record[0].clone(), user).is_some() {
                tracing::warn!(path, line = line_no, "duplicate token in token file");
            }
        }
        Ok(TokenFile { tokens })
    }

    /// The user `token` authenticates, if any.
    pub fn authenticate(&self, token: &str) -> Option<&UserInfo> {
        self.tokens.get(token)
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// Splits one CSV line as Go's `encoding/csv` with `TrimLeadingSpace`: fields may be quoted,
/// `""` inside quotes is a quote, a quote inside an unquoted field is an error.
fn parse_csv_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("extraneous or missing \" in quoted-field".to_string()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => fields.push(field),
                Some(_) => return Err("extraneous or missing \" in quoted-field".to_string()),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(',') => {
                        fields.push(field);
                        break;
                    }
                    Some('"') => return Err("bare \" in non-quoted-field".to_string()),
                    Some(c) => field.push(c),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_records_with_quoted_groups() {
        let file = TokenFile::parse(
            "tok1,alice,uid-1,\"system:masters,devs\"\n\
             tok2,bob,uid-2\n\
             \n\
             tok3, carol, uid-3, ops\n\
             ,nobody,uid-0\n\
             tok2,bobby,uid-22,\"a \"\"quoted\"\" group\"\n",
            "tokens.csv",
        )
        .expect("valid file");
        assert_eq!(file.len(), 3);
        let alice = file.authenticate("tok1").expect("alice");
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "uid-1");
        assert_eq!(alice.groups, vec!["system:masters", "devs"]);
        // The later record of a repeated token wins.
        let bob = file.authenticate("tok2").expect("bob");
        assert_eq!(bob.name, "bobby");
        assert_eq!(bob.groups, vec!["a \"quoted\" group"]);
        // Leading spaces are trimmed, as Go's TrimLeadingSpace.
        let carol = file.authenticate("tok3").expect("carol");
        assert_eq!(
            (carol.name.as_str(), carol.uid.as_str()),
            ("carol", "uid-3")
        );
        assert_eq!(carol.groups, vec!["ops"]);
        assert!(file.authenticate("").is_none());
        assert!(file.authenticate("nope").is_none());
    }

    #[test]
    fn bad_lines_are_clear_errors() {
        let err =
            TokenFile::parse("tok,alice,1\ntok2,bob\n", "/etc/tokens.csv").expect_err("2 columns");
        assert_eq!(
            err.to_string(),
            "token file '/etc/tokens.csv' must have at least 3 columns (token, user name, user uid), found 2 (line 2)"
        );
        let err = TokenFile::parse("tok,al\"ice,1\n", "f").expect_err("bare quote");
        assert_eq!(
            err.to_string(),
            "token file 'f': parse error on line 1: bare \" in non-quoted-field"
        );
        let err = TokenFile::parse("tok,alice,1,\"g1,g2\n", "f").expect_err("unterminated");
        assert!(err.to_string().contains("line 1"), "{err}");
        let err = TokenFile::parse("tok,alice,1,\"g\"x\n", "f").expect_err("junk after quote");
        assert!(err.to_string().contains("extraneous"), "{err}");
    }

    #[test]
    fn load_reports_missing_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("tokens.csv");
        assert!(matches!(
            TokenFile::load(&path),
            Err(TokenFileError::Read { .. })
        ));
        std::fs::write(&path, "t,u,1\n").expect("write");
        assert_eq!(TokenFile::load(&path).expect("load").len(), 1);
    }
}
