//! The agent's answer to each message, written against [`Host`] (the cell's imports) so that it
//! runs in tests against a fake host as it runs in a cell against the real one.

use serde_json::json;

use crate::history::History;
use crate::intent::{self, Awaiting, Intent, Url};
use crate::text::{cut_bytes, cut_chars, plain};
use crate::{base64, plan, tool};

/// What the agent asks of its host: the imports its manifest grants.
pub trait Host {
    /// The model's reply to `messages` (`model.generate`).
    fn generate(&mut self, messages: &[Said]) -> Result<String, String>;
    /// Hands the host a proposal (`events.emit`).
    fn emit(&mut self, kind: &str, payload_json: &str) -> Result<(), String>;
    /// Calls one of the person's tools (`tools.call`).
    fn call(&mut self, name: &str, args_json: &str) -> Result<String, String>;
}

/// One message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    pub content: String,
}

/// The system prompt of a conversation.
const SYSTEM_PROMPT: &str = "You are Helper, a friendly assistant. Answer briefly and plainly. \
You cannot browse the web or run anything yourself. If the person wants a web page read, they \
can ask you to make a tool for its address, and once they approve it, to fetch the page. If \
they want a plan, they can ask for one and you will propose it for them to accept.";
/// Bytes of the person's message sent to the model: a model's context is small.
const MESSAGE_BYTES_TO_MODEL: usize = 8 * 1024;
/// Bytes of a reply from the model passed on.
const MODEL_REPLY_BYTES_MAX: usize = 16 * 1024;
/// Characters of a host's error quoted in a reply.
const ERROR_CHARS_SHOWN: usize = 500;

/// The agent of one session, and what it keeps between the session's messages.
pub struct Agent {
    /// The fetch tool's component, proposed as the tool for an address.
    fetch_tool: &'static [u8],
    history: History,
    /// What the agent's last reply asked the person for.
    awaiting: Option<Awaiting>,
    /// The last thing the person talked about: the goal of a plan asked for without one.
    topic: Option<String>,
    /// The last tool version this session proposed: the next proposal starts above it.
    tool_version: i64,
}

impl Agent {
    pub fn new(fetch_tool: &'static [u8]) -> Self {
        Agent {
            fetch_tool,
            history: History::default(),
            awaiting: None,
            topic: None,
            tool_version: 0,
        }
    }

    /// The reply to `message`.
    pub fn handle(&mut self, host: &mut impl Host, message: &str) -> String {
        let intent = match self.awaiting.take() {
            Some(awaiting) => intent::answer(awaiting, message),
            None => intent::intent(message),
        };
        let said = message.to_owned();
        let (remembered, reply) = match intent {
            Intent::File { name, lines, bytes } => (
                format!("(I uploaded a file, {name})"),
                file_reply(&name, lines, bytes),
            ),
            Intent::Plan { goal } => match goal.or_else(|| self.topic.clone()) {
                Some(goal) => (said, propose_plan(host, &goal)),
                None => (said, self.ask(Awaiting::Goal)),
            },
            Intent::MakeTool { url: Some(url) } => (said, self.propose_tool(host, &url)),
            Intent::MakeTool { url: None } => (said, self.ask(Awaiting::ToolAddress)),
            Intent::UseTool { url: Some(url) } => (said, use_tool(host, &url)),
            Intent::UseTool { url: None } => (said, self.ask(Awaiting::FetchAddress)),
            Intent::Chat => {
                let reply = self.chat(host, message);
                let topic = cut_chars(&plain(&message.replace('\n', " ")), intent::GOAL_CHARS_MAX);
                self.topic = Some(topic).filter(|topic| !topic.is_empty());
                (said, reply)
            }
        };
        self.history.push(&remembered, &reply);
        reply
    }

