//! Which connector services a turn offers: with more than 8 connector tools available, only
//! those the question or the last 6 messages point at; the rest are named in one line and
//! still run when called. Built-in and MCP tools are never hidden.

use std::sync::Arc;

use imurun_core::{Availability, ToolCategory};
use imurun_exec::{Offer, Registry, others_line};
use imurun_integrations::Connectors;
use imurun_testkit::{Behaviour, FakeTool, TempWorkspace};
use imurun_tools::{BuiltinConfig, builtin_tools};

use crate::support::register_connectors;

/// The variables set: every service connected unless a token is left out.
fn connectors(tokens: &[&str]) -> Connectors {
    let tokens: Vec<String> = tokens.iter().map(|token| (*token).to_owned()).collect();
    Connectors::from_lookup(move |name| tokens.iter().any(|t| t == name).then(|| "t".to_owned()))
}

const ALL: &[&str] = &[
    "IMURUN_GITHUB_TOKEN",
    "IMURUN_GMAIL_TOKEN",
    "IMURUN_CLOUDFLARE_API_TOKEN",
];

/// Built-in tools, one MCP-like tool, and the connector tools of `connectors`.
fn registry(ws: &TempWorkspace, connectors: &Connectors) -> Registry {
    let mut registry = Registry::new();
    for tool in builtin_tools(&ws.workspace, BuiltinConfig::default()) {
        registry.insert(tool, true);
    }
    registry.insert(
        Arc::new(FakeTool::new(
            "notion_search",
            ToolCategory::External,
            Behaviour::Succeed,
        )),
        true,
    );
    register_connectors(&mut registry, connectors);
    registry
}

/// The ids of the services with an offered tool, in declaration order.
fn offered_services(registry: &Registry, offer: &Offer) -> Vec<String> {
    let mut services: Vec<String> = Vec::new();
    for tool in offer.index.offered() {
        if let Some(group) = registry.group_of(&tool.spec.name)
            && !services.iter().any(|id| id == group.id())
        {
            services.push(group.id().to_owned());
        }
    }
    services
}

/// One place the API is called: `question` with `recent` must offer `expected`.
fn check(registry: &Registry, question: &str, recent: &[&str], expected: &[&str]) {
    let offer = registry.offer(question, recent);
    assert_eq!(
        offered_services(registry, &offer),
        expected,
        "question {question:?}, recent {recent:?}"
    );
    // Built-in and MCP tools are offered whatever the question.
    for tool in registry.index().runnable() {
        if registry.group_of(&tool.spec.name).is_none() {
            assert!(
                offer.index.get(&tool.spec.name).unwrap().offered,
                "{} hidden for {question:?}",
                tool.spec.name
            );
        }
    }
    // A connected service is either offered or named among the others, never both; one
    // that is not connected is neither.
    let connected = |id: &str| {
        registry.index().runnable().any(|tool| {
            registry
                .group_of(&tool.spec.name)
                .is_some_and(|group| group.id() == id)
                && registry.get(&tool.spec.name).unwrap().available() == Availability::Ready
        })
    };
    let names = |ids: &[&str]| -> Vec<String> {
        ["github", "gmail", "cloudflare"]
            .iter()
            .filter(|id| !ids.contains(id) && connected(id))
            .map(|id| match *id {
                "github" => "GitHub".to_owned(),
                "gmail" => "Gmail".to_owned(),
                _ => "Cloudflare".to_owned(),
            })
            .collect()
    };
    assert_eq!(offer.others, names(expected), "{question:?}");
    // Hidden or not, every tool stays runnable.
    assert_eq!(offer.index.len(), registry.index().len());
}

#[test]
fn the_seeds_three_cues_offer_their_service() {
    let ws = TempWorkspace::new();
    let registry = registry(&ws, &connectors(ALL));
    check(&registry, "what's new in my inbox?", &[], &["gmail"]);
    check(
        &registry,
        "open an issue about the crash in octo/hello",
        &[],
        &["github"],
    );
    check(
        &registry,
        "why does the DNS for example.com not resolve?",
        &[],
        &["cloudflare"],
    );
}

