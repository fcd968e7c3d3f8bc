//! The harness of the tests of Keep sessions on real cells: a host with cells whose events
//! are recorded, the agents' manifests and messages, and the person's answers.

use imurun_keep::random::OsRandom;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use imurun_cell::CellConfig;
use imurun_cell::broker::{Broker, BrokerConfig};
use imurun_core::BoxFuture;
use imurun_keep::KeepError;
use imurun_keep::cells::{CellTools, Cells, CellsConfig, KeepEvents, ModelSource, ToolAnswer};
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::Signed;
use imurun_keep::events::KeepEvent;
use imurun_keep::keys::KeyPair;
use imurun_keep::service::{DeployRequest, Identity, KeepService};
use imurun_keep::trust::sign_bundle;
use imurun_testkit::{Guest, TestModel, ok};
use serde_json::{Value, json};

use super::support::{Host, START};

/// Every event, with the person it went to.
#[derive(Default)]
pub(crate) struct Recorded(Mutex<Vec<(String, Value)>>);

impl KeepEvents for Recorded {
    fn publish(&self, user: &str, event: KeepEvent) {
        let event = serde_json::to_value(&event).unwrap();
        self.0.lock().unwrap().push((user.to_owned(), event));
    }
}

impl Recorded {
    pub(crate) fn of(&self, user: &str) -> Vec<Value> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .filter(|(to, _)| to == user)
            .map(|(_, event)| event.clone())
            .collect()
    }

    pub(crate) fn types(&self, user: &str) -> Vec<String> {
        self.of(user)
            .iter()
            .map(|event| event["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

/// A tool set answering `search` untrusted and `add` trusted.
struct Tools;

impl CellTools for Tools {
    fn offers(&self, _user: &str, agent: &str) -> bool {
        agent == "full"
    }

    fn names(&self) -> Vec<String> {
        vec!["search".to_owned(), "add".to_owned()]
    }

    fn call<'a>(
        &'a self,
        _user: &'a str,
        _agent: &'a str,
        name: &'a str,
        _args_json: &'a str,
    ) -> BoxFuture<'a, Result<ToolAnswer, String>> {
        Box::pin(async move {
            match name {
                "search" => Ok(ToolAnswer {
                    text: "a page from outside".into(),
                    untrusted: true,
                }),
                "add" => Ok(ToolAnswer {
                    text: "4".into(),
                    untrusted: false,
                }),
                other => Err(format!("no tool {other}")),
            }
        })
    }
}

pub(crate) struct Sessions {
    pub(crate) host: Host,
    pub(crate) keep: KeepService,
    pub(crate) events: Arc<Recorded>,
    pub(crate) alice: Identity,
    pub(crate) bob: Identity,
}

impl Sessions {
    pub(crate) async fn start(loopback_ports: Vec<u16>) -> Sessions {
        Self::with_slots(loopback_ports, CellConfig::default().slots).await
    }

    /// A host whose engine has `slots` cell slots.
    pub(crate) async fn with_slots(loopback_ports: Vec<u16>, slots: u32) -> Sessions {
        Self::build(
            CellsConfig {
                loopback_ports,
                cell: CellConfig {
                    slots,
                    ..CellConfig::default()
                },
                api_port: None,
            },
            &["the model's reply"],
        )
        .await
    }

    /// A host with cells as `config` says, whose model answers `replies` in turn.
    pub(crate) async fn build(config: CellsConfig, replies: &[&str]) -> Sessions {
        let host = Host::new().await;
        let events = Arc::new(Recorded::default());
        let broker = Broker::new(
            BrokerConfig {
                timeout: Duration::from_secs(5),
                ..BrokerConfig::default()
            },
            &imurun_cell::own_addresses(),
        )
        .unwrap();
        let model = Arc::new(TestModel::texts(replies));
        let source: ModelSource =
            Arc::new(move || Some(model.clone() as Arc<dyn imurun_core::Model>));
        let cells = Cells::new(&config, broker, events.clone(), source)
            .unwrap()
            .with_tools(Arc::new(Tools));
        let keep = host.keep.clone().with_cells(cells);
        let (alice, _) = host.user("alice").await;
        let (bob, _) = host.user("bob").await;
        Sessions {
            host,
            keep,
            events,
            alice,
            bob,
        }
    }

    /// Deploys `guest` as agent `manifest["name"]`.
    pub(crate) async fn deploy(&self, guest: Guest, manifest: Value) {
        let bundle = guest.bytes();
        let request = DeployRequest {
            bundle_signature: sign_bundle(&bundle, &self.host.signer),
            policy: self.host.policy_for(&manifest, &bundle, &self.host.policy),
            bundle,
        };
        self.keep
            .agents()
            .deploy(&self.host.operator, request)
            .await
            .expect("deploy");
    }

    pub(crate) async fn say(&self, who: &Identity, session: &str, message: Value) -> Vec<String> {
        self.keep
            .sessions()
            .send_message(who, session, &message.to_string())
            .await
            .expect("message")
    }

    /// Has alice's `session` emit `rounds` messages of `per` proposals of unknown types: each
    /// one a refusal of the cell's.
    pub(crate) async fn refused_emits(&self, session: &str, rounds: usize, per: usize) {
        for _ in 0..rounds {
            let steps: Vec<Value> = (0..per)
                .map(|n| json!({"emit": {"type": format!("nope-{n}"), "x": 1}}))
                .collect();
            self.say(&self.alice, session, json!({"steps": steps}))
                .await;
        }
    }

    pub(crate) fn free_slots(&self) -> usize {
        self.keep.cells().unwrap().free_slots()
    }

    /// Sends `message` on a task of its own (it may wait for an approval).
    pub(crate) fn spawn_say(
        &self,
        who: &Identity,
        session: &str,
        message: Value,
    ) -> tokio::task::JoinHandle<Result<Vec<String>, KeepError>> {
        let keep = self.keep.clone();
        let (who, id) = (who.clone(), session.to_owned());
        tokio::spawn(async move {
            keep.sessions()
                .send_message(&who, &id, &message.to_string())
                .await
        })
    }
}

pub(crate) fn manifest(name: &str, extra: Value) -> Value {
    let mut manifest = json!({
        "name": name, "version": 1, "description": "A test agent.",
        "resources": {"memory_mb": 32, "cpu_ms": 200, "timeout_ms": 3000},
        "approval_timeout_s": 30
    });
    if let (Some(target), Some(source)) = (manifest.as_object_mut(), extra.as_object()) {
        target.extend(source.clone());
    }
    manifest
}

pub(crate) fn rule(port: u16, methods: &[&str]) -> Value {
    json!({"scheme": "http", "host": "127.0.0.1", "port": port, "methods": methods, "path_prefix": "/api"})
}

pub(crate) fn fetch(method: &str, url: &str, body: &str) -> Value {
    json!({"fetch": {"method": method, "url": url, "body": body}})
}

pub(crate) fn plan(title: &str) -> Value {
    json!({"emit": {"type": "plan", "title": title, "steps": ["look", "tell"]}})
}

pub(crate) fn path_of(head: &str) -> String {
    head.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn answer(head: &str) -> String {
    ok(&format!("you asked for {}", path_of(head)))
}

pub(crate) async fn wait_for_approval(keep: &KeepService, who: &Identity) -> String {
    wait_for_approvals(keep, who, 1).await.remove(0)
}

/// The ids of `who`'s waiting approvals, once there are at least `n`.
pub(crate) async fn wait_for_approvals(
    keep: &KeepService,
    who: &Identity,
    n: usize,
) -> Vec<String> {
    for _ in 0..500 {
        let listed = keep.approvals().list(who).await.unwrap();
        if listed.len() >= n {
            return listed.into_iter().map(|approval| approval.id).collect();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no approval was asked for");
}

/// `user`'s `approve_egress` decision about `subject` with `hashes`, signed by `device`, for
/// an agent at version 1.
pub(crate) fn egress_decision(
    device: &KeyPair,
    user: &str,
    subject: &str,
    hashes: &BTreeMap<String, String>,
) -> Signed {
    let expected = Expected {
        kind: DecisionKind::ApproveEgress,
        subject,
        hashes,
        ceiling_version: 0,
        policy_version: 1,
        user,
    };
    let made = Decision::new(&OsRandom, &expected, device, START, 600, false).unwrap();
    Signed::sign(&serde_json::to_value(&made).unwrap(), device).unwrap()
}
