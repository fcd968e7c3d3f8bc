//! The local upstream over TLS (the test kit's), and a name lookup that answers what a test
//! tells it to.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use imurun_net::Lookup;
pub(crate) use imurun_testkit::{Upstream, ok, redirect};

/// Answers each name with the next of its answers (the last one again once they run out),
/// counting lookups.
#[derive(Default)]
pub(crate) struct ScriptedLookup {
    answers: Mutex<HashMap<String, VecDeque<Vec<IpAddr>>>>,
    lookups: AtomicUsize,
}

impl ScriptedLookup {
    pub(crate) fn answering(name: &str, answers: &[&[&str]]) -> Arc<Self> {
        let lookup = Self::default();
        lookup.answers.lock().unwrap().insert(
            name.to_owned(),
            answers
                .iter()
                .map(|answer| answer.iter().map(|ip| ip.parse().unwrap()).collect())
                .collect(),
        );
        Arc::new(lookup)
    }

    pub(crate) fn lookups(&self) -> usize {
        self.lookups.load(Ordering::SeqCst)
    }
}

impl Lookup for ScriptedLookup {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send + 'a>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().unwrap();
        let answer = match answers.get_mut(host) {
            Some(queue) if queue.len() > 1 => queue.pop_front(),
            Some(queue) => queue.front().cloned(),
            None => None,
        };
        Box::pin(async move { answer.ok_or_else(|| std::io::Error::other("no such name")) })
    }
}

/// A TLS upstream answering `answer` at `api.test` (which resolves to loopback), a broker that
/// trusts its certificate, and a grant allowing `methods` under `rule_prefix` with the
/// `api-key` credential (header `X-Api-Key`) bound to `GET` under `credential_prefix`.
pub(crate) async fn tls_api(
    answer: fn(&str) -> String,
    methods: &[&str],
    rule_prefix: &str,
    credential_prefix: &str,
) -> (
    Upstream,
    imurun_cell::broker::Broker,
    imurun_cell::egress::EgressGrant,
) {
    use imurun_cell::egress::{CredentialRule, EgressGrant, EgressMode, EgressRule};
    let (upstream, der) = Upstream::start_tls(answer, "api.test").await;
    let port = upstream.port;
    let lookup = ScriptedLookup::answering("api.test", &[&["127.0.0.1"]]);
    let config = imurun_cell::broker::BrokerConfig {
        timeout: std::time::Duration::from_secs(3),
        extra_roots: vec![der],
        ..imurun_cell::broker::BrokerConfig::default()
    };
    let broker = imurun_cell::broker::Broker::with_lookup(config, &[], lookup).unwrap();
    let grant = EgressGrant {
        mode: EgressMode::Allow,
        rules: vec![EgressRule {
            scheme: "https".to_owned(),
            host: "api.test".to_owned(),
            port,
            methods: methods.iter().map(|&method| method.to_owned()).collect(),
            path_prefix: rule_prefix.to_owned(),
            ask_when_tainted: false,
            device_signature: false,
        }],
        credentials: vec![CredentialRule {
            name: "api-key".to_owned(),
            header: "X-Api-Key".to_owned(),
            host: "api.test".to_owned(),
            port,
            methods: vec!["GET".to_owned()],
            path_prefix: credential_prefix.to_owned(),
        }],
        loopback_ports: vec![port],
        host_ports: Vec::new(),
        approval_timeout: std::time::Duration::from_secs(5),
    };
    (upstream, broker, grant)
}
