//! Authority: what a pack may reach, compared and bounded. A proposed tool's review shows its
//! **diff** against the proposing agent ([`diff`]) and its manifest **clamped** by the person's
//! ceiling ([`clamp`]); the person approves the clamped manifest, and only it deploys.
//!
//! Both are computed from the manifests alone, never from anything the agent wrote about them:
//! "no new authority" is an empty diff, nothing else.
//!
//! One egress rule is within another ([`rule_within`]) when every request it allows the other
//! allows too, with at least the other's friction: the same scheme and port, a host the other
//! covers, a subset of its methods, a path under its prefix, a device signature wherever the
//! other needs one, and asking when tainted only where the other asks too (without it a tainted
//! session's writes are refused outright, which is less authority).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::documents::Ceiling;
use crate::manifest::{
    Credential, Egress, EgressMode, EgressRule, Manifest, MemoryAccess, Resources, host_of,
    path_within,
};

/// What kind of authority a change adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChangeClass {
    /// Requests to a host the agent cannot reach at all.
    NewHost,
    /// More requests to a host the agent reaches: another port, method or path, or without
    /// the friction the agent's rule has.
    Egress,
    /// A credential sent with requests.
    CredentialReach,
    /// More memory access (none → read → write).
    Memory,
    /// The model socket.
    Model,
    /// A higher memory or CPU limit.
    Resources,
    /// A longer wall-time limit or approval wait.
    Timeouts,
}

/// One change in authority.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub class: ChangeClass,
    /// Where in the tool's manifest: `egress.rules[0]`, `credentials[1]`, `memory`, ...
    pub field: String,
    /// What the agent has (`null` where it has nothing comparable).
    pub from: Value,
    /// What the tool would have.
    pub to: Value,
    /// The change in one line.
    pub summary: String,
}

/// An entry of a proposed manifest the ceiling does not let through, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Dropped {
    /// Where in the proposed manifest.
    pub field: String,
    /// What was asked for.
    pub entry: Value,
    pub reason: String,
}

/// A proposed manifest clamped by a ceiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clamped {
    /// What deploys: never beyond the ceiling, never beyond what was proposed.
    pub manifest: Manifest,
    /// What the ceiling dropped or lowered.
    pub dropped: Vec<Dropped>,
}

/// Whether every request `inner` allows, `outer` allows too, with at least its friction.
pub fn rule_within(inner: &EgressRule, outer: &EgressRule) -> bool {
    same_target(inner, outer)
        && inner
            .methods
            .iter()
            .all(|method| outer.methods.contains(method))
        && (!inner.ask_when_tainted || outer.ask_when_tainted)
        && (!outer.device_signature || inner.device_signature)
}

/// Whether `outer` reaches the scheme, port, host and path of `inner` (methods and friction
/// aside).
fn same_target(inner: &EgressRule, outer: &EgressRule) -> bool {
    inner.scheme == outer.scheme
        && inner.port == outer.port
        && hosts_cover(&outer.host, &inner.host)
        && path_within(&inner.path_prefix, &outer.path_prefix)
}

fn hosts_cover(outer: &str, inner: &str) -> bool {
    match (host_of(outer), host_of(inner)) {
        (Some(outer), Some(inner)) => outer.covers(&inner),
        _ => false,
    }
}

/// The rules a manifest's egress actually grants: none under `deny`.
fn granted_rules(manifest: &Manifest) -> &[EgressRule] {
    if manifest.egress.mode == EgressMode::Deny {
        &[]
    } else {
        &manifest.egress.rules
    }
}

/// The authority `tool` has beyond `agent`, at the finest grain: each egress rule the agent's
/// rules do not hold, each credential (a tool's credentials are the person's own connections,
/// never the operator's the agent holds, so each one is new reach), more memory access, the
/// model socket, each higher limit and each longer timeout.
pub fn diff(agent: &Manifest, tool: &Manifest) -> Vec<Change> {
    let mut changes = egress_changes(agent, tool);
    changes.extend(credential_changes(tool));
    changes.extend(memory_change(agent, tool));
    changes.extend(model_socket_change(agent, tool));
    changes.extend(resource_changes(agent, tool));
    changes.extend(timeout_changes(agent, tool));
    changes
}

