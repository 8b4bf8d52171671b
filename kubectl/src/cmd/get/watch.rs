//! `get -w` / `--watch-only`: the listing (unless watch-only), then one line (or object) per
//! event from a watch starting at the listing's resourceVersion.

use super::GetArgs;
use crate::factory::{Factory, TABLE_ACCEPT};
use crate::printers::table::{self, TableOptions};
use crate::printers::{self, OutputFormat, tabwriter};
use crate::resource::{self, Resolved, Selection};
use futures::StreamExt;
use serde_json::Value;
use std::io::Write;

pub async fn run(
    factory: &Factory,
    args: &GetArgs,
    format: &OutputFormat,
    sel: &Selection,
    resolved: &Resolved,
) -> anyhow::Result<()> {
    if resolved.infos.len() != 1 {
        anyhow::bail!(
            "watch is only supported on individual resources and resource collections, but {} resources were found",
            resolved.infos.len()
        );
    }
    let info = &resolved.infos[0];
    let use_table = format.is_table();
    let accept = use_table.then_some(TABLE_ACCEPT);
    let options = TableOptions {
        wide: matches!(format, OutputFormat::Table { wide: true }),
        no_headers: args.no_headers,
        show_labels: args.show_labels,
        label_columns: args.label_columns.clone(),
        with_namespace: args.all_namespaces,
        kind_prefix: args.show_kind.then(|| info.resource.kind_prefix()),
    };
    let mut collection = info.clone();
    let mut sel = sel.clone();
    if let Some(name) = &info.name {
        // Upstream reads the named object first: a missing one is an error, not an empty watch.
        factory.get(&info.path()).await?;
        collection.name = None;
        sel.field_selector = Some(format!("metadata.name={name}"));
    }
    let pages = resource::list_pages(factory, &collection, &sel, accept, &[]).await?;
    let resource_version = pages
        .last()
        .and_then(|p| p.pointer("/metadata/resourceVersion"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let mut header_printed = false;
    let mut aligner = tabwriter::Aligner::default();
    let mut columns: Option<Value> = pages
        .first()
        .and_then(|p| p.get("columnDefinitions"))
        .cloned();
    let mut stdout = std::io::stdout();
    if !args.watch_only {
        if use_table {
            let mut rows = Vec::new();
            for page in &pages {
                let page_rows = table::rows(page, &options, !header_printed);
                rows.extend(with_event(page_rows, "ADDED", !header_printed, args));
                header_printed = true;
            }
            stdout.write_all(aligner.align(&rows).as_bytes())?;
        } else {
            for object in resource::items_of(&info.resource, &pages) {
                stdout.write_all(
                    print_event(format, args, &info.resource, "ADDED", object)?.as_bytes(),
                )?;
            }
        }
        stdout.flush()?;
    }
    let mut query: Vec<(String, String)> = vec![("watch".into(), "true".into())];
    if !resource_version.is_empty() {
        query.push(("resourceVersion".into(), resource_version));
    }
    if let Some(s) = sel.selector.as_deref().filter(|s| !s.is_empty()) {
        query.push(("labelSelector".into(), s.into()));
    }
    if let Some(s) = sel.field_selector.as_deref().filter(|s| !s.is_empty()) {
        query.push(("fieldSelector".into(), s.into()));
    }
    let url = resource::with_query(&collection.path(), &query);
    let mut events = Box::pin(factory.watch(&url, accept).await?);
    while let Some(event) = events.next().await {
        let (kind, object) = event?;
        if kind == "BOOKMARK" {
            continue;
        }
        let text = if use_table {
            // The server sends the column definitions with the first event only.
            let mut object = object;
            match object.get("columnDefinitions") {
                Some(Value::Array(defs)) if !defs.is_empty() => columns = Some(defs.clone().into()),
                _ => {
                    if let (Some(defs), Some(o)) = (&columns, object.as_object_mut()) {
                        o.insert("columnDefinitions".into(), defs.clone());
                    }
                }
            }
            let rows = with_event(
                table::rows(&object, &options, !header_printed),
                &kind,
                !header_printed,
                args,
            );
            header_printed = true;
            aligner.align(&rows)
        } else {
            let mut object = object;
            if let Some(o) = object.as_object_mut() {
                o.insert(
                    "apiVersion".into(),
                    Value::String(info.resource.group_version()),
                );
                o.insert("kind".into(), Value::String(info.resource.kind.clone()));
            }
            print_event(format, args, &info.resource, &kind, object)?
        };
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
    }
    Ok(())
}

/// `--output-watch-events`: an EVENT column before the others.
fn with_event(
    rows: Vec<Vec<String>>,
    kind: &str,
    header: bool,
    args: &GetArgs,
) -> Vec<Vec<String>> {
    if !args.output_watch_events {
        return rows;
    }
    rows.into_iter()
        .enumerate()
        .map(|(i, mut row)| {
            let cell = if header && i == 0 && !args.no_headers {
                "EVENT"
            } else {
                kind
            };
            // Upstream pads the type to the longest one (MODIFIED), so the column never moves.
            row.insert(0, format!("{cell:<8}"));
            row
        })
        .collect()
}

/// One watched object; with `--output-watch-events -o json`, upstream's compact event line.
fn print_event(
    format: &OutputFormat,
    args: &GetArgs,
    resource: &crate::discovery::ApiResource,
    kind: &str,
    object: Value,
) -> anyhow::Result<String> {
    if args.output_watch_events && matches!(format, OutputFormat::Json) {
        let event = serde_json::json!({"type": kind, "object": object});
        // Go's encoder writes the event struct's fields in declaration order: type, object.
        let object_text = serde_json::to_string(&event["object"])?;
        return Ok(format!(
            "{{\"type\":{},\"object\":{object_text}}}\n",
            serde_json::to_string(kind)?
        ));
    }
    let mut object = object;
    // As upstream's OmitManagedFieldsPrinter (a watch event wrapper keeps them, above).
    if !args.show_managed_fields && matches!(format, OutputFormat::Json | OutputFormat::Yaml) {
        printers::strip_managed_fields(&mut object);
    }
    printers::print_objects(format, &[(resource.clone(), object)], true)
}
