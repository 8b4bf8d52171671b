//! `kubectl get`: objects by type, name, `-f` or selector, printed from the server's Table
//! (default, `-o wide`) or as json/yaml/name/jsonpath/custom-columns; `-w`/`--watch-only`.

mod sort;
mod watch;

use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::errors::{ApiError, Reported};
use crate::factory::{Factory, TABLE_ACCEPT};
use crate::printers::table::{self, TableOptions};
use crate::printers::{self, OutputFormat, tabwriter};
use crate::resource::{self, Info, Selection};
use clap::Args;
use serde_json::Value;
use std::io::Write;

/// Flags of `kubectl get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// TYPE[.VERSION][.GROUP] [NAME ...] | TYPE[.VERSION][.GROUP]/NAME ...
    pub args: Vec<String>,
    /// Output format: json, yaml, name, wide, jsonpath=..., jsonpath-file=...,
    /// custom-columns=..., custom-columns-file=...
    #[arg(short = 'o', long, value_name = "string")]
    pub output: Option<String>,
    /// Filename, directory, or URL to files identifying the resource to get from a server.
    #[arg(short = 'f', long = "filename", value_name = "strings")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Selector (label query) to filter on, supports '=', '==', '!=', 'in', 'notin'.
    #[arg(short = 'l', long, value_name = "string")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on, supports '=', '==', and '!='.
    #[arg(long, value_name = "string")]
    pub field_selector: Option<String>,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// Return large lists in chunks rather than all at once. Pass 0 to disable.
    #[arg(long, default_value_t = 500, value_name = "int")]
    pub chunk_size: i64,
    /// After listing/getting the requested object, watch for changes.
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Watch for changes to the requested object(s), without listing/getting first.
    #[arg(long)]
    pub watch_only: bool,
    /// Accepts a comma separated list of labels that are going to be presented as columns.
    #[arg(
        short = 'L',
        long = "label-columns",
        value_delimiter = ',',
        value_name = "strings"
    )]
    pub label_columns: Vec<String>,
    /// When printing, show all labels as the last column.
    #[arg(long)]
    pub show_labels: bool,
    /// When using the default or custom-column output format, don't print headers.
    #[arg(long)]
    pub no_headers: bool,
    /// If non-empty, sort list types using this field specification (a JSONPath expression).
    #[arg(long, value_name = "string")]
    pub sort_by: Option<String>,
    /// If set to true, suppress NotFound error for specific objects that do not exist.
    #[arg(long)]
    pub ignore_not_found: bool,
    /// If present, list the resource type for the requested object(s).
    #[arg(long)]
    pub show_kind: bool,
    /// Raw URI to request from the server. Uses the transport specified by the kubeconfig
    /// file.
    #[arg(long, value_name = "string")]
    pub raw: Option<String>,
    /// Output watch event objects when --watch or --watch-only is used.
    #[arg(long)]
    pub output_watch_events: bool,
    /// If true, keep the managedFields when printing objects in JSON or YAML format.
    #[arg(long)]
    pub show_managed_fields: bool,
    /// Template string or path to template file to use when -o=go-template,
    /// -o=go-template-file. The template format is golang templates
    /// [http://golang.org/pkg/text/template/#pkg-overview].
    #[arg(long, value_name = "string")]
    pub template: Option<String>,
    /// If true, ignore any errors in templates when a field or map key is missing in the
    /// template. Only applies to golang and jsonpath output formats.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true", require_equals = true, value_name = "bool")]
    pub allow_missing_template_keys: bool,
}

/// One resource type's share of the output.
struct Group {
    resource: ApiResource,
    tables: Vec<Value>,
    objects: Vec<Value>,
}

