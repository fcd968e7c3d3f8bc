//! `GET /api/integrations`: the MCP servers and connector services, with their tools and
//! whether each can run now.

use axum::Json;
use axum::extract::State;
use imurun_core::{Availability, Tool};
use imurun_integrations::connectors::SERVICES;

use crate::state::ServerState;
use crate::wire::{ConnectorInfo, IntegrationList, IntegrationTool, McpServerInfo};

/// `GET /api/integrations` → 200 `{mcp_servers: [...], connectors: [...]}`.
#[utoipa::path(
    get,
    path = "/api/integrations",
    tag = "tools",
    operation_id = "list_integrations",
    summary = "MCP servers and connectors, with their tools and availability",
    responses((status = 200, description = "The integrations.", body = IntegrationList)),
)]
pub(crate) async fn list(State(state): State<ServerState>) -> Json<IntegrationList> {
    let mcp_servers = state
        .mcp()
        .servers()
        .into_iter()
        .map(|server| McpServerInfo {
            name: server.name,
            transport: server.transport.to_owned(),
            target: server.target,
            state: server.state.as_str().to_owned(),
            error: server.error,
            server_info: server.server_info,
            tools: server
                .tools
                .into_iter()
                .map(|tool| integration_tool(tool.name, tool.category.as_str(), tool.availability))
                .collect(),
            notes: server.notes,
        })
        .collect();
    let registry = state.executor().registry();
    let mut connectors: Vec<ConnectorInfo> = Vec::new();
    for service in SERVICES {
        let tools: Vec<IntegrationTool> = service
            .tools
            .iter()
            .filter_map(|declared| registry.get(declared.name))
            .map(|tool| tool_info(tool.as_ref()))
            .collect();
        if tools.is_empty() {
            // Not registered in this server (a test's registry, say): nothing to list.
            continue;
        }
        connectors.push(ConnectorInfo {
            id: service.id.to_owned(),
            name: service.display_name.to_owned(),
            connected: tools.iter().any(|tool| tool.available),
            credential_var: service.credential.token_var.to_owned(),
            tools,
        });
    }
    Json(IntegrationList {
        mcp_servers,
        connectors,
    })
}

fn tool_info(tool: &dyn Tool) -> IntegrationTool {
    integration_tool(
        tool.spec().name.clone(),
        tool.category().as_str(),
        tool.available(),
    )
}

fn integration_tool(name: String, category: &str, availability: Availability) -> IntegrationTool {
    let (available, unavailable_reason) = match availability {
        Availability::Ready => (true, None),
        Availability::Unavailable(reason) => (false, Some(reason)),
    };
    IntegrationTool {
        name,
        category: category.to_owned(),
        available,
        unavailable_reason,
    }
}
