//! What a cell may hand the host for its person: memory entries, suggestions, plans and
//! cards. Each is validated here — its kind, its fields and their bounds, plain text with
//! control and bidi characters escaped so they show rather than act — and then only stored
//! for the person, who accepts or rejects it. Nothing here acts on a proposal.
//!
//! Tool proposals (`tool.propose`) are agent-proposed tools: they have their own intake.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::RuleError;
use crate::canonical::parse_strict;
use crate::manifest::{MemoryAccess, from_value, is_hidden_control};

/// Whether a proposal from a session may be stored for its person, given the session's start
/// and end as read under the write lock that stores it (`None`: no such session of hers): only
/// while it has not ended. Revoking a person, and her retiring her last device, end her
/// sessions in the same write that closes her pending proposals; a proposal stored after it
/// would wait for a device enrolled afterwards — with a code, so by whoever holds her token
/// and a code — to decide what was asked of her before.
pub fn may_store(session: Option<(i64, Option<i64>)>) -> Result<(), RuleError> {
    match session {
        Some((_, None)) => Ok(()),
        _ => Err(RuleError::Conflict("the session has ended".into())),
    }
}

/// The largest payload a cell may emit, in bytes, checked before it is parsed.
pub const PAYLOAD_BYTES_MAX: usize = 16 * 1024;
/// Proposals of one kind waiting for one person; the next is refused until one is decided.
pub const PENDING_PER_KIND_MAX: i64 = 50;
/// A memory entry's text, in characters.
pub const MEMORY_CHARS_MAX: usize = 500;
/// A suggestion's text.
pub const SUGGESTION_CHARS_MAX: usize = 1_000;
/// A title (suggestion, plan, card).
pub const TITLE_CHARS_MAX: usize = 120;
/// A plan's steps, and each step's text.
pub const PLAN_STEPS_MAX: usize = 20;
pub const STEP_CHARS_MAX: usize = 500;
/// A card's body, its fields, and each field's label and value.
pub const CARD_BODY_CHARS_MAX: usize = 2_000;
pub const CARD_FIELDS_MAX: usize = 12;
pub const CARD_LABEL_CHARS_MAX: usize = 60;
pub const CARD_VALUE_CHARS_MAX: usize = 300;

/// What a proposal is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProposalKind {
    /// `memory.propose`: an entry the agent would like to remember (needs `memory: write`).
    Memory,
    /// `suggestion`: something for the person to consider.
    Suggestion,
    /// `plan`: steps the person accepts or rejects (a tainted one needs the explicit confirm).
    Plan,
    /// `card.propose`: a display-only card (needs `card: true`); it decides nothing.
    Card,
}

impl ProposalKind {
    /// The kind as stored and listed: `memory`, `suggestion`, `plan`, `card`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProposalKind::Memory => "memory",
            ProposalKind::Suggestion => "suggestion",
            ProposalKind::Plan => "plan",
            ProposalKind::Card => "card",
        }
    }

    /// The kind a stored name stands for.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "memory" => Some(ProposalKind::Memory),
            "suggestion" => Some(ProposalKind::Suggestion),
            "plan" => Some(ProposalKind::Plan),
            "card" => Some(ProposalKind::Card),
            _ => None,
        }
    }
}

/// What the emitting agent's manifest grants that bears on proposals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmitGrants {
    pub memory: MemoryAccess,
    pub card: bool,
}

