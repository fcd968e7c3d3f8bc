//! `imurun chat`: a terminal client of a running server's HTTP API. It reads prompts on stdin,
//! sends them to a session, and shows the session's live events as they stream: the answer,
//! steps, tool calls and results, and approval questions answered here.
//!
//! Wire contract (`docs/api.md`): `POST /api/sessions` → 201 `{"id"}`;
//! `POST /api/sessions/{id}/prompts {"prompt"}` → 202 `{"turn_id", "queued"}`;
//! `POST /api/sessions/{id}/stop`; `POST /api/tools/approvals/{id} {"approved", "remember"}`;
//! `GET /api/events?session={id}`, an SSE stream of one JSON object per message, resumed with
//! `Last-Event-ID`. Errors are `{"error": {"code", "message"}}` (or `{"error", "message"}`).

mod render;
mod sse;

use std::collections::VecDeque;
use std::io::{self, BufRead, IsTerminal, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::config::{ConfigFlags, Environment, ResolvedConfig};
use render::{
    ApprovalAnswer, ApprovalCard, Shown, TurnView, approval_answer, render, settled_approval,
};
use sse::SseParser;

/// Events read from the stream but not yet shown. The reader waits when it is full, and the
/// server drops (and reports) what a slow client misses, so memory stays bounded.
const EVENTS_QUEUED_MAX: usize = 256;

/// Lines read from stdin ahead of the conversation.
const LINES_QUEUED_MAX: usize = 16;

/// A prompt longer than this is not sent: the server would refuse it anyway.
const PROMPT_BYTES_MAX: usize = 64 << 10;

/// A JSON answer of the API is small; a bigger body is cut off and reported.
const RESPONSE_BYTES_MAX: usize = 1 << 20;

/// How long a plain request (not the event stream) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The server sends a heartbeat every 15 seconds; three missed ones mean the connection is
/// dead even if no error says so, and the stream is opened again.
const EVENTS_SILENCE_MAX: Duration = Duration::from_secs(45);

/// Waits before reopening a dropped event stream, doubling up to the maximum.
const RECONNECT_DELAY_MIN: Duration = Duration::from_millis(250);
const RECONNECT_DELAY_MAX: Duration = Duration::from_secs(5);

/// An unclear answer to an approval question is asked again this many times, then denied.
const APPROVAL_ASKS_MAX: usize = 3;

/// The answer given for a card nobody can answer any more.
const DENIED: ApprovalAnswer = ApprovalAnswer {
    approved: false,
    remember: false,
};

/// The exit status after Ctrl-C, as shells report a process ended by SIGINT.
const INTERRUPTED: u8 = 130;

#[derive(Debug, clap::Args)]
pub(crate) struct ChatArgs {
    /// The server (default: http://<server.addr> from the configuration, 127.0.0.1:8484).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// The API token, sent as `Authorization: Bearer` (default: server.api_token from the
    /// configuration or IMURUN_API_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Continue this session instead of starting a new one.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
}

pub(crate) fn run(
    args: &ChatArgs,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let config = ResolvedConfig::load(config_flag, &ConfigFlags::default(), environment)?;
    let base = server_url(args.url.as_deref(), config.server.addr);
    let token = args.token.clone().or_else(|| {
        config
            .server
            .api_token
            .as_ref()
            .map(|token| token.expose().to_owned())
    });
    let runtime = super::runtime()?;
    let api = Api::new(base, token)?;
    let colour = environment.get("NO_COLOR").is_none();
    let result = runtime.block_on(chat(api, args.session.clone(), colour));
    // The stdin reader may be blocked in a read that nothing can interrupt; do not wait for it.
    runtime.shutdown_background();
    result
}

/// The server a client command speaks to: `given` (`--url`) without its trailing slashes, else
/// the configured `server.addr`'s URL.
pub(crate) fn server_url(given: Option<&str>, addr: SocketAddr) -> String {
    given
        .map(str::to_owned)
        .unwrap_or_else(|| url_of(addr))
        .trim_end_matches('/')
        .to_owned()
}

/// The URL of a server bound to `addr`. A server on every interface (0.0.0.0) is reached here
/// on loopback.
pub(crate) fn url_of(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_owned(),
        ip if ip.is_unspecified() => "[::1]".to_owned(),
        ip if ip.is_ipv6() => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("http://{ip}:{}", addr.port())
}

/// `colour`: dim progress lines on a terminal (off when `NO_COLOR` is set).
async fn chat(api: Api, session: Option<String>, colour: bool) -> Result<ExitCode> {
    let session = match session {
        Some(session) => session,
        None => api.create_session().await?,
    };
    eprintln!(
        "imurun chat: session {session} on {} (Ctrl-C stops a turn; Ctrl-D or /quit leaves)",
        api.base
    );
    let stream = api.open_events(&session, None).await?;
    let (events_tx, mut events) = mpsc::channel(EVENTS_QUEUED_MAX);
    tokio::spawn(pump_events(api.clone(), session.clone(), stream, events_tx));
    let mut lines = spawn_stdin_reader();
    let mut interrupts = spawn_interrupt_listener();
    let mut screen = Screen::new(colour);
    loop {
        screen.ask("> ")?;
        let line = tokio::select! {
            line = lines.recv() => line,
            _ = interrupts.recv() => {
                screen.end_line()?;
                return Ok(ExitCode::from(INTERRUPTED));
            }
        };
        screen.answered()?;
        let Some(line) = line else {
            screen.end_line()?;
            return Ok(ExitCode::SUCCESS);
        };
        let prompt = line.trim();
        if prompt == "/quit" {
            return Ok(ExitCode::SUCCESS);
        }
        if prompt.is_empty() {
            continue;
        }
        if prompt.len() > PROMPT_BYTES_MAX {
            eprintln!("imurun: a prompt may have at most {PROMPT_BYTES_MAX} bytes");
            continue;
        }
        // Events of turns this terminal did not start (the web page's) are not shown.
        while events.try_recv().is_ok() {}
        match api.send_prompt(&session, prompt).await {
            Ok(()) => {}
            Err(ApiFailure::Refused(message)) => {
                eprintln!("imurun: {message}");
                continue;
            }
            Err(unreachable) => return Err(unreachable.into()),
        }
        let mut turn = Turn {
            api: &api,
            session: &session,
            screen: &mut screen,
        };
        match turn.run(&mut events, &mut lines, &mut interrupts).await? {
            TurnEnd::Ended => {}
            TurnEnd::InputClosed => return Ok(ExitCode::SUCCESS),
            TurnEnd::Quit => return Ok(ExitCode::from(INTERRUPTED)),
        }
    }
}

/// What the event reader hands to the conversation.
#[derive(Debug)]
enum Incoming {
    Event(Value),
    /// Something about the stream itself, worth a progress line.
    Notice(String),
}

enum TurnEnd {
    /// Back to the prompt.
    Ended,
    /// Stdin ended during the turn: leave once it is over.
    InputClosed,
    /// A second Ctrl-C.
    Quit,
}

struct Turn<'a> {
    api: &'a Api,
    session: &'a str,
    screen: &'a mut Screen,
}