/// The diff's egress changes, one at most per rule the tool is granted, in the tool's order:
/// a rule the agent holds may still lose the agent's asking or a narrower rule's friction; a
/// rule the agent does not hold is more requests to a host it reaches, or a new host.
fn egress_changes(agent: &Manifest, tool: &Manifest) -> Vec<Change> {
    let mut changes = Vec::new();
    let agent_rules = granted_rules(agent);
    for (index, rule) in granted_rules(tool).iter().enumerate() {
        let field = format!("egress.rules[{index}]");
        let held = agent_rules.iter().find(|outer| rule_within(rule, outer));
        let change = match held {
            Some(outer)
                if tool.egress.mode == EgressMode::Allow
                    && agent.egress.mode == EgressMode::Ask =>
            {
                Some(unasked_change(field, rule, outer))
            }
            Some(_) => lost_friction_change(field, rule, agent_rules, granted_rules(tool)),
            None => Some(unheld_change(field, rule, agent_rules)),
        };
        changes.extend(change);
    }
    changes
}

/// A rule the agent holds, allowed outright in the tool where the agent's egress asks each time.
fn unasked_change(field: String, rule: &EgressRule, outer: &EgressRule) -> Change {
    Change {
        class: ChangeClass::Egress,
        field,
        from: rule_json(outer),
        to: rule_json(rule),
        summary: format!("{} without asking each time", rule_summary(rule)),
    }
}

/// A held rule that overlaps a narrower, stricter agent rule whose friction (a device
/// signature, or refusing a tainted write) none of the tool's own rules carries; none when
/// every such friction is carried or no stricter agent rule overlaps.
fn lost_friction_change(
    field: String,
    rule: &EgressRule,
    agent_rules: &[EgressRule],
    tool_rules: &[EgressRule],
) -> Option<Change> {
    // The agent's narrower, stricter rule binds the tool too when the tool carries that
    // friction in a rule of its own over the same requests.
    let carried = |strict: &EgressRule| {
        let narrow = narrowed(rule, strict);
        tool_rules.iter().any(|own| {
            !stricter(strict, own)
                && same_target(&narrow, own)
                && narrow
                    .methods
                    .iter()
                    .all(|method| own.methods.contains(method))
        })
    };
    let strict = agent_rules
        .iter()
        .find(|strict| overlap(rule, strict) && stricter(strict, rule) && !carried(strict))?;
    Some(Change {
        class: ChangeClass::Egress,
        field,
        from: rule_json(strict),
        to: rule_json(rule),
        summary: format!(
            "{} without the friction the agent's narrower rule has ({})",
            rule_summary(rule),
            rule_summary(strict)
        ),
    })
}

/// A rule no agent rule holds: more requests to a host the agent reaches, or a new host.
fn unheld_change(field: String, rule: &EgressRule, agent_rules: &[EgressRule]) -> Change {
    let known_host = agent_rules
        .iter()
        .any(|outer| hosts_cover(&outer.host, &rule.host));
    let (class, what) = if known_host {
        (
            ChangeClass::Egress,
            "more requests to a host the agent reaches",
        )
    } else {
        (ChangeClass::NewHost, "a host the agent cannot reach")
    };
    Change {
        class,
        field,
        from: Value::Null,
        to: rule_json(rule),
        summary: format!("{} ({what})", rule_summary(rule)),
    }
}

/// One change per credential the tool sends, in its order: each is the person's own
/// connection, so each is new reach.
fn credential_changes(tool: &Manifest) -> Vec<Change> {
    let mut changes = Vec::new();
    for (index, credential) in tool.credentials.iter().enumerate() {
        let bind = &credential.bind;
        changes.push(Change {
            class: ChangeClass::CredentialReach,
            field: format!("credentials[{index}]"),
            from: Value::Null,
            to: serde_json::to_value(credential).unwrap_or(Value::Null),
            summary: format!(
                "your connection {} sent in {} with {} to https://{}:{}{}",
                credential.name,
                credential.header,
                bind.methods.join(", "),
                bind.host,
                bind.port,
                bind.path_prefix
            ),
        });
    }
    changes
}

/// The change in memory access, when the tool's is above the agent's.
fn memory_change(agent: &Manifest, tool: &Manifest) -> Option<Change> {
    (tool.memory > agent.memory).then(|| Change {
        class: ChangeClass::Memory,
        field: "memory".into(),
        from: json!(agent.memory),
        to: json!(tool.memory),
        summary: format!(
            "memory access {} → {}",
            memory_name(agent.memory),
            memory_name(tool.memory)
        ),
    })
}

