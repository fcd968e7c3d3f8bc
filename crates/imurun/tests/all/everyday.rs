//! The everyday suite (`tests/everyday.json`): the prompts a new user asks first — the time,
//! their files, sums, greetings, short creative requests, the weather and the news with no
//! network, writes and deletes in the default mode — asked of the embedded model through a
//! real `imurun serve`, each scored on which tools ran and on what its answer holds. The score
//! is printed; the test fails below the suite's floor, on any answer holding a worked
//! example's value the person did not say, and when one of the four prompts a new user meets
//! first (the time, the listing, a greeting, 17 × 23) does not hold.
//!
//! Every check is what imurun guarantees from the tools' results and the clock, never what
//! the model happens to write: the time is compared with the clock read before and after the
//! turn, so the suite holds at any hour and date.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use imurun_core::{clock_time_forms, date_forms};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::serve_cli::{Server, subscribe};
use crate::support::model_path;

/// How long one turn may take before the suite stops it (it then scores as failed).
const TURN_WAIT_MAX: Duration = Duration::from_secs(150);

#[derive(Debug, Deserialize)]
struct Suite {
    floor: f64,
    workspaces: BTreeMap<String, BTreeMap<String, String>>,
    cases: Vec<Case>,
}

/// One prompt and what must hold of its turn. Absent checks are not made.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    prompt: String,
    #[serde(default = "two_files")]
    workspace: String,
    /// Tools that must have been called (by the pre-fetch or the model).
    #[serde(default)]
    ran: Vec<String>,
    /// No tool may have been called.
    #[serde(default)]
    ran_none: bool,
    /// Tools whose call must have asked the person (the suite denies every card).
    #[serde(default)]
    asked: Vec<String>,
    /// The answer holds the clock's time (and date) in this zone (`local`: the machine's).
    time: Option<String>,
    /// The answer holds the clock's date in this zone.
    date: Option<String>,
    /// The answer holds the clock's weekday in this zone.
    weekday: Option<String>,
    /// The answer names exactly the workspace's files (or says it is empty).
    #[serde(default)]
    listing: bool,
    /// The answer holds every one of these (case-insensitive).
    #[serde(default)]
    has_all: Vec<String>,
    /// The answer holds at least one of these (case-insensitive).
    #[serde(default)]
    has_any: Vec<String>,
    /// The answer holds this number as a whole word.
    number: Option<String>,
    /// The answer names the assistant and claims to be nothing else.
    #[serde(default)]
    names_assistant: bool,
    /// The answer has at least this many words.
    words_at_least: Option<usize>,
    /// With the network off: the answer states no live value (no temperature) and says it
    /// could not check.
    #[serde(default)]
    no_live_values: bool,
    /// Workspace paths that must still not exist after the turn.
    #[serde(default)]
    absent: Vec<String>,
    /// Workspace files that must be unchanged after the turn.
    #[serde(default)]
    unchanged: Vec<String>,
    /// Every approval card is approved (else every card is denied).
    #[serde(default)]
    approve: bool,
    /// Workspace files and what each must hold exactly after the turn (one trailing newline
    /// aside).
    #[serde(default)]
    file_is: BTreeMap<String, String>,
    /// The answer is made of this workspace file: most of its content words are the file's.
    from_file: Option<String>,
    /// Which set of the suite the case belongs to (scored apart as well as together).
    #[serde(default = "first_set")]
    set: String,
}

fn first_set() -> String {
    "first".to_owned()
}

fn two_files() -> String {
    "two-files".to_owned()
}

/// What one turn did, read from the server.
#[derive(Debug, Default)]
struct Outcome {
    answer: String,
    status: String,
    /// Tools called, pre-fetch lookups included.
    called: Vec<String>,
    /// Tools whose call asked the person.
    asked: Vec<String>,
    /// The clock just before the prompt was sent and just after the turn ended.
    before: Option<jiff::Zoned>,
    after: Option<jiff::Zoned>,
    /// How long the turn took, from the prompt sent to the turn view read.
    took: Duration,
}

