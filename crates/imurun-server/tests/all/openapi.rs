//! The OpenAPI document against the code: the routes the router serves, the prose reference in
//! `docs/api.md` and the limits the server enforces. The events that really go out on the
//! streams are checked against it in `openapi_events.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use imurun_agent::{
    MAX_STEPS_CAP, SKILL_BODY_BYTES_MAX, SKILL_DESCRIPTION_CHARS_MAX, SKILL_ID_CHARS_MAX,
    SKILL_NAME_CHARS_MAX,
};
use imurun_policy::Mode;
use imurun_server::wire::{
    NO_NUL_PATTERN, NOT_WHITE_SPACE_PATTERN, STORED_NOT_WHITE_SPACE_PATTERN,
};
use imurun_server::{
    APPROVAL_TIMEOUT_S_MAX, PERSONA_CHARS_MAX, PROMPT_CHARS_MAX, page_operations, served_operations,
};
use imurun_store::{ID_CHARS_MAX, SESSION_TITLE_CHARS_MAX};
use serde_json::{Value, json};

use crate::api_support::{Dirs, TestModel, TestServer};
use crate::openapi_events::{event_schemas, stream_shapes};
use crate::support::SseClient;

/// The methods an OpenAPI path item can hold, as they are spelt there.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// `(METHOD, path)` of every operation in `document`, sorted.
fn documented_operations(document: &Value) -> Vec<(String, String)> {
    let mut operations = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                operations.push((method.to_ascii_uppercase(), path.clone()));
            }
        }
    }
    operations.sort();
    operations
}

/// The document as the server serves it.
pub(crate) async fn served_document(server: &TestServer) -> Value {
    let (status, document) = server.get("/api/openapi.json").await;
    assert_eq!(status, 200, "{document}");
    document
}

#[tokio::test]
async fn every_route_is_documented_and_every_documented_route_is_served() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    assert_eq!(document["openapi"], "3.1.0");
    let mut served = served_operations();
    let count = served.len();
    served.sort();
    served.dedup();
    assert_eq!(
        served.len(),
        count,
        "an operation is in the route table twice"
    );
    // A failure here means a handler is in the route table but missing from `ApiDoc`'s
    // `paths(...)` in src/openapi.rs, or the other way round.
    assert_eq!(documented_operations(&document), served);
    // The web page's routes are served by the same router but are not API operations: the
    // document describes what a program calls, not the static files of one client. Only these
    // two may stay out of it.
    let page = vec![
        ("GET".to_owned(), "/".to_owned()),
        ("GET".to_owned(), "/assets/{file}".to_owned()),
    ];
    assert_eq!(page_operations(), page);
    server.stop().await;
}

/// Probing the running server: every documented operation reaches a handler, never the
/// router's fallbacks (404 `no route has this path`, 405 `method_not_allowed`).
#[tokio::test]
async fn every_documented_operation_reaches_its_handler() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    for (method, path) in documented_operations(&document) {
        let concrete = concrete_path(&path);
        let operation = &document["paths"][&path][method.to_ascii_lowercase()];
        let streams = operation["responses"]["200"]["content"]
            .get("text/event-stream")
            .is_some();
        // A Keep stream on a server not in Keep mode answers 404 `keep_off` like every Keep
        // route: it is checked below as a plain request.
        if method == "GET" && streams && !path.starts_with("/v1/") {
            // Connecting asserts the 200 and the stream's head; the stream never ends.
            let client = SseClient::connect(server.addr, &concrete, None).await;
            assert!(client.headers.contains("text/event-stream"));
            continue;
        }
        let body = (method != "GET" && method != "DELETE").then(|| "{}".to_owned());
        let (status, answer) = server.request(&method, &concrete, body).await;
        assert_ne!(status, 405, "{method} {path}: {answer}");
        let fallback = answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("no route has this path"));
        assert!(
            !(status == 404 && fallback),
            "{method} {path} is documented but not served"
        );
        if let Some(responses) = operation["responses"].as_object() {
            assert!(
                responses.contains_key(&status.to_string()),
                "{method} {path} answered {status}, which its documentation does not list: \
                 {answer}"
            );
        }
    }
    server.stop().await;
}

