//! GitHub: repositories, issues and pull requests through the REST API
//! (<https://docs.github.com/rest>), with a token in `IMURUN_GITHUB_TOKEN`.

use imurun_core::ToolCategory;
use serde_json::{Map, Value, json};

use super::summary::{items, listing, text};
use super::{Body, ConnectorSpec, Credential, HttpMethod, Service};

pub static GITHUB: Service = Service {
    id: "github",
    display_name: "GitHub",
    // A bare "issue" is a problem in everyday English ("I have an issue with my code", "issues
    // in my code"), so it points at GitHub only with an action (open, file, list, show) or
    // with another GitHub word in the question (repo, pull request).
    cues: &[
        "github",
        "gh",
        "repo",
        "repository",
        "pull request",
        "pr",
        "merge request",
        "open issue",
        "file issue",
        "create issue",
        "raise issue",
        "report issue",
        "submit issue",
        "list issue",
        "show issue",
        "issue tracker",
        "closed issues",
        "file bug",
        "open bug",
        "report bug",
        "bug report",
        "starred",
        "stars on",
    ],
    not_cues: &[],
    credential: Credential {
        token_var: "IMURUN_GITHUB_TOKEN",
        token_kind: "a GitHub personal access token",
    },
    base_url: "https://api.github.com",
    base_url_var: "IMURUN_GITHUB_API_URL",
    headers: &[
        ("Accept", "application/vnd.github+json"),
        ("X-GitHub-Api-Version", "2022-11-28"),
    ],
    error_message,
    body_failure: |_| None,
    tools: &[
        ConnectorSpec {
            name: "github_search_repos",
            description: "Search GitHub repositories (GitHub search syntax, e.g. `language:rust stars:>100 tokio`).",
            parameters: || {
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "the search query"}
                }, "required": ["query"]})
            },
            method: HttpMethod::Get,
            path: "/search/repositories",
            query: &[("query", "q")],
            fixed_query: &[("per_page", "20")],
            body: Body::None,
            category: ToolCategory::Network,
            aliases: &["search_repos", "search_repositories"],
            summarise: summarise_repositories,
        },
        ConnectorSpec {
            name: "github_list_issues",
            description: "List the issues of a GitHub repository (pull requests are left out).",
            parameters: || owner_repo_state("issues"),
            method: HttpMethod::Get,
            path: "/repos/{owner}/{repo}/issues",
            query: &[("state", "state")],
            fixed_query: &[("per_page", "30")],
            body: Body::None,
            category: ToolCategory::Network,
            aliases: &["list_issues"],
            summarise: summarise_issue_list,
        },
        ConnectorSpec {
            name: "github_create_issue",
            description: "Open a new issue in a GitHub repository.",
            parameters: || {
                json!({"type": "object", "properties": {
                    "owner": {"type": "string", "description": "the repository's owner (user or organisation)"},
                    "repo": {"type": "string", "description": "the repository's name"},
                    "title": {"type": "string", "description": "the issue's title"},
                    "body": {"type": "string", "description": "the issue's text (Markdown)"}
                }, "required": ["owner", "repo", "title"]})
            },
            method: HttpMethod::Post,
            path: "/repos/{owner}/{repo}/issues",
            query: &[],
            fixed_query: &[],
            body: Body::Fields(&[("title", "title"), ("body", "body")]),
            category: ToolCategory::External,
            aliases: &["create_issue", "open_issue", "github_open_issue"],
            summarise: summarise_created_issue,
        },
        ConnectorSpec {
            name: "github_list_pulls",
            description: "List the pull requests of a GitHub repository.",
            parameters: || owner_repo_state("pull requests"),
            method: HttpMethod::Get,
            path: "/repos/{owner}/{repo}/pulls",
            query: &[("state", "state")],
            fixed_query: &[("per_page", "30")],
            body: Body::None,
            category: ToolCategory::Network,
            aliases: &[
                "list_pulls",
                "list_pull_requests",
                "github_list_pull_requests",
            ],
            summarise: summarise_pulls,
        },
        ConnectorSpec {
            name: "github_search_issues",
            description: "Search GitHub issues and pull requests (GitHub search syntax, e.g. `repo:owner/name is:open label:bug`).",
            parameters: || {
                json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "the search query"}
                }, "required": ["query"]})
            },
            method: HttpMethod::Get,
            path: "/search/issues",
            query: &[("query", "q")],
            fixed_query: &[("per_page", "20")],
            body: Body::None,
            category: ToolCategory::Network,
            aliases: &["search_issues"],
            summarise: summarise_issue_search,
        },
    ],
};

fn owner_repo_state(what: &str) -> Value {
    json!({"type": "object", "properties": {
        "owner": {"type": "string", "description": "the repository's owner (user or organisation)"},
        "repo": {"type": "string", "description": "the repository's name"},
        "state": {"type": "string", "enum": ["open", "closed", "all"],
                  "description": format!("which {what} (default open)")}
    }, "required": ["owner", "repo"]})
}