impl Turn<'_> {
    /// Shows the turn's events until `turn.end`, answering approval questions from stdin.
    /// Stdin is read only while a question waits, so that lines typed (or piped) ahead are
    /// the next prompts, never mistaken for answers.
    async fn run(
        &mut self,
        events: &mut mpsc::Receiver<Incoming>,
        lines: &mut mpsc::Receiver<String>,
        interrupts: &mut mpsc::Receiver<()>,
    ) -> Result<TurnEnd> {
        let mut view = TurnView::default();
        let mut cards: VecDeque<ApprovalCard> = VecDeque::new();
        let mut asked_times = 0;
        let mut question_shown = false;
        let mut input_open = true;
        let mut stopping = false;
        loop {
            // With stdin closed nobody can answer: deny at once rather than let a card hold
            // the turn until it times out.
            while let Some(card) = cards.front().filter(|_| !input_open) {
                let id = card.approval_id.clone();
                cards.pop_front();
                self.answer(&id, DENIED).await?;
            }
            if let Some(card) = cards.front().filter(|_| !question_shown && input_open) {
                self.screen.ask(&card.question)?;
                question_shown = true;
            }
            let waiting_for_answer = question_shown && input_open;
            tokio::select! {
                incoming = events.recv() => {
                    let Some(incoming) = incoming else {
                        bail!("the event stream from {} ended", self.api.base);
                    };
                    let event = match incoming {
                        Incoming::Notice(text) => {
                            self.screen.progress(&text)?;
                            continue;
                        }
                        Incoming::Event(event) => event,
                    };
                    if let Some(settled) = settled_approval(&event) {
                        if cards.front().is_some_and(|card| card.approval_id == settled) {
                            question_shown = false;
                            asked_times = 0;
                            self.screen.end_line()?;
                        }
                        cards.retain(|card| card.approval_id != settled);
                    }
                    match render(&event, &mut view) {
                        Some(Shown::Approval(card)) => cards.push_back(card),
                        Some(Shown::TurnEnd { line, .. }) => {
                            self.screen.end_line()?;
                            if let Some(line) = line {
                                self.screen.progress(&line)?;
                            }
                            return Ok(if input_open { TurnEnd::Ended } else { TurnEnd::InputClosed });
                        }
                        Some(shown) => self.screen.show(&shown)?,
                        None => {}
                    }
                }
                line = lines.recv(), if waiting_for_answer => {
                    self.screen.answered()?;
                    question_shown = false;
                    let Some(card) = cards.front() else { continue };
                    let answer = match line {
                        None => {
                            input_open = false;
                            Some(DENIED)
                        }
                        Some(line) => {
                            asked_times += 1;
                            approval_answer(&line, card.rememberable).or_else(|| {
                                (asked_times >= APPROVAL_ASKS_MAX).then_some(DENIED)
                            })
                        }
                    };
                    if let Some(answer) = answer {
                        let id = card.approval_id.clone();
                        cards.pop_front();
                        asked_times = 0;
                        self.answer(&id, answer).await?;
                    }
                }
                _ = interrupts.recv() => {
                    self.screen.end_line()?;
                    if stopping {
                        return Ok(TurnEnd::Quit);
                    }
                    stopping = true;
                    self.screen.progress("· stopping the turn (Ctrl-C again to quit)")?;
                    match self.api.stop(self.session).await {
                        Ok(()) => {}
                        Err(ApiFailure::Refused(message)) => eprintln!("imurun: {message}"),
                        Err(unreachable) => return Err(unreachable.into()),
                    }
                }
            }
        }
    }

    async fn answer(&mut self, approval_id: &str, answer: ApprovalAnswer) -> Result<()> {
        match self.api.answer_approval(approval_id, answer).await {
            Ok(()) => Ok(()),
            // The card may have timed out or been answered on the page meanwhile: say so and
            // carry on with the turn.
            Err(ApiFailure::Refused(message)) => {
                self.screen.progress(&format!("· {message}"))?;
                Ok(())
            }
            Err(unreachable) => Err(unreachable.into()),
        }
    }
}

