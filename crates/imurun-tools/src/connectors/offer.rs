//! The per-turn offer: which connector tools the prompt lists for one question.
//!
//! When more than [`CONNECTOR_TOOLS_OFFERED_MAX`] connector tools are available, the prompt
//! lists only the services the question or the last [`RECENT_MESSAGES_CUED`] messages point
//! at, and names the other available services in one line. Hidden tools stay in the index
//! (runnable, `offered: false`), so a call by name or alias still runs. Tools that are not
//! connector tools (built-in, MCP) keep the registry's flag: they are never hidden here.

use std::collections::HashSet;

use imurun_core::ToolIndex;

use super::Service;
use super::cues::points_at;
use crate::Registry;

/// Up to this many available connector tools, all of them are offered: a small model
/// chooses well among a few tools and badly among many.
pub const CONNECTOR_TOOLS_OFFERED_MAX: usize = 8;

/// A cue in one of this many most recent messages still points at its service.
pub const RECENT_MESSAGES_CUED: usize = 6;

/// What one turn offers.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The registry's index with this turn's `offered` flags.
    pub index: ToolIndex,
    /// Display names of the available services this turn does not list, in declaration order.
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
    // (tool name, its service, whether it is available), in the registry's order.
    let connectors: Vec<(&str, &'static Service, bool)> = registry
        .index()
        .runnable()
        .filter_map(|indexed| {
            let name = indexed.spec.name.as_str();
            let service = registry.service_of(name)?;
            Some((name, service, !registry.is_unconnected(name)))
        })
        .collect();
    // A connector tool that cannot run (its service is not connected) is never listed: it
    // would only cost prompt tokens. Named, it still resolves and fails saying what to set.
    for &(name, _, available) in &connectors {
        if !available && let Some(indexed) = index.get(name) {
            let spec = indexed.spec.clone();
            index.insert(spec, false);
        }
    }
    let available_count = connectors.iter().filter(|(_, _, ready)| *ready).count();
    if available_count <= CONNECTOR_TOOLS_OFFERED_MAX {
        return Offer {
            index,
            others: Vec::new(),
        };
    }

    let recent = &recent[recent.len().saturating_sub(RECENT_MESSAGES_CUED)..];
    let mut services: Vec<&'static Service> = Vec::new();
    for (_, service, _) in &connectors {
        if !services.iter().any(|seen| seen.id == service.id) {
            services.push(service);
        }
    }
    let pointed: HashSet<&str> = services
        .iter()
        .filter(|service| {
            points_at(service, question) || recent.iter().any(|text| points_at(service, text))
        })
        .map(|service| service.id)
        .collect();

    let mut hidden_available: HashSet<&str> = HashSet::new();
    let updates: Vec<_> = connectors
        .iter()
        .filter_map(|&(name, service, available)| {
            let indexed = index.get(name)?;
            let offered = indexed.offered && available && pointed.contains(service.id);
            if !pointed.contains(service.id) && available {
                hidden_available.insert(service.id);
            }
            Some((indexed.spec.clone(), offered))
        })
        .collect();
    for (spec, offered) in updates {
        // `insert` replaces in place, so aliases keep pointing at the tool.
        index.insert(spec, offered);
    }
    let others = services
        .iter()
        .filter(|service| hidden_available.contains(service.id))
        .map(|service| service.display_name.to_owned())
        .collect();
    Offer { index, others }
}