fn suite() -> Suite {
    // Another suite file (prompts held out from the repository) may be asked instead.
    let path = std::env::var("IMURUN_EVERYDAY_SUITE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/everyday.json").to_owned());
    let path = path.as_str();
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// A served imurun over a workspace holding `files`, with a subscriber to its events.
struct Served {
    server: Server,
    workspace: tempfile::TempDir,
    _home: tempfile::TempDir,
}

impl Served {
    fn start(files: &BTreeMap<String, String>) -> Served {
        let home = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let path = workspace.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let model = model_path();
        let envs: [(&str, &OsStr); 0] = [];
        let server = Server::start_with_args(
            home.path(),
            model.to_str().unwrap(),
            &["--workspace", workspace.path().to_str().unwrap()],
            &envs,
        );
        Served {
            server,
            workspace,
            _home: home,
        }
    }

    /// Puts the workspace back to `files` alone: what a case wrote (with a yes) is gone
    /// before the next case looks.
    fn reset(&self, files: &BTreeMap<String, String>) {
        for entry in std::fs::read_dir(self.workspace.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
        }
        for (name, content) in files {
            let path = self.workspace.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    fn set_network(&self, on: bool) {
        let (status, body) = self
            .server
            .post("/api/permissions", json!({"toggles": {"network": on}}));
        assert_eq!(status, 200, "{body}");
    }

    /// Asks `prompt` in a new session; every approval card is answered `approve`, as a person
    /// who reads it and says yes or no.
    fn ask(&self, prompt: &str, approve: bool) -> Outcome {
        let (status, session) = self.server.post("/api/sessions", json!({}));
        assert_eq!(status, 201, "{session}");
        let session = session["id"].as_str().unwrap().to_owned();
        let events = subscribe(&self.server.addr, &session);
        let before = jiff::Zoned::now();
        let started = Instant::now();
        let (status, accepted) = self.server.post(
            &format!("/api/sessions/{session}/prompts"),
            json!({ "prompt": prompt }),
        );
        assert_eq!(status, 202, "{accepted}");
        let turn = accepted["turn_id"].as_str().unwrap().to_owned();
        let mut outcome = Outcome {
            before: Some(before),
            ..Outcome::default()
        };
        if !self.follow(&events, &mut outcome, approve) {
            // Too long: stopped, so that it costs the next prompts nothing.
            self.server
                .post(&format!("/api/sessions/{session}/stop"), json!({}));
            self.server.wait_until(|server| {
                server
                    .get(&format!("/api/sessions/{session}/turns/{turn}"))
                    .1["status"]
                    != "running"
            });
        }
        outcome.after = Some(jiff::Zoned::now());
        let (_, view) = self
            .server
            .get(&format!("/api/sessions/{session}/turns/{turn}"));
        outcome.status = view["status"].as_str().unwrap_or_default().to_owned();
        outcome.answer = view["answer"].as_str().unwrap_or_default().to_owned();
        outcome.took = started.elapsed();
        outcome
    }

    /// Reads the session's events until its turn ends (true) or `TURN_WAIT_MAX` passes
    /// (false): the calls, the cards (answered `approve`).
    fn follow(&self, events: &Receiver<Value>, outcome: &mut Outcome, approve: bool) -> bool {
        let started = Instant::now();
        while started.elapsed() < TURN_WAIT_MAX {
            let Ok(event) = events.recv_timeout(Duration::from_secs(1)) else {
                continue;
            };
            let name = || event["name"].as_str().unwrap_or_default().to_owned();
            match event["type"].as_str().unwrap_or_default() {
                "tool.call" => outcome.called.push(name()),
                "tool.approval_needed" => {
                    outcome.asked.push(name());
                    let id = event["approval_id"].as_str().unwrap();
                    self.server.post(
                        &format!("/api/tools/approvals/{id}"),
                        json!({ "approved": approve }),
                    );
                }
                "turn.end" => return true,
                _ => {}
            }
        }
        false
    }
}

/// Each failed check of `case` against `outcome`, as a sentence.
fn failures(case: &Case, outcome: &Outcome, files: &[String], workspace: &Path) -> Vec<String> {
    let mut failed = Vec::new();
    let answer = outcome.answer.as_str();
    let lower = answer.to_lowercase();
    if answer.trim().is_empty() {
        failed.push(format!("no answer (status {})", outcome.status));
    }
    for marker in ["[tool result", "```tool", "{\"name\""] {
        if answer.contains(marker) {
            failed.push(format!("the answer holds `{marker}`"));
        }
    }
    for tool in &case.ran {
        if !outcome.called.contains(tool) {
            failed.push(format!("`{tool}` was not called ({:?})", outcome.called));
        }
    }
    if case.ran_none && !outcome.called.is_empty() {
        failed.push(format!("tools were called: {:?}", outcome.called));
    }
    for tool in &case.asked {
        if !outcome.asked.contains(tool) {
            failed.push(format!("no card asked for `{tool}` ({:?})", outcome.asked));
        }
    }
    let (before, after) = (
        outcome.before.as_ref().unwrap(),
        outcome.after.as_ref().unwrap(),
    );
    if let Some(zone) = &case.time {
        let moments = moments(zone, before, after);
        let holds_time = moments.iter().any(|now| {
            clock_time_forms(now.hour().unsigned_abs(), now.minute().unsigned_abs())
                .iter()
                .any(|form| has_word(&lower, &form.to_lowercase()))
        });
        if !holds_time {
            failed.push(format!("the answer does not hold the time in {zone}"));
        }
        if !holds_date(&lower, &moments) {
            failed.push(format!("the answer does not hold the date in {zone}"));
        }
    }
    if let Some(zone) = &case.date
        && !holds_date(&lower, &moments(zone, before, after))
    {
        failed.push(format!("the answer does not hold the date in {zone}"));
    }
    if let Some(zone) = &case.weekday {
        let holds = moments(zone, before, after).iter().any(|now| {
            let weekday = format!("{}", now.strftime("%A")).to_lowercase();
            has_word(&lower, &weekday)
        });
        if !holds {
            failed.push(format!("the answer does not hold the weekday in {zone}"));
        }
    }
    if case.listing {
        failed.extend(listing_failures(&lower, files));
    }
    for wanted in &case.has_all {
        if !lower.contains(&wanted.to_lowercase()) {
            failed.push(format!("the answer lacks {wanted:?}"));
        }
    }
    if !case.has_any.is_empty()
        && !case
            .has_any
            .iter()
            .any(|wanted| lower.contains(&wanted.to_lowercase()))
    {
        failed.push(format!("the answer holds none of {:?}", case.has_any));
    }
    if let Some(number) = &case.number
        && !has_word(&lower.replace(',', ""), number)
        && !number_word(number).is_some_and(|word| has_word(&lower, word))
    {
        failed.push(format!("the answer lacks the number {number}"));
    }
    if case.names_assistant {
        if !lower.contains("imurun") {
            failed.push("the answer does not name the assistant".to_owned());
        }
        for claim in ["i'm a human", "i am a human", "i'm human", "i am human"] {
            if lower.contains(claim) {
                failed.push(format!("the answer claims {claim:?}"));
            }
        }
    }
    if let Some(least) = case.words_at_least
        && answer.split_whitespace().count() < least
    {
        failed.push(format!("the answer has fewer than {least} words"));
    }
    if case.no_live_values {
        if answer.contains('°') || lower.contains("degrees") {
            failed.push("the answer states a temperature".to_owned());
        }
        let admits = [
            "can't",
            "cannot",
            "can not",
            "unable",
            "not able",
            "couldn't",
            "could not",
            "not available",
            "unavailable",
            "offline",
            "no access",
            "don't have access",
        ];
        if !admits.iter().any(|phrase| lower.contains(phrase)) {
            failed.push("the answer does not say it could not check".to_owned());
        }
    }
    for path in &case.absent {
        if workspace.join(path).exists() {
            failed.push(format!(
                "{path} exists: nothing may be written without a yes"
            ));
        }
    }
    for (path, wanted) in &case.file_is {
        match std::fs::read_to_string(workspace.join(path)) {
            Ok(held) if held.strip_suffix('\n').unwrap_or(&held) == wanted => {}
            Ok(held) => failed.push(format!("{path} holds {held:?}, not {wanted:?}")),
            Err(error) => failed.push(format!("{path} cannot be read: {error}")),
        }
    }
    if let Some(path) = &case.from_file {
        let file = std::fs::read_to_string(workspace.join(path)).unwrap_or_default();
        if let Some(reason) = not_made_of(answer, &file) {
            failed.push(format!("the answer is not made of {path}: {reason}"));
        }
    }
    for path in &case.unchanged {
        if !workspace.join(path).is_file() {
            failed.push(format!(
                "{path} is gone: nothing may be deleted without a yes"
            ));
        }
    }
    failed
}

/// The clock in `zone` at the turn's start and end (the turn may cross a minute or a day).
fn moments(zone: &str, before: &jiff::Zoned, after: &jiff::Zoned) -> Vec<jiff::Zoned> {
    if zone == "local" {
        return vec![before.clone(), after.clone()];
    }
    [before, after]
        .iter()
        .map(|moment| moment.in_tz(zone).unwrap())
        .collect()
}

fn holds_date(lower: &str, moments: &[jiff::Zoned]) -> bool {
    moments.iter().any(|now| {
        date_forms(now.year(), now.month(), now.day())
            .iter()
            .any(|form| has_word(lower, &form.to_lowercase()))
    })
}

/// The listing's check: every file named, and no other file-like name; an empty workspace is
/// said to be empty.
fn listing_failures(lower: &str, files: &[String]) -> Vec<String> {
    let mut failed = Vec::new();
    if files.is_empty() {
        let empty = [
            "empty",
            "no files",
            "nothing",
            "no entries",
            "holds 0",
            "0 entries",
        ];
        if !empty.iter().any(|word| lower.contains(word)) {
            failed.push("the answer does not say the workspace is empty".to_owned());
        }
    }
    // The workspace's own entries: its files and the folders that hold the others.
    let mut entries: Vec<String> = files
        .iter()
        .map(|file| file.split('/').next().unwrap_or(file).to_lowercase())
        .collect();
    entries.dedup();
    for entry in &entries {
        if !has_word(lower, entry) {
            failed.push(format!("the answer does not name {entry}"));
        }
    }
    for word in lower.split(|c: char| c.is_whitespace() || ",;:()`*\"'".contains(c)) {
        let word = word.trim_end_matches(['.', '!', '?']);
        let named = word
            .rsplit_once('.')
            .is_some_and(|(stem, ext)| !stem.is_empty() && (1..=5).contains(&ext.len()))
            && word.chars().any(char::is_alphabetic)
            && !word.chars().all(|c| c.is_ascii_digit() || c == '.');
        let known = files.iter().any(|file| {
            let file = file.to_lowercase();
            file == word || file.rsplit('/').next() == Some(word)
        });
        if named && !known {
            failed.push(format!(
                "the answer names {word}, which is not in the workspace"
            ));
        }
    }
    failed
}

/// The English word for a number up to twenty, as answers often write small counts.
fn number_word(number: &str) -> Option<&'static str> {
    const WORDS: [&str; 21] = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| WORDS.get(n).copied())
}