    /// Asks the person for what `awaiting` names; their next message is read as the answer.
    fn ask(&mut self, awaiting: Awaiting) -> String {
        self.awaiting = Some(awaiting);
        match awaiting {
            Awaiting::Goal => {
                "What should the plan be for? Tell me the goal, such as \"moving house\"."
            }
            Awaiting::ToolAddress => {
                "Which address should the tool read? Send me the full address, such as \
                 https://example.com/page or http://127.0.0.1:8080/weather (without a user \
                 name), and I will propose a fetch tool for it."
            }
            Awaiting::FetchAddress => {
                "Which address should I fetch? Send me the full address, such as \
                 https://example.com/page."
            }
        }
        .to_owned()
    }

    /// The model's reply to `message` after the recent exchanges.
    fn chat(&self, host: &mut impl Host, message: &str) -> String {
        let mut messages = vec![said_by("system", SYSTEM_PROMPT)];
        for exchange in self.history.exchanges() {
            messages.push(said_by("user", &exchange.person));
            messages.push(said_by("assistant", &exchange.agent));
        }
        messages.push(said_by("user", cut_bytes(message, MESSAGE_BYTES_TO_MODEL)));
        match host.generate(&messages) {
            Ok(reply) => {
                let reply = cut_bytes(reply.trim(), MODEL_REPLY_BYTES_MAX);
                if reply.is_empty() {
                    "The model gave an empty answer.".to_owned()
                } else {
                    reply.to_owned()
                }
            }
            Err(error) => format!(
                "I could not reach the model: {}",
                cut_chars(&error, ERROR_CHARS_SHOWN)
            ),
        }
    }

    /// Proposes the fetch tool for `url`'s host and port, trying the next version while the
    /// host says the version is taken.
    fn propose_tool(&mut self, host: &mut impl Host, url: &Url) -> String {
        let bundle = base64::encode(self.fetch_tool);
        let mut version = self.tool_version.saturating_add(1);
        let mut last_reason = String::new();
        for _ in 0..tool::VERSION_ATTEMPTS_MAX {
            match host.emit("tool.propose", &tool::payload(url, version, &bundle)) {
                Ok(()) => {
                    self.tool_version = version;
                    return tool::proposed_reply(url, version);
                }
                Err(reason) => match tool::next_version(&reason, version) {
                    Some(next) => {
                        version = next;
                        last_reason = reason;
                    }
                    None => {
                        return format!(
                            "The host refused the tool: {}",
                            cut_chars(&reason, ERROR_CHARS_SHOWN)
                        );
                    }
                },
            }
        }
        format!(
            "The host refused every version of the tool I tried, the last {}: {}",
            version - 1,
            cut_chars(&last_reason, ERROR_CHARS_SHOWN)
        )
    }
}

/// Proposes a plan for `goal`, its steps from the model (or general ones), and says so.
fn propose_plan(host: &mut impl Host, goal: &str) -> String {
    let messages = [
        said_by("system", plan::SYSTEM_PROMPT),
        said_by("user", &plan::request(goal)),
    ];
    let (steps, note) = match host.generate(&messages) {
        Ok(answer) => {
            let steps = plan::steps_from(&answer);
            if steps.is_empty() {
                let note = "The model's answer had no step I could use, so these are general \
                            steps.";
                (plan::fallback_steps(goal), Some(note.to_owned()))
            } else {
                (steps, None)
            }
        }
        Err(error) => {
            let note = format!(
                "I could not reach the model ({}), so these are general steps.",
                cut_chars(&error, ERROR_CHARS_SHOWN)
            );
            (plan::fallback_steps(goal), Some(note))
        }
    };
    let title = plan::title(goal);
    let (payload, steps) = plan::payload(&title, &steps);
    match host.emit("plan", &payload) {
        Ok(()) => plan::proposed_reply(&title, &steps, note.as_deref()),
        Err(reason) => format!(
            "I could not propose a plan: the host refused it: {}",
            cut_chars(&reason, ERROR_CHARS_SHOWN)
        ),
    }
}

