//! Turns a protobuf message into the JSON upstream's JSON encoding of the same Go object would
//! be, walking the wire format with the generated message table.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::schema::{Field, Label, Message, Special, Ty, Zero};
use super::schema_table::MESSAGES;
use super::special;
use super::wire::{Reader, WireValue};

/// How deep messages may nest (`JSONSchemaProps` is recursive): the JSON decoder's limit, so a
/// hostile body is a 400, never a stack overflow.
pub const MAX_DEPTH: usize = crate::http::body::MAX_NESTING_DEPTH;

/// Why a message cannot be decoded (the text of the 400).
pub type DecodeError = String;

/// The message at `index` of the table.
pub fn message_at(index: u16) -> Result<&'static Message, DecodeError> {
    MESSAGES
        .get(usize::from(index))
        .ok_or_else(|| format!("no message {index} in the protobuf schema"))
}

/// Decodes `bytes` as the message `index` into its JSON value.
pub fn message(bytes: &[u8], index: u16, depth: usize) -> Result<Value, DecodeError> {
    if depth > MAX_DEPTH {
        return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
    }
    let msg = message_at(index)?;
    match msg.special {
        Special::None => object(bytes, msg, depth).map(Value::Object),
        special => special_value(bytes, msg, special, depth),
    }
}

/// What one field collected over the message (a field may appear several times on the wire).
enum Slot<'a> {
    /// An optional scalar: the last value wins.
    Scalar(Value),
    /// An optional message: every occurrence, merged as protobuf merges (by concatenation).
    Message(Vec<&'a [u8]>),
    /// A repeated field.
    List(Vec<Value>),
    /// A map (later entries replace earlier ones with the same key).
    Map(Map<String, Value>),
}

/// The fields of `msg` by position in `msg.fields`, unknown tags skipped.
fn collect<'a>(
    bytes: &'a [u8],
    msg: &'static Message,
    depth: usize,
) -> Result<Vec<Option<Slot<'a>>>, DecodeError> {
    let mut slots: Vec<Option<Slot<'a>>> = (0..msg.fields.len()).map(|_| None).collect();
    let mut reader = Reader::new(bytes);
    while let Some((tag, value)) = reader.field().map_err(|e| in_msg(msg, e.0))? {
        // Unknown fields (a later Kubernetes version's) are skipped, as upstream does.
        let Some(pos) = msg.fields.iter().position(|f| f.tag == tag) else {
            continue;
        };
        let field = &msg.fields[pos];
        let slot = &mut slots[pos];
        match field.label {
            Label::Optional => match (field.ty, value) {
                (Ty::Msg(_), WireValue::Bytes(b)) => match slot {
                    Some(Slot::Message(parts)) => parts.push(b),
                    _ => *slot = Some(Slot::Message(vec![b])),
                },
                (ty, value) => *slot = Some(Slot::Scalar(scalar(field, ty, value, msg)?)),
            },
            Label::Repeated => {
                if !matches!(slot, Some(Slot::List(_))) {
                    *slot = Some(Slot::List(Vec::new()));
                }
                let Some(Slot::List(items)) = slot else {
                    return Err(in_msg(msg, "internal error: list slot".into()));
                };
                repeated(field, value, msg, depth, items)?;
            }
            Label::Map => {
                if !matches!(slot, Some(Slot::Map(_))) {
                    *slot = Some(Slot::Map(Map::new()));
                }
                let Some(Slot::Map(entries)) = slot else {
                    return Err(in_msg(msg, "internal error: map slot".into()));
                };
                let WireValue::Bytes(entry) = value else {
                    return Err(wrong_wire(msg, field, value));
                };
                let (key, value) = map_entry(entry, field, msg, depth)?;
                entries.insert(key, value);
            }
        }
    }
    Ok(slots)
}

/// A plain message as a JSON object of its fields' JSON names.
fn object(
    bytes: &[u8],
    msg: &'static Message,
    depth: usize,
) -> Result<Map<String, Value>, DecodeError> {
    let slots = collect(bytes, msg, depth)?;
    let mut out = Map::new();
    for (field, slot) in msg.fields.iter().zip(slots) {
        let Some(slot) = slot else { continue };
        let value = match slot {
            Slot::Scalar(v) => {
                if field.zero == Zero::Omit && is_zero(&v) {
                    continue;
                }
                v
            }
            Slot::Message(parts) => {
                let Ty::Msg(index) = field.ty else {
                    return Err(in_msg(msg, format!("field {} is not a message", field.tag)));
                };
                let joined = parts.concat();
                message(&joined, index, depth + 1)?
            }
            Slot::List(items) => Value::Array(items),
            Slot::Map(entries) => Value::Object(entries),
        };
        if field.json.is_empty() {
            // An embedded Go struct (`json:",inline"`): its fields belong to this object.
            if let Value::Object(inner) = value {
                out.extend(inner);
            }
        } else {
            out.insert(field.json.to_string(), value);
        }
    }
    Ok(out)
}

