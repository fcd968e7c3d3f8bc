//! Registering integrations the way the binary does.

use imurun_exec::Registry;
use imurun_integrations::{Connectors, McpHub};

/// Adds every connector tool with its service as its group, and its aliases.
pub(crate) fn register_connectors(registry: &mut Registry, connectors: &Connectors) {
    for registration in connectors.registrations() {
        let name = registration.tool.spec().name.clone();
        registry.insert_grouped(registration.tool, registration.group);
        for alias in registration.aliases {
            assert!(registry.add_alias(alias, &name), "{alias} → {name}");
        }
    }
}

/// Adds every tool of the hub's connected servers, offered.
pub(crate) fn register_mcp(registry: &mut Registry, hub: &McpHub) {
    for tool in hub.tools() {
        registry.insert(tool, true);
    }
}