/// Fetches `url` with the person's fetch tool.
fn use_tool(host: &mut impl Host, url: &Url) -> String {
    let args = json!({ "url": url.text, "method": "GET" }).to_string();
    match host.call(tool::NAME, &args) {
        Ok(result) => tool::fetched_reply(url, &result),
        Err(reason) => tool::refused_reply(url, &cut_chars(&reason, ERROR_CHARS_SHOWN)),
    }
}

/// The reply to a file: its name and size, nothing of its content.
fn file_reply(name: &str, lines: usize, bytes: usize) -> String {
    let count = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    format!(
        "I read {}: {}, {}.",
        cut_chars(name, 200),
        count(lines, "line", "lines"),
        count(bytes, "byte", "bytes")
    )
}

fn said_by(role: &'static str, content: &str) -> Said {
    Said {
        role,
        content: content.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use serde_json::Value;

    use super::*;

    /// A host that answers from scripts and records what it was asked.
    #[derive(Default)]
    struct FakeHost {
        /// The model's answers, in order; none left is an error.
        replies: VecDeque<Result<String, String>>,
        /// The host's answers to emits, in order; none left is `Ok`.
        emits: VecDeque<Result<(), String>>,
        /// The tool's answers, in order; none left is an error.
        calls: VecDeque<Result<String, String>>,
        generated: Vec<Vec<Said>>,
        emitted: Vec<(String, Value)>,
        called: Vec<(String, Value)>,
    }

    impl Host for FakeHost {
        fn generate(&mut self, messages: &[Said]) -> Result<String, String> {
            self.generated.push(messages.to_vec());
            self.replies
                .pop_front()
                .unwrap_or_else(|| Err("no model here".to_owned()))
        }

        fn emit(&mut self, kind: &str, payload_json: &str) -> Result<(), String> {
            let payload = serde_json::from_str(payload_json).expect("a payload is JSON");
            self.emitted.push((kind.to_owned(), payload));
            self.emits.pop_front().unwrap_or(Ok(()))
        }

        fn call(&mut self, name: &str, args_json: &str) -> Result<String, String> {
            let args = serde_json::from_str(args_json).expect("arguments are JSON");
            self.called.push((name.to_owned(), args));
            self.calls
                .pop_front()
                .unwrap_or_else(|| Err("no tool here".to_owned()))
        }
    }

    const TOOL: &[u8] = b"\0asm\r\0\x01\0";

    fn ok(text: &str) -> Result<String, String> {
        Ok(text.to_owned())
    }

    #[test]
    fn a_conversation_goes_to_the_model_with_the_recent_exchanges() {
        let mut host = FakeHost::default();
        host.replies.extend([ok("Hello!"), ok("  Paris.  ")]);
        let mut agent = Agent::new(TOOL);
        assert_eq!(agent.handle(&mut host, "hi"), "Hello!");
        assert_eq!(agent.handle(&mut host, "capital of France?"), "Paris.");
        let last: Vec<(&str, &str)> = host.generated[1]
            .iter()
            .map(|said| (said.role, said.content.as_str()))
            .collect();
        assert_eq!(
            last,
            [
                ("system", SYSTEM_PROMPT),
                ("user", "hi"),
                ("assistant", "Hello!"),
                ("user", "capital of France?"),
            ]
        );
        assert!(host.emitted.is_empty() && host.called.is_empty());
    }

    #[test]
    fn a_model_that_fails_is_answered_in_words() {
        let mut host = FakeHost::default();
        host.replies.extend([
            Err("the model is not loaded on this host".to_owned()),
            ok("  "),
        ]);
        let mut agent = Agent::new(TOOL);
        assert_eq!(
            agent.handle(&mut host, "hello"),
            "I could not reach the model: the model is not loaded on this host"
        );
        assert_eq!(
            agent.handle(&mut host, "hello"),
            "The model gave an empty answer."
        );
    }

    #[test]
    fn a_plan_asked_for_in_words_is_proposed_with_the_models_steps() {
        let mut host = FakeHost::default();
        host.replies
            .push_back(ok("Sure!\n1. Book a van\n2. Pack\n3. Move"));
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "could you make me a plan for moving house");
        assert_eq!(
            host.emitted,
            [(
                "plan".to_owned(),
                json!({"title": "Plan: moving house", "steps": ["Book a van", "Pack", "Move"]})
            )]
        );
        assert!(
            reply.starts_with("I proposed a plan, \"Plan: moving house\""),
            "{reply}"
        );
        assert!(reply.contains("accept or reject"), "{reply}");
        assert_eq!(host.generated[0][1].content, plan::request("moving house"));
    }

    #[test]
    fn a_plan_without_the_model_has_general_steps_and_a_refusal_is_said() {
        let mut host = FakeHost::default();
        host.emits
            .extend([Ok(()), Err("50 plan proposals wait already".to_owned())]);
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "what steps should I take to sell my car?");
        assert_eq!(
            host.emitted[0].1["steps"],
            json!(plan::fallback_steps("sell my car"))
        );
        assert!(
            reply.contains("I could not reach the model (no model here)"),
            "{reply}"
        );
        let reply = agent.handle(&mut host, "give me a checklist for my camping trip");
        assert_eq!(
            reply,
            "I could not propose a plan: the host refused it: 50 plan proposals wait already"
        );
    }

    #[test]
    fn a_plan_without_a_goal_asks_for_one_then_reads_the_answer() {
        let mut host = FakeHost::default();
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "make me a plan");
        assert!(reply.starts_with("What should the plan be for?"), "{reply}");
        assert!(host.emitted.is_empty());
        agent.handle(&mut host, "moving house");
        assert_eq!(host.emitted[0].1["title"], "Plan: moving house");
    }

    #[test]
    fn a_plan_without_a_goal_takes_the_last_topic() {
        let mut host = FakeHost::default();
        host.replies.push_back(ok("Good luck with it!"));
        let mut agent = Agent::new(TOOL);
        agent.handle(&mut host, "I am renovating my kitchen this spring");
        agent.handle(&mut host, "make me a plan");
        assert_eq!(
            host.emitted[0].1["title"],
            "Plan: I am renovating my kitchen this spring"
        );
    }

    #[test]
    fn a_tool_asked_for_in_words_is_the_fetch_tool_for_that_address() {
        let mut host = FakeHost::default();
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(
            &mut host,
            "I need a tool that can fetch http://127.0.0.1:8080/weather",
        );
        let (kind, payload) = &host.emitted[0];
        assert_eq!(kind, "tool.propose");
        assert_eq!(payload["bundle"], base64::encode(TOOL));
        assert_eq!(payload["manifest"]["version"], 1);
        assert_eq!(payload["manifest"]["egress"]["rules"][0]["port"], 8080);
        assert!(
            reply.starts_with("I proposed a tool named fetch (version 1)"),
            "{reply}"
        );
    }

    #[test]
    fn a_taken_version_is_followed_by_the_next() {
        let mut host = FakeHost::default();
        host.emits.extend([
            Err(
                "u/alice/fetch@1 is deployed already with these bytes: propose a higher version"
                    .to_owned(),
            ),
            Err(
                "tool u/alice/fetch version 2 is refused: version 6 was accepted already"
                    .to_owned(),
            ),
        ]);
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "build a tool for https://example.com/news");
        let versions: Vec<&Value> = host
            .emitted
            .iter()
            .map(|(_, payload)| &payload["manifest"]["version"])
            .collect();
        assert_eq!(versions, [&json!(1), &json!(2), &json!(7)]);
        assert!(reply.contains("(version 7)"), "{reply}");
        // The session's next proposal starts above the last one it made.
        agent.handle(&mut host, "make me a tool for https://example.com/other");
        assert_eq!(host.emitted[3].1["manifest"]["version"], 8);
    }

    #[test]
    fn the_tries_are_bounded_and_another_refusal_is_said() {
        let mut host = FakeHost::default();
        let taken =
            "u/alice/fetch@1 is deployed already with these bytes: propose a higher version";
        host.emits.extend((0..100).map(|_| Err(taken.to_owned())));
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "build a tool for https://example.com/");
        assert_eq!(host.emitted.len(), tool::VERSION_ATTEMPTS_MAX);
        assert!(
            reply.starts_with("The host refused every version of the tool I tried, the last 32"),
            "{reply}"
        );

        let mut host = FakeHost::default();
        host.emits.push_back(Err(
            "forbidden authority: egress.rules[0] names 127.0.0.1:9".to_owned(),
        ));
        let reply = Agent::new(TOOL).handle(&mut host, "build a tool for http://127.0.0.1:9/");
        assert_eq!(
            reply,
            "The host refused the tool: forbidden authority: egress.rules[0] names 127.0.0.1:9"
        );
        assert_eq!(host.emitted.len(), 1);
    }

    #[test]
    fn a_tool_without_an_address_asks_for_one() {
        let mut host = FakeHost::default();
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "I'd like a new tool");
        assert!(
            reply.starts_with("Which address should the tool read?"),
            "{reply}"
        );
        agent.handle(&mut host, "http://127.0.0.1:8080/weather");
        assert_eq!(host.emitted[0].0, "tool.propose");
        assert!(host.called.is_empty());
    }

    #[test]
    fn reading_an_address_calls_the_fetch_tool() {
        let mut host = FakeHost::default();
        host.calls.extend([
            ok(r#"{"status": 200, "body": "sunny"}"#),
            Err("no tool named \"fetch\" is yours to call".to_owned()),
        ]);
        let mut agent = Agent::new(TOOL);
        let reply = agent.handle(&mut host, "fetch http://127.0.0.1:8080/weather");
        assert_eq!(
            host.called,
            [(
                "fetch".to_owned(),
                json!({"url": "http://127.0.0.1:8080/weather", "method": "GET"})
            )]
        );
        assert_eq!(
            reply,
            "http://127.0.0.1:8080/weather answered 200. The body:\n\nsunny"
        );
        let reply = agent.handle(&mut host, "use the tool on https://example.com");
        assert!(
            reply.starts_with("The host refused: no tool named \"fetch\" is yours to call"),
            "{reply}"
        );
        let reply = agent.handle(&mut host, "use the tool");
        assert!(
            reply.starts_with("Which address should I fetch?"),
            "{reply}"
        );
        assert_eq!(host.called.len(), 2);
    }

    #[test]
    fn a_file_is_counted_never_summarised() {
        let mut host = FakeHost::default();
        let mut agent = Agent::new(TOOL);
        let file = json!({"file": {"name": "notes.txt", "text": "one\ntwo\n"}}).to_string();
        assert_eq!(
            agent.handle(&mut host, &file),
            "I read notes.txt: 2 lines, 8 bytes."
        );
        let one = json!({"file": {"name": "a", "text": "x"}}).to_string();
        assert_eq!(agent.handle(&mut host, &one), "I read a: 1 line, 1 byte.");
        assert!(host.generated.is_empty());
    }

    #[test]
    fn no_message_makes_it_panic() {
        let mut host = FakeHost::default();
        let mut agent = Agent::new(TOOL);
        let long = "x".repeat(70_000);
        for message in [
            "",
            "\u{0}",
            "make me a plan",
            "",
            "build a tool",
            "never mind",
            "use the tool",
            "http://",
            "{\"file\": {\"name\": \"\", \"text\": \"\"}}",
            long.as_str(),
            "break it down",
            "https://[::1]:0/",
        ] {
            let _ = agent.handle(&mut host, message);
        }
    }
}
