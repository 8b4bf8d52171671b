//! `kubectl api-resources`: the served resources (preferred versions) sorted by group then
//! name, as a table, `-o wide` (verbs, categories) or `-o name`.

use crate::app::options::GlobalOptions;
use crate::discovery::ApiResource;
use crate::factory::Factory;
use crate::printers::tabwriter;
use clap::Args;

/// Flags of `kubectl api-resources`.
#[derive(Debug, Clone, Args)]
pub struct ApiResourcesArgs {
    /// Output format. One of: (wide, name).
    #[arg(short = 'o', long, value_name = "string")]
    pub output: Option<String>,
    /// If false, non-namespaced resources will be returned, otherwise returning namespaced
    /// resources by default.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "bool")]
    pub namespaced: Option<bool>,
    /// Limit to resources in the specified API group.
    #[arg(long, value_name = "string")]
    pub api_group: Option<String>,
    /// Limit to resources that support the specified verbs.
    #[arg(long, value_delimiter = ',', value_name = "strings")]
    pub verbs: Vec<String>,
    /// When using the default or custom-column output format, don't print headers.
    #[arg(long)]
    pub no_headers: bool,
    /// If non-empty, sort list of resources using specified field. One of (name, kind).
    #[arg(long, value_name = "string")]
    pub sort_by: Option<String>,
    /// Limit to resources that belong to the specified categories.
    #[arg(long, value_delimiter = ',', value_name = "strings")]
    pub categories: Vec<String>,
}

pub async fn run(global: &GlobalOptions, args: &ApiResourcesArgs) -> anyhow::Result<()> {
    let output = args.output.as_deref().unwrap_or("");
    if !matches!(output, "" | "wide" | "name") {
        anyhow::bail!("--output {output} is not available");
    }
    if let Some(s) = args.sort_by.as_deref()
        && !matches!(s, "name" | "kind")
    {
        anyhow::bail!("--sort-by accepts only name or kind");
    }
    let factory = Factory::new(global).await?;
    let mapper = factory.discovery().refreshed_mapper().await?;
    let mut resources: Vec<&ApiResource> = mapper
        .resources()
        .iter()
        .filter(|r| r.preferred && !r.verbs.is_empty())
        .filter(|r| args.namespaced.is_none_or(|n| r.namespaced == n))
        .filter(|r| args.api_group.as_deref().is_none_or(|g| r.group == g))
        .filter(|r| args.verbs.iter().all(|v| r.has_verb(v)))
        .filter(|r| args.categories.iter().all(|c| r.categories.contains(c)))
        .collect();
    print!(
        "{}",
        render(
            &mut resources,
            output,
            args.no_headers,
            args.sort_by.as_deref()
        )
    );
    Ok(())
}

/// The output for `resources`, sorted as upstream sorts them.
fn render(
    resources: &mut Vec<&ApiResource>,
    output: &str,
    no_headers: bool,
    sort_by: Option<&str>,
) -> String {
    resources.sort_by(|a, b| {
        let primary = match sort_by {
            Some("name") => a.name.cmp(&b.name),
            Some("kind") => a.kind.cmp(&b.kind),
            _ => a.group.cmp(&b.group),
        };
        primary.then_with(|| a.name.cmp(&b.name))
    });
    if output == "name" {
        return resources
            .iter()
            .map(|r| format!("{}\n", r.group_resource()))
            .collect();
    }
    let wide = output == "wide";
    let mut rows = Vec::new();
    if !no_headers {
        let mut header = vec!["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"];
        if wide {
            header.extend(["VERBS", "CATEGORIES"]);
        }
        rows.push(header.into_iter().map(str::to_owned).collect());
    }
    for r in resources.iter() {
        let mut row = vec![
            r.name.clone(),
            r.short_names.join(","),
            r.group_version(),
            r.namespaced.to_string(),
            r.kind.clone(),
        ];
        if wide {
            let mut verbs = r.verbs.clone();
            verbs.sort();
            row.push(verbs.join(","));
            row.push(r.categories.join(","));
        }
        rows.push(row);
    }
    tabwriter::align(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(group: &str, name: &str, short: &[&str]) -> ApiResource {
        ApiResource {
            name: name.into(),
            singular: String::new(),
            namespaced: true,
            group: group.into(),
            version: "v1".into(),
            kind: "K".into(),
            verbs: vec!["list".into(), "get".into()],
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: vec!["all".into()],
            preferred: true,
        }
    }

    #[test]
    fn sorted_by_group_then_name() {
        let (a, b, c) = (
            res("apps", "deployments", &["deploy"]),
            res("", "pods", &["po"]),
            res("", "configmaps", &[]),
        );
        let mut list = vec![&a, &b, &c];
        assert_eq!(
            render(&mut list, "name", false, None),
            "configmaps\npods\ndeployments.apps\n"
        );
        let wide = render(&mut list, "wide", false, None);
        assert!(wide.starts_with("NAME          SHORTNAMES   APIVERSION   NAMESPACED   KIND   VERBS      CATEGORIES\n"), "{wide}");
        assert!(
            wide.contains(
                "pods          po           v1           true         K      get,list   all\n"
            ),
            "{wide}"
        );
    }
}