#[test]
fn phrasings_point_at_their_services() {
    let ws = TempWorkspace::new();
    let registry = registry(&ws, &connectors(ALL));
    let table: &[(&str, &[&str])] = &[
        // GitHub
        ("can you file a bug for this crash?", &["github"]),
        ("list the open pull requests", &["github"]),
        ("review my PR please", &["github"]),
        ("any PRs waiting for review?", &["github"]),
        ("what's new in the tokio repo?", &["github"]),
        ("search GitHub for rust web frameworks", &["github"]),
        (
            "which repositories have the most stars for vector search?",
            &["github"],
        ),
        ("create a new issue titled 'docs typo'", &["github"]),
        ("are there closed issues about memory leaks", &["github"]),
        ("show me the issues of octo/hello", &["github"]),
        ("report a bug to the maintainers", &["github"]),
        (
            "I filed an issue yesterday, did anyone answer?",
            &["github"],
        ),
        ("how many open issues does serde have", &["github"]),
        // Gmail
        ("anything new in the inbox?", &["gmail"]),
        ("send an email to anna@example.com", &["gmail"]),
        ("did Ben email me back?", &["gmail"]),
        ("check my mail", &["gmail"]),
        ("how many unread messages do I have", &["gmail"]),
        ("search Gmail for the invoice from March", &["gmail"]),
        ("any emails from my landlord this week?", &["gmail"]),
        ("reply to Anna's e-mail", &["gmail"]),
        ("forward the newsletter from the mailing list", &["gmail"]),
        ("I emailed the school, is there an answer", &["gmail"]),
        // Cloudflare
        ("add a DNS record for blog.example.com", &["cloudflare"]),
        ("point an A record at 203.0.113.7", &["cloudflare"]),
        ("create a CNAME for docs", &["cloudflare"]),
        ("list the domain's records", &["cloudflare"]),
        ("is the site proxied through Cloudflare?", &["cloudflare"]),
        ("change the MX records to Fastmail", &["cloudflare"]),
        ("update the nameservers", &["cloudflare"]),
        (
            "delete the TXT record for the verification",
            &["cloudflare"],
        ),
        ("add an AAAA record", &["cloudflare"]),
        ("point my subdomain at the new server", &["cloudflare"]),
        // More than one
        (
            "email me the list of open issues in the repo",
            &["github", "gmail"],
        ),
        (
            "after updating DNS, open an issue about it",
            &["github", "cloudflare"],
        ),
    ];
    assert!(table.len() >= 30);
    for (question, expected) in table {
        check(&registry, question, &[], expected);
    }
}

#[test]
fn questions_that_point_nowhere_offer_no_service() {
    let ws = TempWorkspace::new();
    let registry = registry(&ws, &connectors(ALL));
    let negatives = [
        "what time is it",
        "list the files here",
        "write a poem about the sea",
        // A bare "issue" is a problem, not a GitHub issue.
        "I have an issue with my code",
        "there are issues in my script, can you help?",
        "send me the weather for Paris",
        "what's in this folder",
        // An email address's format is not the mailbox.
        "write a regex that checks an email address format",
        "keep a record of my expenses",
        "open the file notes.txt",
        "what time zone is Tokyo in",
        "I'm pressed for time, summarise this",
        "prepare a shopping list",
        "explain how a hash map works",
    ];
    for question in negatives {
        check(&registry, question, &[], &[]);
    }
    let offer = registry.offer("what time is it", &[]);
    assert_eq!(offer.others, ["GitHub", "Gmail", "Cloudflare"]);
    assert_eq!(
        offer.others_line().as_deref(),
        Some("Also connected, ask to use them: GitHub, Gmail, Cloudflare.")
    );
}

#[test]
fn cues_in_the_last_six_messages_count_and_older_ones_do_not() {
    let ws = TempWorkspace::new();
    let registry = registry(&ws, &connectors(ALL));
    let filler = "ok, thanks";
    // Oldest first: the cue is the 6th-last message.
    let sixth_last = ["check my inbox", filler, filler, filler, filler, filler];
    check(&registry, "and the next one?", &sixth_last, &["gmail"]);
    // The same cue one message earlier, 7th-last, no longer counts.
    let seventh_last = [
        "check my inbox",
        filler,
        filler,
        filler,
        filler,
        filler,
        filler,
    ];
    check(&registry, "and the next one?", &seventh_last, &[]);
    // The question and the recent messages add up.
    check(
        &registry,
        "now add a CNAME",
        &["open an issue on octo/hello", "done"],
        &["github", "cloudflare"],
    );
}

