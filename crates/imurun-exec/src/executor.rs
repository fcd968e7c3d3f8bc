//! `ToolExecutor::execute`: the one path every call takes, whether from the model, a
//! sub-agent or a person through the API, in this order:
//!
//! lookup (names and aliases) → sub-agent restriction → schema validation → policy →
//! approval → run (panics caught) → event + audit.
//!
//! Who decides is this code, never the model. Events carry the arguments (long strings cut);
//! the audit carries the tool, the source, the decision and the outcome, never an argument
//! value, because commands, file bodies and paths may hold secrets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use imurun_core::{
    AuditRecord, AuditSink, CallSource, Decision, DenyReason, Event, EventSink, StopFlag, Tool,
    ToolCall, ToolCategory, ToolContext, ToolOutput, cut_long_strings,
};
use imurun_policy::{CallFacts, Grants, Rule, Settings, Verdict, Workspace, is_rememberable};
use serde_json::{Map, Value};

use crate::ExecError;
use crate::approval::{APPROVAL_TIMEOUT_DEFAULT, ApprovalAnswer, ApprovalBroker, ApprovalRequest};
use crate::ids::{new_id, now_ms};
use crate::panic::run_caught;
use crate::registry::Registry;
use crate::schema::validate_arguments;

/// The audit mark of tool calls.
pub const AUDIT_MARK: &str = "G3-tool";

/// Sub-agent depth at which `agent` tools are neither offered nor allowed: main = 0, a
/// sub-agent = 1, its sub-agent = 2.
pub const AGENT_DEPTH_MAX: u8 = 2;

/// How much of an unknown tool's name events and the audit keep: the name is model text.
const UNKNOWN_NAME_CHARS_MAX: usize = 64;

/// What happens when the policy says "ask".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnAsk {
    /// Publish `tool.approval_needed` and wait for a person (calls inside a turn).
    #[default]
    Wait,
    /// Do not wait: end with [`Outcome::NeedsApproval`], so the caller can ask and call again
    /// with `Approved` (the API's 403 `{"decision": "ask"}`, the CLI's y/n prompt).
    Report,
    /// A person already approved this very call (the API's second post with
    /// `"approved": true`, a "y" on the terminal). Denials still hold.
    Approved,
    /// A person already declined this very call (an "n" on the terminal): it ends as denied
    /// by the user, and is audited so.
    Declined,
}

/// Who is calling, and under which limits.
#[derive(Clone)]
pub struct Caller {
    pub session_id: Option<String>,
    pub source: CallSource,
    /// 0 for the main agent and people, 1 and 2 for sub-agents.
    pub depth: u8,
    /// The tools a sub-agent may use (canonical names); `None` means every tool.
    pub allowed_tools: Option<Arc<[String]>>,
    pub stop: StopFlag,
    pub on_ask: OnAsk,
    /// Where this call's events go (the turn that caused it, which stamps and records
    /// them); `None`: the executor's own sink.
    pub events: Option<Arc<dyn EventSink>>,
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("session_id", &self.session_id)
            .field("source", &self.source)
            .field("depth", &self.depth)
            .field("allowed_tools", &self.allowed_tools)
            .field("stop", &self.stop)
            .field("on_ask", &self.on_ask)
            .field("events", &self.events.is_some())
            .finish()
    }
}

impl Caller {
    /// The main agent's model in a turn of `session_id`.
    pub fn model(session_id: Option<String>, stop: StopFlag) -> Self {
        Self {
            session_id,
            source: CallSource::Model,
            depth: 0,
            allowed_tools: None,
            stop,
            on_ask: OnAsk::Wait,
            events: None,
        }
    }

    /// A sub-agent at `depth` (1 or more) that may use only `allowed_tools`.
    pub fn sub_agent(
        session_id: Option<String>,
        depth: u8,
        allowed_tools: Vec<String>,
        stop: StopFlag,
    ) -> Self {
        Self {
            session_id,
            source: CallSource::Agent(depth),
            depth,
            allowed_tools: Some(allowed_tools.into()),
            stop,
            on_ask: OnAsk::Wait,
            events: None,
        }
    }

    /// The loop's pre-fetch in a turn of `session_id`. It never waits for a person: a call
    /// the policy would ask about ends as [`Outcome::NeedsApproval`] and is not made.
    pub fn prefetch(session_id: Option<String>, stop: StopFlag) -> Self {
        Self {
            session_id,
            source: CallSource::Prefetch,
            depth: 0,
            allowed_tools: None,
            stop,
            on_ask: OnAsk::Report,
            events: None,
        }
    }

