//! The OpenAPI document against the code: the routes the router serves, the prose reference in
//! `docs/api.md`, the limits the server enforces, and the events that really go out on the
//! stream.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use imurun_agent::{
    MAX_STEPS_CAP, SKILL_BODY_BYTES_MAX, SKILL_DESCRIPTION_CHARS_MAX, SKILL_ID_CHARS_MAX,
    SKILL_NAME_CHARS_MAX,
};
use imurun_core::{
    CallSource, CompactionMode, DenyReason, Event, EventSink, GroundingAction, PrefetchResult,
    StepKind, TurnStatus,
};
use imurun_policy::Mode;
use imurun_server::wire::{
    NO_NUL_PATTERN, NOT_WHITE_SPACE_PATTERN, STORED_NOT_WHITE_SPACE_PATTERN,
};
use imurun_server::{
    APPROVAL_TIMEOUT_S_MAX, EventHub, HubConfig, PERSONA_CHARS_MAX, PROMPT_CHARS_MAX,
    page_operations, served_operations,
};
use imurun_store::{ID_CHARS_MAX, SESSION_TITLE_CHARS_MAX};
use serde_json::{Map, Value, json};

use crate::api_support::{Dirs, Reply, TestModel, TestServer};
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
async fn served_document(server: &TestServer) -> Value {
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

/// `docs/api.md` names every path, every event type and every error code of the document.
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
    for event_type in event_schemas(&document).keys() {
        if !prose.contains(&format!("`{event_type}`")) {
            missing.push(event_type.clone());
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

/// One shape a schema allows: the properties it describes and the ones it requires.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Shape {
    properties: BTreeSet<String>,
    required: BTreeSet<String>,
    /// The values its `type` property allows, when it names some (an event's `type`).
    event_types: Option<BTreeSet<String>>,
}

impl Shape {
    /// Both shapes at once, as `allOf` composes them.
    fn and(&self, other: &Shape) -> Shape {
        let event_types = match (&self.event_types, &other.event_types) {
            (Some(mine), Some(theirs)) => Some(mine.intersection(theirs).cloned().collect()),
            (mine, theirs) => mine.clone().or_else(|| theirs.clone()),
        };
        Shape {
            properties: self.properties.union(&other.properties).cloned().collect(),
            required: self.required.union(&other.required).cloned().collect(),
            event_types,
        }
    }

    /// Whether `event` holds every field this shape requires and no field it does not
    /// describe.
    fn fits(&self, event: &Value) -> bool {
        let fields: BTreeSet<String> = event.as_object().expect("object").keys().cloned().collect();
        self.required.is_subset(&fields) && fields.is_subset(&self.properties)
    }
}

/// The schema `reference` (`#/components/schemas/Name`) points at.
fn resolve<'a>(document: &'a Value, reference: &str) -> &'a Value {
    let name = reference
        .strip_prefix("#/components/schemas/")
        .unwrap_or_else(|| panic!("a local schema reference: {reference}"));
    let schema = &document["components"]["schemas"][name];
    assert!(!schema.is_null(), "{reference} names no schema");
    schema
}

/// Every shape `schema` allows, `$ref`s resolved: `allOf` composes its items' shapes, `oneOf`
/// and `anyOf` give one shape per branch, and a schema's own properties join each of them.
fn shapes(document: &Value, schema: &Value) -> Vec<Shape> {
    if let Some(reference) = schema["$ref"].as_str() {
        return shapes(document, resolve(document, reference));
    }
    let own = Shape {
        properties: schema["properties"]
            .as_object()
            .map(|properties| properties.keys().cloned().collect())
            .unwrap_or_default(),
        required: schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        event_types: schema["properties"]["type"]["enum"]
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
    };
    let mut found = vec![own];
    if let Some(items) = schema["allOf"].as_array() {
        for item in items {
            let item_shapes = shapes(document, item);
            found = found
                .iter()
                .flat_map(|shape| item_shapes.iter().map(|other| shape.and(other)))
                .collect();
        }
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(branches) = schema[keyword].as_array() {
            found = found
                .iter()
                .flat_map(|shape| {
                    branches
                        .iter()
                        .flat_map(|branch| shapes(document, branch))
                        .map(|branch| shape.and(&branch))
                        .collect::<Vec<_>>()
                })
                .collect();
        }
    }
    found
}

