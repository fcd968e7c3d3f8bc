//! The dependency rules of `../shared/DESIGN.md`, checked on the real dependency graph (as
//! `cargo metadata` resolves it: normal and build edges, every crate, the workspace's and the
//! outside ones): a crate may depend directly only on the workspace crates its row allows,
//! and nothing it must not know about may be reachable from it, however indirectly. A new
//! crate must be added here.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Workspace crates each crate may depend on directly, as `../shared/DESIGN.md` lays them out.
const ALLOWED: &[(&str, &[&str])] = &[
    ("imurun-core", &[]),
    ("imurun-calls", &["imurun-core"]),
    ("imurun-policy", &["imurun-core"]),
    ("imurun-model", &["imurun-core"]),
    ("imurun-net", &["imurun-core"]),
    (
        "imurun-exec",
        &["imurun-core", "imurun-calls", "imurun-policy"],
    ),
    (
        "imurun-tools",
        &["imurun-core", "imurun-policy", "imurun-net"],
    ),
    (
        "imurun-integrations",
        &["imurun-core", "imurun-net", "imurun-tools"],
    ),
    (
        "imurun-agent",
        &["imurun-core", "imurun-calls", "imurun-exec"],
    ),
    ("imurun-store", &["imurun-core"]),
    ("imurun-cell", &["imurun-core", "imurun-net"]),
    ("imurun-keep-rules", &["imurun-core"]),
    (
        "imurun-keep",
        &[
            "imurun-core",
            "imurun-keep-rules",
            "imurun-cell",
            "imurun-store",
        ],
    ),
    (
        "imurun-server",
        &[
            "imurun-agent",
            "imurun-exec",
            "imurun-integrations",
            "imurun-keep",
            "imurun-store",
            "imurun-core",
        ],
    ),
    // DESIGN's row says core; the temporary workspace it hands out is a policy `Workspace`.
    ("imurun-testkit", &["imurun-core", "imurun-policy"]),
    // Not in DESIGN's table: evaluation data and scoring are domain logic the binary must not
    // hold, and no other crate should depend on them.
    ("imurun-eval", &["imurun-core"]),
    (
        "imurun",
        &[
            "imurun-core",
            "imurun-calls",
            "imurun-policy",
            "imurun-model",
            "imurun-net",
            "imurun-exec",
            "imurun-tools",
            "imurun-integrations",
            "imurun-agent",
            "imurun-store",
            "imurun-cell",
            "imurun-keep",
            "imurun-server",
            "imurun-eval",
        ],
    ),
];

/// The outside runtime, HTTP, SQL, WebAssembly and model crates.
const ASYNC_IO: &[&str] = &["tokio", "axum", "hyper", "reqwest", "sqlx", "wasmtime"];