    /// A person running a tool by hand (the API, the CLI).
    pub fn user(session_id: Option<String>, on_ask: OnAsk) -> Self {
        Self {
            session_id,
            source: CallSource::User,
            depth: 0,
            allowed_tools: None,
            stop: StopFlag::new(),
            on_ask,
            events: None,
        }
    }

    /// This caller with its events going to `events` instead of the executor's sink.
    pub fn with_events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = Some(events);
        self
    }
}

/// How a call ended, as the audit records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tool ran and succeeded.
    Ok,
    /// The tool ran and returned a failure.
    Failed,
    /// No tool has that name.
    UnknownTool,
    /// The caller may not use the tool (sub-agent allow-list or depth).
    NotAllowed,
    /// The arguments do not fit the schema.
    InvalidArguments,
    /// The policy or the approval refused it.
    Denied(DenyReason),
    /// The policy asks and the caller chose [`OnAsk::Report`].
    NeedsApproval,
}

impl Outcome {
    /// The audit's wording: `ok`, `failed`, `denied: <reason>`, `unknown tool`, ...
    pub fn as_audit(&self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::UnknownTool => "unknown tool",
            Outcome::NotAllowed => "denied: not allowed",
            Outcome::InvalidArguments => "invalid arguments",
            Outcome::Denied(DenyReason::User) => "denied: user",
            Outcome::Denied(DenyReason::Timeout) => "denied: timeout",
            Outcome::Denied(DenyReason::Stopped) => "denied: stopped",
            Outcome::Denied(DenyReason::NoClient) => "denied: no_client",
            Outcome::Denied(DenyReason::Policy) => "denied: policy",
            Outcome::NeedsApproval => "needs approval",
        }
    }
}

/// The result of one call: what the model reads, and what happened on the way.
#[derive(Debug, Clone)]
pub struct Execution {
    pub call_id: String,
    /// The tool's canonical name, or the name as written when no tool has it.
    pub tool: String,
    /// The decision the audit records: the policy's, or `deny` for calls refused before it.
    pub decision: Decision,
    /// The policy's verdict, when the call got that far.
    pub verdict: Option<Verdict>,
    pub outcome: Outcome,
    pub output: ToolOutput,
}

/// A call that passed lookup, restriction and validation, and the policy's verdict on it:
/// what the executor would decide before approval (`imurun policy check`).
#[derive(Debug, Clone)]
pub struct Checked {
    pub tool: String,
    pub category: ToolCategory,
    pub verdict: Verdict,
}

/// Runs tool calls under the policy. Share it (`Arc`) between turns and sessions.
pub struct ToolExecutor {
    registry: Registry,
    workspace: Arc<Workspace>,
    settings: RwLock<Settings>,
    grants: Mutex<Grants>,
    /// Sessions that read untrusted content, and how many turn starts the mark still covers.
    taint: Mutex<Taint>,
    approvals: ApprovalBroker,
    events: Arc<dyn EventSink>,
    audit: Arc<dyn AuditSink>,
}

/// The most sessions marked tainted at once. Past it every session counts as tainted until
/// marks expire: forgetting a mark to make room would let a tainted session act unasked.
pub const TAINTED_SESSIONS_MAX: usize = 10_000;

/// Turn starts a mark covers: the rest of the turn that read the content, and the next one.
const TAINT_TURNS: u8 = 2;

/// Which sessions are tainted.
#[derive(Debug, Default)]
struct Taint {
    /// Session → turns the mark still covers (1 or 2).
    sessions: HashMap<String, u8>,
    /// A mark could not be recorded because the table was full.
    overflowed: bool,
}

impl ToolExecutor {
    /// An executor over `registry`'s tools in `workspace`, deciding with `settings`,
    /// publishing to `events` and recording to `audit`. Approvals wait
    /// [`APPROVAL_TIMEOUT_DEFAULT`].
    pub fn new(
        registry: Registry,
        workspace: Arc<Workspace>,
        settings: Settings,
        events: Arc<dyn EventSink>,
        audit: Arc<dyn AuditSink>,
    ) -> Self {
        let approvals = ApprovalBroker::new(APPROVAL_TIMEOUT_DEFAULT);
        Self {
            registry,
            workspace,
            settings: RwLock::new(settings),
            grants: Mutex::new(Grants::new()),
            taint: Mutex::new(Taint::default()),
            approvals,
            events,
            audit,
        }
    }

    /// Sets `permissions.approvalTimeout` (see [`ApprovalBroker::set_approval_timeout`]).
    pub fn with_approval_timeout(self, timeout: Duration) -> Self {
        self.approvals.set_approval_timeout(timeout);
        self
    }

