//! `kubectl events`: the core/v1 events of a namespace (or all, `-A`), optionally about one
//! object (`--for TYPE/NAME`) and of some types (`--types`), oldest first, as the
//! `LAST SEEN TYPE REASON OBJECT MESSAGE` table or `-o json|yaml|name|jsonpath`; `-w` watches.

mod typed;

use crate::app::options::GlobalOptions;
use crate::cmd::describe::{event_interval, parse_time};
use crate::factory::Factory;
use crate::printers::{self, OutputFormat, tabwriter};
use crate::resource::{self, Info, Selection};
use clap::Args;
use futures::StreamExt;
use serde_json::Value;
use std::io::Write;

/// Flags of `kubectl events`.
#[derive(Debug, Clone, Args)]
pub struct EventsArgs {
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Filter events to only those pertaining to the specified resource.
    #[arg(long = "for", value_name = "string")]
    pub for_object: Option<String>,
    /// Output only events of given types.
    #[arg(long, value_delimiter = ',', value_name = "strings")]
    pub types: Vec<String>,
    /// After listing the requested events, watch for more events.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// When using the default output format, don't print headers.
    #[arg(long)]
    pub no_headers: bool,
    #[command(flatten)]
    pub print: crate::cmd::print_flags::PrintFlags,
    /// Return large lists in chunks rather than all at once. Pass 0 to disable.
    #[arg(long, default_value_t = 500, value_name = "int")]
    pub chunk_size: i64,
}

