//! The tools that can run, by name and alias: the executor's lookup, and the index the
//! parser and the prompt read. Tools of a [`ToolGroup`] (a connector's web service) are
//! offered per turn by [`Registry::offer`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use imurun_core::{Availability, Tool, ToolGroup, ToolIndex, ToolSpec};

use crate::offer::{self, Offer};

/// Every runnable tool, with the [`ToolIndex`] that names them.
#[derive(Clone, Default)]
pub struct Registry {
    tools: HashMap<String, Arc<dyn Tool>>,
    index: ToolIndex,
    /// The group of each grouped tool, by tool name: what [`Registry::offer`] groups by.
    groups: HashMap<String, Arc<dyn ToolGroup>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool, replacing one of the same name (the agent loop's real `run_agent`
    /// replaces the built-in placeholder this way). `offered` says whether prompts list it.
    pub fn insert(&mut self, tool: Arc<dyn Tool>, offered: bool) {
        let spec = tool.spec().clone();
        self.groups.remove(&spec.name);
        self.tools.insert(spec.name.clone(), tool);
        self.index.insert(spec, offered);
    }

    /// Adds a tool of `group`, offered; [`Registry::offer`] may hide it for a turn whose
    /// question points elsewhere.
    pub fn insert_grouped(&mut self, tool: Arc<dyn Tool>, group: Arc<dyn ToolGroup>) {
        let name = tool.spec().name.clone();
        self.insert(tool, true);
        self.groups.insert(name, group);
    }

    /// The group of the tool `name`; `None` for a tool outside every group.
    pub fn group_of(&self, name: &str) -> Option<&Arc<dyn ToolGroup>> {
        self.groups.get(name)
    }

    /// The tools a model may be constrained to call (the embedded back-end's call grammar):
    /// every tool but the grouped tools that cannot run (their service is not connected). A
    /// small model held to a grammar that allows them wanders there.
    pub fn callable_index(&self) -> ToolIndex {
        let mut index = ToolIndex::new();
        for indexed in self.index.runnable() {
            if !self.is_unconnected(&indexed.spec.name) {
                index.insert(indexed.spec.clone(), indexed.offered);
            }
        }
        index
    }

    /// Whether `name` is a grouped tool that cannot run now (its service is not connected).
    pub fn is_unconnected(&self, name: &str) -> bool {
        self.groups.contains_key(name)
            && self
                .tools
                .get(name)
                .is_some_and(|tool| tool.available() != Availability::Ready)
    }

    /// Whether any grouped tool is registered.
    pub fn has_groups(&self) -> bool {
        !self.groups.is_empty()
    }

    /// This turn's offer: the index with the grouped tools the question or the recent
    /// messages (oldest first) point at, and the other available groups by name. See
    /// [`crate::CONNECTOR_TOOLS_OFFERED_MAX`] for when tools are hidden at all.
    pub fn offer(&self, question: &str, recent: &[&str]) -> Offer {
        offer::offer(self, question, recent)
    }

    /// Makes `alias` name the tool `target`. Returns false when `target` is not registered.
    pub fn add_alias(&mut self, alias: &str, target: &str) -> bool {
        self.index.add_alias(alias, target)
    }

    /// The tool a caller meant by `written`: its exact name, an alias in the index, or one of
    /// the invented names the parser also accepts (`read_file`, `bash`, ...). The same
    /// resolution as the parser's, so a name the parser accepts runs the same tool here.
    pub fn resolve(&self, written: &str) -> Option<&Arc<dyn Tool>> {
        let indexed = imurun_calls::resolve(&self.index, written)?;
        self.tools.get(&indexed.spec.name)
    }

    /// The tool with exactly this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Names, aliases and schemas, for the parser and the prompt.
    pub fn index(&self) -> &ToolIndex {
        &self.index
    }

    /// Every tool, in the order they were added.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.index
            .runnable()
            .filter_map(|indexed| self.tools.get(&indexed.spec.name))
    }

    /// Every tool's spec, in the order they were added.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.index
            .runnable()
            .map(|indexed| indexed.spec.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self
            .index
            .runnable()
            .map(|tool| tool.spec.name.as_str())
            .collect();
        f.debug_struct("Registry").field("tools", &names).finish()
    }
}