/// Reads the session's event stream into `events`, reopening it with `Last-Event-ID` when it
/// drops, until the conversation goes away.
async fn pump_events(
    api: Api,
    session: String,
    mut stream: Response,
    events: mpsc::Sender<Incoming>,
) {
    let mut last_event_id: Option<String> = None;
    loop {
        let mut parser = SseParser::default();
        while let Ok(Ok(Some(bytes))) =
            tokio::time::timeout(EVENTS_SILENCE_MAX, stream.chunk()).await
        {
            for message in parser.feed(&bytes) {
                if message.id.is_some() {
                    last_event_id = message.id;
                }
                // A message that is not a JSON object is not an event of this API.
                let Ok(event @ Value::Object(_)) = serde_json::from_str::<Value>(&message.data)
                else {
                    continue;
                };
                if events.send(Incoming::Event(event)).await.is_err() {
                    return;
                }
            }
        }
        let mut delay = RECONNECT_DELAY_MIN;
        let mut told = false;
        stream = loop {
            if events.is_closed() {
                return;
            }
            tokio::time::sleep(delay).await;
            match api.open_events(&session, last_event_id.as_deref()).await {
                Ok(stream) => break stream,
                Err(failure) => {
                    if !told {
                        told = true;
                        let notice = format!("· event stream lost ({failure}); reconnecting");
                        if events.send(Incoming::Notice(notice)).await.is_err() {
                            return;
                        }
                    }
                    delay = (delay * 2).min(RECONNECT_DELAY_MAX);
                }
            }
        };
    }
}

/// Lines of stdin, read on their own thread because a terminal read cannot be cancelled.
fn spawn_stdin_reader() -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel(LINES_QUEUED_MAX);
    std::thread::spawn(move || {
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if sender.blocking_send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// One message per Ctrl-C. Listening replaces the default SIGINT exit for the whole process,
/// so every wait in the conversation also waits on this.
fn spawn_interrupt_listener() -> mpsc::Receiver<()> {
    let (sender, receiver) = mpsc::channel(4);
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if sender.send(()).await.is_err() {
                break;
            }
        }
    });
    receiver
}

