//! The intent of messages worded in many ways.

use super::*;

/// The intent of `message`, written short: `chat`, `plan: GOAL` (`plan: -` without a
/// goal), `make: URL`, `use: URL` (`-` without an address), `file: NAME LINES BYTES`.
fn check(message: &str, expected: &str) {
    let url = |url: Option<Url>| url.map_or("-".to_owned(), |url| url.text);
    let actual = match intent(message) {
        Intent::Chat => "chat".to_owned(),
        Intent::Plan { goal } => format!("plan: {}", goal.as_deref().unwrap_or("-")),
        Intent::MakeTool { url: address } => format!("make: {}", url(address)),
        Intent::UseTool { url: address } => format!("use: {}", url(address)),
        Intent::File { name, lines, bytes } => format!("file: {name} {lines} {bytes}"),
    };
    assert_eq!(actual, expected, "for {message:?}");
}

#[test]
fn plans_asked_for_in_many_ways() {
    let cases = [
        (
            "could you make me a plan for moving house",
            "plan: moving house",
        ),
        (
            "Could you make me a plan for moving house?",
            "plan: moving house",
        ),
        (
            "what steps should I take to sell my car?",
            "plan: sell my car",
        ),
        (
            "What steps should I take in order to learn the piano",
            "plan: learn the piano",
        ),
        (
            "I need a checklist for my camping trip",
            "plan: my camping trip",
        ),
        (
            "Can you help me plan a birthday party for my son?",
            "plan: birthday party for my son",
        ),
        ("help me plan my wedding", "plan: my wedding"),
        (
            "I want to plan a trip to Lisbon in May",
            "plan: trip to Lisbon in May",
        ),
        (
            "How do I go about learning Spanish?",
            "plan: learning Spanish",
        ),
        (
            "Where should I start with renovating my kitchen?",
            "plan: renovating my kitchen",
        ),
        (
            "walk me through setting up a home server",
            "plan: setting up a home server",
        ),
        (
            "give me a step-by-step guide to baking sourdough",
            "plan: baking sourdough",
        ),
        ("Steps to bake bread", "plan: bake bread"),
        ("A plan for my move, please", "plan: my move"),
        (
            "I'd like a roadmap to becoming a data scientist",
            "plan: becoming a data scientist",
        ),
        ("Make a to-do list for the weekend", "plan: the weekend"),
        (
            "please put together a simple moving house plan",
            "plan: moving house",
        ),
        (
            "break down training for a marathon into steps",
            "plan: training for a marathon",
        ),
        ("Can you break my thesis down?", "plan: my thesis"),
        ("break it down for me", "plan: -"),
        ("map out my week", "plan: my week"),
        (
            "lay out the steps for opening a bakery",
            "plan: opening a bakery",
        ),
        ("help me get ready for the exam", "plan: the exam"),
        (
            "help me prepare for a job interview",
            "plan: a job interview",
        ),
        (
            "what are the next steps for my garden project?",
            "plan: my garden project",
        ),
        ("Let's plan a picnic", "plan: picnic"),
        (
            "we need a schedule for revising before the exams",
            "plan: revising before the exams",
        ),
        (
            "could you plan out my first week at the new job",
            "plan: my first week at the new job",
        ),
        (
            "could you sort out a plan for my garden?",
            "plan: my garden",
        ),
        (
            "What should I do first to start a business?",
            "plan: start a business",
        ),
        (
            "Give me a list of steps for cleaning a bike",
            "plan: cleaning a bike",
        ),
        ("can you outline how to write a CV", "plan: write a CV"),
        ("I need help organising my wedding", "plan: my wedding"),
        (
            "can you help me with planning my wedding",
            "plan: my wedding",
        ),
        ("organise my week please", "plan: my week"),
        ("I'd love a to do list for tomorrow", "plan: tomorrow"),
        ("make a plan", "plan: -"),
        ("Hi there, could you make me a plan?", "plan: -"),
    ];
    for (message, expected) in cases {
        check(message, expected);
    }
}

#[test]
fn a_goal_said_in_another_clause() {
    let cases = [
        (
            "I'm moving house in June, can you give me a plan?",
            "plan: moving house in June",
        ),
        (
            "Can you give me a plan? I'm moving house in June.",
            "plan: moving house in June",
        ),
        ("I want to get fit. Where do I begin?", "plan: get fit"),
        (
            "we need to repaint the flat - could you make a plan?",
            "plan: repaint the flat",
        ),
    ];
    for (message, expected) in cases {
        check(message, expected);
    }
}

