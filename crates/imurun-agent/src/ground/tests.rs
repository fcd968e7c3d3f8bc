use imurun_core::{clock_time_forms, date_forms};

use super::*;

/// `get_time`'s facts for Tuesday, 1 December 2026, 13:09 in Europe/Oslo.
fn time_ground() -> Ground {
    Ground {
        tool: "get_time".into(),
        text: "Tuesday, 1 December 2026, 13:09:41 CET (Europe/Oslo, UTC+01:00)\n\
               ISO 8601: 2026-12-01T13:09:41+01:00"
            .into(),
        ok: true,
        facts: Some(
            Facts::new("It is 13:09 on Tuesday, 1 December 2026 (Europe/Oslo).")
                .require("the time", clock_time_forms(13, 9))
                .require("the date", date_forms(2026, 12, 1))
                .only(ClaimKind::ClockTime, vec!["13:09".into()])
                .only(ClaimKind::Weekday, vec!["Tuesday".into()])
                .only(ClaimKind::Date, vec!["2026-12-01".into()]),
        ),
    }
}

fn listing_ground(names: &[&str]) -> Ground {
    let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    let mut facts = Facts::new(format!("The workspace holds: {}.", names.join(", ")));
    if names.is_empty() {
        facts = Facts::new("The workspace is empty.")
            .require("that it is empty", vec!["empty".into(), "no files".into()]);
    }
    for name in &names {
        facts = facts.require(format!("the name {name}"), vec![name.clone()]);
    }
    Ground {
        tool: "list_dir".into(),
        text: if names.is_empty() {
            "the workspace root is empty".into()
        } else {
            format!("the workspace root:\n{}", names.join("\n"))
        },
        ok: true,
        facts: Some(facts.only(ClaimKind::FileName, names)),
    }
}

fn sum_ground() -> Ground {
    Ground {
        tool: "calculate".into(),
        text: "17 * 23 = 391".into(),
        ok: true,
        facts: Some(
            Facts::new("17 * 23 = 391.")
                .require("the result", vec!["391".into()])
                .only(
                    ClaimKind::Number,
                    vec!["391".into(), "17".into(), "23".into()],
                ),
        ),
    }
}