/// Words that say what an answer about a file is doing rather than what the file says.
const FRAMING_WORDS: &[&str] = &[
    "about",
    "above",
    "also",
    "answer",
    "based",
    "below",
    "contains",
    "content",
    "contents",
    "describes",
    "document",
    "file",
    "files",
    "first",
    "following",
    "from",
    "here",
    "heres",
    "into",
    "item",
    "items",
    "last",
    "line",
    "lines",
    "list",
    "lists",
    "main",
    "mentions",
    "note",
    "notes",
    "overview",
    "point",
    "points",
    "quote",
    "says",
    "section",
    "sections",
    "short",
    "summary",
    "that",
    "their",
    "there",
    "these",
    "this",
    "those",
    "what",
    "which",
    "with",
    "your",
];

/// Why `answer` is not made of `file`: fewer than 70% of its content words (four letters or
/// more, framing words aside) occur in the file.
fn not_made_of(answer: &str, file: &str) -> Option<String> {
    let words = |text: &str| -> Vec<String> {
        text.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| word.chars().count() >= 4 && word.chars().any(char::is_alphabetic))
            .map(str::to_owned)
            .collect()
    };
    let in_file: std::collections::BTreeSet<String> = words(file).into_iter().collect();
    let content: Vec<String> = words(answer)
        .into_iter()
        .filter(|word| !FRAMING_WORDS.contains(&word.as_str()))
        .collect();
    if content.is_empty() {
        return Some("it has no content words".to_owned());
    }
    let foreign: Vec<&String> = content
        .iter()
        .filter(|word| !in_file.contains(*word))
        .collect();
    let share = 1.0 - foreign.len() as f64 / content.len() as f64;
    (share < 0.7).then(|| {
        let shown: Vec<&str> = foreign.iter().take(8).map(|word| word.as_str()).collect();
        format!(
            "{:.0}% of its content words are the file's (not: {shown:?})",
            share * 100.0
        )
    })
}

