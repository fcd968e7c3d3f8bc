//! The pre-fetch: which prompts it looks up, the Context block it writes, its deadline, its
//! events, the policy it obeys, and the started call it answers without a second run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use imurun_agent::{
    AgentConfig, AgentLoop, Intents, OFFLINE_SENTENCE, TurnRequest, asks_for_a_change, intents,
};
use imurun_core::{
    BoxFuture, CallSource, Event, PrefetchResult, Role, StopFlag, Tool, ToolCategory, ToolContext,
    ToolOutput, ToolSpec,
};
use imurun_exec::{Registry, ToolExecutor};
use imurun_policy::{Mode, Settings, Toggles};
use imurun_testkit::{Behaviour, FakeGroup, FakeTool};
use serde_json::{Map, Value, json};

use crate::support::{RecordingAudit, RecordingEvents, Reply, TempWorkspace, TestModel, model};

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
    _ws: TempWorkspace,
    model: Arc<TestModel>,
    events: Arc<RecordingEvents>,
    audit: Arc<RecordingAudit>,
    time: Arc<LiveTool>,
    weather: Arc<LiveTool>,
    search: Arc<LiveTool>,
    agent: AgentLoop,
}

impl Setup {
    fn new(model: Arc<TestModel>, settings: Settings, search_hangs: bool) -> Self {
        let ws = TempWorkspace::new();
        let time = LiveTool::new("get_time", ToolCategory::Compute, false);
        let weather = LiveTool::new("get_weather", ToolCategory::Network, false);
        let search = LiveTool::new("web_search", ToolCategory::Network, search_hangs);
        let mut registry = Registry::new();
        registry.insert(time.clone(), true);
        registry.insert(weather.clone(), true);
        registry.insert(search.clone(), true);
        let events = RecordingEvents::new(true);
        let audit = Arc::new(RecordingAudit::default());
        let executor = Arc::new(ToolExecutor::new(
            registry,
            Arc::clone(&ws.workspace),
            settings,
            events.clone(),
            audit.clone(),
        ));
        let agent = AgentLoop::new(model.clone(), executor, events.clone())
            .with_config(AgentConfig::default())
            .with_prefetch_deadline(Duration::from_millis(300));
        Self {
            _ws: ws,
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

    /// The tool step the lookups were handed to the model as, in its first request: the
    /// call message after the prompt, then each result as `(tool, text)`.
    fn handed_step(&self) -> Option<(String, Vec<(String, String)>)> {
        let first = &self.model.received()[0];
        let prompt_at = first.iter().rposition(|message| {
            message.role == Role::User && !message.content.starts_with("[tool result: ")
        })?;
        let calls = first.get(prompt_at + 1)?;
        if calls.role != Role::Assistant {
            return None;
        }
        let results = first[prompt_at + 2..]
            .iter()
            .map(|message| {
                let rest = message
                    .content
                    .strip_prefix("[tool result: ")
                    .expect("a result");
                let (tool, text) = rest.split_once("]\n").expect("a header line");
                (tool.to_owned(), text.to_owned())
            })
            .collect();
        Some((calls.content.clone(), results))
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
        ..Intents::default()
    }
}

#[test]
fn prompts_about_the_workspace_and_sums_are_looked_up() {
    let list = Intents {
        list: true,
        ..Intents::default()
    };
    let read = |path: &str| Intents {
        read: Some(path.to_owned()),
        ..Intents::default()
    };
    let sum = |expression: &str| Intents {
        calculate: Some(expression.to_owned()),
        ..Intents::default()
    };
    let cases = [
        ("List the files in my workspace.", list.clone()),
        ("list the files here", list.clone()),
        ("What's in my workspace?", list.clone()),
        ("Which files do I have?", list.clone()),
        ("Read groceries.txt", read("groceries.txt")),
        ("What does `notes/todo.md` say?", read("notes/todo.md")),
        (
            "Can you open the file report.csv for me",
            read("report.csv"),
        ),
        ("show me README.md", read("README.md")),
        ("What is 17 times 23?", sum("17 * 23")),
        ("calculate 15% of 80", sum("15 / 100 * 80")),
        // Not requests to read or list.
        ("Read me a story about a dragon", Intents::default()),
        ("Open the window, it is hot in here", Intents::default()),
        ("Delete old.txt", Intents::default()),
        ("Write a poem about my files", Intents::default()),
        ("Show me how to use python.org", Intents::default()),
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
        model(vec![Reply::text("It is noon and mild in Oslo.")]),
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
    // With tools on offer the lookups are a tool step the model did not write, not a
    // Context block.
    assert_eq!(s.context(), None);
    let (calls, results) = s.handed_step().expect("a tool step");
    assert_eq!(
        calls,
        "```tool\n{\"name\": \"get_time\", \"args\": {}}\n```\n```tool\n{\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n```"
    );
    assert_eq!(
        results,
        vec![
            ("get_time".to_owned(), "get_time says {}".to_owned()),
            (
                "get_weather".to_owned(),
                "get_weather says {\"location\":\"Oslo\"}".to_owned()
            ),
        ]
    );
    assert_eq!(
        (s.time.runs(), s.weather.runs(), s.search.runs()),
        (1, 1, 0)
    );
    let audit = s.audit.all();
    assert_eq!(audit.len(), 2);
    assert!(
        audit
            .iter()
            .all(|record| record.source == CallSource::Prefetch && record.outcome == "ok")
    );
    let types = s.events.merged_types();
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
        model(vec![Reply::text("I can't check the news right now.")]),
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
    let (_, results) = s.handed_step().expect("a tool step");
    assert_eq!(
        results,
        vec![("web_search".to_owned(), OFFLINE_SENTENCE.to_owned())]
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
    let s = Setup::new(model(vec![Reply::text("ok")]), asking, false);
    s.run("What time is it, and what's the weather in Oslo?")
        .await;
    assert_eq!(s.weather.runs(), 0);
    let (_, results) = s.handed_step().expect("a tool step");
    assert_eq!(
        results,
        vec![("get_time".to_owned(), "get_time says {}".to_owned())]
    );

    // The network toggle off: the lookup is denied, and the model is told it can't check.
    let offline = Settings {
        mode: Mode::AllowReads,
        toggles: Toggles {
            network: false,
            ..Toggles::default()
        },
    };
    let s = Setup::new(model(vec![Reply::text("ok")]), offline, false);
    s.run("What's the weather in Oslo?").await;
    assert_eq!(s.weather.runs(), 0);
    let (_, results) = s.handed_step().expect("a tool step");
    assert_eq!(
        results,
        vec![("get_weather".to_owned(), OFFLINE_SENTENCE.to_owned())]
    );
}

#[tokio::test]
async fn after_the_pre_fetchs_step_no_call_is_started_and_a_repeat_is_read_from_the_cache() {
    // The lookup is a tool step the model already read: its first reply is not started with
    // a call, and a model that writes the same call again reads the lookup's result from the
    // cache, told that it repeated the call; nothing runs twice.
    let model = TestModel::new(vec![
        Reply::text(
            "```tool\n{\"name\": \"get_weather\", \"args\": {\"location\": \"Oslo\"}}\n```",
        ),
        Reply::text("Mild in Oslo."),
    ])
    .prefilling()
    .shared();
    let s = Setup::new(model, Setup::allow_reads(), false);
    let result = s.run("What's the weather in Oslo right now?").await;
    assert_eq!(result.answer, "Mild in Oslo.");
    assert_eq!(
        s.weather.runs(),
        1,
        "the repeat was answered from the cache"
    );
    assert_eq!(s.context(), None);
    assert!(
        s.model
            .requests()
            .iter()
            .all(|request| request.prefill.is_none()),
        "no reply was started with a call"
    );
    let second = &s.model.received()[1];
    let last = &second.last().unwrap().content;
    assert!(
        last.contains("get_weather says {\"location\":\"Oslo\"}"),
        "{last}"
    );
    assert!(last.contains("already made this call"), "{last}");
}

#[tokio::test]
async fn stop_during_the_pre_fetch_ends_the_wait() {
    let s = Setup::new(model(vec![Reply::text("ok")]), Setup::allow_reads(), true);
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

/// Grouped tools (connector services) as the offering sees them: three services of three
/// tools each, nine in all, more than are offered at once.
fn grouped_registry() -> Registry {
    let mut registry = Registry::new();
    registry.insert(
        LiveTool::new("get_time", ToolCategory::Compute, false),
        true,
    );
    let services = [
        (
            "github",
            "GitHub",
            &["issue", "repo"][..],
            &[
                "github_search_repos",
                "github_list_issues",
                "github_create_issue",
            ][..],
        ),
        (
            "gmail",
            "Gmail",
            &["inbox", "mail"][..],
            &["gmail_search", "gmail_send", "gmail_read"][..],
        ),
        (
            "cloudflare",
            "Cloudflare",
            &["dns"][..],
            &[
                "cloudflare_list_dns",
                "cloudflare_create_dns",
                "cloudflare_delete_dns",
            ][..],
        ),
    ];
    for (id, name, cues, tools) in services {
        let group = FakeGroup::new(id, name, cues);
        for tool in tools {
            registry.insert_grouped(
                Arc::new(FakeTool::new(
                    tool,
                    ToolCategory::Network,
                    Behaviour::Succeed,
                )),
                group.clone(),
            );
        }
    }
    registry
}

/// Connector offering reaches the prompt: with more than eight grouped tools available, a
/// question about the inbox lists the mail service's tools and names the other services in
/// one line.
#[tokio::test]
async fn the_prompt_lists_the_connector_services_the_question_points_at() {
    let ws = TempWorkspace::new();
    let registry = grouped_registry();
    let model = model(vec![Reply::text("Two new mails."), Reply::text("ok")]);
    let executor = Arc::new(ToolExecutor::new(
        registry,
        Arc::clone(&ws.workspace),
        Setup::allow_reads(),
        RecordingEvents::new(true),
        Arc::new(RecordingAudit::default()),
    ));
    let agent = AgentLoop::new(model.clone(), executor, RecordingEvents::new(true));
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

#[test]
fn requests_to_change_the_workspace_are_recognised_and_nothing_else() {
    for prompt in [
        "Create a file called todo.txt with the text buy milk",
        "Write hello to hello.txt",
        "Delete notes.txt",
        "Make a folder called drafts",
        "please remove the file old.log",
        "Can you please save this to plan.md: ship on Friday",
        "Rename notes.txt to old-notes.txt",
    ] {
        assert!(asks_for_a_change(prompt), "{prompt:?}");
    }
    for prompt in [
        "Write a haiku about autumn.",
        "Make me laugh",
        "Add 2 and 3",
        "What does notes.txt say?",
        "Read groceries.txt",
        "How do I delete a file in Linux?",
        "List the files in my workspace.",
        "",
    ] {
        assert!(!asks_for_a_change(prompt), "{prompt:?}");
    }
}