/// `{name}` segments replaced by an id that exists nowhere.
pub(crate) fn concrete_path(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "no-such-id"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every operation of `document` as `(METHOD, path, operation)`.
pub(crate) fn operations(document: &Value) -> Vec<(String, String, &Value)> {
    let mut found = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                found.push((method.to_ascii_uppercase(), path.clone(), operation));
            }
        }
    }
    found
}

/// Operation ids are unique, and every link names an operation that exists and only
/// parameters that operation has: a stateful client (schemathesis) follows them from a created
/// session to its turns.
#[tokio::test]
async fn operation_ids_are_unique_and_links_lead_somewhere() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let mut parameters_by_id: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (method, path, operation) in operations(&document) {
        let id = operation["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"))
            .to_owned();
        let parameters = operation["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|parameter| parameter["name"].as_str())
            .map(str::to_owned)
            .collect();
        assert!(
            parameters_by_id.insert(id.clone(), parameters).is_none(),
            "two operations are called {id}"
        );
    }
    let mut links = 0;
    for (method, path, operation) in operations(&document) {
        for response in operation["responses"]
            .as_object()
            .expect("responses")
            .values()
        {
            for (name, link) in response["links"].as_object().into_iter().flatten() {
                let target = link["operationId"].as_str().expect("an operationId");
                let parameters = parameters_by_id
                    .get(target)
                    .unwrap_or_else(|| panic!("{method} {path}: link {name} names {target}"));
                for parameter in link["parameters"].as_object().expect("parameters").keys() {
                    assert!(
                        parameters.contains(parameter),
                        "{method} {path}: link {name} passes {parameter}, which {target} lacks"
                    );
                }
                links += 1;
            }
        }
    }
    let create_session = &document["paths"]["/api/sessions"]["post"]["responses"]["201"];
    for target in ["get_session", "send_prompt", "list_turns", "delete_session"] {
        assert!(
            create_session["links"].get(target).is_some(),
            "a created session links to {target}"
        );
    }
    let prompt = &document["paths"]["/api/sessions/{id}/prompts"]["post"]["responses"]["202"];
    assert_eq!(
        prompt["links"]["get_turn"]["parameters"],
        json!({"id": "$request.path.id", "turn_id": "$response.body#/turn_id"})
    );
    assert!(links >= 10, "{links} links");
}

/// What the router does to every request is in every operation's documentation: the token
/// (401 but on `GET /api/health`) and, for a JSON body, the extractor's answers (400 for a
/// body that is not a JSON object of the schema, 413 past the body limit, 415 without the
/// JSON content type; `POST /api/sessions` reads an optional body without a content type).
#[tokio::test]
async fn every_operation_documents_the_statuses_the_router_adds() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    for (method, path, operation) in operations(&document) {
        let responses = operation["responses"].as_object().expect("responses");
        assert_eq!(
            responses.contains_key("401"),
            path != "/api/health",
            "{method} {path}: 401"
        );
        if operation.get("requestBody").is_none() {
            continue;
        }
        let mut expected = vec!["400", "413", "415"];
        if (method.as_str(), path.as_str()) == ("POST", "/api/sessions") {
            expected.pop();
            assert_eq!(operation["requestBody"]["required"], false);
        }
        for status in expected {
            assert!(
                responses.contains_key(status),
                "{method} {path} does not document {status}"
            );
        }
    }
}

