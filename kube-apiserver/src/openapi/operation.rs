//! One REST operation and its rendering as Swagger 2.0 or OpenAPI 3.0, which say the same
//! things in different places (body parameter vs `requestBody`, `produces` vs `content`).

use super::definitions::{V2_REF_PREFIX, V3_REF_PREFIX, meta};
use super::params::Param;
use serde_json::{Map, Value, json};

/// Which OpenAPI version to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Swagger 2.0 (`/openapi/v2`).
    V2,
    /// OpenAPI 3.0 (`/openapi/v3/...`).
    V3,
}

impl Flavor {
    fn reference(self, name: &str) -> Value {
        let prefix = match self {
            Flavor::V2 => V2_REF_PREFIX,
            Flavor::V3 => V3_REF_PREFIX,
        };
        json!({"$ref": format!("{prefix}{name}")})
    }
}

/// Media types of ordinary responses.
pub const OBJECT_MEDIA: &[&str] = &["application/json", "application/yaml"];
/// Media types of list responses (a list may turn into a watch).
pub const LIST_MEDIA: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/json;stream=watch",
];
/// Media types of watch responses.
pub const WATCH_MEDIA: &[&str] = &["application/json", "application/json;stream=watch"];
/// Media types of plain-text responses (logs).
pub const TEXT_MEDIA: &[&str] = &["text/plain"];
/// The patch formats PATCH of a built-in resource accepts.
pub const PATCH_MEDIA: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// The request body of an operation.
#[derive(Debug, Clone)]
pub enum Body {
    /// A whole object of the named definition (create, replace).
    Object(String),
    /// A patch document in one of the listed formats.
    Patch(&'static [&'static str]),
    /// Optional DeleteOptions.
    DeleteOptions,
}

/// What a response carries.
#[derive(Debug, Clone)]
pub enum Payload {
    /// An object of the named definition.
    Schema(String),
    /// Plain text (logs).
    Text,
}

/// One REST operation.
#[derive(Debug, Clone)]
pub struct Operation {
    /// Lower-case HTTP method: `get`, `post`, `put`, `patch`, `delete`.
    pub method: &'static str,
    pub id: String,
    pub description: String,
    /// `x-kubernetes-action`: get, list, post, put, patch, delete, deletecollection, watch,
    /// watchlist; `None` for discovery operations.
    pub action: Option<&'static str>,
    /// `x-kubernetes-group-version-kind` of the object the operation handles.
    pub gvk: Option<(String, String, String)>,
    pub tag: String,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    /// Status code, description; all share `payload`.
    pub codes: &'static [(&'static str, &'static str)],
    pub payload: Payload,
    pub produces: &'static [&'static str],
}

/// A path and its operations; `params` apply to every operation.
#[derive(Debug, Clone)]
pub struct PathItem {
    pub path: String,
    pub params: Vec<Param>,
    pub operations: Vec<Operation>,
}

fn render_param(param: &Param, flavor: Flavor) -> Value {
    let mut out = Map::new();
    out.insert("description".into(), json!(param.description));
    out.insert("in".into(), json!(param.location.as_str()));
    out.insert("name".into(), json!(param.name));
    if param.required {
        out.insert("required".into(), json!(true));
    }
    match flavor {
        Flavor::V2 => {
            out.insert("type".into(), json!(param.ty));
            out.insert("uniqueItems".into(), json!(true));
        }
        Flavor::V3 => {
            out.insert(
                "schema".into(),
                json!({"type": param.ty, "uniqueItems": true}),
            );
        }
    }
    Value::Object(out)
}

fn payload_schema(payload: &Payload, flavor: Flavor) -> Value {
    match payload {
        Payload::Schema(name) => flavor.reference(name),
        Payload::Text => json!({"type": "string"}),
    }
}