#[test]
fn with_eight_or_fewer_available_connector_tools_everything_available_is_offered() {
    let ws = TempWorkspace::new();
    // GitHub (5) and Gmail (2): 7 available; Cloudflare's 3 are unavailable, not counted and
    // not listed (they cannot run), though a call naming one still resolves.
    let registry = registry(
        &ws,
        &connectors(&["IMURUN_GITHUB_TOKEN", "IMURUN_GMAIL_TOKEN"]),
    );
    check(&registry, "what time is it", &[], &["github", "gmail"]);
    let offer = registry.offer("what time is it", &[]);
    assert!(offer.others.is_empty());
    assert_eq!(offer.others_line(), None);
    assert_eq!(offer.index.offered().count(), registry.index().len() - 3);
    assert!(offer.index.contains("cloudflare_list_dns_records"));
    // The contrast: with all 10 available, the same question offers no service.
    let all = self::registry(&ws, &connectors(ALL));
    check(&all, "what time is it", &[], &[]);

    // All three tokens, but Cloudflare's base URL is refused: again 7 available.
    let refused = Connectors::from_lookup(|name| match name {
        "IMURUN_CLOUDFLARE_API_URL" => Some("http://dns.example.com".to_owned()),
        _ => ALL.contains(&name).then(|| "t".to_owned()),
    });
    let registry = self::registry(&ws, &refused);
    check(&registry, "write a poem", &[], &["github", "gmail"]);
}

#[test]
fn hidden_tools_and_their_aliases_still_resolve() {
    let ws = TempWorkspace::new();
    let registry = registry(&ws, &connectors(ALL));
    let offer = registry.offer("open an issue about the crash", &[]);
    assert_eq!(offer.others, ["Gmail", "Cloudflare"]);
    assert_eq!(
        offer.others_line().as_deref(),
        Some("Also connected, ask to use them: Gmail, Cloudflare.")
    );
    for (written, canonical) in [
        ("gmail_send", "gmail_send"),
        ("send_email", "gmail_send"),
        ("email_send", "gmail_send"),
        (
            "cloudflare_delete_dns_record",
            "cloudflare_delete_dns_record",
        ),
    ] {
        let indexed = imurun_calls::resolve(&offer.index, written).unwrap();
        assert_eq!(indexed.spec.name, canonical, "{written}");
        assert!(!indexed.offered, "{written} is hidden this turn");
        assert_eq!(registry.resolve(written).unwrap().spec().name, canonical);
    }
    let open_issue = imurun_calls::resolve(&offer.index, "open_issue").unwrap();
    assert_eq!(open_issue.spec.name, "github_create_issue");
    assert!(open_issue.offered);
    // The registry's own index is untouched by a turn's offer.
    assert!(registry.index().get("gmail_send").unwrap().offered);
}

#[test]
fn the_others_line_names_services_in_order() {
    assert_eq!(others_line(&[]), None);
    assert_eq!(
        others_line(&["Gmail".to_owned()]).as_deref(),
        Some("Also connected, ask to use them: Gmail.")
    );
}

#[test]
fn the_callable_index_leaves_out_only_unconnected_connector_tools() {
    let ws = TempWorkspace::new();
    let registry = registry(&ws, &connectors(&["IMURUN_GITHUB_TOKEN"]));
    let callable = registry.callable_index();
    assert!(callable.contains("github_create_issue"));
    assert!(!callable.contains("gmail_send"));
    assert!(!callable.contains("cloudflare_list_dns_records"));
    let builtins = registry
        .index()
        .runnable()
        .filter(|tool| registry.group_of(&tool.spec.name).is_none())
        .count();
    assert_eq!(callable.len(), builtins + 5);
}