/// Whether `text` holds `word` with no letter or digit joined to either end.
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Example values (`Lima`, `example.txt`, ...) in the answer that the prompt did not say.
fn leaks(prompt: &str, answer: &str) -> Vec<&'static str> {
    let (prompt, answer) = (prompt.to_lowercase(), answer.to_lowercase());
    imurun_agent::example_values()
        .into_iter()
        .filter(|value| {
            let value = value.to_lowercase();
            has_word(&answer, &value) && !prompt.contains(&value)
        })
        .collect()
}

/// The first prompts a new user tries: each must hold, not only count toward the score.
const FIRST_PROMPTS: [&str; 4] = [
    "What time is it now?",
    "List the files in my workspace.",
    "Hi! Who are you?",
    "What is 17 times 23?",
];

/// Servers asking the suite's cases at once, each with one llama.cpp thread
/// (`MODEL_TEST_THREADS`): two use CI's two cores without waiting on each other. Each case is
/// asked in a session of its own over its workspace's files alone, so which server asks it
/// changes nothing of what it is asked.
const SERVERS: usize = 2;

/// A case to ask, and its place in the suite.
struct Job<'a> {
    order: usize,
    workspace: &'a str,
    files: &'a BTreeMap<String, String>,
    case: &'a Case,
}

/// A case asked: what its turn did and which checks failed.
struct Asked<'a> {
    order: usize,
    workspace: &'a str,
    case: &'a Case,
    outcome: Outcome,
    failed: Vec<String>,
}

