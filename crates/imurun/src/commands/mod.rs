//! One module per subcommand, and what several of them read.

use std::path::Path;

use anyhow::{Context, Result, bail};
use imurun_core::ToolSpec;

pub(crate) mod ask;
pub(crate) mod chat;
pub(crate) mod config;
pub(crate) mod eval;
pub(crate) mod model;
pub(crate) mod parse;
pub(crate) mod policy;
pub(crate) mod tools;

/// A tools file: a JSON array of `{name, description, parameters}`.
pub(crate) fn read_tools(path: &Path) -> Result<Vec<ToolSpec>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the tools file {}", path.display()))?;
    let specs: Vec<ToolSpec> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: expected a JSON array of {{name, description, parameters}}",
            path.display()
        )
    })?;
    if let Some(bad) = specs.iter().find(|spec| spec.name.trim().is_empty()) {
        bail!("{}: a tool has an empty name ({bad:?})", path.display());
    }
    Ok(specs)
}
