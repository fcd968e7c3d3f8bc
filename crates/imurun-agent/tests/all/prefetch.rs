//! The pre-fetch: which prompts it looks up, the Context block it writes, its deadline, its
//! events, the policy it obeys, and the started call it answers without a second run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use imurun_agent::{AgentConfig, AgentLoop, Intents, OFFLINE_SENTENCE, TurnRequest, intents};
use imurun_core::{
    BoxFuture, CallSource, Event, PrefetchResult, StopFlag, Tool, ToolCategory, ToolContext,
    ToolOutput, ToolSpec,
};
use imurun_policy::{Mode, Settings, Toggles};
use imurun_tools::{Registry, ToolExecutor};
use serde_json::{Map, Value, json};
use tempfile::TempDir;

use crate::support::{MemoryAudit, RecordingEvents, Reply, ScriptedModel, temp_workspace};

/// A stand-in for a built-in live tool: answers with its arguments, or hangs.
struct LiveTool {
    spec: ToolSpec,
    category: ToolCategory,
    hangs: bool,
    runs: AtomicUsize,
}

impl LiveTool {
    fn new(name: &str, category: ToolCategory, hangs: bool) -> Arc<Self> {
        let key = match name {
            "get_weather" => "location",
            "web_search" => "query",
            _ => "timezone",
        };
        Arc::new(Self {
            spec: ToolSpec::new(
                name,
                format!("{name} for tests"),
                json!({"type": "object", "properties": {key: {"type": "string"}}}),
            ),
            category,
            hangs,
            runs: AtomicUsize::new(0),
        })
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

impl Tool for LiveTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn category(&self) -> ToolCategory {
        self.category
    }

    fn run<'a>(
        &'a self,
        _: &'a ToolContext,
        args: &'a Map<String, Value>,
    ) -> BoxFuture<'a, ToolOutput> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let text = format!("{} says {}", self.spec.name, Value::Object(args.clone()));
        let hangs = self.hangs;
        Box::pin(async move {
            if hangs {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            ToolOutput::ok(text)
        })
    }
}

struct Setup {
    _dir: TempDir,
    model: Arc<ScriptedModel>,
    events: Arc<RecordingEvents>,
    audit: Arc<MemoryAudit>,
    time: Arc<LiveTool>,
    weather: Arc<LiveTool>,
    search: Arc<LiveTool>,
    agent: AgentLoop,
}

impl Setup {
    fn new(model: Arc<ScriptedModel>, settings: Settings, search_hangs: bool) -> Self {
        let (dir, workspace) = temp_workspace();
        let time = LiveTool::new("get_time", ToolCategory::Compute, false);
        let weather = LiveTool::new("get_weather", ToolCategory::Network, false);
        let search = LiveTool::new("web_search", ToolCategory::Network, search_hangs);
        let mut registry = Registry::new();
        registry.insert(time.clone(), true);
        registry.insert(weather.clone(), true);
        registry.insert(search.clone(), true);
        let events = Arc::new(RecordingEvents::default());
        let audit = Arc::new(MemoryAudit::default());
        let executor = Arc::new(ToolExecutor::new(
            registry,
            workspace,
            settings,
            events.clone(),
            audit.clone(),
        ));
        let agent = AgentLoop::new(model.clone(), executor, events.clone())
            .with_config(AgentConfig::default())
            .with_prefetch_deadline(Duration::from_millis(300));
        Self {
            _dir: dir,
            model,
            events,
            audit,
            time,
            weather,
            search,
            agent,
        }
    }

    fn allow_reads() -> Settings {
        Settings {
            mode: Mode::AllowReads,
            toggles: Toggles::default(),
        }
    }

    async fn run(&self, prompt: &str) -> imurun_agent::TurnResult {
        self.agent
            .run(TurnRequest {
                session_id: Some("s1".into()),
                ..TurnRequest::new(prompt)
            })
            .await
    }

    fn system(&self) -> String {
        self.model.received()[0][0].content.clone()
    }