#[test]
fn talk_that_only_mentions_plans_or_steps_is_a_conversation() {
    let cases = [
        "What is the capital of France?",
        "I plan to visit Paris next week. Any tips on food?",
        "My plan worked, thanks!",
        "The plan was good but it rained.",
        "Tell me a joke about steps",
        "Don't make a plan, just tell me what you think",
        "watch your step",
        "hello",
        "",
        "   ",
        "Do you plan on answering?",
        "we took three steps back and laughed",
        "What's the plan?",
        "what is a roadmap?",
        "how should we go about it",
        "Can you schedule a meeting with Bob?",
        "What's on my schedule today?",
        "What are the steps of photosynthesis?",
        "Can you prepare a summary of this",
        "what do you want to do today",
        "What do I do?",
        "Tell me how to cook rice",
        "Write me a poem about the sea",
        "Hi! How are you?",
        "plan",
    ];
    for message in cases {
        check(message, "chat");
    }
}

#[test]
fn tools_asked_for_in_many_ways() {
    let cases = [
        (
            "I need a tool that can fetch https://x/y",
            "make: https://x/y",
        ),
        (
            "build something that reads https://example.com/news",
            "make: https://example.com/news",
        ),
        (
            "Could you create a tool for http://127.0.0.1:8080/weather?",
            "make: http://127.0.0.1:8080/weather",
        ),
        (
            "make me a fetcher for https://api.example.com/v1/items.",
            "make: https://api.example.com/v1/items",
        ),
        (
            "Please write a plugin that checks https://status.example.com",
            "make: https://status.example.com",
        ),
        (
            "Can I get a tool to read pages from https://news.example.org?",
            "make: https://news.example.org",
        ),
        (
            "set up a tool that watches http://localhost:9000/health",
            "make: http://localhost:9000/health",
        ),
        ("I'd like a new tool", "make: -"),
        ("give me a tool", "make: -"),
        (
            "I need a way to check https://x.example/status every morning",
            "make: https://x.example/status",
        ),
        ("build an app that fetches web pages", "make: -"),
        (
            "Building a scraper for (https://shop.example/list)",
            "make: https://shop.example/list",
        ),
        (
            "Make a plan to build a tool for https://x.example",
            "plan: build a tool for https://x.example",
        ),
        (
            "build a tool for https://x.example and then make a plan",
            "make: https://x.example",
        ),
        (
            "can you make a tool for https://user:pw@x.example/ please",
            "make: -",
        ),
        (
            "i need something to read https://example.com/feed every hour",
            "make: https://example.com/feed",
        ),
        (
            "could you whip up a little tool to grab http://10.0.0.5:3000/status",
            "make: http://10.0.0.5:3000/status",
        ),
        (
            "add a tool for http://127.0.0.1:8080",
            "make: http://127.0.0.1:8080",
        ),
        (
            "could you set up a connector to https://api.example.com/v2/",
            "make: https://api.example.com/v2/",
        ),
    ];
    for (message, expected) in cases {
        check(message, expected);
    }
}

#[test]
fn things_that_are_not_requests_for_a_tool() {
    check("Thanks for the tool!", "chat");
    check("What tools do you have?", "chat");
    check("write something about dogs", "chat");
    check("Don't build a tool for https://x.example", "chat");
    check("make something nice for my mum", "chat");
    check("The tool didn't work: https://x.example", "chat");
    check("thanks, that tool works great", "chat");
    check("What can you do?", "chat");
}