/// A validated proposal: its kind and its payload in normal form (known fields only, text
/// escaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub kind: ProposalKind,
    pub payload: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryPayload {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuggestionPayload {
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanPayload {
    title: String,
    steps: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CardPayload {
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    fields: Vec<CardField>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CardField {
    label: String,
    value: String,
}

/// Validates an emitted event: `kind` as the cell named it (`memory.propose`, `suggestion`,
/// `plan`, `card.propose`), `payload_json` its JSON object.
pub fn validate(kind: &str, payload_json: &str, grants: EmitGrants) -> Result<Proposal, RuleError> {
    let kind = emitted_kind(kind)?;
    check_grants(kind, grants)?;
    let value = payload_object(payload_json)?;
    let payload = match kind {
        ProposalKind::Memory => memory_payload(&value)?,
        ProposalKind::Suggestion => suggestion_payload(&value)?,
        ProposalKind::Plan => plan_payload(&value)?,
        ProposalKind::Card => card_payload(&value)?,
    };
    Ok(Proposal { kind, payload })
}

/// The proposal kind an emitted event's name stands for; `tool.propose` and unknown names are
/// refused.
fn emitted_kind(kind: &str) -> Result<ProposalKind, RuleError> {
    match kind {
        "memory.propose" => Ok(ProposalKind::Memory),
        "suggestion" => Ok(ProposalKind::Suggestion),
        "plan" => Ok(ProposalKind::Plan),
        "card.propose" => Ok(ProposalKind::Card),
        "tool.propose" => Err(RuleError::invalid(
            "kind",
            "tool proposals go through the tool intake, which this host does not offer yet",
        )),
        other => Err(RuleError::invalid(
            "kind",
            format!(
                "{:?} is not an event a cell may emit (memory.propose, suggestion, plan, \
                 card.propose, tool.propose)",
                escape(&other.chars().take(64).collect::<String>())
            ),
        )),
    }
}

/// Whether the emitting agent's manifest grants what the kind needs: `memory: write` for a
/// memory entry, `card: true` for a card.
fn check_grants(kind: ProposalKind, grants: EmitGrants) -> Result<(), RuleError> {
    if kind == ProposalKind::Memory && grants.memory != MemoryAccess::Write {
        return Err(RuleError::invalid(
            "kind",
            "memory.propose needs `memory: write` in the agent's manifest",
        ));
    }
    if kind == ProposalKind::Card && !grants.card {
        return Err(RuleError::invalid(
            "kind",
            "card.propose needs `card: true` in the agent's manifest",
        ));
    }
    Ok(())
}

/// The payload read as strict JSON, after its size is checked against [`PAYLOAD_BYTES_MAX`]
/// (so an oversized one is never parsed); it must be an object.
fn payload_object(payload_json: &str) -> Result<Value, RuleError> {
    if payload_json.len() > PAYLOAD_BYTES_MAX {
        return Err(RuleError::invalid(
            "payload",
            format!(
                "{} bytes, more than the {PAYLOAD_BYTES_MAX} allowed",
                payload_json.len()
            ),
        ));
    }
    let value = parse_strict(payload_json.as_bytes(), PAYLOAD_BYTES_MAX)
        .map_err(|error| RuleError::invalid("payload", error.to_string()))?;
    if !value.is_object() {
        return Err(RuleError::invalid("payload", "a JSON object is expected"));
    }
    Ok(value)
}

/// A memory entry's payload in normal form: its text, bounded and escaped.
fn memory_payload(value: &Value) -> Result<Value, RuleError> {
    let memory: MemoryPayload = from_value(value, "payload")?;
    Ok(json!({"text": text(&memory.text, MEMORY_CHARS_MAX, "payload.text", false)?}))
}

/// A suggestion's payload in normal form: an optional title and its text, bounded and escaped.
fn suggestion_payload(value: &Value) -> Result<Value, RuleError> {
    let suggestion: SuggestionPayload = from_value(value, "payload")?;
    Ok(json!({
        "title": text(&suggestion.title, TITLE_CHARS_MAX, "payload.title", true)?,
        "text": text(&suggestion.text, SUGGESTION_CHARS_MAX, "payload.text", false)?,
    }))
}

/// A plan's payload in normal form: 1 to [`PLAN_STEPS_MAX`] steps, then its title, each
/// bounded and escaped.
fn plan_payload(value: &Value) -> Result<Value, RuleError> {
    let plan: PlanPayload = from_value(value, "payload")?;
    if plan.steps.is_empty() || plan.steps.len() > PLAN_STEPS_MAX {
        return Err(RuleError::invalid(
            "payload.steps",
            format!(
                "{} steps; a plan has 1 to {PLAN_STEPS_MAX}",
                plan.steps.len()
            ),
        ));
    }
    let steps = plan
        .steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            text(
                step,
                STEP_CHARS_MAX,
                &format!("payload.steps[{index}]"),
                false,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "title": text(&plan.title, TITLE_CHARS_MAX, "payload.title", false)?,
        "steps": steps,
    }))
}

/// A card's payload in normal form: at most [`CARD_FIELDS_MAX`] fields (each label and value
/// bounded and escaped), then its title and optional body.
fn card_payload(value: &Value) -> Result<Value, RuleError> {
    let card: CardPayload = from_value(value, "payload")?;
    if card.fields.len() > CARD_FIELDS_MAX {
        return Err(RuleError::invalid(
            "payload.fields",
            format!(
                "{} fields, more than the {CARD_FIELDS_MAX} allowed",
                card.fields.len()
            ),
        ));
    }
    let fields = card
        .fields
        .iter()
        .enumerate()
        .map(|(index, field)| {
            Ok(json!({
                "label": text(&field.label, CARD_LABEL_CHARS_MAX, &format!("payload.fields[{index}].label"), false)?,
                "value": text(&field.value, CARD_VALUE_CHARS_MAX, &format!("payload.fields[{index}].value"), true)?,
            }))
        })
        .collect::<Result<Vec<_>, RuleError>>()?;
    Ok(json!({
        "title": text(&card.title, TITLE_CHARS_MAX, "payload.title", false)?,
        "body": text(&card.body, CARD_BODY_CHARS_MAX, "payload.body", true)?,
        "fields": fields,
    }))
}

/// `value` checked against its bound (in characters, counted before escaping) and escaped.
fn text(
    value: &str,
    chars_max: usize,
    field: &str,
    may_be_empty: bool,
) -> Result<String, RuleError> {
    let count = value.chars().count();
    if count > chars_max {
        return Err(RuleError::invalid(
            field,
            format!("{count} characters, more than the {chars_max} allowed"),
        ));
    }
    if !may_be_empty && value.trim().is_empty() {
        return Err(RuleError::invalid(field, "it is empty"));
    }
    Ok(escape(value))
}

/// Plain text as it is shown: each control character (but newline and tab) and each bidi
/// control written as a visible `\u{XXXX}` escape, so it shows rather than acts.
pub fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for character in value.chars() {
        if is_hidden_control(character) {
            escaped.push_str(&format!("\\u{{{:04X}}}", u32::from(character)));
        } else {
            escaped.push(character);
        }
    }
    escaped
}

/// `text` as one line for the journal and events: escaped as [`escape`] does, newlines,
/// carriage returns and tabs too, then cut to `max` characters (the escapes counted).
pub fn one_line(text: &str, max: usize) -> String {
    escape(text)
        .chars()
        .flat_map(|character| match character {
            '\n' => vec!['\\', 'n'],
            '\t' => vec!['\\', 't'],
            other => vec![other],
        })
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_escapes_every_control_character_then_cuts() {
        let text = "a\nb\tc\u{202e}d\u{1b}e";
        assert_eq!(one_line(text, 200), "a\\nb\\tc\\u{202E}d\\u{001B}e");
        assert_eq!(one_line(&"\u{1b}".repeat(500), 200).chars().count(), 200);
        assert_eq!(one_line("short", 3), "sho");
    }

    const ALL: EmitGrants = EmitGrants {
        memory: MemoryAccess::Write,
        card: true,
    };

    #[test]
    fn control_and_bidi_characters_are_shown_escaped() {
        let proposal = validate(
            "suggestion",
            r#"{"text": "pay \u202eevil\u202c now \u001b[31mred"}"#,
            ALL,
        )
        .unwrap();
        assert_eq!(
            proposal.payload["text"],
            "pay \\u{202E}evil\\u{202C} now \\u{001B}[31mred"
        );
    }
}