/// Asks `jobs` one after another on one server, its workspace put back to each job's files
/// before the job (a server and its model load once, and its prompt cache stays warm).
fn ask_in_turn<'a>(jobs: &[Job<'a>]) -> Vec<Asked<'a>> {
    let mut asked = Vec::new();
    let Some(first) = jobs.first() else {
        return asked;
    };
    let server = Served::start(first.files);
    let mut holds = first.workspace;
    for job in jobs {
        if job.workspace != holds {
            server.reset(job.files);
            holds = job.workspace;
        }
        let offline = job.case.no_live_values;
        if offline {
            server.set_network(false);
        }
        let outcome = server.ask(&job.case.prompt, job.case.approve);
        if offline {
            server.set_network(true);
        }
        let names: Vec<String> = job.files.keys().cloned().collect();
        let failed = failures(job.case, &outcome, &names, server.workspace.path());
        server.reset(job.files);
        asked.push(Asked {
            order: job.order,
            workspace: job.workspace,
            case: job.case,
            outcome,
            failed,
        });
    }
    server.server.kill();
    asked
}

#[test]
fn the_everyday_suite_scores_at_least_its_floor() {
    let suite = suite();
    assert!(
        suite.cases.len() >= 40 || std::env::var_os("IMURUN_EVERYDAY_SUITE").is_some(),
        "the suite has {}",
        suite.cases.len()
    );
    // The cases in the suite's order, dealt in turn to the servers.
    let mut jobs: Vec<Vec<Job>> = (0..SERVERS).map(|_| Vec::new()).collect();
    let mut dealt = 0;
    for (name, files) in &suite.workspaces {
        for case in suite.cases.iter().filter(|case| &case.workspace == name) {
            jobs[dealt % SERVERS].push(Job {
                order: dealt,
                workspace: name,
                files,
                case,
            });
            dealt += 1;
        }
    }
    let mut asked: Vec<Asked> = std::thread::scope(|scope| {
        let running: Vec<_> = jobs
            .into_iter()
            .map(|job| scope.spawn(move || ask_in_turn(&job)))
            .collect();
        running
            .into_iter()
            .flat_map(|thread| thread.join().expect("a server's cases ran"))
            .collect()
    });
    asked.sort_by_key(|asked| asked.order);
    let mut rows = Vec::new();
    let mut leaked = Vec::new();
    let mut first_failed = Vec::new();
    let mut sets: Vec<(String, bool)> = Vec::new();
    for Asked {
        workspace,
        case,
        outcome,
        failed,
        ..
    } in asked
    {
        let leak = leaks(&case.prompt, &outcome.answer);
        if !leak.is_empty() {
            leaked.push(format!(
                "{:?}: {leak:?} in {:?}",
                case.prompt, outcome.answer
            ));
        }
        if FIRST_PROMPTS.contains(&case.prompt.as_str()) && !failed.is_empty() {
            first_failed.push(format!("{:?} ({workspace}): {failed:?}", case.prompt));
        }
        rows.push((workspace.to_owned(), case.prompt.clone(), outcome, failed));
        sets.push((case.set.clone(), rows.last().unwrap().3.is_empty()));
    }
    let passed = rows.iter().filter(|row| row.3.is_empty()).count();
    let score = passed as f64 / rows.len() as f64;
    use std::fmt::Write as _;
    let mut report = String::from("the everyday suite, embedded model through imurun serve:\n");
    for (workspace, prompt, outcome, failed) in &rows {
        let mark = if failed.is_empty() { "pass" } else { "FAIL" };
        let answer: String = outcome.answer.chars().take(100).collect();
        let _ = writeln!(
            report,
            "{mark}  [{workspace}] {prompt:?} → {answer:?} (called {:?}, asked {:?}, {}, {:.1} s)",
            outcome.called,
            outcome.asked,
            outcome.status,
            outcome.took.as_secs_f64()
        );
        for reason in failed {
            let _ = writeln!(report, "      {reason}");
        }
    }
    let names: std::collections::BTreeSet<&String> = sets.iter().map(|(set, _)| set).collect();
    for name in names {
        let of_set: Vec<bool> = sets
            .iter()
            .filter(|(set, _)| set == name)
            .map(|(_, pass)| *pass)
            .collect();
        let set_passed = of_set.iter().filter(|pass| **pass).count();
        let _ = writeln!(
            report,
            "everyday set {name}: {set_passed}/{} = {:.1}%",
            of_set.len(),
            set_passed as f64 / of_set.len() as f64 * 100.0
        );
    }
    let mut took: Vec<f64> = rows.iter().map(|row| row.2.took.as_secs_f64()).collect();
    took.sort_by(f64::total_cmp);
    let _ = writeln!(
        report,
        "everyday turns: {:.0} s in all, median {:.1} s, slowest {:.1} s",
        took.iter().sum::<f64>(),
        took.get(took.len() / 2).copied().unwrap_or_default(),
        took.last().copied().unwrap_or_default()
    );
    let _ = writeln!(
        report,
        "everyday score: {passed}/{} = {:.1}% (floor {:.1}%)",
        rows.len(),
        score * 100.0,
        suite.floor * 100.0
    );
    // Printed, and kept where a run's artifacts are: a passing test's output is not shown.
    println!("\n{report}");
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("everyday-report.txt");
    if let Err(error) = std::fs::write(&kept, &report) {
        println!("could not keep the report in {}: {error}", kept.display());
    }
    assert!(
        leaked.is_empty(),
        "worked-example values leaked: {leaked:#?}"
    );
    assert!(
        first_failed.is_empty(),
        "the first prompts a new user tries: {first_failed:#?}"
    );
    for prompt in FIRST_PROMPTS {
        assert!(
            rows.iter().any(|row| row.1 == prompt),
            "{prompt:?} is not in the suite"
        );
    }
    assert!(
        score >= suite.floor,
        "the everyday score {:.1}% fell below its floor {:.1}%",
        score * 100.0,
        suite.floor * 100.0
    );
}