/// The shapes of `StreamEvent`, by the event `type` each one is for.
fn event_schemas(document: &Value) -> BTreeMap<String, Vec<Shape>> {
    let stream_event = &document["components"]["schemas"]["StreamEvent"];
    let mut by_type: BTreeMap<String, Vec<Shape>> = BTreeMap::new();
    for shape in shapes(document, stream_event) {
        let event_types = shape
            .event_types
            .clone()
            .unwrap_or_else(|| panic!("a StreamEvent shape without a `type`: {shape:?}"));
        for event_type in event_types {
            by_type.entry(event_type).or_default().push(shape.clone());
        }
    }
    by_type
}

/// Checks that each event fits a shape of `StreamEvent` for its `type`: it holds every field
/// the shape requires and no field the shape does not describe.
fn check_events(document: &Value, events: &[Value]) -> BTreeSet<String> {
    let schemas = event_schemas(document);
    let mut seen = BTreeSet::new();
    for event in events {
        let event_type = event["type"].as_str().expect("a type").to_owned();
        let candidates = schemas
            .get(&event_type)
            .unwrap_or_else(|| panic!("no schema for {event}"));
        assert!(
            candidates.iter().any(|shape| shape.fits(event)),
            "{event_type} fits none of its shapes (each: required ⊆ fields ⊆ properties): \
             {event}\nshapes: {candidates:#?}"
        );
        seen.insert(event_type);
    }
    seen
}

/// One event of each kind `imurun_core::Event` has. The match is exhaustive on purpose: a new
/// kind of event does not compile here until it has a sample; its schema comes from the type.
fn core_samples() -> Vec<Event> {
    let args = Map::from_iter([("path".to_owned(), json!("notes.txt"))]);
    let session_id = Some("s-1".to_owned());
    let samples = vec![
        Event::ToolCall {
            call_id: "c1".into(),
            session_id: session_id.clone(),
            name: "read_file".into(),
            args: args.clone(),
            source: CallSource::Model,
            depth: 0,
            tainted: false,
        },
        Event::ToolResult {
            call_id: "c1".into(),
            session_id: session_id.clone(),
            name: "read_file".into(),
            ok: true,
            text: "hello".into(),
            depth: 0,
            untrusted: false,
        },
        Event::ToolApprovalNeeded {
            approval_id: "a1".into(),
            call_id: "c2".into(),
            session_id: session_id.clone(),
            name: "shell".into(),
            args: args.clone(),
            deadline_ms: 1,
            rememberable: true,
            depth: 0,
            reason: "this session read untrusted content".into(),
            tainted: true,
        },
        Event::ToolApproved {
            approval_id: "a1".into(),
            call_id: "c2".into(),
            session_id: session_id.clone(),
            name: "shell".into(),
            remember: false,
        },
        Event::ToolDenied {
            approval_id: None,
            call_id: "c3".into(),
            session_id: session_id.clone(),
            name: "shell".into(),
            reason: DenyReason::Policy,
            message: "no".into(),
        },
        Event::Step {
            session_id: session_id.clone(),
            step: 1,
            kind: StepKind::Answer,
            text: "hi".into(),
        },
        Event::Token {
            session_id: session_id.clone(),
            step: 1,
            text: "hi".into(),
        },
        Event::CompactionStart {
            session_id: session_id.clone(),
            messages: 4,
            tokens: 900,
            budget: 800,
        },
        Event::CompactionDone {
            session_id: session_id.clone(),
            mode: CompactionMode::Dropped,
            messages: 2,
            tokens: 700,
        },
        Event::PromptDelivered {
            session_id: session_id.clone(),
            text: "and then?".into(),
        },
        Event::SkillUsed {
            session_id: session_id.clone(),
            skills: vec!["haiku".into()],
        },
        Event::AgentStart {
            session_id: session_id.clone(),
            depth: 1,
            task: "Find the notes.".into(),
            tools: vec!["file_read".into()],
        },
        Event::AgentEnd {
            session_id: session_id.clone(),
            depth: 1,
            status: TurnStatus::Done,
            steps: 2,
        },
        Event::ToolsStart {
            session_id: session_id.clone(),
            tools: vec!["get_time".into(), "web_search".into()],
        },
        Event::WebSearchStart {
            session_id: session_id.clone(),
            query: "rust release".into(),
        },
        Event::WebSearchDone {
            session_id: session_id.clone(),
            query: "rust release".into(),
            ok: false,
        },
        Event::ToolsDone {
            session_id: session_id.clone(),
            results: vec![PrefetchResult {
                tool: "get_time".into(),
                ok: true,
            }],
            elapsed_ms: 12,
        },
        Event::Grounding {
            session_id: session_id.clone(),
            step: 2,
            action: GroundingAction::Retry,
            tool: Some("get_time".into()),
            reason: "the answer left out the time that get_time returned".into(),
        },
        Event::Step {
            session_id: session_id.clone(),
            step: 2,
            kind: StepKind::Correction,
            text: "It is noon.".into(),
        },
        Event::TurnEnd {
            session_id,
            status: TurnStatus::Done,
            tool_calls: 1,
            skills: Vec::new(),
            steps: 2,
        },
    ];
    for sample in &samples {
        match sample {
            Event::ToolCall { .. }
            | Event::ToolResult { .. }
            | Event::ToolApprovalNeeded { .. }
            | Event::ToolApproved { .. }
            | Event::ToolDenied { .. }
            | Event::Step { .. }
            | Event::Token { .. }
            | Event::CompactionStart { .. }
            | Event::CompactionDone { .. }
            | Event::PromptDelivered { .. }
            | Event::SkillUsed { .. }
            | Event::AgentStart { .. }
            | Event::AgentEnd { .. }
            | Event::ToolsStart { .. }
            | Event::WebSearchStart { .. }
            | Event::WebSearchDone { .. }
            | Event::ToolsDone { .. }
            | Event::Grounding { .. }
            | Event::TurnEnd { .. } => {}
        }
    }
    samples
}

