//! `kubectl api-versions`: every served `group/version`, sorted.

use crate::app::options::GlobalOptions;
use crate::factory::Factory;
use std::io::Write as _;

/// Flags of `kubectl api-versions`.
#[derive(Debug, Clone, clap::Args)]
pub struct ApiVersionsArgs {}

pub async fn run(global: &GlobalOptions, _args: &ApiVersionsArgs) -> anyhow::Result<()> {
    let factory = Factory::new(global).await?;
    let groups = factory.discovery().groups(true).await?;
    let mut versions: Vec<String> = groups.into_iter().flat_map(|g| g.versions).collect();
    versions.sort();
    versions.dedup();
    let mut out = String::new();
    for version in versions {
        out.push_str(&version);
        out.push('\n');
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}
