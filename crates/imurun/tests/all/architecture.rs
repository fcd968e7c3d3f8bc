//! The dependency rules of `../shared/DESIGN.md`, read from every crate's `Cargo.toml`: a
//! crate may depend only on the workspace crates its row allows, and never on the outside
//! crates that would make it know what it must not know. A new crate must be added here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Workspace crates each crate may depend on, as `../shared/DESIGN.md` lays them out.
const ALLOWED: &[(&str, &[&str])] = &[
    ("imurun-core", &[]),
    ("imurun-calls", &["imurun-core"]),
    ("imurun-policy", &["imurun-core"]),
    ("imurun-model", &["imurun-core"]),
    (
        "imurun-tools",
        &["imurun-core", "imurun-calls", "imurun-policy"],
    ),
    (
        "imurun-agent",
        &["imurun-core", "imurun-calls", "imurun-tools"],
    ),
    ("imurun-store", &["imurun-core"]),
    ("imurun-cell", &["imurun-core"]),
    (
        "imurun-keep",
        &["imurun-core", "imurun-cell", "imurun-store"],
    ),
    (
        "imurun-server",
        &[
            "imurun-agent",
            "imurun-tools",
            "imurun-keep",
            "imurun-store",
            "imurun-core",
        ],
    ),
    ("imurun-testkit", &["imurun-core"]),
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
            "imurun-tools",
            "imurun-agent",
            "imurun-store",
            "imurun-cell",
            "imurun-keep",
            "imurun-server",
            "imurun-eval",
        ],
    ),
];

/// Outside crates that would break a crate's "must not know about" column.
const FORBIDDEN: &[(&str, &[&str])] = &[
    (
        "imurun-core",
        &[
            "tokio",
            "axum",
            "hyper",
            "reqwest",
            "sqlx",
            "wasmtime",
            "llama-cpp-2",
        ],
    ),
    (
        "imurun-calls",
        &[
            "tokio",
            "axum",
            "hyper",
            "reqwest",
            "sqlx",
            "wasmtime",
            "llama-cpp-2",
        ],
    ),
    (
        "imurun-policy",
        &[
            "axum",
            "hyper",
            "reqwest",
            "sqlx",
            "wasmtime",
            "llama-cpp-2",
        ],
    ),
    ("imurun-model", &["axum", "sqlx", "wasmtime"]),
    ("imurun-tools", &["axum", "sqlx", "llama-cpp-2"]),
    (
        "imurun-agent",
        &[
            "axum",
            "hyper",
            "reqwest",
            "sqlx",
            "llama-cpp-2",
            "wasmtime",
        ],
    ),
    (
        "imurun-store",
        &["axum", "hyper", "reqwest", "wasmtime", "llama-cpp-2"],
    ),
    ("imurun-cell", &["axum", "sqlx", "llama-cpp-2"]),
    ("imurun-keep", &["axum", "hyper", "llama-cpp-2"]),
    ("imurun-server", &["llama-cpp-2"]),
    (
        "imurun-eval",
        &[
            "tokio",
            "axum",
            "hyper",
            "reqwest",
            "sqlx",
            "wasmtime",
            "llama-cpp-2",
        ],
    ),
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// Every crate under `crates/`: its name and its normal and build dependencies.
fn crates() -> BTreeMap<String, Vec<String>> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(workspace_root().join("crates")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let toml: toml::Table = text.parse().unwrap();
        let name = toml["package"]["name"].as_str().unwrap().to_owned();
        let mut deps = Vec::new();
        for section in ["dependencies", "build-dependencies"] {
            if let Some(table) = toml.get(section).and_then(toml::Value::as_table) {
                deps.extend(table.keys().cloned());
            }
        }
        found.insert(name, deps);
    }
    found
}

fn rule<'a>(table: &'a [(&str, &'a [&str])], name: &str) -> Option<&'a [&'a str]> {
    table
        .iter()
        .find(|(crate_name, _)| *crate_name == name)
        .map(|(_, list)| *list)
}

#[test]
fn every_crate_keeps_to_its_row_of_the_design() {
    let crates = crates();
    assert!(
        crates.contains_key("imurun-core") && crates.contains_key("imurun"),
        "{crates:?}"
    );
    let mut broken = Vec::new();
    for (name, deps) in &crates {
        let Some(allowed) = rule(ALLOWED, name) else {
            broken.push(format!("{name} is not in the design's table: add its row"));
            continue;
        };
        let forbidden = rule(FORBIDDEN, name).unwrap_or(&[]);
        for dep in deps {
            if dep.starts_with("imurun") && !allowed.contains(&dep.as_str()) {
                broken.push(format!(
                    "{name} depends on {dep}, which the design does not allow"
                ));
            }
            if forbidden.contains(&dep.as_str()) {
                broken.push(format!(
                    "{name} depends on {dep}, which it must not know about"
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_testkit_is_never_a_normal_dependency() {
    for (name, deps) in crates() {
        assert!(
            !deps.iter().any(|dep| dep == "imurun-testkit"),
            "{name} depends on imurun-testkit"
        );
    }
}

#[test]
fn the_rules_catch_a_forbidden_edge() {
    // The check itself must be able to fail: a core that depended on tokio, or calls on tools.
    assert!(rule(FORBIDDEN, "imurun-core").unwrap().contains(&"tokio"));
    assert!(
        !rule(ALLOWED, "imurun-calls")
            .unwrap()
            .contains(&"imurun-tools")
    );
    assert!(
        !rule(ALLOWED, "imurun-server")
            .unwrap()
            .contains(&"imurun-model")
    );
}
