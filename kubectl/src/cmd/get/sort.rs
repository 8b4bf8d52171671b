//! `--sort-by`: orders objects (or a Table's rows, by their embedded objects) on a JSONPath
//! field: numbers numerically, strings lexically, objects without the field first.

use crate::printers::custom_columns::relaxed;
use crate::printers::jsonpath::JsonPath;
use serde_json::Value;
use std::cmp::Ordering;

pub struct SortBy {
    path: JsonPath,
}

impl SortBy {
    pub fn parse(text: &str) -> anyhow::Result<SortBy> {
        Ok(SortBy {
            path: relaxed(text)?,
        })
    }

    fn key<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.path
            .find(object)
            .ok()
            .and_then(|v| v.into_iter().next())
    }

    pub fn sort_objects(&self, objects: &mut [Value]) -> anyhow::Result<()> {
        objects.sort_by(|a, b| compare(self.key(a), self.key(b)));
        Ok(())
    }

    pub fn sort_table(&self, table: &mut Value) -> anyhow::Result<()> {
        if let Some(Value::Array(rows)) = table.get_mut("rows") {
            rows.sort_by(|a, b| {
                let ka = a.get("object").and_then(|o| self.key(o));
                let kb = b.get("object").and_then(|o| self.key(o));
                compare(ka, kb)
            });
        }
        Ok(())
    }
}

fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        (Some(x), Some(y)) => x.to_string().cmp(&y.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts() {
        let mut objects = vec![
            json!({"n": 10, "s": "b"}),
            json!({"n": 9, "s": "c"}),
            json!({"s": "a"}),
        ];
        SortBy::parse(".n")
            .unwrap()
            .sort_objects(&mut objects)
            .unwrap();
        assert_eq!(objects[0]["s"], "a");
        assert_eq!(objects[1]["n"], 9);
        SortBy::parse("{.s}")
            .unwrap()
            .sort_objects(&mut objects)
            .unwrap();
        assert_eq!(
            objects
                .iter()
                .map(|o| o["s"].as_str().unwrap())
                .collect::<String>(),
            "abc"
        );
        let mut table =
            json!({"rows": [{"object": {"m": {"n": "z"}}}, {"object": {"m": {"n": "y"}}}]});
        SortBy::parse("m.n")
            .unwrap()
            .sort_table(&mut table)
            .unwrap();
        assert_eq!(table["rows"][0]["object"]["m"]["n"], "y");
    }
}
