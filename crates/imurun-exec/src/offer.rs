//! The per-turn offer: which grouped tools (connector services) the prompt lists for one
//! question.
//!
//! When more than [`CONNECTOR_TOOLS_OFFERED_MAX`] grouped tools are available, the prompt
//! lists only the groups the question or the last [`RECENT_MESSAGES_CUED`] messages point
//! at, and names the other available groups in one line. Hidden tools stay in the index
//! (runnable, `offered: false`), so a call by name or alias still runs. Tools outside every
//! group (built-in, MCP) keep the registry's flag: they are never hidden here.

use std::collections::HashSet;
use std::sync::Arc;

use imurun_core::{ToolGroup, ToolIndex};

use crate::Registry;

/// Up to this many available grouped tools, all of them are offered: a small model
/// chooses well among a few tools and badly among many.
pub const CONNECTOR_TOOLS_OFFERED_MAX: usize = 8;

/// A cue in one of this many most recent messages still points at its service.
pub const RECENT_MESSAGES_CUED: usize = 6;

/// What one turn offers.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The registry's index with this turn's `offered` flags.
    pub index: ToolIndex,
    /// Display names of the available groups this turn does not list, in registration order.
    pub others: Vec<String>,
}

impl Offer {
    /// The line that names the hidden services, or `None` when none is hidden.
    pub fn others_line(&self) -> Option<String> {
        others_line(&self.others)
    }
}

/// "Also connected, ask to use them: Gmail, Cloudflare." for `others`, or `None` when empty.
pub fn others_line(others: &[String]) -> Option<String> {
    (!others.is_empty()).then(|| format!("Also connected, ask to use them: {}.", others.join(", ")))
}

/// The offer for `question`, with `recent` the earlier messages, oldest first.
pub(crate) fn offer(registry: &Registry, question: &str, recent: &[&str]) -> Offer {
    let mut index = registry.index().clone();
    // (tool name, its group, whether it is available), in the registry's order.
    let grouped: Vec<(&str, &Arc<dyn ToolGroup>, bool)> = registry
        .index()
        .runnable()
        .filter_map(|indexed| {
            let name = indexed.spec.name.as_str();
            let group = registry.group_of(name)?;
            Some((name, group, !registry.is_unconnected(name)))
        })
        .collect();
    // A grouped tool that cannot run (its service is not connected) is never listed: it
    // would only cost prompt tokens. Named, it still resolves and fails saying what to set.
    for &(name, _, available) in &grouped {
        if !available && let Some(indexed) = index.get(name) {
            let spec = indexed.spec.clone();
            index.insert(spec, false);
        }
    }
    let available_count = grouped.iter().filter(|(_, _, ready)| *ready).count();
    if available_count <= CONNECTOR_TOOLS_OFFERED_MAX {
        return Offer {
            index,
            others: Vec::new(),
        };
    }

    let recent = &recent[recent.len().saturating_sub(RECENT_MESSAGES_CUED)..];
    let mut groups: Vec<&Arc<dyn ToolGroup>> = Vec::new();
    for (_, group, _) in &grouped {
        if !groups.iter().any(|seen| seen.id() == group.id()) {
            groups.push(group);
        }
    }
    let pointed: HashSet<&str> = groups
        .iter()
        .filter(|group| {
            group.points_at(question) || recent.iter().any(|text| group.points_at(text))
        })
        .map(|group| group.id())
        .collect();

    let mut hidden_available: HashSet<&str> = HashSet::new();
    let updates: Vec<_> = grouped
        .iter()
        .filter_map(|&(name, group, available)| {
            let indexed = index.get(name)?;
            let offered = indexed.offered && available && pointed.contains(group.id());
            if !pointed.contains(group.id()) && available {
                hidden_available.insert(group.id());
            }
            Some((indexed.spec.clone(), offered))
        })
        .collect();
    for (spec, offered) in updates {
        // `insert` replaces in place, so aliases keep pointing at the tool.
        index.insert(spec, offered);
    }
    let others = groups
        .iter()
        .filter(|group| hidden_available.contains(group.id()))
        .map(|group| group.display_name().to_owned())
        .collect();
    Offer { index, others }
}