    /// Runs one call through every step, and always returns what the model reads.
    pub async fn execute(&self, call: &ToolCall, caller: &Caller) -> Execution {
        let call_id = new_id("call");
        let prepared = self.prepare(call, caller);
        let name = match &prepared {
            Ok(tool) => tool.spec().name.clone(),
            Err(_) => call.name.chars().take(UNKNOWN_NAME_CHARS_MAX).collect(),
        };
        let tainted = self.caller_tainted(caller);
        sink(&self.events, caller).publish(Event::ToolCall {
            call_id: call_id.clone(),
            session_id: caller.session_id.clone(),
            name: name.clone(),
            args: cut_long_strings(&call.args),
            source: caller.source,
            depth: caller.depth,
            tainted,
        });
        let mut step = Step {
            call_id,
            tool: name,
            decision: Decision::Deny,
            verdict: None,
        };
        let (outcome, output) = match prepared {
            Err(error) => (refusal_outcome(&error), ToolOutput::failed(error)),
            Ok(tool) => {
                self.decide_and_run(tool.as_ref(), &call.args, caller, tainted, &mut step)
                    .await
            }
        };
        if output.untrusted
            && let Some(session_id) = caller.session_id.as_deref()
        {
            self.mark_tainted(session_id);
        }
        self.finish(step, caller, outcome, output)
    }

    /// Whether the caller's session is tainted (a call outside any session never is).
    fn caller_tainted(&self, caller: &Caller) -> bool {
        caller
            .session_id
            .as_deref()
            .is_some_and(|session_id| self.is_tainted(session_id))
    }

    /// What the executor would decide before approval: lookup, restriction, validation and
    /// the policy, without running anything, publishing or recording.
    pub fn check(&self, call: &ToolCall, caller: &Caller) -> Result<Checked, ExecError> {
        let tool = self.prepare(call, caller)?;
        let verdict = imurun_policy::check(
            &self.workspace,
            &self.settings(),
            &facts(tool.as_ref(), &call.args).tainted(self.caller_tainted(caller)),
        );
        Ok(Checked {
            tool: tool.spec().name.clone(),
            category: tool.category(),
            verdict,
        })
    }