/// A body that is valid JSON of another type than an object is a 400 on every operation that
/// takes one. A regression test for `POST /api/agent` and `POST /api/permissions` answering
/// 200 to `[null, null]`: serde reads an array as a struct's fields in order.
#[tokio::test]
async fn a_body_of_the_wrong_json_type_is_a_400_everywhere() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, Some(TestModel::new(Vec::new()))).await;
    let document = served_document(&server).await;
    let session = server.new_session().await;
    for (method, path, operation) in operations(&document) {
        // Keep's routes answer 404 `keep_off` outside Keep mode; `keep::` runs this check on
        // a Keep host.
        if operation.get("requestBody").is_none()
            || path.starts_with("/v1/") && operation["tags"][0] == "keep"
        {
            continue;
        }
        let concrete = path.replace("{id}", &session);
        // White space alone is not JSON either (an empty body is how to leave one out).
        for body in [
            "[null, null]",
            "null",
            "\"text\"",
            "7",
            "true",
            "[]",
            " ",
            "\n\t ",
        ] {
            let (status, answer) = server
                .request(&method, &concrete, Some(body.to_owned()))
                .await;
            assert_eq!(status, 400, "{method} {path} with {body}: {answer}");
            assert_eq!(answer["error"]["code"], "bad_request", "{answer}");
        }
    }
    // A NUL character where the document's pattern refuses it: the database cannot store it.
    for (method, path, field) in [
        ("POST", "/api/sessions".to_owned(), "title"),
        ("PATCH", format!("/api/sessions/{session}"), "title"),
        ("POST", format!("/api/sessions/{session}/prompts"), "prompt"),
    ] {
        let body = json!({ field: "a\u{0}b" }).to_string();
        let (status, answer) = server.request(method, &path, Some(body)).await;
        assert_eq!(status, 400, "{method} {path}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("NUL")),
            "{answer}"
        );
    }
    // Inside a body too: a field whose type is a struct is an object, and a whole number may
    // be written with a zero fraction, as JSON Schema's `integer` allows.
    for (path, body, status) in [
        ("/api/permissions", json!({"toggles": [true, null]}), 400),
        (
            "/api/permissions",
            json!({"toggles": {"network": false}}),
            200,
        ),
        ("/api/permissions", json!({"approvalTimeout": 30.0}), 200),
        ("/api/permissions", json!({"approvalTimeout": 30.5}), 400),
        ("/api/permissions", json!({"workspaceRoot": null}), 400),
        ("/api/agent", json!({"maxSteps": 4.0}), 200),
        ("/api/agent", json!({"maxSteps": -1}), 400),
    ] {
        let (answered, answer) = server.post(path, body.clone()).await;
        assert_eq!(answered, status, "{path} {body}: {answer}");
    }
    server.stop().await;
}

/// The limits the document states are the ones the code enforces (the schema attributes take
/// literals; this holds them to the constants).
#[tokio::test]
async fn the_documented_limits_are_the_servers() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let schemas = &document["components"]["schemas"];
    let id_pattern = format!("^[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{}}}$", ID_CHARS_MAX - 1);
    let skill_id_pattern = format!(
        "^[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{}}}$",
        SKILL_ID_CHARS_MAX - 1
    );
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "prompt",
            schemas["PromptRequest"]["properties"]["prompt"]["maxLength"].clone(),
            json!(PROMPT_CHARS_MAX),
        ),
        (
            "title",
            schemas["SessionCreate"]["properties"]["title"]["maxLength"].clone(),
            json!(SESSION_TITLE_CHARS_MAX),
        ),
        (
            "new title",
            schemas["SessionUpdate"]["properties"]["title"]["maxLength"].clone(),
            json!(SESSION_TITLE_CHARS_MAX),
        ),
        (
            "persona",
            schemas["AgentSettingsUpdate"]["properties"]["persona"]["maxLength"].clone(),
            json!(PERSONA_CHARS_MAX),
        ),
        (
            "maxSteps",
            schemas["AgentSettingsUpdate"]["properties"]["maxSteps"]["maximum"].clone(),
            json!(MAX_STEPS_CAP),
        ),
        (
            "approvalTimeout",
            schemas["PermissionsUpdate"]["properties"]["approvalTimeout"]["maximum"].clone(),
            json!(APPROVAL_TIMEOUT_S_MAX),
        ),
        (
            "workspaceRoot",
            schemas["PermissionsUpdate"]["properties"]["workspaceRoot"]["readOnly"].clone(),
            json!(true),
        ),
        (
            "skill name",
            schemas["SkillCreate"]["properties"]["name"]["maxLength"].clone(),
            json!(SKILL_NAME_CHARS_MAX),
        ),
        (
            "skill description",
            schemas["SkillCreate"]["properties"]["description"]["maxLength"].clone(),
            json!(SKILL_DESCRIPTION_CHARS_MAX),
        ),
        (
            "skill body",
            schemas["SkillCreate"]["properties"]["body"]["maxLength"].clone(),
            json!(SKILL_BODY_BYTES_MAX),
        ),
    ];
    for (what, documented, enforced) in cases {
        assert_eq!(documented, enforced, "{what}");
    }
    assert_eq!(
        schemas["SkillCreate"]["properties"]["body"]["pattern"],
        NOT_WHITE_SPACE_PATTERN
    );
    // Stored in the database: no NUL character either, and the prompt's pattern is the two.
    let not_white_space_class = NOT_WHITE_SPACE_PATTERN.strip_suffix(']').unwrap();
    assert_eq!(
        STORED_NOT_WHITE_SPACE_PATTERN,
        format!("^[^\\u0000]*{not_white_space_class}\\u0000][^\\u0000]*$")
    );
    assert_eq!(
        schemas["PromptRequest"]["properties"]["prompt"]["pattern"],
        STORED_NOT_WHITE_SPACE_PATTERN
    );
    for schema in ["SessionCreate", "SessionUpdate"] {
        assert_eq!(
            schemas[schema]["properties"]["title"]["pattern"], NO_NUL_PATTERN,
            "{schema}"
        );
    }
    let modes: Vec<&str> = Mode::ALL.iter().map(|mode| mode.as_str()).collect();
    assert_eq!(schemas["PermissionMode"]["enum"], json!(modes));
    for (method, path, operation) in operations(&document) {
        for parameter in operation["parameters"].as_array().into_iter().flatten() {
            let name = parameter["name"].as_str().expect("a name");
            let pattern = &parameter["schema"]["pattern"];
            let expected = match (path.as_str(), name) {
                ("/api/skills/{id}", "id") => json!(skill_id_pattern),
                // Any string: an unknown one is simply not there (404, or nothing to do).
                ("/api/tools/approvals/{id}", _)
                | ("/api/sessions/{id}/stop", _)
                | ("/api/grants/{session_id}", _)
                | ("/api/events", _)
                // Keep's ids: an unknown one is a 404 like any other.
                | ("/v1/tokens/{id}", _) => Value::Null,
                (keep, _)
                    if ["/v1/sessions/", "/v1/proposals/", "/v1/approvals/"]
                        .iter()
                        .any(|prefix| keep.starts_with(prefix)) =>
                {
                    Value::Null
                }
                (_, "id" | "turn_id" | "X-Imurun-Session") => json!(id_pattern),
                _ => Value::Null,
            };
            assert_eq!(pattern, &expected, "{method} {path} {name}");
        }
    }
}