/// `""`, `0`, `false`: what Go's `omitempty` leaves out.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

/// One scalar value of `ty` from the wire.
fn scalar(
    field: &Field,
    ty: Ty,
    value: WireValue<'_>,
    msg: &Message,
) -> Result<Value, DecodeError> {
    Ok(match (ty, value) {
        (Ty::String, WireValue::Bytes(b)) => Value::String(String::from_utf8_lossy(b).into_owned()),
        (Ty::Bytes, WireValue::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Ty::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        // int32 values are sign-extended to 64 bits on the wire; truncation recovers them.
        (Ty::Int32, WireValue::Varint(v)) => Value::from(v as i32),
        (Ty::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (Ty::Double, WireValue::Fixed64(bits)) => {
            let f = f64::from_bits(bits);
            Value::Number(serde_json::Number::from_f64(f).ok_or_else(|| {
                in_msg(
                    msg,
                    format!("field {} is {f}, which JSON cannot hold", field.json),
                )
            })?)
        }
        (_, value) => return Err(wrong_wire(msg, field, value)),
    })
}

/// Appends one occurrence of a repeated field (a packed run of scalars counts as many).
fn repeated(
    field: &Field,
    value: WireValue<'_>,
    msg: &'static Message,
    depth: usize,
    items: &mut Vec<Value>,
) -> Result<(), DecodeError> {
    match (field.ty, value) {
        (Ty::Msg(index), WireValue::Bytes(b)) => items.push(message(b, index, depth + 1)?),
        (Ty::String | Ty::Bytes | Ty::Msg(_), _) => {
            items.push(scalar(field, field.ty, value, msg)?);
        }
        // Packed numbers: proto2 parsers accept them even when the schema says unpacked.
        (Ty::Bool | Ty::Int32 | Ty::Int64, WireValue::Bytes(b)) => {
            let mut r = Reader::new(b);
            while !r.is_empty() {
                let v = r.varint().map_err(|e| in_msg(msg, e.0))?;
                items.push(scalar(field, field.ty, WireValue::Varint(v), msg)?);
            }
        }
        (Ty::Double, WireValue::Bytes(b)) => {
            if b.len() % 8 != 0 {
                return Err(in_msg(
                    msg,
                    format!("packed field {} is truncated", field.json),
                ));
            }
            for chunk in b.chunks_exact(8) {
                let mut bits = [0u8; 8];
                bits.copy_from_slice(chunk);
                let v = WireValue::Fixed64(u64::from_le_bytes(bits));
                items.push(scalar(field, field.ty, v, msg)?);
            }
        }
        (ty, value) => items.push(scalar(field, ty, value, msg)?),
    }
    Ok(())
}

/// One `map<string, V>` entry: `key` = 1, `value` = 2; missing parts are their zero values.
fn map_entry(
    entry: &[u8],
    field: &Field,
    msg: &'static Message,
    depth: usize,
) -> Result<(String, Value), DecodeError> {
    let mut key = String::new();
    let mut value: Option<Value> = None;
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut reader = Reader::new(entry);
    while let Some((tag, v)) = reader.field().map_err(|e| in_msg(msg, e.0))? {
        match (tag, v) {
            (1, WireValue::Bytes(b)) => key = String::from_utf8_lossy(b).into_owned(),
            (1, other) => return Err(wrong_wire(msg, field, other)),
            (2, v) => match (field.ty, v) {
                (Ty::Msg(_), WireValue::Bytes(b)) => parts.push(b),
                (ty, v) => value = Some(scalar(field, ty, v, msg)?),
            },
            _ => {}
        }
    }
    let value = match (field.ty, value) {
        (Ty::Msg(index), _) => message(&parts.concat(), index, depth + 1)?,
        (_, Some(v)) => v,
        (Ty::Bool, None) => Value::Bool(false),
        (Ty::Int32 | Ty::Int64, None) => Value::from(0),
        (Ty::Double, None) => Value::from(0.0),
        (Ty::String | Ty::Bytes, None) => Value::String(String::new()),
    };
    Ok((key, value))
}

/// The JSON of a message with a Go `MarshalJSON` of its own.
fn special_value(
    bytes: &[u8],
    msg: &'static Message,
    special: Special,
    depth: usize,
) -> Result<Value, DecodeError> {
    let slots = collect(bytes, msg, depth)?;
    // The special messages' fields, by tag, as decoded values.
    let get = |tag: u32| -> Result<Option<Value>, DecodeError> {
        let Some(pos) = msg.fields.iter().position(|f| f.tag == tag) else {
            return Ok(None);
        };
        let field = &msg.fields[pos];
        Ok(match &slots[pos] {
            None => None,
            Some(Slot::Scalar(v)) => Some(v.clone()),
            Some(Slot::List(items)) => Some(Value::Array(items.clone())),
            Some(Slot::Map(entries)) => Some(Value::Object(entries.clone())),
            Some(Slot::Message(parts)) => match field.ty {
                Ty::Msg(index) => Some(message(&parts.concat(), index, depth + 1)?),
                _ => None,
            },
        })
    };
    let int = |v: Option<Value>| v.and_then(|v| v.as_i64()).unwrap_or(0);
    let string = |v: Option<Value>| match v {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    let fail = |e: String| in_msg(msg, e);
    Ok(match special {
        Special::None => Value::Object(object(bytes, msg, depth)?),
        Special::Quantity => {
            // An empty Quantity is zero, which Go prints as "0".
            let s = string(get(1)?);
            Value::String(if s.is_empty() { "0".into() } else { s })
        }
        Special::IntOrString => match int(get(1)?) {
            0 => Value::from(int(get(2)?) as i32),
            1 => Value::String(string(get(3)?)),
            other => return Err(fail(format!("invalid IntOrString type {other}"))),
        },
        // The zero time (an empty message) is JSON `null`, as `creationTimestamp: null`.
        Special::Time if bytes.is_empty() => Value::Null,
        Special::Time => Value::String(special::time(int(get(1)?)).map_err(fail)?),
        Special::MicroTime if bytes.is_empty() => Value::Null,
        Special::MicroTime => {
            Value::String(special::micro_time(int(get(1)?), int(get(2)?) as i32).map_err(fail)?)
        }
        Special::Duration => Value::String(special::duration(int(get(1)?))),
        Special::RawJson => raw_json(bytes, msg, depth)?,
        Special::StringList => get(1)?.unwrap_or_else(|| Value::Array(Vec::new())),
        Special::SchemaOrArray => match (get(1)?, get(2)?) {
            (_, Some(Value::Array(items))) if !items.is_empty() => Value::Array(items),
            (Some(schema), _) => schema,
            _ => Value::Null,
        },
        Special::SchemaOrBool => match get(2)? {
            Some(schema) => schema,
            None => Value::Bool(get(1)?.and_then(|v| v.as_bool()).unwrap_or(false)),
        },
        Special::SchemaOrStringArray => match (get(1)?, get(2)?) {
            (_, Some(Value::Array(items))) if !items.is_empty() => Value::Array(items),
            (Some(schema), _) => schema,
            _ => Value::Null,
        },
    })
}

/// `RawExtension`, `FieldsV1`, apiextensions `JSON`: `raw` = 1 holds a JSON document (or, in a
/// RawExtension, a nested `k8s\0` protobuf object); unset or empty is `null`, as Go writes it.
fn raw_json(bytes: &[u8], msg: &'static Message, depth: usize) -> Result<Value, DecodeError> {
    let mut raw: &[u8] = &[];
    let mut reader = Reader::new(bytes);
    while let Some((tag, value)) = reader.field().map_err(|e| in_msg(msg, e.0))? {
        if tag == 1 {
            let WireValue::Bytes(b) = value else {
                return Err(in_msg(
                    msg,
                    format!("raw has the wrong wire type {}", value.wire_name()),
                ));
            };
            raw = b;
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    if raw.starts_with(&super::MAGIC) {
        return super::decode_object(raw, depth + 1);
    }
    serde_json::from_slice(raw).map_err(|e| in_msg(msg, format!("embedded JSON is invalid: {e}")))
}

fn wrong_wire(msg: &Message, field: &Field, value: WireValue<'_>) -> DecodeError {
    in_msg(
        msg,
        format!(
            "field {} ({}) has the wrong wire type {}",
            field.tag,
            if field.json.is_empty() {
                "inline"
            } else {
                field.json
            },
            value.wire_name()
        ),
    )
}

fn in_msg(msg: &Message, e: String) -> DecodeError {
    format!("{}: {e}", msg.name)
}