impl Operation {
    fn render(&self, flavor: Flavor) -> Value {
        let mut out = Map::new();
        out.insert("description".into(), json!(self.description));
        out.insert("operationId".into(), json!(self.id));
        let mut params: Vec<Value> = Vec::new();
        match (flavor, &self.body) {
            (Flavor::V2, Some(body)) => {
                let (schema, required) = match body {
                    Body::Object(name) => (flavor.reference(name), true),
                    Body::Patch(_) => (flavor.reference(meta::PATCH), true),
                    Body::DeleteOptions => (flavor.reference(meta::DELETE_OPTIONS), false),
                };
                let mut param = json!({"in": "body", "name": "body", "schema": schema});
                if required {
                    param["required"] = json!(true);
                }
                params.push(param);
                let consumes: &[&str] = match body {
                    Body::Patch(media) => media,
                    _ => &["*/*"],
                };
                out.insert("consumes".into(), json!(consumes));
            }
            (Flavor::V3, Some(body)) => {
                let (media, schema, required): (&[&str], Value, bool) = match body {
                    Body::Object(name) => (&["*/*"], flavor.reference(name), true),
                    Body::Patch(media) => (media, flavor.reference(meta::PATCH), true),
                    Body::DeleteOptions => {
                        (&["*/*"], flavor.reference(meta::DELETE_OPTIONS), false)
                    }
                };
                let content: Map<String, Value> = media
                    .iter()
                    .map(|m| ((*m).to_owned(), json!({"schema": schema})))
                    .collect();
                let mut request = json!({"content": content});
                if required {
                    request["required"] = json!(true);
                }
                out.insert("requestBody".into(), request);
            }
            (_, None) => {}
        }
        params.extend(self.params.iter().map(|p| render_param(p, flavor)));
        if !params.is_empty() {
            out.insert("parameters".into(), Value::Array(params));
        }
        if flavor == Flavor::V2 {
            out.insert("produces".into(), json!(self.produces));
            out.insert("schemes".into(), json!(["https"]));
        }
        out.insert("responses".into(), self.render_responses(flavor));
        out.insert("tags".into(), json!([self.tag]));
        if let Some(action) = self.action {
            out.insert("x-kubernetes-action".into(), json!(action));
        }
        if let Some((group, version, kind)) = &self.gvk {
            out.insert(
                "x-kubernetes-group-version-kind".into(),
                json!({"group": group, "kind": kind, "version": version}),
            );
        }
        Value::Object(out)
    }

    fn render_responses(&self, flavor: Flavor) -> Value {
        let schema = payload_schema(&self.payload, flavor);
        let mut out = Map::new();
        for (code, description) in self.codes {
            let response = match flavor {
                Flavor::V2 => json!({"description": description, "schema": schema}),
                Flavor::V3 => {
                    let content: Map<String, Value> = self
                        .produces
                        .iter()
                        .map(|m| ((*m).to_owned(), json!({"schema": schema})))
                        .collect();
                    json!({"content": content, "description": description})
                }
            };
            out.insert((*code).to_owned(), response);
        }
        out.insert("401".into(), json!({"description": "Unauthorized"}));
        Value::Object(out)
    }
}

impl PathItem {
    /// The path item object.
    pub fn render(&self, flavor: Flavor) -> Value {
        let mut out = Map::new();
        for op in &self.operations {
            out.insert(op.method.to_owned(), op.render(flavor));
        }
        if !self.params.is_empty() {
            out.insert(
                "parameters".into(),
                Value::Array(
                    self.params
                        .iter()
                        .map(|p| render_param(p, flavor))
                        .collect(),
                ),
            );
        }
        Value::Object(out)
    }

    /// The definition names the operations refer to.
    pub fn referenced_definitions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for op in &self.operations {
            if let Payload::Schema(name) = &op.payload {
                out.push(name.clone());
            }
            match &op.body {
                Some(Body::Object(name)) => out.push(name.clone()),
                Some(Body::Patch(_)) => out.push(meta::PATCH.to_owned()),
                Some(Body::DeleteOptions) => out.push(meta::DELETE_OPTIONS.to_owned()),
                None => {}
            }
        }
        out
    }
}
