//! A session's authority from its agent's manifest alone: the imports its cell is linked with,
//! its limits, and the broker's grant.

use std::time::Duration;

use imurun_cell::egress::{self, CredentialRule, EgressGrant};
use imurun_cell::{Imports, Limits};

use super::EgressPorts;
use crate::manifest::{EgressMode, Manifest, MemoryAccess};

/// The imports a cell of `manifest` is linked with: the model with `model_socket`, HTTP unless
/// egress is `deny`, memory from `read` up, tools when the host offers the agent any.
pub fn imports_for(manifest: &Manifest, tools: bool) -> Imports {
    Imports {
        model: manifest.model_socket,
        http: manifest.egress.mode != EgressMode::Deny,
        memory: manifest.memory >= MemoryAccess::Read,
        tools,
    }
}

/// A cell's limits from its manifest's `resources`.
pub fn limits_for(manifest: &Manifest) -> Limits {
    let positive = |value: i64| u64::try_from(value).unwrap_or(0);
    Limits::from_resources(
        positive(manifest.resources.memory_mb),
        positive(manifest.resources.cpu_ms),
        positive(manifest.resources.timeout_ms),
    )
}

/// The broker's grant from a manifest; `None` when egress is `deny`.
pub fn grant_for(manifest: &Manifest, ports: EgressPorts<'_>) -> Option<EgressGrant> {
    let mode = match manifest.egress.mode {
        EgressMode::Deny => return None,
        EgressMode::Ask => egress::EgressMode::Ask,
        EgressMode::Allow => egress::EgressMode::Allow,
    };
    let rules = manifest
        .egress
        .rules
        .iter()
        .map(|rule| egress::EgressRule {
            scheme: rule.scheme.clone(),
            host: rule.host.clone(),
            port: rule.port,
            methods: rule.methods.clone(),
            path_prefix: rule.path_prefix.clone(),
            ask_when_tainted: rule.ask_when_tainted,
            device_signature: rule.device_signature,
        })
        .collect();
    let credentials = manifest
        .credentials
        .iter()
        .map(|credential| CredentialRule {
            name: credential.name.clone(),
            header: credential.header.clone(),
            host: credential.bind.host.clone(),
            port: credential.bind.port,
            methods: credential.bind.methods.clone(),
            path_prefix: credential.bind.path_prefix.clone(),
        })
        .collect();
    Some(EgressGrant {
        mode,
        rules,
        credentials,
        loopback_ports: ports.loopback.to_vec(),
        host_ports: ports.host.to_vec(),
        approval_timeout: Duration::from_secs(
            u64::try_from(manifest.approval_timeout_s).unwrap_or(0),
        ),
    })
}