pub async fn run(global: &GlobalOptions, args: &EventsArgs) -> anyhow::Result<()> {
    let print = &args.print;
    let format = match print.output.as_deref() {
        Some(o) if o == "wide" || o.starts_with("custom-columns") => anyhow::bail!(
            "unable to match a printer suitable for the output format \"{o}\", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"
        ),
        other => OutputFormat::parse_with_template(
            other,
            print.template.as_deref(),
            print.allow_missing_template_keys,
        )
        .map_err(|err| {
            anyhow::anyhow!(
                "{}",
                err.to_string()
                    .replace("custom-columns,custom-columns-file,", "")
                    .replace(",wide,yaml", ",yaml")
            )
        })?,
    };
    let mut types: Vec<String> = Vec::new();
    for t in args.types.iter().filter(|t| !t.is_empty()) {
        let canonical = match t.to_lowercase().as_str() {
            "normal" => "Normal",
            "warning" => "Warning",
            _ => anyhow::bail!("valid --types are Normal or Warning"),
        };
        types.push(canonical.to_owned());
    }
    let factory = Factory::new(global).await?;
    let mut field_selector = None;
    if let Some(target) = args.for_object.as_deref().filter(|f| !f.is_empty()) {
        let Some((kind, name)) = target.split_once('/') else {
            anyhow::bail!("--for must be in resource/name form");
        };
        let discovery = factory.discovery();
        let mut mapper = discovery.mapper().await?;
        let resource = match mapper.resolve(kind) {
            Some(r) => r,
            None => {
                mapper = discovery.refreshed_mapper().await?;
                match mapper.resolve(kind) {
                    Some(r) => r,
                    None => {
                        // Upstream prints a no-match error bare, without `error: `.
                        eprintln!("the server doesn't have a resource type \"{kind}\"");
                        std::process::exit(1);
                    }
                }
            }
        };
        field_selector = Some(format!(
            "involvedObject.kind={},involvedObject.apiVersion={},involvedObject.name={name}",
            resource.kind,
            resource.group_version()
        ));
    }
    let mapper = factory.discovery().mapper().await?;
    let events = mapper
        .resolve("events")
        .ok_or_else(|| anyhow::anyhow!("the server doesn't have a resource type \"events\""))?;
    let info = Info {
        namespace: (!args.all_namespaces).then(|| factory.namespace().to_owned()),
        resource: events.clone(),
        name: None,
        object: None,
        source: None,
    };
    let sel = Selection {
        field_selector,
        chunk_size: args.chunk_size,
        ..Selection::default()
    };
    let wanted = |e: &Value| {
        let t = e.get("type").and_then(Value::as_str).unwrap_or("");
        types.is_empty() || types.iter().any(|w| w.eq_ignore_ascii_case(t))
    };
    if args.watch {
        return watch(&factory, &info, &sel, args, &format, &wanted).await;
    }
    let pages = resource::list_pages(&factory, &info, &sel, None, &[]).await?;
    let mut items: Vec<Value> = resource::items_of(&events, &pages)
        .into_iter()
        .filter(|e| wanted(e))
        .map(|e| typed::typed_event(e, keep_managed(args, &format)))
        .collect();
    if items.is_empty() {
        if args.all_namespaces {
            eprintln!("No events found.");
        } else {
            eprintln!("No events found in {} namespace.", factory.namespace());
        }
        return Ok(());
    }
    items.sort_by_key(sort_time);
    let out = match &format {
        OutputFormat::Table { .. } => {
            let mut rows = Vec::new();
            if !args.no_headers {
                rows.push(header(args.all_namespaces));
            }
            rows.extend(items.iter().map(|e| row(e, args.all_namespaces)));
            tabwriter::align(&rows)
        }
        OutputFormat::Json => typed::to_json(&typed::event_list(items)),
        OutputFormat::Yaml => printers::yaml::to_go_yaml(&typed::event_list(items)),
        // Upstream's name printer finds nothing to name in the typed EventList.
        OutputFormat::Name => String::new(),
        OutputFormat::JsonPath(t) => t
            .render(&typed::event_list(items))
            .map_err(|err| anyhow::anyhow!("error executing jsonpath: {err}"))?,
        OutputFormat::GoTemplate(t) => printers::render_go_template(t, &typed::event_list(items))?,
        OutputFormat::CustomColumns(_) => unreachable_format()?,
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    Ok(stdout.flush()?)
}

/// Only upstream's json and yaml printers drop managedFields, unless --show-managed-fields.
fn keep_managed(args: &EventsArgs, format: &OutputFormat) -> bool {
    args.print.show_managed_fields || !matches!(format, OutputFormat::Json | OutputFormat::Yaml)
}

fn unreachable_format() -> anyhow::Result<String> {
    anyhow::bail!("custom-columns output is not supported by kubectl events")
}

/// The time upstream sorts by: the series' last sighting, else `lastTimestamp`, else
/// `eventTime`.
fn sort_time(e: &Value) -> i64 {
    let text = |p: &str| e.pointer(p).and_then(Value::as_str).unwrap_or("");
    let t = if e.get("series").is_some_and(Value::is_object) {
        text("/series/lastObservedTime")
    } else if !text("/lastTimestamp").is_empty() {
        text("/lastTimestamp")
    } else {
        text("/eventTime")
    };
    parse_time(t).unwrap_or(i64::MIN)
}

fn header(all_namespaces: bool) -> Vec<String> {
    let mut cells: Vec<String> = Vec::new();
    if all_namespaces {
        cells.push("NAMESPACE".into());
    }
    cells.extend(
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
            .iter()
            .map(|s| s.to_string()),
    );
    cells
}

fn row(e: &Value, all_namespaces: bool) -> Vec<String> {
    let text = |p: &str| {
        e.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut cells = Vec::new();
    if all_namespaces {
        cells.push(text("/metadata/namespace"));
    }
    cells.push(event_interval(e));
    cells.push(text("/type"));
    cells.push(text("/reason"));
    cells.push(format!(
        "{}/{}",
        text("/involvedObject/kind"),
        text("/involvedObject/name")
    ));
    cells.push(text("/message").trim().to_owned());
    cells
}

/// `-w`: upstream watches without listing first (the watch's initial events stand in for
/// the list) and prints every added or modified event of the wanted types as it comes.
async fn watch(
    factory: &Factory,
    info: &Info,
    sel: &Selection,
    args: &EventsArgs,
    format: &OutputFormat,
    wanted: &dyn Fn(&Value) -> bool,
) -> anyhow::Result<()> {
    let mut query: Vec<(String, String)> = vec![("watch".into(), "true".into())];
    if let Some(f) = &sel.field_selector {
        query.push(("fieldSelector".into(), f.clone()));
    }
    let url = resource::with_query(&info.path(), &query);
    let mut stream = Box::pin(factory.watch(&url, None).await?);
    let mut headers_due = !args.no_headers;
    // kubectl's tabwriter remembers column widths across flushes, so later lines stay aligned.
    let mut aligner = tabwriter::Aligner::default();
    while let Some(event) = stream.next().await {
        let (kind, object) = event?;
        if kind == "DELETED" || kind == "BOOKMARK" || !wanted(&object) {
            continue;
        }
        let object = typed::typed_event(object, keep_managed(args, format));
        let text = match format {
            OutputFormat::Table { .. } => {
                let mut rows = Vec::new();
                if headers_due {
                    rows.push(header(args.all_namespaces));
                    headers_due = false;
                }
                rows.push(row(&object, args.all_namespaces));
                aligner.align(&rows)
            }
            OutputFormat::Json => typed::to_json(&object),
            OutputFormat::Yaml => format!("{}---\n", printers::yaml::to_go_yaml(&object)),
            OutputFormat::Name => String::new(),
            OutputFormat::JsonPath(t) => t
                .render(&object)
                .map_err(|err| anyhow::anyhow!("error executing jsonpath: {err}"))?,
            OutputFormat::GoTemplate(t) => printers::render_go_template(t, &object)?,
            OutputFormat::CustomColumns(_) => unreachable_format()?,
        };
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
    }
    Ok(())
}