/// "Not only white space" in the document is what it is for the server, `str::trim`: the
/// pattern's negated class lists exactly the characters Rust counts as white space.
#[test]
fn the_white_space_of_the_document_is_rusts() {
    let class = NOT_WHITE_SPACE_PATTERN
        .strip_prefix("[^")
        .and_then(|rest| rest.strip_suffix(']'))
        .expect("one negated class");
    let mut listed = BTreeSet::new();
    let mut chars = class.chars().peekable();
    let mut previous = None;
    while let Some(c) = chars.next() {
        let one = match c {
            '\\' => match chars.next().expect("an escape") {
                't' => '\t',
                'n' => '\n',
                'r' => '\r',
                'x' => hex(&mut chars, 2),
                'u' => hex(&mut chars, 4),
                other => panic!("an escape the test does not read: \\{other}"),
            },
            '-' => {
                let from: char = previous.take().expect("a range start");
                let to = match (chars.next(), chars.next()) {
                    (Some('\\'), Some('u')) => hex(&mut chars, 4),
                    (Some(to), _) => to,
                    _ => panic!("a range end"),
                };
                listed.extend(from..=to);
                continue;
            }
            other => other,
        };
        listed.insert(one);
        previous = Some(one);
    }
    let white: BTreeSet<char> = (char::MIN..=char::MAX)
        .filter(|c| c.is_whitespace())
        .collect();
    assert_eq!(listed, white);
}

fn hex(chars: &mut impl Iterator<Item = char>, digits: usize) -> char {
    let text: String = chars.take(digits).collect();
    char::from_u32(u32::from_str_radix(&text, 16).expect("hex digits")).expect("a char")
}