/// What each crate must never reach, directly or through anything it depends on: its "must
/// not know about" column.
fn forbidden(name: &str) -> Vec<&'static str> {
    let mut list: Vec<&'static str> = match name {
        "imurun-core" | "imurun-calls" | "imurun-eval" => ASYNC_IO.to_vec(),
        // Keep's rules are pure: no runtime, store, cell or HTTP (and, in their own source, no
        // I/O: see `keeps_rules_do_no_io`).
        "imurun-keep-rules" => [ASYNC_IO, &["imurun-store", "imurun-cell", "imurun-net"]].concat(),
        "imurun-policy" => vec![
            "axum",
            "hyper",
            "reqwest",
            "sqlx",
            "wasmtime",
            "imurun-calls",
        ],
        "imurun-model" => vec!["axum", "sqlx", "wasmtime", "imurun-policy", "imurun-exec"],
        "imurun-net" => vec![
            "axum",
            "sqlx",
            "imurun-tools",
            "imurun-exec",
            "imurun-agent",
        ],
        "imurun-exec" => vec![
            "reqwest",
            "hyper",
            "rmcp",
            "sqlx",
            "axum",
            "imurun-net",
            "imurun-tools",
            "imurun-integrations",
            "imurun-agent",
            "imurun-model",
        ],
        "imurun-tools" => vec![
            "axum",
            "sqlx",
            "rmcp",
            "imurun-exec",
            "imurun-agent",
            "imurun-store",
            "imurun-server",
        ],
        "imurun-integrations" => vec![
            "axum",
            "sqlx",
            "imurun-exec",
            "imurun-agent",
            "imurun-store",
            "imurun-server",
        ],
        "imurun-agent" => vec![
            "reqwest",
            "rmcp",
            "hyper",
            "axum",
            "sqlx",
            "wasmtime",
            "imurun-tools",
            "imurun-integrations",
            "imurun-model",
            "imurun-net",
            "imurun-store",
            "imurun-server",
        ],
        "imurun-store" => vec!["axum", "hyper", "reqwest", "wasmtime", "imurun-agent"],
        "imurun-cell" => vec![
            "axum",
            "sqlx",
            "imurun-agent",
            "imurun-policy",
            "imurun-server",
        ],
        // Keep runs cells, whose requests leave through imurun-net's door inside imurun-cell;
        // it never serves HTTP and never holds an HTTP client itself (see `DIRECT_ONLY`).
        "imurun-keep" => vec!["axum", "imurun-server", "imurun-agent"],
        "imurun-server" => vec!["imurun-model"],
        // Any crate's tests may use it: it must not bring an HTTP client, MCP or a model.
        "imurun-testkit" => vec!["reqwest", "rmcp", "sqlx", "axum", "imurun-model"],
        _ => Vec::new(),
    };
    // Only the binary and the model back-ends build llama.cpp.
    if !matches!(name, "imurun" | "imurun-model") {
        list.push("llama-cpp-2");
    }
    list
}

/// What a crate may reach only through another workspace crate, never as its own direct
/// dependency: Keep knows HTTP only as the egress broker's door.
const DIRECT_ONLY: &[(&str, &[&str])] = &[
    ("imurun-keep", &["hyper", "reqwest", "imurun-net"]),
    // The rules take their random numbers from a generator the host passes in.
    ("imurun-keep-rules", &["getrandom"]),
];

/// A dependency graph: each crate's direct normal and build dependencies, by name.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Everything wrong with `graph` under the rules, one sentence each. Only crates named
/// `imurun*` are judged; the others are followed.
fn violations(graph: &Graph) -> Vec<String> {
    let mut broken = Vec::new();
    for (name, deps) in graph.iter().filter(|(name, _)| name.starts_with("imurun")) {
        let Some(allowed) = rule(name) else {
            broken.push(format!("{name} is not in the design's table: add its row"));
            continue;
        };
        for dep in deps.iter().filter(|dep| dep.starts_with("imurun")) {
            if !allowed.contains(&dep.as_str()) {
                broken.push(format!(
                    "{name} depends on {dep}, which the design does not allow"
                ));
            }
        }
        for (owner, list) in DIRECT_ONLY {
            for dep in deps
                .iter()
                .filter(|dep| owner == name && list.contains(&dep.as_str()))
            {
                broken.push(format!(
                    "{name} depends on {dep} directly; only something it depends on may"
                ));
            }
        }
        for (reached, path) in reachable(graph, name) {
            if forbidden(name).contains(&reached.as_str()) {
                broken.push(format!(
                    "{name} reaches {reached} ({}), which it must not know about",
                    path.join(" -> ")
                ));
            }
        }
    }
    broken
}

fn rule(name: &str) -> Option<&'static [&'static str]> {
    ALLOWED
        .iter()
        .find(|(crate_name, _)| *crate_name == name)
        .map(|(_, list)| *list)
}

