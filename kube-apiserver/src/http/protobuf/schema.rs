//! The shape of the generated message table ([`super::schema_table`]): for every protobuf
//! message a built-in kind can contain, its fields by tag with their upstream JSON names, wire
//! types and nesting, and which messages have a JSON form of their own (Quantity, Time, ...).

/// One protobuf message of upstream's `generated.proto` files.
#[derive(Debug)]
pub struct Message {
    /// Upstream's definition name, e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub name: &'static str,
    /// How the message is written in JSON when it is not a plain object.
    pub special: Special,
    /// The fields, sorted by tag.
    pub fields: &'static [Field],
}

impl Message {
    /// The field with protobuf tag `tag`, if the schema knows it.
    pub fn field(&self, tag: u32) -> Option<&'static Field> {
        self.fields
            .binary_search_by_key(&tag, |f| f.tag)
            .ok()
            .map(|i| &self.fields[i])
    }
}

/// Messages whose JSON form is not an object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// An object with the fields' JSON names.
    None,
    /// `resource.Quantity` (`string` = 1): the string.
    Quantity,
    /// `intstr.IntOrString` (`type` = 1, `intVal` = 2, `strVal` = 3): a number or a string.
    IntOrString,
    /// `metav1.Time` (`seconds` = 1, `nanos` = 2): RFC 3339 with whole seconds.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with six fractional digits.
    MicroTime,
    /// `metav1.Duration` (`duration` = 1, nanoseconds): Go's duration string (`1h0m0s`).
    Duration,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions `JSON` (`raw` = 1): the
    /// embedded JSON document.
    RawJson,
    /// A Go `[]string` given its own message (`items` = 1), e.g. `ExtraValue`: a JSON array.
    StringList,
    /// apiextensions `JSONSchemaPropsOrArray` (`schema` = 1, `JSONSchemas` = 2).
    SchemaOrArray,
    /// apiextensions `JSONSchemaPropsOrBool` (`allows` = 1, `schema` = 2).
    SchemaOrBool,
    /// apiextensions `JSONSchemaPropsOrStringArray` (`schema` = 1, `property` = 2).
    SchemaOrStringArray,
}

/// One field of a message.
#[derive(Debug)]
pub struct Field {
    /// The protobuf tag.
    pub tag: u32,
    /// The JSON name (upstream's `json:"..."` tag).
    pub json: &'static str,
    /// The value type (of the map value for maps; keys are always strings).
    pub ty: Ty,
    /// Single, repeated, or a map.
    pub label: Label,
    /// Whether a zero value (`""`, `0`, `false`) appears in upstream's JSON.
    pub zero: Zero,
}

/// A field's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// `string`.
    String,
    /// `bytes`: base64 in JSON.
    Bytes,
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `double`.
    Double,
    /// A message: the index into [`super::schema_table::MESSAGES`].
    Msg(u16),
}

/// A field's cardinality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// `optional`: at most one value (the last one on the wire wins, messages merge).
    Optional,
    /// `repeated`: a JSON array.
    Repeated,
    /// `map<string, ty>`: repeated entries (`key` = 1, `value` = 2), a JSON object.
    Map,
}

/// What upstream's JSON shows for a scalar field holding its zero value.
///
/// Go's protobuf marshalling writes non-pointer scalars always, so a zero on the wire may be an
/// unset `omitempty` field (absent from JSON) or a pointer set to zero (present in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero {
    /// The zero value is written (required fields, pointers: `replicas: 0` means zero).
    Keep,
    /// The zero value is dropped (non-pointer `omitempty` fields).
    Omit,
}

/// A served kind and the message its objects are encoded with.
#[derive(Debug)]
pub struct KindMessage {
    /// `apiVersion` as written in objects (`v1`, `apps/v1`).
    pub api_version: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// Index into [`super::schema_table::MESSAGES`].
    pub message: u16,
}