/// Why a request failed.
#[derive(Debug)]
enum ApiFailure {
    /// No server, or the connection failed: the conversation cannot go on.
    Unreachable(String),
    /// The server answered with an error: said plainly, and the conversation goes on.
    Refused(String),
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiFailure::Unreachable(message) | ApiFailure::Refused(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ApiFailure {}

/// The server's HTTP API.
#[derive(Debug, Clone)]
struct Api {
    http: reqwest::Client,
    /// `http://host:port`, without a trailing slash.
    base: String,
    token: Option<String>,
}

impl Api {
    fn new(base: String, token: Option<String>) -> Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .context("building the HTTP client")?;
        Ok(Self { http, base, token })
    }

    async fn create_session(&self) -> Result<String, ApiFailure> {
        let created = self.post("/api/sessions", &json!({"title": null})).await?;
        created
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                ApiFailure::Unreachable(format!(
                    "{}: the new session has no id ({created})",
                    self.base
                ))
            })
    }

    async fn send_prompt(&self, session: &str, prompt: &str) -> Result<(), ApiFailure> {
        let path = format!("/api/sessions/{}/prompts", path_segment(session));
        self.post(&path, &json!({"prompt": prompt})).await.map(drop)
    }

    async fn stop(&self, session: &str) -> Result<(), ApiFailure> {
        let path = format!("/api/sessions/{}/stop", path_segment(session));
        self.post(&path, &json!({})).await.map(drop)
    }

    async fn answer_approval(
        &self,
        approval_id: &str,
        answer: ApprovalAnswer,
    ) -> Result<(), ApiFailure> {
        let path = format!("/api/tools/approvals/{}", path_segment(approval_id));
        let body = json!({"approved": answer.approved, "remember": answer.remember});
        self.post(&path, &body).await.map(drop)
    }

    /// Opens the session's event stream, after `last_event_id` when given.
    async fn open_events(
        &self,
        session: &str,
        last_event_id: Option<&str>,
    ) -> Result<Response, ApiFailure> {
        let path = format!("/api/events?session={}", path_segment(session));
        let mut request = self
            .request(Method::GET, &path)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.map_err(|error| self.failed(&error))?;
        if !response.status().is_success() {
            let status = response.status();
            let body = read_capped(response).await.unwrap_or_default();
            return Err(ApiFailure::Unreachable(server_error(status, &body)));
        }
        Ok(response)
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, ApiFailure> {
        let response = self
            .request(Method::POST, path)
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_string())
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
            .map_err(|error| self.failed(&error))?;
        let status = response.status();
        let bytes = read_capped(response)
            .await
            .map_err(|error| self.failed(&error))?;
        if !status.is_success() {
            return Err(ApiFailure::Refused(server_error(status, &bytes)));
        }
        Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    fn failed(&self, error: &reqwest::Error) -> ApiFailure {
        let base = &self.base;
        ApiFailure::Unreachable(if error.is_connect() {
            format!("no imurun server at {base} — start one with `imurun serve`")
        } else if error.is_timeout() {
            format!("the imurun server at {base} did not answer in time")
        } else {
            format!("{base}: {error}")
        })
    }
}

/// The body of `response`, at most `RESPONSE_BYTES_MAX` bytes of it.
async fn read_capped(mut response: Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = RESPONSE_BYTES_MAX.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if room <= chunk.len() {
            break;
        }
    }
    Ok(body)
}

/// The server's error, said plainly: its message, its code and the status.
fn server_error(status: StatusCode, body: &[u8]) -> String {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = parsed.get("error");
    let message = error
        .and_then(|error| error.get("message"))
        .or_else(|| parsed.get("message"))
        .and_then(Value::as_str);
    let code = error
        .and_then(|error| error.get("code"))
        .or(error)
        .and_then(Value::as_str);
    let hint = if status == StatusCode::UNAUTHORIZED {
        " (pass --token, or set IMURUN_API_TOKEN)"
    } else {
        ""
    };
    match (message, code) {
        (Some(message), Some(code)) => format!("server: {message} ({code}, HTTP {status}){hint}"),
        (Some(message), None) => format!("server: {message} (HTTP {status}){hint}"),
        _ => {
            let text = String::from_utf8_lossy(body);
            let first = text.lines().next().unwrap_or("").trim();
            format!("server answered HTTP {status}{hint}: {first}")
        }
    }
}

