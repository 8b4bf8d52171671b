//! The events of a described object: core/v1 events found by `involvedObject` field selector
//! (upstream's `searchEvents`) and the `Events:` table every describer ends with.

use super::writer::{PrefixWriter, int, parse_time, s, since};
use crate::factory::Factory;
use crate::resource::{self, Info, Selection};
use serde_json::Value;

/// What identifies the object the events are about.
pub struct Reference<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    /// Empty leaves the kind out of the selector (upstream does for pods).
    pub kind: &'a str,
    pub uid: &'a str,
}

/// Lists the events about `reference` (paginated with `chunk_size`); a failure yields none, as
/// upstream ignores it.
pub async fn search(factory: &Factory, reference: &Reference<'_>, chunk_size: i64) -> Vec<Value> {
    let mut terms = vec![
        ("involvedObject.name", reference.name),
        ("involvedObject.namespace", reference.namespace),
    ];
    if !reference.kind.is_empty() {
        terms.push(("involvedObject.kind", reference.kind));
    }
    if !reference.uid.is_empty() {
        terms.push(("involvedObject.uid", reference.uid));
    }
    terms.sort();
    let selector: Vec<String> = terms
        .iter()
        .map(|(k, v)| format!("{k}={}", escape_field(v)))
        .collect();
    let Ok(mapper) = factory.discovery().mapper().await else {
        return Vec::new();
    };
    let Some(events) = mapper.resolve("events") else {
        return Vec::new();
    };
    let info = Info {
        namespace: (!reference.namespace.is_empty()).then(|| reference.namespace.to_owned()),
        resource: events.clone(),
        name: None,
        object: None,
        source: None,
    };
    let sel = Selection {
        field_selector: Some(selector.join(",")),
        chunk_size,
        ..Selection::default()
    };
    match resource::list_pages(factory, &info, &sel, None, &[]).await {
        Ok(pages) => resource::items_of(&events, &pages),
        Err(_) => Vec::new(),
    }
}

/// A field selector value escaped as `fields.EscapeValue`.
fn escape_field(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            ',' => out.push_str("\\,"),
            '=' => out.push_str("\\="),
            c => out.push(c),
        }
    }
    out
}

/// Seconds of `lastTimestamp` (upstream's `SortableEvents` order), unset first.
fn sort_key(e: &Value) -> i64 {
    parse_time(s(e, "/lastTimestamp")).unwrap_or(i64::MIN)
}

/// `translateMicroTimestampSince` / `translateTimestampSince` of the first sighting.
fn first_seen(e: &Value) -> String {
    let event_time = s(e, "/eventTime");
    if event_time.is_empty() {
        since(s(e, "/firstTimestamp"))
    } else {
        since(event_time)
    }
}

/// The `Age` cell: `5m`, or `2m (x3 over 5m)` for a repeated event.
pub fn interval(e: &Value) -> String {
    let first = first_seen(e);
    if e.get("series").is_some_and(Value::is_object) {
        return format!(
            "{} (x{} over {first})",
            since(s(e, "/series/lastObservedTime")),
            int(e, "/series/count")
        );
    }
    let count = int(e, "/count");
    if count > 1 {
        return format!("{} (x{count} over {first})", since(s(e, "/lastTimestamp")));
    }
    first
}

/// `DescribeEvents`.
pub fn describe(w: &mut PrefixWriter, events: &[Value]) {
    if events.is_empty() {
        w.write(0, "Events:\t<none>\n");
        return;
    }
    let mut sorted: Vec<&Value> = events.iter().collect();
    sorted.sort_by_key(|e| sort_key(e));
    w.write(0, "Events:\n  Type\tReason\tAge\tFrom\tMessage\n");
    w.write(1, "----\t------\t----\t----\t-------\n");
    for e in sorted {
        let mut source = s(e, "/source/component");
        if source.is_empty() {
            source = s(e, "/reportingComponent");
        }
        // kubectl 1.33 leaves `involvedObject.fieldPath` out of the message (later ones add it).
        let message = s(e, "/message").trim();
        w.write(
            1,
            &format!(
                "{}\t{}\t{}\t{source}\t{message}\n",
                s(e, "/type"),
                s(e, "/reason"),
                interval(e)
            ),
        );
    }
}