/// The events the agent layer publishes, as the hub stamps them, against their schemas: every
/// event as a turn publishes it (with the `turn_id` the server's turn sink adds, as its
/// `TurnEvent` serializes it), and the tool and sub-agent events also as a call run by hand
/// publishes them, straight to the hub with no `turn_id`.
#[tokio::test]
async fn every_core_event_matches_its_schema() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let hub = EventHub::default();
    let mut subscription = hub.subscribe(None, None);
    let mut published = 0;
    for sample in core_samples() {
        let Ok(Value::Object(mut fields)) = serde_json::to_value(&sample) else {
            panic!("an event is an object");
        };
        fields.insert("turn_id".to_owned(), json!("turn-1"));
        hub.publish_value(Some("s-1"), Value::Object(fields))
            .expect("an event");
        published += 1;
        let by_hand = matches!(
            sample,
            Event::AgentStart { .. }
                | Event::AgentEnd { .. }
                | Event::ToolCall { .. }
                | Event::ToolResult { .. }
                | Event::ToolApprovalNeeded { .. }
                | Event::ToolApproved { .. }
                | Event::ToolDenied { .. }
        );
        if by_hand {
            hub.publish(sample);
            published += 1;
        }
    }
    let events: Vec<Value> = std::iter::from_fn(|| subscription.try_recv())
        .map(|record| record.value())
        .collect();
    assert_eq!(events.len(), published);
    let seen = check_events(&document, &events);
    // Types, not samples: `step` has two samples (an answer's and a rejected answer's).
    let sampled: BTreeSet<String> = core_samples()
        .iter()
        .map(|sample| {
            serde_json::to_value(sample).expect("an event")["type"]
                .as_str()
                .expect("a type")
                .to_owned()
        })
        .collect();
    assert_eq!(seen, sampled);
}

/// `StreamEvent` is composed from the types that go on the wire, not a copy of them: a
/// regression test for the hand-written mirror it replaced, which had to be kept in step with
/// `imurun_core::Event` and the server's events by hand.
#[tokio::test]
async fn the_stream_event_schema_is_built_from_the_wire_types() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let schemas = &document["components"]["schemas"];
    let branches: Vec<String> = schemas["StreamEvent"]["anyOf"]
        .as_array()
        .expect("StreamEvent is an anyOf")
        .iter()
        .map(|branch| branch.to_string())
        .collect();
    for name in ["TurnEvent", "Event", "ServerEvent"] {
        let stamped = json!({"allOf": [
            {"$ref": format!("#/components/schemas/{name}")},
            {"$ref": "#/components/schemas/EventStamp"},
        ]})
        .to_string();
        assert!(
            branches.contains(&stamped),
            "{name} is not a branch: {branches:?}"
        );
    }
    assert!(branches.contains(&json!({"$ref": "#/components/schemas/StreamNotice"}).to_string()));
    // The field documentation lives on the real types.
    let tool_call = schemas["Event"]["oneOf"]
        .as_array()
        .expect("Event is a oneOf")
        .iter()
        .find(|variant| variant["properties"]["type"]["enum"][0] == "tool.call")
        .expect("tool.call");
    assert!(
        tool_call["properties"]["args"]["description"]
            .as_str()
            .is_some_and(|text| text.contains("2000")),
        "{tool_call}"
    );
    // `CallSource` goes on the wire as its text (`agent:1`), not in the enum's shape.
    assert_eq!(schemas["CallSource"]["type"], "string");
    assert_eq!(
        schemas["CallSource"]["pattern"],
        "^(model|user|prefetch|agent:[0-9]{1,3})$"
    );
}