/// The prompts a new user met first in the page, through `imurun chat` against a served
/// embedded model: the summary of a known file is made of the file (or an extract of it), the
/// write holds exactly `hello` and is read back, and no step shows a call as used that did not
/// run (each ``Using `tool` `` line has that tool's result line).
#[test]
fn a_new_users_first_prompts_hold_through_imurun_chat() {
    // The repository's own suite file: a held-out suite may not have this workspace.
    let text = include_str!("../../tests/everyday.json");
    let suite: Suite = serde_json::from_str(text).unwrap();
    let files = &suite.workspaces["project"];
    let served = Served::start(files);
    let home = tempfile::tempdir().unwrap();
    let url = format!("http://{}", served.server.addr);
    let prompts = [
        "Summarise README.md",
        "Create a file notes.txt with the text hello, then read it back.",
    ];
    // The second prompt's write asks; the person says yes.
    let input = format!("{}\n{}\ny\n", prompts[0], prompts[1]);
    let output = crate::chat_cli::chat_within(
        home.path(),
        &["--url", &url],
        &input,
        Duration::from_secs(2 * TURN_WAIT_MAX.as_secs()),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");

    let (_, sessions) = served.server.get("/api/sessions");
    let session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    let (_, turns) = served.server.get(&format!("/api/sessions/{session}/turns"));
    let answers: Vec<(String, String)> = turns["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| {
            (
                turn["prompt"].as_str().unwrap_or_default().to_owned(),
                turn["answer"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let answer = |prompt: &str| {
        answers
            .iter()
            .find(|(asked, _)| asked == prompt)
            .map(|(_, answer)| answer.clone())
            .unwrap_or_else(|| panic!("no turn for {prompt:?}: {answers:?}\n{stdout}"))
    };
    let summary = answer(prompts[0]);
    if let Some(reason) = not_made_of(&summary, &files["README.md"]) {
        panic!("the summary is not made of README.md: {reason}: {summary:?}\n{stdout}");
    }
    assert!(
        stdout.contains(summary.trim()),
        "{summary:?} not shown in\n{stdout}"
    );
    let written = std::fs::read_to_string(served.workspace.path().join("notes.txt")).unwrap();
    assert_eq!(written.strip_suffix('\n').unwrap_or(&written), "hello");
    assert!(
        answer(prompts[1]).to_lowercase().contains("hello"),
        "{}",
        answer(prompts[1])
    );
    // Every call a step shows as used has its result line: nothing is shown as used that
    // did not run.
    for line in stdout.lines().filter(|line| line.contains("Using `")) {
        for used in line.split("Using `").skip(1) {
            let tool = used.split('`').next().unwrap_or_default();
            assert!(
                stdout.contains(&format!("← {tool} ok"))
                    || stdout.contains(&format!("← {tool} failed")),
                "`{tool}` is shown as used, with no result:\n{stdout}"
            );
        }
    }
    served.server.kill();
}