/// Every crate reachable from `from`, each with one shortest path to it.
fn reachable(graph: &Graph, from: &str) -> BTreeMap<String, Vec<String>> {
    let mut paths: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut queue = VecDeque::from([vec![from.to_owned()]]);
    while let Some(path) = queue.pop_front() {
        let last = path.last().cloned().unwrap_or_default();
        for dep in graph.get(&last).into_iter().flatten() {
            if dep == from || paths.contains_key(dep) {
                continue;
            }
            let mut longer = path.clone();
            longer.push(dep.clone());
            paths.insert(dep.clone(), longer.clone());
            queue.push_back(longer);
        }
    }
    paths
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// The real graph: `cargo metadata`'s resolution, normal and build edges only (what a crate
/// is built with, not what its tests use).
fn real_graph() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_triple()])
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            (
                package["id"].as_str().unwrap(),
                package["name"].as_str().unwrap(),
            )
        })
        .collect();
    let mut graph = Graph::new();
    for node in metadata["resolve"]["nodes"].as_array().unwrap() {
        let name = names[node["id"].as_str().unwrap()].to_owned();
        let deps = graph.entry(name).or_default();
        for dep in node["deps"].as_array().unwrap() {
            let built_with = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|kind| kind["kind"].is_null() || kind["kind"] == "build");
            if built_with {
                deps.insert(names[dep["pkg"].as_str().unwrap()].to_owned());
            }
        }
    }
    graph
}

/// The machine's target triple (`rustc -vV`'s `host:`), so the graph holds what builds here
/// and `cargo metadata` needs no other platform's crates.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .unwrap()
        .trim()
        .to_owned()
}

fn graph(edges: &[(&str, &[&str])]) -> Graph {
    edges
        .iter()
        .map(|(name, deps)| {
            (
                (*name).to_owned(),
                deps.iter().map(|dep| (*dep).to_owned()).collect(),
            )
        })
        .collect()
}