/// GitHub's `{"message", "errors": [...]}`; an error is an object with a `message` or a
/// `field` and `code`, or (on some endpoints) a plain string.
fn error_message(body: &Value) -> Option<String> {
    let message = body.get("message").and_then(Value::as_str)?;
    let details: Vec<String> = items(body, Some("errors"))
        .iter()
        .map(|error| match error {
            Value::String(text) => text.clone(),
            _ if error.get("message").is_some() => text(error, &["message"]),
            _ => format!("{} {}", text(error, &["field"]), text(error, &["code"])),
        })
        .filter(|detail| !detail.trim().is_empty())
        .collect();
    if details.is_empty() {
        Some(message.to_owned())
    } else {
        Some(format!("{message} ({})", details.join("; ")))
    }
}

fn repo_name(args: &Map<String, Value>) -> String {
    let field = |name: &str| args.get(name).and_then(Value::as_str).unwrap_or("?");
    format!("{}/{}", field("owner"), field("repo"))
}

fn issue_line(issue: &Value) -> String {
    let pull = if issue.get("pull_request").is_some() {
        "[pull request] "
    } else {
        ""
    };
    format!(
        "#{} {pull}{} ({}) {} by @{}",
        text(issue, &["number"]),
        text(issue, &["title"]),
        text(issue, &["state"]),
        text(issue, &["html_url"]),
        text(issue, &["user", "login"]),
    )
}

fn summarise_repositories(value: &Value, _args: &Map<String, Value>) -> String {
    let lines: Vec<String> = items(value, Some("items"))
        .iter()
        .map(|repo| {
            let description = text(repo, &["description"]);
            let description = if description.is_empty() {
                String::new()
            } else {
                format!(" — {description}")
            };
            format!(
                "{} ({} stars){description} {}",
                text(repo, &["full_name"]),
                text(repo, &["stargazers_count"]),
                text(repo, &["html_url"]),
            )
        })
        .collect();
    let incomplete = if value.get("incomplete_results") == Some(&Value::Bool(true)) {
        " (GitHub stopped early: the results may be incomplete)"
    } else {
        ""
    };
    listing(
        format!(
            "{} repositories match{incomplete}.",
            text(value, &["total_count"])
        ),
        lines,
    )
}

fn summarise_issue_list(value: &Value, args: &Map<String, Value>) -> String {
    let all = items(value, None);
    // The issues endpoint returns pull requests too; they have their own tool.
    let issues: Vec<String> = all
        .iter()
        .filter(|issue| issue.get("pull_request").is_none())
        .map(issue_line)
        .collect();
    let pulls = all.len() - issues.len();
    let state = args.get("state").and_then(Value::as_str).unwrap_or("open");
    let mut heading = if issues.is_empty() {
        format!("No issues in {} ({state}).", repo_name(args))
    } else {
        format!("Issues in {} ({state}, {}):", repo_name(args), issues.len())
    };
    if pulls > 0 {
        heading.push_str(&format!(
            " [pull requests left out: {pulls}; github_list_pulls lists them]"
        ));
    }
    listing(heading, issues)
}

fn summarise_created_issue(value: &Value, args: &Map<String, Value>) -> String {
    format!(
        "Created issue #{} in {}: {} {}",
        text(value, &["number"]),
        repo_name(args),
        text(value, &["title"]),
        text(value, &["html_url"]),
    )
}

fn summarise_pulls(value: &Value, args: &Map<String, Value>) -> String {
    let lines: Vec<String> = items(value, None)
        .iter()
        .map(|pull| {
            let draft = if pull.get("draft") == Some(&Value::Bool(true)) {
                ", draft"
            } else {
                ""
            };
            format!(
                "#{} {} ({}{draft}) {} -> {} {} by @{}",
                text(pull, &["number"]),
                text(pull, &["title"]),
                text(pull, &["state"]),
                text(pull, &["head", "ref"]),
                text(pull, &["base", "ref"]),
                text(pull, &["html_url"]),
                text(pull, &["user", "login"]),
            )
        })
        .collect();
    let state = args.get("state").and_then(Value::as_str).unwrap_or("open");
    let heading = if lines.is_empty() {
        format!("No pull requests in {} ({state}).", repo_name(args))
    } else {
        format!(
            "Pull requests in {} ({state}, {}):",
            repo_name(args),
            lines.len()
        )
    };
    listing(heading, lines)
}

fn summarise_issue_search(value: &Value, _args: &Map<String, Value>) -> String {
    let lines: Vec<String> = items(value, Some("items")).iter().map(issue_line).collect();
    listing(
        format!(
            "{} issues and pull requests match.",
            text(value, &["total_count"])
        ),
        lines,
    )
}