fn examples() -> Vec<String> {
    [
        "Asia/Tokyo",
        "Tokyo",
        "21:04",
        "notes.txt",
        "Buy milk",
        "Oslo",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn verdict(answer: &str, results: &[Ground], said: &str) -> Verdict {
    let ran: Vec<String> = results.iter().map(|ground| ground.tool.clone()).collect();
    let identity = Identity::from_persona(crate::DEFAULT_PERSONA);
    check(
        answer,
        &Grounds {
            results,
            ran: &ran,
            said,
            example_values: &examples(),
            identity: Some(&identity),
        },
    )
}

fn reason(verdict: Verdict) -> String {
    match verdict {
        Verdict::Fails(problem) => problem.reason,
        Verdict::Holds(answer) => panic!("held: {answer}"),
    }
}

#[test]
fn the_answers_a_new_user_got_are_all_refused() {
    let time = [time_ground()];
    // A copied header, the example's zone, no date.
    let copied = "```\n[tool result: get_time]\n21:46:27 JST (Asia/Tokyo, UTC+09:00)";
    assert!(reason(verdict(copied, &time, "What time is it now?")).contains("Asia/Tokyo"));
    // The worked example copied word for word.
    let example = "[tool result: get_time] 21:04, Monday (Asia/Tokyo) You: It is 21:04 on \
                   Monday in Tokyo.";
    assert!(reason(verdict(example, &time, "What time is it now?")).contains("worked example"));
    // A date two days off in the right clock's form.
    let off = "It is 13:09 on 2026-12-03.";
    assert_eq!(
        reason(verdict(off, &time, "What time is it now?")),
        "the answer left out the date that get_time returned"
    );
    let also_off = "It is 13:09 on 1 December (or December 3rd).";
    assert_eq!(
        reason(verdict(also_off, &time, "What time is it now?")),
        "the answer stated December 3rd, which get_time did not return"
    );
    // A result of a tool that never ran.
    let invented = "[tool result: list_dir] listing.txt, list.csv, list.json, …";
    assert_eq!(
        reason(verdict(invented, &[], "Read groceries.txt")),
        "the answer held a result of list_dir, which did not run"
    );
    // The example's file names for an empty workspace.
    let names = "`notes.txt`, `oslo_weather.json`, `temp_data.csv`";
    let empty = [listing_ground(&[])];
    assert!(!matches!(
        verdict(names, &empty, "List the files in my workspace."),
        Verdict::Holds(_)
    ));
    // A wrong product of two numbers.
    let sum = [sum_ground()];
    assert_eq!(
        reason(verdict("349", &sum, "What is 17 times 23?")),
        "the answer left out the result that calculate returned"
    );
    assert_eq!(
        reason(verdict(
            "17 times 23 is 391, or about 349.",
            &sum,
            "What is 17 times 23?"
        )),
        "the answer stated 349, which calculate did not return"
    );
    // A human.
    assert_eq!(
        reason(verdict(
            "Hello! I'm a human. What's your name?",
            &[],
            "Hi! Who are you?"
        )),
        "the answer said \"i'm a human\""
    );
}

#[test]
fn answers_that_hold_the_results_pass_cleaned() {
    let time = [time_ground()];
    for answer in [
        "It is 13:09 on Tuesday, 1 December 2026.",
        "It's 1:09 pm on Tuesday, December 1st.",
        "The time is 13:09:41 CET, 2026-12-01.",
    ] {
        assert!(
            matches!(
                verdict(answer, &time, "What time is it now?"),
                Verdict::Holds(_)
            ),
            "{answer}"
        );
    }
    let copied = "```\n[tool result: get_time]\nIt is 13:09 on 1 December.\n```";
    assert_eq!(
        verdict(copied, &time, "What time is it now?"),
        Verdict::Holds("It is 13:09 on 1 December.".into())
    );
    let files = [listing_ground(&["notes.txt", "src"])];
    assert!(matches!(
        verdict(
            "You have notes.txt and a folder, src/.",
            &files,
            "List my files"
        ),
        Verdict::Holds(_)
    ));
    assert_eq!(
        reason(verdict("You have notes.txt.", &files, "List my files")),
        "the answer left out the name src that list_dir returned"
    );
    assert_eq!(
        reason(verdict(
            "You have notes.txt, src and old.csv.",
            &files,
            "List my files"
        )),
        "the answer stated old.csv, which list_dir did not return"
    );
    let empty = [listing_ground(&[])];
    assert!(matches!(
        verdict("Your workspace is empty.", &empty, "List my files"),
        Verdict::Holds(_)
    ));
    let sum = [sum_ground()];
    assert!(matches!(
        verdict("17 × 23 = 391.", &sum, "What is 17 times 23?"),
        Verdict::Holds(_)
    ));
    assert!(matches!(
        verdict(
            "Hello! I'm imurun. How can I help?",
            &[],
            "Hi! Who are you?"
        ),
        Verdict::Holds(_)
    ));
    assert!(
        matches!(
            verdict("Sure: a poem about Tokyo.", &[], "Write a poem about Tokyo"),
            Verdict::Holds(_)
        ),
        "a value the person said is theirs"
    );
}

#[test]
fn who_the_assistant_is_comes_from_its_persona() {
    let identity = Identity::from_persona(crate::DEFAULT_PERSONA);
    assert_eq!(identity.name.as_deref(), Some("imurun"));
    assert_eq!(
        identity.introduction,
        "I'm imurun, a helpful assistant running on your own computer."
    );
    let anonymous = Identity::from_persona("You are a pirate. Speak like one.");
    assert_eq!(anonymous.name, None);
    assert_eq!(anonymous.introduction, "I'm a pirate.");
    assert!(asks_who("Hi! Who are you?"));
    assert!(asks_who("hello"));
    assert!(asks_who("What's your name?"));
    assert!(!asks_who(
        "Hi, can you list the files in my workspace please?"
    ));
    assert!(!asks_who("history of the hive"));
    for asks in [
        "who am I chatting with?",
        "Who am i talking to right now",
        "who is this?",
        "who's there",
        "r u a bot",
        "Are you actually a real person?",
        "are you some kind of AI model",
    ] {
        assert!(asks_who(asks), "{asks:?} asks who the assistant is");
    }
    for other in [
        "Who is the author of README.md?",
        "who wrote this file",
        "Who am I meeting on Friday? Check notes.txt",
        "Are you able to read my notes?",
        "Who are the suppliers in suppliers.txt?",
        "Who is this person in contacts.txt?",
    ] {
        assert!(
            !asks_who(other),
            "{other:?} does not ask who the assistant is"
        );
    }
    assert_eq!(
        reason(verdict(
            "Hello! How can I help you today?",
            &[],
            "Hi! Who are you?"
        )),
        "the answer did not say it is imurun"
    );
    assert!(
        reason(verdict(
            "I am ChatGPT, made by OpenAI.",
            &[],
            "Who made you?"
        ))
        .contains("chatgpt")
    );
    assert!(matches!(
        verdict("ChatGPT is a chatbot by OpenAI.", &[], "What is ChatGPT?"),
        Verdict::Holds(_)
    ));
    assert_eq!(
        reason(verdict("Hi, my name is Sam.", &[], "hello")),
        "the answer gave the name \"sam\""
    );
}

#[test]
fn the_fallback_is_made_from_the_results() {
    let time = [time_ground(), sum_ground()];
    let ran = vec!["get_time".to_owned(), "calculate".to_owned()];
    let identity = Identity::from_persona(crate::DEFAULT_PERSONA);
    let grounds = Grounds {
        results: &time,
        ran: &ran,
        said: "What time is it, and what is 17 * 23?",
        example_values: &[],
        identity: Some(&identity),
    };
    let Verdict::Fails(problem) = check("No idea.", &grounds) else {
        panic!("an answer without the facts holds");
    };
    assert!(
        problem
            .correction
            .contains("[tool result: get_time] said:\nTuesday")
    );
    assert_eq!(
        fallback(&problem, &grounds),
        "It is 13:09 on Tuesday, 1 December 2026 (Europe/Oslo).\n\n17 * 23 = 391."
    );
    let greeting = Grounds {
        results: &[],
        ran: &[],
        said: "Hi! Who are you?",
        example_values: &[],
        identity: Some(&identity),
    };
    let Verdict::Fails(problem) = check("I'm a human.", &greeting) else {
        panic!("a human holds");
    };
    assert_eq!(
        fallback(&problem, &greeting),
        "Hello! I'm imurun, a helpful assistant running on your own computer."
    );
}

#[test]
fn a_failed_call_is_said_in_its_own_words() {
    let failed = |text: &str| Ground {
        tool: "delete".into(),
        text: format!("FAILED: {text}{FAILED_SUFFIX}"),
        ok: false,
        facts: None,
    };
    let problem = Problem {
        tool: Some("delete".into()),
        reason: String::new(),
        correction: String::new(),
    };
    let results = [failed("no such file: notes.txt")];
    let grounds = Grounds {
        results: &results,
        ran: &[],
        said: "Delete notes.txt",
        example_values: &[],
        identity: None,
    };
    let answer = fallback(&problem, &grounds);
    assert!(answer.contains("no such file: notes.txt"), "{answer}");
    assert!(!answer.contains(FAILED_SUFFIX), "{answer}");
}

#[test]
fn values_are_found_as_people_write_them() {
    assert_eq!(
        clock_times("at 2:05 pm, or 14:05:09, not 3.14 or 123:45"),
        [
            ("2:05 pm".to_owned(), vec!["14:05".to_owned()]),
            ("14:05:09".to_owned(), vec!["14:05".to_owned()]),
        ]
    );
    assert_eq!(clock_times("9:30")[0].1, ["09:30", "21:30"]);
    assert_eq!(
        dates("On 2026-12-03T21:22 or December 1st, not May be, 3 Dec."),
        [
            ("2026-12-03".to_owned(), (12, 3)),
            ("December 1st".to_owned(), (12, 1)),
            ("3 Dec".to_owned(), (12, 3)),
        ]
    );
    assert_eq!(
        file_names("See notes.txt, docs/plan.md and https://example.com/a.html, e.g. 3.14."),
        ["notes.txt", "docs/plan.md"]
    );
    let found: Vec<(String, f64)> =
        numbers("17 × 23 = 391; 1,234.5 and -2, at 14:05 on 2026-12-01, mp3")
            .into_iter()
            .map(|(shown, value, _)| (shown, value))
            .collect();
    assert_eq!(
        found,
        [
            ("17".to_owned(), 17.0),
            ("23".to_owned(), 23.0),
            ("391".to_owned(), 391.0),
            ("1,234.5".to_owned(), 1234.5),
            ("-2".to_owned(), -2.0),
        ]
    );
    assert!(has_form("it is 391.", "391"));
    assert!(!has_form("it is 13910.", "391"));
}

#[test]
fn a_weekday_asked_for_must_be_in_the_answer() {
    let time = [time_ground()];
    let dated = "The current date and time is 1 December 2026, 13:09.";
    assert_eq!(
        reason(verdict(dated, &time, "What weekday is it over in Oslo?")),
        "the answer left out the weekday that get_time returned"
    );
    assert!(matches!(
        verdict(
            "It is Tuesday, 1 December 2026, 13:09.",
            &time,
            "What weekday is it over in Oslo?"
        ),
        Verdict::Holds(_)
    ));
    // The date asked for alone needs no weekday.
    assert!(matches!(
        verdict(dated, &time, "What's today's date?"),
        Verdict::Holds(_)
    ));
}