#[test]
fn every_crate_keeps_to_its_row_of_the_design() {
    let graph = real_graph();
    for expected in [
        "imurun-core",
        "imurun-keep-rules",
        "imurun-exec",
        "imurun-net",
        "imurun",
        "reqwest",
    ] {
        assert!(
            graph.contains_key(expected),
            "{expected} is not in the graph"
        );
    }
    let broken = violations(&graph);
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_rules_catch_a_forbidden_edge_direct_or_transitive() {
    // Clean: the agent over the executor, the tools over the door.
    let clean = graph(&[
        ("imurun-core", &["serde"]),
        ("imurun-calls", &["imurun-core"]),
        ("imurun-policy", &["imurun-core"]),
        (
            "imurun-exec",
            &["imurun-core", "imurun-calls", "imurun-policy", "tokio"],
        ),
        ("imurun-net", &["imurun-core", "reqwest"]),
        ("imurun-tools", &["imurun-core", "imurun-net"]),
        ("imurun-agent", &["imurun-core", "imurun-exec"]),
        ("reqwest", &["hyper"]),
    ]);
    assert_eq!(violations(&clean), Vec::<String>::new());

    // A direct edge the table does not allow.
    let mut direct = clean.clone();
    direct
        .get_mut("imurun-agent")
        .unwrap()
        .insert("imurun-tools".to_owned());
    let broken = violations(&direct);
    assert!(
        broken.contains(
            &"imurun-agent depends on imurun-tools, which the design does not allow".to_owned()
        ),
        "{broken:?}"
    );

    // A transitive one: the executor starts depending on the door, so the agent reaches an
    // HTTP client through two allowed-looking crates.
    let mut transitive = clean.clone();
    transitive
        .get_mut("imurun-exec")
        .unwrap()
        .insert("imurun-net".to_owned());
    let broken = violations(&transitive);
    assert!(
        broken.iter().any(|line| line.starts_with(
            "imurun-agent reaches reqwest (imurun-agent -> imurun-exec -> imurun-net -> reqwest)"
        )),
        "{broken:?}"
    );
    assert!(
        broken
            .iter()
            .any(|line| line.starts_with("imurun-agent reaches hyper")),
        "{broken:?}"
    );

    // An outside crate deep below: the core must never reach an async runtime.
    let mut deep = clean;
    deep.insert("serde".to_owned(), ["tokio".to_owned()].into());
    let broken = violations(&deep);
    assert!(
        broken
            .iter()
            .any(|line| line
                .starts_with("imurun-core reaches tokio (imurun-core -> serde -> tokio)")),
        "{broken:?}"
    );

    // A crate with no row.
    let unknown = graph(&[("imurun-mystery", &[])]);
    assert_eq!(
        violations(&unknown),
        ["imurun-mystery is not in the design's table: add its row"]
    );
}

#[test]
fn keeps_rules_stay_pure() {
    let clean = graph(&[
        ("imurun-core", &["serde"]),
        ("imurun-keep-rules", &["imurun-core", "ed25519-dalek"]),
        ("imurun-store", &["imurun-core", "sqlx"]),
        (
            "imurun-keep",
            &[
                "imurun-core",
                "imurun-keep-rules",
                "imurun-store",
                "getrandom",
            ],
        ),
    ]);
    assert_eq!(violations(&clean), Vec::<String>::new());
    for (dep, said) in [
        (
            "imurun-store",
            "depends on imurun-store, which the design does not allow",
        ),
        ("tokio", "reaches tokio"),
        ("getrandom", "depends on getrandom directly"),
    ] {
        let mut impure = clean.clone();
        impure
            .get_mut("imurun-keep-rules")
            .unwrap()
            .insert(dep.to_owned());
        let broken = violations(&impure);
        assert!(
            broken
                .iter()
                .any(|line| line.starts_with("imurun-keep-rules") && line.contains(said)),
            "{dep}: {broken:?}"
        );
    }
    // The rules below the host, never the host below the rules.
    let mut upside_down = clean;
    upside_down
        .get_mut("imurun-keep-rules")
        .unwrap()
        .insert("imurun-keep".to_owned());
    assert!(
        violations(&upside_down)
            .iter()
            .any(|line| line.contains("imurun-keep-rules depends on imurun-keep,")),
    );
}

#[test]
fn the_testkit_is_never_a_normal_dependency() {
    let graph = real_graph();
    for (name, deps) in &graph {
        assert!(
            !deps.contains("imurun-testkit"),
            "{name} depends on imurun-testkit"
        );
    }
}

/// Only the binary's `config/` reads the environment: every other source file of every crate
/// gets its values from there (the test helpers aside).
#[test]
fn only_the_configuration_reads_the_environment() {
    let crates = workspace_root().join("crates");
    let mut readers = Vec::new();
    let mut stack = vec![crates.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path
                .strip_prefix(&crates)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                // Only the code that ships: each crate's `src/`, tests and benches aside.
                let shipped = relative.split('/').nth(1).is_none_or(|part| part == "src");
                if shipped && !relative.starts_with("imurun-testkit") {
                    stack.push(path);
                }
            } else if relative.ends_with(".rs") && !relative.starts_with("imurun/src/config/") {
                let text = std::fs::read_to_string(&path).unwrap();
                for needle in ["std::env::var", "env::vars", "std::env::var_os"] {
                    if text.contains(needle) {
                        readers.push(format!("{relative} uses {needle}"));
                    }
                }
            }
        }
    }
    assert!(readers.is_empty(), "{}", readers.join("\n"));
}

/// Keep's rules read no file, clock, network, process, environment or random numbers of their
/// own: everything comes in as an argument, so a test can give them any state.
#[test]
fn keeps_rules_do_no_io() {
    let src = workspace_root().join("crates/imurun-keep-rules/src");
    let mut found = Vec::new();
    let mut folders = vec![src];
    let mut files = Vec::new();
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(
        files.len() > 10,
        "the rules' sources were not found: {files:?}"
    );
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for needle in [
            "std::fs",
            "TcpStream",
            "TcpListener",
            "UdpSocket",
            "to_socket_addrs",
            "std::process",
            "std::env",
            "std::thread",
            "SystemTime::now",
            "Instant::now",
            "getrandom",
            "tokio",
        ] {
            if text.contains(needle) {
                found.push(format!("{} uses {needle}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