pub async fn run(global: &GlobalOptions, args: &GetArgs) -> anyhow::Result<()> {
    let mut format = OutputFormat::parse_with_template(
        args.output.as_deref(),
        args.template.as_deref(),
        args.allow_missing_template_keys,
    )?;
    if let OutputFormat::CustomColumns(c) = &mut format {
        c.no_headers = args.no_headers;
    }
    let sort = args
        .sort_by
        .as_deref()
        .map(sort::SortBy::parse)
        .transpose()?;
    let factory = Factory::new(global).await?;
    if let Some(raw) = &args.raw {
        anyhow::ensure!(
            args.args.is_empty() && args.filenames.is_empty(),
            "arguments may not be passed when --raw is specified"
        );
        let body = factory
            .request_text(http::Method::GET, raw, None, Some("application/json, */*"))
            .await?;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(body.as_bytes())?;
        return Ok(stdout.flush()?);
    }
    let sel = Selection {
        filenames: args.filenames.clone(),
        recursive: args.recursive,
        selector: args.selector.clone(),
        field_selector: args.field_selector.clone(),
        all_namespaces: args.all_namespaces,
        all: false,
        chunk_size: args.chunk_size,
    };
    if args.args.is_empty() && args.filenames.is_empty() {
        anyhow::bail!(
            "Required resource not specified.\nUse \"kubectl explain <resource>\" for a detailed description of that resource (e.g. kubectl explain pods).\nSee 'kubectl get -h' for help and examples"
        );
    }
    let resolved = resource::resolve(&factory, &args.args, &sel).await?;
    if args.watch || args.watch_only {
        return watch::run(&factory, args, &format, &sel, &resolved).await;
    }
    let use_table = format.is_table();
    let mut errors = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    for info in &resolved.infos {
        let fetched = fetch(&factory, info, &sel, use_table, sort.is_some()).await;
        let (tables, objects) = match fetched {
            Ok(found) => found,
            Err(err) => {
                let not_found = err
                    .downcast_ref::<ApiError>()
                    .is_some_and(ApiError::is_not_found);
                if !(args.ignore_not_found && not_found) {
                    errors.push(err);
                }
                continue;
            }
        };
        let key = info.resource.group_resource();
        match groups
            .iter_mut()
            .find(|g| g.resource.group_resource() == key)
        {
            Some(g) => {
                g.tables.extend(tables);
                g.objects.extend(objects);
            }
            None => groups.push(Group {
                resource: info.resource.clone(),
                tables,
                objects,
            }),
        }
    }
    let mut out = String::new();
    let mut printed = false;
    if use_table {
        // Upstream decides on the types actually fetched: a failed name does not count.
        let with_kind = groups.len() > 1 || args.show_kind;
        let mut rows: Vec<Vec<String>> = Vec::new();
        for group in &mut groups {
            let mut merged = merge_tables(&group.tables);
            if let Some(sort) = &sort {
                sort.sort_table(&mut merged)?;
            }
            let options = TableOptions {
                wide: matches!(format, OutputFormat::Table { wide: true }),
                no_headers: args.no_headers,
                show_labels: args.show_labels,
                label_columns: args.label_columns.clone(),
                with_namespace: args.all_namespaces,
                kind_prefix: with_kind.then(|| group.resource.kind_prefix()),
            };
            let group_rows = table::rows(&merged, &options, true);
            let data_rows = group_rows.len() - usize::from(!args.no_headers);
            if data_rows == 0 {
                continue;
            }
            if printed {
                rows.push(Vec::new());
            }
            printed = true;
            rows.extend(group_rows);
        }
        out = tabwriter::align(&rows);
    } else {
        let mut all: Vec<(ApiResource, Value)> = Vec::new();
        for group in &groups {
            let mut objects = group.objects.clone();
            // Only upstream's json and yaml printers drop managedFields (templates see them).
            if !args.show_managed_fields
                && matches!(format, OutputFormat::Json | OutputFormat::Yaml)
            {
                objects.iter_mut().for_each(printers::strip_managed_fields);
            }
            if let Some(sort) = &sort {
                sort.sort_objects(&mut objects)?;
            }
            all.extend(objects.into_iter().map(|o| (group.resource.clone(), o)));
        }
        printed = !all.is_empty();
        // json/yaml of an empty result still prints an empty List, as upstream does.
        // A single named object that failed prints nothing, not an empty List.
        let failed_single = resolved.single && !errors.is_empty();
        if printed || !(matches!(format, OutputFormat::Name) || failed_single) {
            out = printers::print_objects(&format, &all, resolved.single)?;
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    if !printed && errors.is_empty() && use_table && !args.ignore_not_found {
        let namespaced = resolved.infos.iter().any(|i| i.resource.namespaced);
        if args.all_namespaces || !namespaced {
            eprintln!("No resources found");
        } else {
            eprintln!("No resources found in {} namespace.", factory.namespace());
        }
    }
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => Err(Reported(errors).into()),
    }
}

/// Fetches one info: tables (for the table printer) or objects.
async fn fetch(
    factory: &Factory,
    info: &Info,
    sel: &Selection,
    table: bool,
    full_objects: bool,
) -> anyhow::Result<(Vec<Value>, Vec<Value>)> {
    let accept = table.then_some(TABLE_ACCEPT);
    let include: &[(&str, &str)] = if table && full_objects {
        &[("includeObject", "Object")]
    } else {
        &[]
    };
    if info.name.is_some() {
        let query: Vec<(String, String)> = include
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        let url = resource::with_query(&info.path(), &query);
        let found = factory.get_as(&url, accept).await?;
        return Ok(if table {
            (vec![found], vec![])
        } else {
            (vec![], vec![found])
        });
    }
    let pages = resource::list_pages(factory, info, sel, accept, include).await?;
    Ok(if table {
        (pages, vec![])
    } else {
        (vec![], resource::items_of(&info.resource, &pages))
    })
}

/// One table from several (pages, or one per named object): the first's columns, every row.
fn merge_tables(tables: &[Value]) -> Value {
    let mut merged = tables.first().cloned().unwrap_or(Value::Null);
    let rows: Vec<Value> = tables
        .iter()
        .flat_map(|t| {
            t.get("rows")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    if let Some(obj) = merged.as_object_mut() {
        obj.insert("rows".into(), Value::Array(rows));
    }
    merged
}