/// The router is built in one place, from the table: a route added anywhere else would be
/// served without being documented. A regression test for the router this replaced, where a
/// route was one `Router::route` call that no test read.
#[test]
fn routes_are_added_only_through_the_route_table() {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = BTreeMap::new();
    for file in rust_files(&source) {
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let code = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for pattern in [
            ".route(",
            ".route_service(",
            ".nest(",
            ".nest_service(",
            ".merge(",
            "Router::new(",
        ] {
            let count = code.matches(pattern).count();
            if count > 0 {
                let name = file.strip_prefix(&source).expect("under src");
                found.insert(format!("{} {pattern}", name.display()), count);
            }
        }
    }
    let expected = BTreeMap::from([
        ("routes/mod.rs .route(".to_owned(), 1),
        ("routes/mod.rs Router::new(".to_owned(), 1),
    ]);
    assert_eq!(
        found, expected,
        "routes must be added through the table in src/routes/mod.rs"
    );
}

/// Each type on the wire has its own name in the document: a second `ToSchema` type of the same
/// name would silently replace the first in `components`, and every operation that names it
/// would describe the other's shape (as Keep's `SessionCreate` once described `/api`'s).
#[test]
fn every_schema_name_is_one_types() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // The crates whose types go on the wire as they are: Keep's derive `ToSchema` under their
    // `openapi` feature (`#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), ...)]`).
    let crate_names = [
        "imurun-core",
        "imurun-server",
        "imurun-keep",
        "imurun-keep-rules",
    ];
    let renamed_as = |line: &str| {
        let rest = &line[line.find("schema(as = ")? + "schema(as = ".len()..];
        rest.split(')').next().map(str::to_owned)
    };
    for crate_name in crate_names {
        let source = crates.join(crate_name).join("src");
        for file in rust_files(&source) {
            let text = std::fs::read_to_string(&file).expect("read a source file");
            let mut deriving = false;
            let mut renamed = None;
            for line in text.lines().map(str::trim) {
                if (line.starts_with("#[derive(") || line.starts_with("#[cfg_attr("))
                    && line.contains("ToSchema")
                {
                    deriving = true;
                    renamed = renamed_as(line);
                } else if deriving && line.starts_with("#[") {
                    if let Some(name) = renamed_as(line) {
                        renamed = Some(name);
                    }
                } else if deriving {
                    let declared = ["pub struct ", "pub enum ", "struct ", "enum "]
                        .iter()
                        .find_map(|keyword| line.strip_prefix(keyword))
                        .and_then(|rest| rest.split([' ', '<', '{', '(', ';']).next());
                    if let Some(declared) = declared {
                        let name = renamed.take().unwrap_or_else(|| declared.to_owned());
                        let place = file.strip_prefix(&crates).expect("under crates");
                        names
                            .entry(name)
                            .or_default()
                            .push(place.display().to_string());
                    }
                    deriving = false;
                }
            }
        }
    }
    assert!(names.contains_key("KeepSessionCreate") && names.contains_key("PromptRequest"));
    assert!(names.contains_key("KeepSessionInfo") && names.contains_key("Change"));
    let shared: Vec<_> = names
        .iter()
        .filter(|(_, places)| places.len() > 1)
        .collect();
    assert!(
        shared.is_empty(),
        "schema names given to two types: {shared:?}"
    );
}

fn rust_files(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).expect("read src") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
    files
}

/// `docs/api.md` names every path, every event type (the assistant's and Keep's) and every
/// error code of the document.
#[tokio::test]
async fn the_prose_reference_names_everything_the_document_has() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/api.md");
    let prose = std::fs::read_to_string(&docs).expect("docs/api.md exists");
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let mut missing = Vec::new();
    for path in document["paths"].as_object().expect("paths").keys() {
        if !prose.contains(&format!("`{path}")) && !prose.contains(&format!(" {path}")) {
            missing.push(path.clone());
        }
    }
    let keep_events = stream_shapes(&document, "KeepStreamEvent");
    let event_types = event_schemas(&document)
        .into_keys()
        .chain(keep_events.into_keys());
    for event_type in event_types.filter(|event_type| event_type != "*") {
        if !prose.contains(&format!("`{event_type}`")) {
            missing.push(event_type);
        }
    }
    let codes =
        document["components"]["schemas"]["ErrorDetail"]["properties"]["code"]["description"]
            .as_str()
            .expect("the codes are listed");
    for code in codes.split('`').skip(1).step_by(2) {
        if !prose.contains(&format!("`{code}`")) {
            missing.push(code.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "docs/api.md does not mention {missing:?}"
    );
}