    fn context(&self) -> Option<String> {
        self.system()
            .split_once("## Context\n")
            .map(|(_, context)| context.to_owned())
    }
}

fn intent(
    time: bool,
    timezone: Option<&str>,
    weather: Option<&str>,
    search: Option<&str>,
) -> Intents {
    Intents {
        time,
        timezone: timezone.map(str::to_owned),
        weather: weather.map(str::to_owned),
        search: search.map(str::to_owned),
    }
}

#[test]
fn prompts_that_plainly_ask_about_the_present_are_looked_up() {
    let none = Intents::default();
    let cases = [
        ("What time is it?", intent(true, None, None, None)),
        ("what's the time right now", intent(true, None, None, None)),
        ("What is today's date?", intent(true, None, None, None)),
        (
            "What time is it in Tokyo?",
            intent(true, Some("Asia/Tokyo"), None, None),
        ),
        (
            "time in New York?",
            intent(true, Some("America/New_York"), None, None),
        ),
        (
            "What's the time in Europe/Paris?",
            intent(true, Some("Europe/Paris"), None, None),
        ),
        // A place no zone is named after is left to the model.
        ("What time is it in Springfield?", none.clone()),
        (
            "What's the weather in Oslo today?",
            intent(false, None, Some("Oslo"), None),
        ),
        (
            "Will it rain in San Francisco tomorrow?",
            intent(false, None, Some("San Francisco"), None),
        ),
        ("Paris weather?", intent(false, None, Some("Paris"), None)),
        (
            "forecast for Buenos Aires",
            intent(false, None, Some("Buenos Aires"), None),
        ),
        // Weather without a place: the tool needs one, so there is nothing to look up.
        ("What's the weather like?", none.clone()),
        (
            "Search the web for rust 1.95 release notes",
            intent(false, None, None, Some("rust 1.95 release notes")),
        ),
        (
            "look up the population of Chile.",
            intent(false, None, None, Some("the population of Chile")),
        ),
        (
            "What's the latest news about the Mars mission?",
            intent(
                false,
                None,
                None,
                Some("What's the latest news about the Mars mission"),
            ),
        ),
        (
            "What is the price of bitcoin today?",
            intent(
                false,
                None,
                None,
                Some("What is the price of bitcoin today"),
            ),
        ),
        ("Write a poem about the sea.", none.clone()),
        ("What is the capital of France?", none.clone()),
        ("How do I search for a file in bash?", none.clone()),
        ("What was the weather like in 1990?", none.clone()),
        ("list the files here", none.clone()),
        ("Explain what a time zone is", none),
    ];
    let mut wrong = Vec::new();
    for (prompt, expected) in cases {
        let got = intents(prompt);
        if got != expected {
            wrong.push(format!("{prompt:?}: got {got:?}, expected {expected:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn prompts_whose_lower_case_changes_length_are_read_without_a_panic() {
    // `İ` grows and `ẞ`, `Ω` (the ohm sign) and `K` (the kelvin sign) shrink when lower-cased:
    // positions found in a fully lower-cased prompt would not be positions in the prompt.
    let cases = [
        ("İstanbul time in Øslo ẞ", intent(false, None, None, None)),
        (
            "Ⱥ weather in \u{2126}slo",
            intent(false, None, Some("\u{2126}slo"), None),
        ),
        // The capitalised words before the word `weather` are the place.
        (
            "\u{2126} Øweather weather Ⱥ",
            intent(false, None, Some("\u{2126} Øweather"), None),
        ),
        ("  search for ȺȺ", intent(false, None, None, Some("ȺȺ"))),
        // Not an opening search request, but a live question about news.
        (
            "\u{212A}elvin: search for İzmir news",
            intent(
                false,
                None,
                None,
                Some("\u{212A}elvin: search for İzmir news"),
            ),
        ),
        (
            "Search for İzmir weather forecast",
            intent(false, None, Some("İzmir"), Some("İzmir weather forecast")),
        ),
    ];
    for (prompt, expected) in cases {
        assert_eq!(intents(prompt), expected, "{prompt:?}");
    }
}

#[tokio::test]
async fn the_lookups_go_into_the_context_block_through_the_executor() {
    let s = Setup::new(
        ScriptedModel::new(vec![Reply::Text("It is noon and mild in Oslo.")]),
        Setup::allow_reads(),
        false,
    );
    let result = s
        .run("What time is it, and what's the weather in Oslo?")
        .await;
    assert_eq!(result.answer, "It is noon and mild in Oslo.");
    assert!(
        result.tool_calls.is_empty(),
        "the pre-fetch is not the model's call"
    );
    let context = s.context().expect("a Context block");
    assert_eq!(
        context,
        "get_time: get_time says {}\nget_weather (Oslo): get_weather says {\"location\":\"Oslo\"}"
    );
    assert_eq!(
        (s.time.runs(), s.weather.runs(), s.search.runs()),
        (1, 1, 0)
    );
    let audit = s.audit.records();
    assert_eq!(audit.len(), 2);
    assert!(
        audit
            .iter()
            .all(|record| record.source == CallSource::Prefetch && record.outcome == "ok")
    );
    let types = s.events.types();
    assert_eq!(types[0], "tools.start");
    let done = s.events.all().into_iter().find_map(|event| match event {
        Event::ToolsDone { results, .. } => Some(results),
        _ => None,
    });
    assert_eq!(
        done,
        Some(vec![
            PrefetchResult {
                tool: "get_time".into(),
                ok: true
            },
            PrefetchResult {
                tool: "get_weather".into(),
                ok: true
            },
        ])
    );
    let done_at = types.iter().position(|kind| kind == "tools.done").unwrap();
    let step_at = types
        .iter()
        .position(|kind| kind.starts_with("step"))
        .unwrap();
    assert!(
        done_at < step_at,
        "the pre-fetch ends before the model's first step: {types:?}"
    );
}

#[tokio::test]
async fn a_provider_that_hangs_costs_the_deadline_and_reads_as_offline() {
    let s = Setup::new(
        ScriptedModel::new(vec![Reply::Text("I can't check the news right now.")]),
        Setup::allow_reads(),
        true,
    );
    let started = Instant::now();
    let result = s.run("Search the web for today's headlines").await;
    // The hanging search sleeps for 60 s; the turn goes on after the 300 ms deadline.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(result.answer, "I can't check the news right now.");
    assert_eq!(
        s.context().as_deref(),
        Some(format!("web_search (today's headlines): {OFFLINE_SENTENCE}").as_str())
    );
    let wire = s.events.wire();
    let search_events: Vec<&Value> = wire
        .iter()
        .filter(|event| event["type"].as_str().unwrap().starts_with("web_search."))
        .collect();
    assert_eq!(search_events.len(), 2, "{wire:?}");
    assert_eq!(search_events[0]["query"], "today's headlines");
    assert_eq!(search_events[1]["ok"], false);
}

#[tokio::test]
async fn a_lookup_the_mode_would_ask_about_is_not_made_and_a_denied_one_reads_as_offline() {
    // `ask` mode: the network lookup would need a person; nobody asked for it, so it is
    // skipped. The clock is computation and still runs.
    let asking = Settings {
        mode: Mode::Ask,
        toggles: Toggles::default(),
    };
    let s = Setup::new(ScriptedModel::new(vec![Reply::Text("ok")]), asking, false);
    s.run("What time is it, and what's the weather in Oslo?")
        .await;
    assert_eq!(s.weather.runs(), 0);
    assert_eq!(s.context().as_deref(), Some("get_time: get_time says {}"));

    // The network toggle off: the lookup is denied, and the model is told it can't check.
    let offline = Settings {
        mode: Mode::AllowReads,
        toggles: Toggles {
            network: false,
            ..Toggles::default()
        },
    };
    let s = Setup::new(ScriptedModel::new(vec![Reply::Text("ok")]), offline, false);
    s.run("What's the weather in Oslo?").await;
    assert_eq!(s.weather.runs(), 0);
    assert_eq!(
        s.context().as_deref(),
        Some(format!("get_weather (Oslo): {OFFLINE_SENTENCE}").as_str())
    );
}

#[tokio::test]
async fn a_model_that_takes_the_call_prefill_reads_the_lookup_as_its_call_result() {
    // The started call is the pre-fetch's own: it is answered from the lookup, not run again,
    // and the system message carries no Context block.
    let model = ScriptedModel::prefilling(vec![
        Reply::Text("\n{\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n```"),
        Reply::Text("Mild in Oslo."),
    ]);
    let s = Setup::new(model, Setup::allow_reads(), false);
    let result = s.run("What's the weather in Oslo right now?").await;
    assert_eq!(result.answer, "Mild in Oslo.");
    assert_eq!(
        s.weather.runs(),
        1,
        "the call was answered from the pre-fetch"
    );
    assert_eq!(s.context(), None);
    let second = &s.model.received()[1];
    let last = &second.last().unwrap().content;
    assert!(
        last.contains("get_weather says {\"location\":\"Oslo\"}"),
        "{last}"
    );
    assert!(!last.contains("already made this call"), "{last}");
}

#[tokio::test]
async fn stop_during_the_pre_fetch_ends_the_wait() {
    let s = Setup::new(
        ScriptedModel::new(vec![Reply::Text("ok")]),
        Setup::allow_reads(),
        true,
    );
    let stop = StopFlag::new();
    stop.stop();
    let agent = s.agent.with_prefetch_deadline(Duration::from_secs(30));
    let started = Instant::now();
    agent
        .run(TurnRequest {
            session_id: Some("s1".into()),
            stop,
            ..TurnRequest::new("search for rust news")
        })
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// Connector offering reaches the prompt: with more than eight connector tools available, a
/// question about the inbox lists Gmail's tools and names the other services in one line.
#[tokio::test]
async fn the_prompt_lists_the_connector_services_the_question_points_at() {
    let (_dir, workspace) = temp_workspace();
    let mut registry = Registry::new();
    registry.insert(
        LiveTool::new("get_time", ToolCategory::Compute, false),
        true,
    );
    imurun_tools::Connectors::from_lookup(|name| name.ends_with("_TOKEN").then(|| "t".to_owned()))
        .register(&mut registry);
    let model = ScriptedModel::new(vec![Reply::Text("Two new mails."), Reply::Text("ok")]);
    let executor = Arc::new(ToolExecutor::new(
        registry,
        workspace,
        Setup::allow_reads(),
        Arc::new(RecordingEvents::default()),
        Arc::new(MemoryAudit::default()),
    ));
    let agent = AgentLoop::new(
        model.clone(),
        executor,
        Arc::new(RecordingEvents::default()),
    );
    agent
        .run(TurnRequest::new("anything new in my inbox?"))
        .await;
    let system = model.received()[0][0].content.clone();
    assert!(system.contains("- gmail_search("), "{system}");
    assert!(!system.contains("- github_create_issue("), "{system}");
    assert!(
        system.contains("Also connected, ask to use them: GitHub, Cloudflare."),
        "{system}"
    );
    assert!(
        system.contains("- get_time("),
        "built-in tools are never hidden"
    );
    // An earlier message can point too.
    agent
        .run(TurnRequest {
            history: vec![imurun_core::Message::user("open an issue in octo/hello")],
            ..TurnRequest::new("and add the crash log to it")
        })
        .await;
    let system = model.received()[1][0].content.clone();
    assert!(system.contains("- github_create_issue("), "{system}");
    assert!(!system.contains("- gmail_search("), "{system}");
}

proptest::proptest! {
    /// Any prompt, in any script, is read without a panic; a search query is always a piece
    /// of the prompt.
    #[test]
    fn intents_never_panic(prompt in "\\PC{0,80}", lead in "(search for |look up |weather in |time in )?") {
        let prompt = format!("{lead}{prompt}");
        let found = intents(&prompt);
        if let Some(query) = &found.search {
            proptest::prop_assert!(prompt.contains(query.as_str()), "{query:?} not in {prompt:?}");
        }
    }
}
