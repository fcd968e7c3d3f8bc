//! Keep hosts on one PostgreSQL database (docs/keep/scaling.md), measured end to end: two
//! `imurun serve --keep` processes on a throwaway PostgreSQL server of their own.
//!
//! - **Journal appends per second**, with one host and with two: operator vault writes (each
//!   one Keep write: a row and a journal entry under the journal head's lock), sent by eight
//!   clients per host at once. Several rounds, alternating; the median of each and their ratio.
//! - **Approval-to-deploy latency across hosts**: a tool proposed by a session on host A is
//!   approved with `imurun keep approve` against host B, and the time is taken until a session
//!   on host A gets the tool's answer; beside it, the same with the approval given on host A
//!   (the baseline, in the same run).
//!
//! `cargo bench --workspace --bench keep_hosts` (it needs Debian's postgresql: scripts/setup).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "../tests/kit/keep_hosts.rs"]
#[expect(
    dead_code,
    reason = "the kit serves the tests too: the bench uses part of it"
)]
mod kit;

use std::time::Instant;

use imurun_testkit::PostgresServer;
use serde_json::json;

use kit::{Host, Hosts};

const ROUNDS: usize = 3;
const APPENDS_PER_ROUND: usize = 2_000;
const CLIENTS_PER_HOST: usize = 8;
const DEPLOYS: usize = 5;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Sends `APPENDS_PER_ROUND` journaled writes spread over `hosts`, `CLIENTS_PER_HOST` clients
/// each, and returns the writes per second.
fn appends_per_second(hosts: &[&Host], operator: &str) -> f64 {
    let per_client = APPENDS_PER_ROUND / (hosts.len() * CLIENTS_PER_HOST);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for (host_index, host) in hosts.iter().enumerate() {
            for client in 0..CLIENTS_PER_HOST {
                scope.spawn(move || {
                    for at in 0..per_client {
                        // The same few names every round: the vault holds at most 256 per identity.
                        let name = format!("h{host_index}-c{client}-{}", at % 4);
                        host.expect(
                            operator,
                            "PUT",
                            &format!("/v1/vault/{name}"),
                            Some(&json!({"value": "v"})),
                            200,
                        );
                    }
                });
            }
        }
    });
    let writes = per_client * hosts.len() * CLIENTS_PER_HOST;
    writes as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let server = PostgresServer::start();
    let database = server.database();
    let hosts = Hosts::start(database.url(), &[]);

    let (mut one, mut two) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        one.push(appends_per_second(&[&hosts.a], &hosts.operator));
        two.push(appends_per_second(&[&hosts.a, &hosts.b], &hosts.operator));
    }
    let (one, two) = (median(one), median(two));
    println!(
        "journal appends, {APPENDS_PER_ROUND} per round, {CLIENTS_PER_HOST} clients per host, \
         median of {ROUNDS} rounds:"
    );
    println!("  one host:  {one:.0} appends/s");
    println!(
        "  two hosts: {two:.0} appends/s ({:.2} x one host)",
        two / one
    );

    // The agent's own egress is beside the point here; its rule reaches nothing.
    hosts.deploy_agent(&json!({"mode": "ask", "rules": [{"scheme": "https",
        "host": "api.example.com", "port": 443, "methods": ["GET"], "path_prefix": "/"}]}));
    hosts.set_ceiling("alice");
    let (_, alice) = hosts.user_token("alice");
    let device = hosts.enrol_device("alice", &alice);
    let (mut same, mut across) = (Vec::new(), Vec::new());
    for round in 0..DEPLOYS {
        for (approving, name, into) in [
            (&hosts.a, format!("same{round}"), &mut same),
            (&hosts.b, format!("across{round}"), &mut across),
        ] {
            let id = kit::propose_tool(&hosts.a, &alice, &name);
            let caller = kit::new_session(&hosts.a, &alice);
            let started = Instant::now();
            kit::approve(&hosts, approving, &alice, &device, &id);
            let took = kit::until_deployed(&hosts.a, &alice, &caller, &name, started);
            into.push(took.as_secs_f64() * 1e3);
            kit::stop_session(&hosts.a, &alice, &caller);
        }
    }
    let (same, across) = (median(same), median(across));
    println!(
        "approval to deploy (`imurun keep approve` started until a session on host A gets the \
         tool's answer), median of {DEPLOYS}:"
    );
    println!("  approved on host A: {same:.0} ms");
    println!(
        "  approved on host B: {across:.0} ms ({:.2} x on host A)",
        across / same
    );
}