/// `text` made safe as one path segment or query value: ids are plain, but a session id
/// typed by hand must not add path segments or query parameters.
fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Stdout, knowing whether the cursor is at the start of a line, and dimming progress lines on
/// a terminal (unless `NO_COLOR` is set).
struct Screen {
    out: io::Stdout,
    at_line_start: bool,
    dim: bool,
    stdin_is_terminal: bool,
}

impl Screen {
    fn new(colour: bool) -> Self {
        let out = io::stdout();
        let dim = out.is_terminal() && colour;
        Self {
            out,
            at_line_start: true,
            dim,
            stdin_is_terminal: io::stdin().is_terminal(),
        }
    }

    fn show(&mut self, shown: &Shown) -> io::Result<()> {
        match shown {
            Shown::Answer(text) => {
                let mut out = self.out.lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
                self.at_line_start = text.ends_with('\n');
                Ok(())
            }
            Shown::Progress(line) => self.progress(line),
            Shown::Approval(card) => self.ask(&card.question),
            Shown::TurnEnd { line, .. } => {
                self.end_line()?;
                line.as_deref().map_or(Ok(()), |line| self.progress(line))
            }
        }
    }

    /// A whole line about the turn's progress, on a line of its own.
    fn progress(&mut self, line: &str) -> io::Result<()> {
        self.end_line()?;
        let mut out = self.out.lock();
        if self.dim {
            writeln!(out, "\x1b[2m{line}\x1b[0m")?;
        } else {
            writeln!(out, "{line}")?;
        }
        out.flush()
    }

    /// A question, with the cursor left after it.
    fn ask(&mut self, question: &str) -> io::Result<()> {
        self.end_line()?;
        let mut out = self.out.lock();
        out.write_all(question.as_bytes())?;
        out.flush()?;
        self.at_line_start = false;
        Ok(())
    }

    /// The person pressed Enter: a terminal's echo moved the cursor to a new line; with stdin
    /// piped nothing was echoed, so the line is ended here.
    fn answered(&mut self) -> io::Result<()> {
        if self.stdin_is_terminal {
            self.at_line_start = true;
            Ok(())
        } else {
            self.end_line()
        }
    }

    fn end_line(&mut self) -> io::Result<()> {
        if !self.at_line_start {
            let mut out = self.out.lock();
            out.write_all(b"\n")?;
            out.flush()?;
            self.at_line_start = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_of_a_bind_address_is_reachable_here() {
        let cases = [
            ("127.0.0.1:8484", "http://127.0.0.1:8484"),
            ("0.0.0.0:9000", "http://127.0.0.1:9000"),
            ("[::]:9000", "http://[::1]:9000"),
            ("[::1]:80", "http://[::1]:80"),
        ];
        for (addr, url) in cases {
            assert_eq!(url_of(addr.parse().unwrap()), url);
        }
    }

    #[test]
    fn a_given_url_wins_over_the_configured_address_without_trailing_slashes() {
        let addr = "0.0.0.0:9000".parse().unwrap();
        assert_eq!(
            server_url(Some("https://keep.example//"), addr),
            "https://keep.example"
        );
        assert_eq!(server_url(None, addr), "http://127.0.0.1:9000");
    }

    #[test]
    fn server_errors_are_said_plainly() {
        let cases: [(u16, &str, &str); 4] = [
            (
                404,
                r#"{"error": {"code": "not_found", "message": "no session s9"}}"#,
                "server: no session s9 (not_found, HTTP 404 Not Found)",
            ),
            (
                409,
                r#"{"error": "busy", "message": "a turn is running"}"#,
                "server: a turn is running (busy, HTTP 409 Conflict)",
            ),
            (
                401,
                r#"{"error": {"code": "unauthorized", "message": "bad token"}}"#,
                "server: bad token (unauthorized, HTTP 401 Unauthorized) (pass --token, or set IMURUN_API_TOKEN)",
            ),
            (
                502,
                "Bad Gateway\nmore",
                "server answered HTTP 502 Bad Gateway: Bad Gateway",
            ),
        ];
        for (status, body, expect) in cases {
            let status = StatusCode::from_u16(status).unwrap();
            assert_eq!(server_error(status, body.as_bytes()), expect);
        }
    }

    #[test]
    fn ids_cannot_add_path_segments() {
        assert_eq!(path_segment("s-1_a.b"), "s-1_a.b");
        assert_eq!(path_segment("../x?y=1"), "..%2Fx%3Fy%3D1");
    }
}