    /// The approvals waiting for a person; the server answers them through this.
    pub fn approvals(&self) -> &ApprovalBroker {
        &self.approvals
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    /// The permission settings in force.
    pub fn settings(&self) -> Settings {
        *self.settings.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the permission settings for every call that reaches the policy from now on.
    pub fn set_settings(&self, settings: Settings) {
        *self
            .settings
            .write()
            .unwrap_or_else(PoisonError::into_inner) = settings;
    }

    /// Marks a new turn of `session_id`: a taint mark from two turns ago expires. The agent
    /// loop calls it as a main turn starts (sub-agents run inside their parent's turn).
    pub fn begin_turn(&self, session_id: &str) {
        let mut taint = self.taint.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(turns) = taint.sessions.get_mut(session_id) {
            *turns -= 1;
            if *turns == 0 {
                taint.sessions.remove(session_id);
            }
        }
        if taint.sessions.is_empty() {
            taint.overflowed = false;
        }
    }

    /// Whether `session_id` read untrusted content in this turn or the one before (or the
    /// taint table overflowed, when every session counts as tainted).
    pub fn is_tainted(&self, session_id: &str) -> bool {
        let taint = self.taint.lock().unwrap_or_else(PoisonError::into_inner);
        taint.overflowed || taint.sessions.contains_key(session_id)
    }

    fn mark_tainted(&self, session_id: &str) {
        let mut taint = self.taint.lock().unwrap_or_else(PoisonError::into_inner);
        if taint.sessions.len() >= TAINTED_SESSIONS_MAX && !taint.sessions.contains_key(session_id)
        {
            taint.overflowed = true;
            return;
        }
        taint.sessions.insert(session_id.to_owned(), TAINT_TURNS);
    }

    /// Forgets the session's remembered grants (the session ended, or a person revoked
    /// them). Returns whether it had any.
    pub fn forget_session(&self, session_id: &str) -> bool {
        self.grants().forget_session(session_id)
    }

    /// Forgets every session's remembered grants; returns the sessions that had some.
    pub fn forget_all_sessions(&self) -> Vec<String> {
        self.grants().forget_all()
    }

    /// The remembered grants: each session with grants, and its tools, sorted.
    pub fn grants_by_session(&self) -> Vec<(String, Vec<String>)> {
        self.grants().list()
    }

    /// Lookup, sub-agent restriction and schema validation, in that order.
    fn prepare(&self, call: &ToolCall, caller: &Caller) -> Result<Arc<dyn Tool>, ExecError> {
        let tool = self
            .registry
            .resolve(&call.name)
            .ok_or_else(|| ExecError::UnknownTool {
                name: call.name.chars().take(UNKNOWN_NAME_CHARS_MAX).collect(),
            })?;
        let name = &tool.spec().name;
        if let Some(allowed) = &caller.allowed_tools
            && !allowed.iter().any(|allowed| allowed == name)
        {
            let why = if allowed.is_empty() {
                "this sub-agent was given no tools".to_string()
            } else {
                format!("this sub-agent may only use {}", allowed.join(", "))
            };
            return Err(ExecError::NotAllowed {
                tool: name.clone(),
                why,
            });
        }
        if tool.category() == ToolCategory::Agent && caller.depth >= AGENT_DEPTH_MAX {
            return Err(ExecError::NotAllowed {
                tool: name.clone(),
                why: format!("sub-agents at depth {AGENT_DEPTH_MAX} cannot start sub-agents"),
            });
        }
        validate_arguments(&tool.spec().parameters, &call.args).map_err(|problem| {
            ExecError::InvalidArguments {
                tool: name.clone(),
                problem,
            }
        })?;
        Ok(Arc::clone(tool))
    }

    /// Policy → approval → run.
    async fn decide_and_run(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        caller: &Caller,
        tainted: bool,
        step: &mut Step,
    ) -> (Outcome, ToolOutput) {
        // One reading of the settings for the whole call: the toggles the decision saw are the
        // ones the tool runs under.
        let settings = self.settings();
        let verdict = imurun_policy::check(
            &self.workspace,
            &settings,
            &facts(tool, args).tainted(tainted),
        );
        step.decision = verdict.decision;
        step.verdict = Some(verdict.clone());
        match verdict.decision {
            Decision::Deny => {
                self.publish_denied(step, caller, None, DenyReason::Policy, &verdict.reason);
                let output = ToolOutput::failed(format!("denied by policy: {}", verdict.reason));
                return (Outcome::Denied(DenyReason::Policy), output);
            }
            Decision::Ask => {
                if let Err(refused) = self.approve(tool, args, caller, step, &verdict).await {
                    return refused;
                }
            }
            Decision::Allow => {}
        }
        if caller.stop.is_stopped() {
            let message = format!("the turn was stopped before `{}` ran", step.tool);
            self.publish_denied(step, caller, None, DenyReason::Stopped, &message);
            let output = ToolOutput::failed(message);
            return (Outcome::Denied(DenyReason::Stopped), output);
        }
        let context = ToolContext {
            workspace_root: self.workspace.root().to_path_buf(),
            source: caller.source,
            depth: caller.depth,
            stop: caller.stop.clone(),
            session_id: caller.session_id.clone(),
            allowed_tools: caller.allowed_tools.clone(),
            events: Arc::clone(sink(&self.events, caller)),
            network: settings.toggles.network,
        };
        let output = run_caught(tool, &context, args).await;
        let outcome = if output.ok {
            Outcome::Ok
        } else {
            Outcome::Failed
        };
        (outcome, output)
    }

    /// The approval step for an "ask": a remembered grant, the caller's own approval, or a
    /// person through the broker. `Err` carries the refusal to return.
    async fn approve(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        caller: &Caller,
        step: &Step,
        verdict: &Verdict,
    ) -> Result<(), (Outcome, ToolOutput)> {
        let category = tool.category();
        if let Some(session_id) = caller.session_id.as_deref() {
            let granted = self
                .grants()
                .apply(session_id, &step.tool, category, verdict.clone());
            if granted.decision == Decision::Allow {
                return Ok(());
            }
        }
        match caller.on_ask {
            OnAsk::Approved => return Ok(()),
            OnAsk::Declined => {
                let message = "a person denied it";
                self.publish_denied(step, caller, None, DenyReason::User, message);
                let output = ToolOutput::failed(format!("denied: {message}"));
                return Err((Outcome::Denied(DenyReason::User), output));
            }
            OnAsk::Report => {
                let output = ToolOutput::failed(format!(
                    "`{}` needs a person's approval first: {}",
                    step.tool, verdict.reason
                ));
                return Err((Outcome::NeedsApproval, output));
            }
            OnAsk::Wait => {}
        }
        let request = ApprovalRequest {
            call_id: &step.call_id,
            session_id: caller.session_id.as_deref(),
            tool: &step.tool,
            args,
            rememberable: is_rememberable(category),
            depth: caller.depth,
            reason: &verdict.reason,
            tainted: verdict.rule == Rule::Tainted,
        };
        let events = sink(&self.events, caller).as_ref();
        match self.approvals.ask(request, &caller.stop, events).await {
            ApprovalAnswer::Approved {
                approval_id,
                remember,
            } => {
                // Deletes are never remembered, whatever the request said; a full grant table
                // only means the next call asks again.
                let remembered = remember
                    && caller.session_id.as_deref().is_some_and(|session_id| {
                        self.grants()
                            .remember(session_id, &step.tool, category)
                            .is_ok()
                    });
                events.publish(Event::ToolApproved {
                    approval_id,
                    call_id: step.call_id.clone(),
                    session_id: caller.session_id.clone(),
                    name: step.tool.clone(),
                    remember: remembered,
                });
                Ok(())
            }
            ApprovalAnswer::Denied {
                approval_id,
                reason,
                message,
            } => {
                self.publish_denied(step, caller, approval_id, reason, &message);
                Err((
                    Outcome::Denied(reason),
                    ToolOutput::failed(format!("denied: {message}")),
                ))
            }
        }
    }

    fn publish_denied(
        &self,
        step: &Step,
        caller: &Caller,
        approval_id: Option<String>,
        reason: DenyReason,
        message: &str,
    ) {
        sink(&self.events, caller).publish(Event::ToolDenied {
            approval_id,
            call_id: step.call_id.clone(),
            session_id: caller.session_id.clone(),
            name: step.tool.clone(),
            reason,
            message: message.to_string(),
        });
    }

    /// The last step: `tool.result`, one audit record (no argument values), the execution.
    fn finish(
        &self,
        step: Step,
        caller: &Caller,
        outcome: Outcome,
        output: ToolOutput,
    ) -> Execution {
        sink(&self.events, caller).publish(Event::ToolResult {
            call_id: step.call_id.clone(),
            session_id: caller.session_id.clone(),
            name: step.tool.clone(),
            ok: output.ok,
            text: output.text.clone(),
            depth: caller.depth,
            untrusted: output.untrusted,
        });
        self.audit.record(AuditRecord {
            at_ms: now_ms(),
            mark: AUDIT_MARK,
            tool: step.tool.clone(),
            source: caller.source,
            decision: step.decision,
            outcome: outcome.as_audit().to_string(),
            session_id: caller.session_id.clone(),
        });
        Execution {
            call_id: step.call_id,
            tool: step.tool,
            decision: step.decision,
            verdict: step.verdict,
            outcome,
            output,
        }
    }

    fn grants(&self) -> MutexGuard<'_, Grants> {
        // Grant operations are single map updates, so a poisoned lock still holds a
        // consistent table.
        self.grants.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolExecutor")
            .field("registry", &self.registry)
            .field("workspace", &self.workspace.root())
            .field("settings", &self.settings())
            .field("approvals", &self.approvals)
            .finish_non_exhaustive()
    }
}

/// Where a call's events go: its caller's sink, else the executor's.
fn sink<'a>(executor_events: &'a Arc<dyn EventSink>, caller: &'a Caller) -> &'a Arc<dyn EventSink> {
    caller.events.as_ref().unwrap_or(executor_events)
}

/// One call's progress through the steps.
struct Step {
    call_id: String,
    tool: String,
    decision: Decision,
    verdict: Option<Verdict>,
}

/// The facts the policy decides on: the tool's category, the values of the arguments it
/// declares as paths, and of the one it declares as a command.
fn facts(tool: &dyn Tool, args: &Map<String, Value>) -> CallFacts {
    let mut facts = CallFacts::new(tool.category());
    for name in tool.path_arguments() {
        if let Some(Value::String(path)) = args.get(*name) {
            facts.paths.push(path.clone());
        }
    }
    if let Some(Value::String(command)) = tool.command_argument().and_then(|name| args.get(name)) {
        facts.command = Some(command.clone());
    }
    facts
}

fn refusal_outcome(error: &ExecError) -> Outcome {
    match error {
        ExecError::UnknownTool { .. } => Outcome::UnknownTool,
        ExecError::NotAllowed { .. } => Outcome::NotAllowed,
        // `UnknownApproval` comes from `ApprovalBroker::decide`, never from a call's steps.
        ExecError::InvalidArguments { .. } | ExecError::UnknownApproval { .. } => {
            Outcome::InvalidArguments
        }
    }
}