#[test]
fn reading_an_address() {
    let cases = [
        (
            "fetch https://example.com/page",
            "use: https://example.com/page",
        ),
        (
            "could you read http://127.0.0.1:8080/weather for me",
            "use: http://127.0.0.1:8080/weather",
        ),
        (
            "what's on https://example.com/news today?",
            "use: https://example.com/news",
        ),
        (
            "use the tool on https://example.com",
            "use: https://example.com",
        ),
        (
            "Use the fetch tool on https://x.example/a?b=c#top",
            "use: https://x.example/a?b=c",
        ),
        (
            "I need the tool to read https://x.example",
            "use: https://x.example",
        ),
        (
            "check http://[::1]:8080/ping",
            "use: http://[::1]:8080/ping",
        ),
        (
            "https://example.com/weather",
            "use: https://example.com/weather",
        ),
        (
            "what about https://example.com?",
            "use: https://example.com",
        ),
        (
            "is HTTPS://Example.COM:8443/x up?",
            "use: https://Example.COM:8443/x",
        ),
        ("use the tool", "use: -"),
        ("run the fetch tool again", "use: -"),
        ("fetch https://user@x.example/", "use: -"),
        (
            "Can you tell me what https://example.com/about says",
            "use: https://example.com/about",
        ),
        (
            "Please check https://example.com/weather and tell me if it will rain",
            "use: https://example.com/weather",
        ),
        (
            "what does https://example.com/about say?",
            "use: https://example.com/about",
        ),
        ("get me https://example.com/x", "use: https://example.com/x"),
        (
            "Look at http://127.0.0.1:8080/weather",
            "use: http://127.0.0.1:8080/weather",
        ),
        (
            "summarise https://example.com/article for me",
            "use: https://example.com/article",
        ),
    ];
    for (message, expected) in cases {
        check(message, expected);
    }
    check(
        "I love https://example.com, it is my favourite site",
        "chat",
    );
}

#[test]
fn answers_to_what_the_agent_asked() {
    let check = |awaiting: Awaiting, message: &str, expected: Intent| {
        assert_eq!(
            answer(awaiting, message),
            expected,
            "{awaiting:?} {message:?}"
        );
    };
    let goal = |goal: &str| Intent::Plan {
        goal: Some(goal.to_owned()),
    };
    let address = |text: &str| parse_url(text);
    check(Awaiting::Goal, "moving house", goal("moving house"));
    check(
        Awaiting::Goal,
        "Moving house next month, please.",
        goal("Moving house next month"),
    );
    check(Awaiting::Goal, "never mind", Intent::Chat);
    check(Awaiting::Goal, "forget it, what is 2+2?", Intent::Chat);
    check(
        Awaiting::Goal,
        "fetch https://x.example",
        Intent::UseTool {
            url: address("https://x.example"),
        },
    );
    check(
        Awaiting::ToolAddress,
        "http://127.0.0.1:8080/weather",
        Intent::MakeTool {
            url: address("http://127.0.0.1:8080/weather"),
        },
    );
    check(
        Awaiting::ToolAddress,
        "this one: https://x.example/a",
        Intent::MakeTool {
            url: address("https://x.example/a"),
        },
    );
    check(Awaiting::ToolAddress, "no idea", Intent::Chat);
    check(
        Awaiting::FetchAddress,
        "I mean https://x.example/b",
        Intent::UseTool {
            url: address("https://x.example/b"),
        },
    );
    check(
        Awaiting::FetchAddress,
        "a plan for my move",
        goal("my move"),
    );
}

#[test]
fn a_file_from_the_host() {
    check(
        r#"{"file": {"name": "notes.txt", "text": "a\nb\n"}}"#,
        "file: notes.txt 2 4",
    );
    check(
        r#"{"file": {"name": "e.txt", "text": ""}}"#,
        "file: e.txt 0 0",
    );
    check(
        r#"{"file": {"name": "é.txt", "text": "é"}}"#,
        "file: é.txt 1 2",
    );
    // Any other JSON is a message like another.
    check(r#"{"file": 3}"#, "chat");
    check(r#"{"file": {"name": "a"}, "x": 1}"#, "chat");
    check(
        r#"{"reply": "make me a plan for moving house"}"#,
        "plan: moving house",
    );
}

#[test]
fn never_panics_on_odd_input() {
    let long = "plan ".repeat(20_000);
    let odd = [
        "http://",
        "https://[",
        "https://[::1",
        "http://x:99999999999999999999/",
        "step",
        "step by",
        "break",
        "walk me",
        "go about",
        "\u{202e}plan for \u{0}x",
        "plan\n\nfor",
        "é'-’",
        "'-",
        long.as_str(),
        "{",
        "{\"file\": {\"name\": \"a\", \"text\": 1}}",
    ];
    for message in odd {
        let _ = intent(message);
    }
}
