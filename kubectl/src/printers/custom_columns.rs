//! `-o custom-columns=HEADER:PATH,...` and `custom-columns-file` (headers on the first line,
//! paths on the second), paths in upstream's relaxed JSONPath (`.a.b`, `a.b`, `{.a.b}`).

use super::jsonpath::{JsonPath, text_of};
use super::tabwriter;
use serde_json::Value;

/// The parsed columns.
#[derive(Debug, Clone)]
pub struct Columns {
    columns: Vec<(String, JsonPath)>,
    pub no_headers: bool,
}

impl Columns {
    /// `HEADER:PATH,HEADER:PATH`.
    pub fn parse_inline(spec: &str) -> anyhow::Result<Columns> {
        let mut columns = Vec::new();
        for part in spec.split(',') {
            let Some((header, path)) = part.split_once(':') else {
                anyhow::bail!(
                    "unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"
                );
            };
            columns.push((header.to_owned(), relaxed(path)?));
        }
        Ok(Columns {
            columns,
            no_headers: false,
        })
    }

    /// A template file: whitespace-separated headers, then as many paths.
    pub fn parse_file(text: &str) -> anyhow::Result<Columns> {
        let mut lines = text.lines();
        let headers: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
        let paths: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
        anyhow::ensure!(
            headers.len() == paths.len(),
            "expected {} values in the second line, found {}",
            headers.len(),
            paths.len()
        );
        let columns = headers
            .iter()
            .zip(paths)
            .map(|(h, p)| Ok(((*h).to_owned(), relaxed(p)?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Columns {
            columns,
            no_headers: false,
        })
    }

    /// The aligned table of `objects`.
    pub fn render(&self, objects: &[&Value]) -> anyhow::Result<String> {
        let mut rows = Vec::new();
        if !self.no_headers {
            rows.push(self.columns.iter().map(|(h, _)| h.clone()).collect());
        }
        for object in objects {
            let mut row = Vec::new();
            for (_, path) in &self.columns {
                let found = path.find(object).map_err(|e| anyhow::anyhow!("{e}"))?;
                let cell = if found.is_empty() {
                    "<none>".to_owned()
                } else {
                    found.into_iter().map(text_of).collect::<Vec<_>>().join(",")
                };
                row.push(cell);
            }
            rows.push(row);
        }
        Ok(tabwriter::align(&rows))
    }
}

/// Upstream's `RelaxedJSONPathExpression`: `{.a}`, `.a` and `a` all mean `.a`.
pub fn relaxed(path: &str) -> anyhow::Result<JsonPath> {
    let path = path.trim();
    let inner = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let inner = if inner.starts_with('.') || inner.starts_with('$') || inner.starts_with('@') {
        inner.to_owned()
    } else {
        format!(".{inner}")
    };
    JsonPath::parse(&inner).map_err(|err| anyhow::anyhow!("unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{{name1.name2}}' or '{{.name1.name2}}': {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns() {
        let a = json!({"metadata": {"name": "a", "labels": {"x": "1"}}});
        let b = json!({"metadata": {"name": "bbbbbbb"}});
        let cols = Columns::parse_inline("NAME:.metadata.name,X:metadata.labels.x").unwrap();
        assert_eq!(
            cols.render(&[&a, &b]).unwrap(),
            "NAME      X\na         1\nbbbbbbb   <none>\n"
        );
        let file = Columns::parse_file("NAME X\n{.metadata.name} .metadata.labels.x\n").unwrap();
        assert_eq!(file.render(&[&a]).unwrap(), "NAME   X\na      1\n");
        assert!(Columns::parse_inline("nocolon").is_err());
    }
}