/// The model socket, when the tool has it and the agent does not.
fn model_socket_change(agent: &Manifest, tool: &Manifest) -> Option<Change> {
    (tool.model_socket && !agent.model_socket).then(|| Change {
        class: ChangeClass::Model,
        field: "model_socket".into(),
        from: json!(false),
        to: json!(true),
        summary: "the model socket".into(),
    })
}

/// Each higher memory or CPU limit, memory first.
fn resource_changes(agent: &Manifest, tool: &Manifest) -> Vec<Change> {
    raised_limits(&[
        (
            "resources.memory_mb",
            ChangeClass::Resources,
            agent.resources.memory_mb,
            tool.resources.memory_mb,
            "MiB of memory",
        ),
        (
            "resources.cpu_ms",
            ChangeClass::Resources,
            agent.resources.cpu_ms,
            tool.resources.cpu_ms,
            "ms of CPU",
        ),
    ])
}

/// Each longer timeout: the wall-time limit, then the wait for an approval.
fn timeout_changes(agent: &Manifest, tool: &Manifest) -> Vec<Change> {
    raised_limits(&[
        (
            "resources.timeout_ms",
            ChangeClass::Timeouts,
            agent.resources.timeout_ms,
            tool.resources.timeout_ms,
            "ms of wall time",
        ),
        (
            "approval_timeout_s",
            ChangeClass::Timeouts,
            agent.approval_timeout_s,
            tool.approval_timeout_s,
            "s of waiting for an approval",
        ),
    ])
}

/// A change for each `(field, class, agent's, tool's, unit)` limit the tool raises, in order.
fn raised_limits(limits: &[(&str, ChangeClass, i64, i64, &str)]) -> Vec<Change> {
    let mut changes = Vec::new();
    for &(field, class, from, to, unit) in limits {
        if to > from {
            changes.push(Change {
                class,
                field: field.into(),
                from: json!(from),
                to: json!(to),
                summary: format!("{from} → {to} {unit}"),
            });
        }
    }
    changes
}

/// `proposed` bounded by `ceiling`: each egress rule keeps only the methods some ceiling rule
/// reaching its target allows, with the strictest friction of those rules; each credential
/// only when the ceiling names it and a kept `https` rule still reaches its binding; memory,
/// the model socket and each limit at the lower of the two; no cards (a tool hands back a
/// result). The result is within both.
pub fn clamp(proposed: &Manifest, ceiling: &Ceiling) -> Clamped {
    let mut manifest = proposed.clone();
    let mut dropped = Vec::new();
    manifest.card = false;
    if proposed.card {
        dropped.push(Dropped {
            field: "card".into(),
            entry: json!(true),
            reason: "a tool hands back its result; cards are an agent's".into(),
        });
    }
    let rules = clamp_egress_rules(&proposed.egress.rules, &ceiling.egress, &mut dropped);
    manifest.egress.rules = with_friction(rules, &ceiling.egress, &proposed.egress.rules);
    manifest.credentials = clamp_credentials(
        &proposed.credentials,
        &ceiling.credentials,
        &manifest.egress.rules,
        &mut dropped,
    );
    manifest.memory = clamp_memory(proposed.memory, ceiling.memory, &mut dropped);
    manifest.model_socket =
        clamp_model_socket(proposed.model_socket, ceiling.model_socket, &mut dropped);
    clamp_limits(&mut manifest.resources, &ceiling.resources, &mut dropped);
    Clamped { manifest, dropped }
}

/// The proposed egress rules each bounded by the ceiling's ([`clamp_egress_rule`]), in order,
/// without duplicates; a rule the ceiling allows nothing of is dropped.
fn clamp_egress_rules(
    proposed: &[EgressRule],
    ceiling: &[EgressRule],
    dropped: &mut Vec<Dropped>,
) -> Vec<EgressRule> {
    let mut rules = Vec::new();
    for (index, rule) in proposed.iter().enumerate() {
        let field = format!("egress.rules[{index}]");
        if let Some(kept) = clamp_egress_rule(field, rule, ceiling, dropped)
            && !rules.contains(&kept)
        {
            rules.push(kept);
        }
    }
    rules
}

