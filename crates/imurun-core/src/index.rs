//! The tool index the parser reads: every tool that can run, by name and alias, with its
//! schema, and which of them the prompt offers.
//!
//! A tool that is runnable but not offered (a connector tool hidden to keep the prompt short)
//! still runs when the model names it, so the parser must know about it.

use std::collections::HashMap;

use crate::ToolSpec;

/// Up to this many tools, names are looked up by comparison rather than by hash.
const LINEAR_LOOKUP_MAX: usize = 16;

/// One tool in the index.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedTool {
    pub spec: ToolSpec,
    /// Listed in the prompt. Runnable tools that are not offered still run when named.
    pub offered: bool,
}

/// Names, aliases and schemas of every tool that can run in one step.
#[derive(Debug, Clone, Default)]
pub struct ToolIndex {
    tools: Vec<IndexedTool>,
    by_name: HashMap<String, usize>,
    aliases: HashMap<String, usize>,
}

impl ToolIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// An index where every spec is runnable and offered.
    pub fn offering(specs: impl IntoIterator<Item = ToolSpec>) -> Self {
        let mut index = Self::new();
        for spec in specs {
            index.insert(spec, true);
        }
        index
    }

    /// Adds a tool, replacing one of the same name.
    pub fn insert(&mut self, spec: ToolSpec, offered: bool) {
        let entry = IndexedTool { spec, offered };
        match self.by_name.get(&entry.spec.name) {
            Some(&slot) => self.tools[slot] = entry,
            None => {
                self.by_name
                    .insert(entry.spec.name.clone(), self.tools.len());
                self.tools.push(entry);
            }
        }
    }

    /// Makes `alias` name the tool `target` (a connector's own alias, such as
    /// `send_email` for `gmail_send`). Returns false when `target` is not in the index.
    pub fn add_alias(&mut self, alias: &str, target: &str) -> bool {
        match self.by_name.get(target) {
            Some(&slot) => {
                self.aliases.insert(alias.to_owned(), slot);
                true
            }
            None => false,
        }
    }

    /// The tool with this exact name, or the one this alias points at.
    pub fn get(&self, name: &str) -> Option<&IndexedTool> {
        // A step offers a handful of tools: comparing names beats hashing the name.
        if self.tools.len() <= LINEAR_LOOKUP_MAX {
            if let Some(tool) = self.tools.iter().find(|tool| tool.spec.name == name) {
                return Some(tool);
            }
        } else if let Some(&slot) = self.by_name.get(name) {
            return Some(&self.tools[slot]);
        }
        if self.aliases.is_empty() {
            return None;
        }
        self.aliases.get(name).map(|&slot| &self.tools[slot])
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Every runnable tool, in insertion order.
    pub fn runnable(&self) -> impl Iterator<Item = &IndexedTool> {
        self.tools.iter()
    }

    /// The tools listed in the prompt, in insertion order.
    pub fn offered(&self) -> impl Iterator<Item = &IndexedTool> {
        self.tools.iter().filter(|tool| tool.offered)
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec::new(name, "", json!({"type": "object"}))
    }

    #[test]
    fn hidden_tools_are_runnable_but_not_offered() {
        let mut index = ToolIndex::new();
        index.insert(spec("file_read"), true);
        index.insert(spec("gmail_send"), false);
        assert!(index.add_alias("send_email", "gmail_send"));
        assert!(!index.add_alias("nothing", "missing_tool"));

        assert_eq!(
            index.get("send_email").map(|t| t.spec.name.as_str()),
            Some("gmail_send")
        );
        let offered: Vec<_> = index.offered().map(|t| t.spec.name.as_str()).collect();
        assert_eq!(offered, ["file_read"]);
        assert_eq!(index.runnable().count(), 2);
    }

    #[test]
    fn insert_replaces_a_tool_of_the_same_name() {
        let mut index = ToolIndex::new();
        index.insert(spec("shell"), false);
        index.insert(spec("shell"), true);
        assert_eq!(index.len(), 1);
        assert_eq!(index.offered().count(), 1);
    }
}