/// The hub's own notices against their schemas.
#[tokio::test]
async fn the_stream_notices_match_their_schemas() {
    let dirs = Dirs::new();
    let server = TestServer::start(&dirs, None).await;
    let document = served_document(&server).await;
    server.stop().await;
    let hub = EventHub::new(HubConfig {
        buffer_events_max: 1,
        queue_events_max: 1,
    });
    for _ in 0..3 {
        hub.publish_value(None, json!({"type": "x"}))
            .expect("an event");
    }
    let mut notices = Vec::new();
    let mut gap = hub.subscribe(None, Some(1));
    notices.extend(gap.try_recv().map(|record| record.value()));
    let mut reset = hub.subscribe(None, Some(99));
    notices.extend(reset.try_recv().map(|record| record.value()));
    let mut lagged = hub.subscribe(None, None);
    for _ in 0..3 {
        hub.publish_value(None, json!({"type": "x"}))
            .expect("an event");
    }
    notices.extend(
        std::iter::from_fn(|| lagged.try_recv())
            .map(|record| record.value())
            .filter(|value| value["type"] == "stream.lagged"),
    );
    let seen = check_events(&document, &notices);
    assert_eq!(
        seen,
        BTreeSet::from(["stream.gap", "stream.lagged", "stream.reset"].map(str::to_owned))
    );
}

/// The server's own events, as a client receives them over SSE during a session's life,
/// against their schemas.
#[tokio::test]
async fn the_server_events_on_the_wire_match_their_schemas() {
    let dirs = Dirs::new();
    let model = TestModel::new(vec![
        Reply::text("```tool\n{\"name\": \"file_read\", \"args\": {\"path\": \"notes.txt\"}}\n```"),
        Reply::text("Hello there."),
    ]);
    let server = TestServer::start(&dirs, Some(model)).await;
    let document = served_document(&server).await;
    let mut client = server.events(None).await;
    let session = server.new_session().await;
    server
        .patch(&format!("/api/sessions/{session}"), json!({"title": "t"}))
        .await;
    server
        .post("/api/permissions", json!({"mode": "ask"}))
        .await;
    let (status, _) = server
        .post(
            &format!("/api/sessions/{session}/prompts"),
            json!({"prompt": "hi"}),
        )
        .await;
    assert_eq!(status, 202);
    // The read asks in `ask` mode; approved with "always for this session", it is remembered,
    // so that revoking publishes `grants.revoked`.
    let mut events = collect_until(&mut client, "tool.approval_needed").await;
    let approval_id = events
        .last()
        .and_then(|event| event["approval_id"].as_str())
        .unwrap()
        .to_owned();
    let (status, _) = server
        .post(
            &format!("/api/tools/approvals/{approval_id}"),
            json!({"approved": true, "remember": true}),
        )
        .await;
    assert_eq!(status, 200);
    events.extend(collect_until(&mut client, "turn.end").await);
    server.delete("/api/grants").await;
    server.post("/api/stop", json!({})).await;
    server.delete(&format!("/api/sessions/{session}")).await;
    events.extend(collect_until(&mut client, "session.deleted").await);
    let seen = check_events(&document, &events);
    for event_type in [
        "session.created",
        "session.updated",
        "permissions",
        "turn.start",
        "step",
        "tool.call",
        "tool.approval_needed",
        "tool.approved",
        "tool.result",
        "turn.end",
        "grants.revoked",
        "stop.all",
        "session.deleted",
    ] {
        assert!(seen.contains(event_type), "{event_type} not seen: {seen:?}");
    }
    drop(client);
    server.stop().await;
}

async fn collect_until(client: &mut SseClient, until: &str) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        let event = client
            .next_event()
            .await
            .expect("the stream goes on")
            .data();
        let done = event["type"] == until;
        events.push(event);
        if done {
            return events;
        }
    }
}