/// One egress rule bounded by the ceiling rules reaching its target: only the methods one of
/// them allows, with the strictest friction of those that allow a kept method. Each method
/// removed and each friction added is noted in `dropped`; with no method left, the whole rule
/// is dropped instead.
fn clamp_egress_rule(
    field: String,
    rule: &EgressRule,
    ceiling: &[EgressRule],
    dropped: &mut Vec<Dropped>,
) -> Option<EgressRule> {
    let reaching: Vec<&EgressRule> = ceiling
        .iter()
        .filter(|outer| same_target(rule, outer))
        .collect();
    let methods: Vec<String> = rule
        .methods
        .iter()
        .filter(|method| reaching.iter().any(|outer| outer.methods.contains(method)))
        .cloned()
        .collect();
    if methods.is_empty() {
        dropped.push(Dropped {
            field,
            entry: rule_json(rule),
            reason: if reaching.is_empty() {
                "your ceiling allows no requests to this scheme, host, port and path".into()
            } else {
                "your ceiling allows none of these methods here".into()
            },
        });
        return None;
    }
    let kept = with_bearing_friction(
        EgressRule {
            methods,
            ..rule.clone()
        },
        ceiling,
    );
    note_narrowed_rule(&field, rule, &kept, dropped);
    Some(kept)
}

/// `rule` with the strictest friction of the ceiling rules that reach its whole target and
/// allow one of its methods, so it is within each of them. Every rule the clamp keeps or adds
/// goes through here, so clamping a clamped manifest again changes nothing.
fn with_bearing_friction(rule: EgressRule, ceiling: &[EgressRule]) -> EgressRule {
    let bearing: Vec<&EgressRule> = ceiling
        .iter()
        .filter(|outer| same_target(&rule, outer))
        .filter(|outer| {
            outer
                .methods
                .iter()
                .any(|method| rule.methods.contains(method))
        })
        .collect();
    EgressRule {
        device_signature: rule.device_signature
            || bearing.iter().any(|outer| outer.device_signature),
        ask_when_tainted: rule.ask_when_tainted
            && bearing.iter().all(|outer| outer.ask_when_tainted),
        ..rule
    }
}

/// What the ceiling took from a rule it keeps, in `dropped`: the methods it removed, then a
/// device signature it added, then asking when tainted that it turned into refusing.
fn note_narrowed_rule(
    field: &str,
    rule: &EgressRule,
    kept: &EgressRule,
    dropped: &mut Vec<Dropped>,
) {
    let removed: Vec<&String> = rule
        .methods
        .iter()
        .filter(|method| !kept.methods.contains(method))
        .collect();
    if !removed.is_empty() {
        dropped.push(Dropped {
            field: format!("{field}.methods"),
            entry: json!(removed),
            reason: "your ceiling does not allow these methods here".into(),
        });
    }
    if kept.device_signature && !rule.device_signature {
        dropped.push(Dropped {
            field: format!("{field}.device_signature"),
            entry: json!(false),
            reason: "your ceiling needs a device signature for each use".into(),
        });
    }
    if rule.ask_when_tainted && !kept.ask_when_tainted {
        dropped.push(Dropped {
            field: format!("{field}.ask_when_tainted"),
            entry: json!(true),
            reason: "your ceiling refuses a tainted session's writes here rather than asking"
                .into(),
        });
    }
}

/// The proposed credentials the ceiling lets through, in order: each one the ceiling names
/// and that a kept rule still reaches; the others are dropped with the first reason that
/// holds.
fn clamp_credentials(
    proposed: &[Credential],
    ceiling: &[String],
    kept_rules: &[EgressRule],
    dropped: &mut Vec<Dropped>,
) -> Vec<Credential> {
    let allowed: BTreeSet<&str> = ceiling.iter().map(String::as_str).collect();
    let mut credentials = Vec::new();
    for (index, credential) in proposed.iter().enumerate() {
        let reason = if !allowed.contains(credential.name.as_str()) {
            Some("your ceiling does not let a tool use this connection")
        } else if !kept_rules
            .iter()
            .any(|rule| crate::manifest::rule_covers(rule, &credential.bind))
        {
            Some("no request it is bound to is left after the ceiling")
        } else {
            None
        };
        match reason {
            Some(reason) => dropped.push(Dropped {
                field: format!("credentials[{index}]"),
                entry: serde_json::to_value(credential).unwrap_or(Value::Null),
                reason: reason.into(),
            }),
            None => credentials.push(credential.clone()),
        }
    }
    credentials
}

