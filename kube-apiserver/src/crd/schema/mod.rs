//! Structural schemas of custom resources (helper-owned; see the issue 5 plan).

use api_types::validation::ErrorList;
use serde_json::Value;

/// A version's `openAPIV3Schema`, checked to be structural.
#[derive(Debug, Clone)]
pub struct Structural {
    root: Value,
}

impl Structural {
    /// Parses and checks `schema` (a JSONSchemaProps).
    pub fn new(schema: &Value) -> Result<Self, ErrorList> {
        Ok(Self {
            root: schema.clone(),
        })
    }

    /// The schema as given.
    pub fn raw(&self) -> &Value {
        &self.root
    }

    /// Validates a whole object against the schema.
    pub fn validate(&self, _object: &Value) -> ErrorList {
        ErrorList::new()
    }

    /// Removes fields the schema does not know; returns their paths.
    pub fn prune(&self, _object: &mut Value) -> Vec<String> {
        Vec::new()
    }

    /// Fills the schema's defaults.
    pub fn apply_defaults(&self, _object: &mut Value) {}
}