/// The lower of the proposed memory access and the ceiling's, noting a lowered one.
fn clamp_memory(
    proposed: MemoryAccess,
    ceiling: MemoryAccess,
    dropped: &mut Vec<Dropped>,
) -> MemoryAccess {
    if proposed > ceiling {
        dropped.push(Dropped {
            field: "memory".into(),
            entry: json!(proposed),
            reason: format!(
                "your ceiling allows memory access up to {}",
                memory_name(ceiling)
            ),
        });
        return ceiling;
    }
    proposed
}

/// The model socket only when both the proposal and the ceiling have it, noting a removed one.
fn clamp_model_socket(proposed: bool, ceiling: bool, dropped: &mut Vec<Dropped>) -> bool {
    if proposed && !ceiling {
        dropped.push(Dropped {
            field: "model_socket".into(),
            entry: json!(true),
            reason: "your ceiling gives tools no model socket".into(),
        });
        return false;
    }
    proposed
}

/// Each resource limit (memory, CPU, then wall time) lowered to the ceiling's where it is
/// above it, noting each one lowered.
fn clamp_limits(resources: &mut Resources, ceiling: &Resources, dropped: &mut Vec<Dropped>) {
    let limits = [
        (
            "resources.memory_mb",
            &mut resources.memory_mb,
            ceiling.memory_mb,
        ),
        ("resources.cpu_ms", &mut resources.cpu_ms, ceiling.cpu_ms),
        (
            "resources.timeout_ms",
            &mut resources.timeout_ms,
            ceiling.timeout_ms,
        ),
    ];
    for (field, value, most) in limits {
        if *value > most {
            dropped.push(Dropped {
                field: field.into(),
                entry: json!(*value),
                reason: format!("your ceiling's limit is {most}"),
            });
            *value = most;
        }
    }
}

/// Whether one request can match both rules: the same scheme and port, one host covering the
/// other, one path prefix within the other compared without case (as the broker compares the
/// rules whose friction applies), and a method in common.
fn overlap(a: &EgressRule, b: &EgressRule) -> bool {
    let (a_path, b_path) = (
        a.path_prefix.to_ascii_lowercase(),
        b.path_prefix.to_ascii_lowercase(),
    );
    a.scheme == b.scheme
        && a.port == b.port
        && (hosts_cover(&a.host, &b.host) || hosts_cover(&b.host, &a.host))
        && (path_within(&a_path, &b_path) || path_within(&b_path, &a_path))
        && a.methods.iter().any(|method| b.methods.contains(method))
}

/// Whether `strict` demands friction `rule` lacks: a device signature, or refusing a tainted
/// write where `rule` would ask.
fn stricter(strict: &EgressRule, rule: &EgressRule) -> bool {
    (strict.device_signature && !rule.device_signature)
        || (!strict.ask_when_tainted && rule.ask_when_tainted)
}

/// `rule` narrowed to where `strict` also matches, with both frictions: never wider than
/// `rule` (its host and path are `rule`'s or narrower ones, its methods a subset).
fn narrowed(rule: &EgressRule, strict: &EgressRule) -> EgressRule {
    let host = if hosts_cover(&strict.host, &rule.host) {
        rule.host.clone()
    } else {
        strict.host.clone()
    };
    let path_prefix = if path_within(&strict.path_prefix, &rule.path_prefix)
        && !path_within(&rule.path_prefix, &strict.path_prefix)
    {
        strict.path_prefix.clone()
    } else {
        rule.path_prefix.clone()
    };
    EgressRule {
        scheme: rule.scheme.clone(),
        host,
        port: rule.port,
        methods: rule
            .methods
            .iter()
            .filter(|method| strict.methods.contains(method))
            .cloned()
            .collect(),
        path_prefix,
        ask_when_tainted: rule.ask_when_tainted && strict.ask_when_tainted,
        device_signature: rule.device_signature || strict.device_signature,
    }
}

/// `rules` with the friction of every stricter rule of the ceiling, or of the proposal, that
/// can match the same requests (a narrower rule needing a device signature, say): the broker
/// applies the strictest of the rules that match, so each such friction is carried as a
/// narrowed rule of its own. A proposed rule the ceiling drops keeps its friction on the
/// rules kept under it this way. Each rule kept is narrowed again by the rules stricter than
/// it, those kept included, until none is, so clamping the result again adds nothing. Past the rule
/// bound, a rule takes the friction itself instead (stricter than needed, never looser).
fn with_friction(
    rules: Vec<EgressRule>,
    ceiling: &[EgressRule],
    proposed: &[EgressRule],
) -> Vec<EgressRule> {
    let mut all = rules.clone();
    // Passes over every rule kept, until one adds nothing.
    loop {
        // The rules kept so far are within both, and as strict as any they came from.
        let sources: Vec<EgressRule> = ceiling
            .iter()
            .chain(proposed)
            .chain(&all)
            .cloned()
            .collect();
        let before = all.len();
        for rule in &sources[ceiling.len() + proposed.len()..] {
            for strict in &sources {
                if !(overlap(rule, strict) && stricter(strict, rule)) {
                    continue;
                }
                let narrow = with_bearing_friction(narrowed(rule, strict), ceiling);
                if narrow.methods.is_empty() || all.contains(&narrow) {
                    continue;
                }
                if all.len() == crate::manifest::EGRESS_RULES_MAX {
                    return with_own_friction(rules, &sources[..ceiling.len() + proposed.len()]);
                }
                all.push(narrow);
            }
        }
        if all.len() == before {
            return all;
        }
    }
}

/// Each rule with the friction of every rule of `others`, and of every other rule kept, that
/// can match its requests, without duplicates: rules that can match the same request end
/// with the same friction, so clamping the result again changes nothing.
fn with_own_friction(mut rules: Vec<EgressRule>, others: &[EgressRule]) -> Vec<EgressRule> {
    // Friction only grows, so this ends.
    loop {
        let sources: Vec<EgressRule> = others.iter().chain(&rules).cloned().collect();
        let mut changed = false;
        for rule in &mut rules {
            for strict in &sources {
                if overlap(rule, strict) && stricter(strict, rule) {
                    rule.device_signature |= strict.device_signature;
                    rule.ask_when_tainted &= strict.ask_when_tainted;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut unique: Vec<EgressRule> = Vec::new();
    for rule in rules {
        if !unique.contains(&rule) {
            unique.push(rule);
        }
    }
    unique
}

/// The SHA-256 of a manifest's canonical JSON: what a decision names as `manifest`.
pub fn manifest_sha256(manifest: &Manifest) -> String {
    let value = serde_json::to_value(manifest).unwrap_or(Value::Null);
    crate::keys::sha256_hex(&crate::canonical::canonicalize(&value))
}

/// The SHA-256 of what a review says about authority: the RFC 8785 canonical JSON of
/// `{"authority_diff", "dropped", "granted_diff"}` as the review shows them. A decision names
/// it beside the manifest's, so the verdict a person read (which authority is new, or none,
/// and what the ceiling drops) is the one their device signed.
pub fn review_sha256(authority_diff: &Value, dropped: &Value, granted_diff: &Value) -> String {
    let shown = serde_json::json!({
        "authority_diff": authority_diff,
        "dropped": dropped,
        "granted_diff": granted_diff,
    });
    crate::keys::sha256_hex(&crate::canonical::canonicalize(&shown))
}

fn rule_json(rule: &EgressRule) -> Value {
    serde_json::to_value(rule).unwrap_or(Value::Null)
}

fn rule_summary(rule: &EgressRule) -> String {
    let mut text = format!(
        "{} {}://{}:{}{}",
        rule.methods.join(", "),
        rule.scheme,
        rule.host,
        rule.port,
        rule.path_prefix
    );
    if rule.device_signature {
        text.push_str(", each use signed on a device");
    }
    if rule.ask_when_tainted {
        text.push_str(", asking when tainted");
    }
    text
}

fn memory_name(access: MemoryAccess) -> &'static str {
    match access {
        MemoryAccess::None => "none",
        MemoryAccess::Read => "read",
        MemoryAccess::Write => "write",
    }
}

/// A manifest with no authority at all: what a review compares against when the proposing
/// agent is not in force.
pub fn no_authority() -> Manifest {
    Manifest {
        name: "none".into(),
        version: 1,
        description: String::new(),
        egress: Egress::default(),
        credentials: Vec::new(),
        memory: MemoryAccess::None,
        model_socket: false,
        card: false,
        resources: Resources {
            memory_mb: 1,
            cpu_ms: 1,
            timeout_ms: 1,
        },
        approval_timeout_s: 1,
    }
}
