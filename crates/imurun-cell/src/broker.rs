//! The egress broker: the only way a cell's request leaves. Each request is checked against
//! the cell's grant ([`crate::egress::check_request`]), waits for the person when the grant
//! says so, is sent through an `imurun-net` door whose resolver checks every address the name
//! resolves to ([`crate::egress::address_rule`]) and connects to exactly those addresses, and
//! each redirect is decided again as a new request. Credentials are added by the host to the
//! requests their binding covers, and taken out of what the cell gets back.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use imurun_core::{BoxFuture, percent_encoded};
use imurun_net::http::{Method, header};
use imurun_net::{Door, DoorConfig, Lookup, NetError, SystemLookup, read_body};

use crate::clock::WallClock;
use crate::egress::{
    Approval, Checked, EgressGrant, Refusal, address_rule_for, check_request, refusal_from_net,
};
use crate::host::{Header, HttpRequest, HttpResponse};

/// How the broker reaches the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerConfig {
    /// The longest one exchange (lookup, connection, answer) may take.
    pub timeout: Duration,
    /// The largest answer body handed to a cell; a larger one is refused.
    pub body_bytes_max: usize,
    /// Redirects followed, each decided as a new request.
    pub redirects_max: usize,
    /// Certificate authorities trusted beside the usual ones (DER): an organisation's own.
    pub extra_roots: Vec<Vec<u8>>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            body_bytes_max: 4 << 20,
            redirects_max: 5,
            extra_roots: Vec::new(),
        }
    }
}

/// One use of egress, as the person is asked about it and as events and the journal record
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressUse {
    pub method: String,
    pub url: String,
    /// The headers the cell set, values included (never a credential: the host adds those
    /// after).
    pub headers: Vec<Header>,
    /// The body's size and SHA-256 (hex), so an approval is of this body and no other.
    pub body_bytes: usize,
    pub body_sha256: String,
    /// The grant's rule that allows it, if one does.
    pub rule: Option<usize>,
    /// The credentials the host would add, by name.
    pub credentials: Vec<String>,
}

/// What the broker decided about one use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressDecision {
    pub used: EgressUse,
    /// `None` when it was allowed (and sent); the refusal otherwise.
    pub refusal: Option<Refusal>,
    /// Who approved it, when someone had to.
    pub approval: Approval,
}

/// What the broker needs from the host around one cell: the person's approvals, the vault,
/// and where decisions go.
pub trait EgressHost: Send + Sync {
    /// Asks the person about `used` (`approval` says whether a device signature is needed)
    /// and resolves to whether they approved. The broker bounds the wait with the grant's
    /// approval timeout.
    fn approve<'a>(&'a self, used: &'a EgressUse, approval: Approval) -> BoxFuture<'a, bool>;

    /// The vault entry `name`'s value, if the person has one.
    fn credential<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Option<String>>;

    /// Every decision, allowed or refused (events; refusals are journaled).
    fn decided(&self, decision: &EgressDecision);
}

/// The broker. Cloning shares its doors and their connection pools.
#[derive(Debug, Clone)]
pub struct Broker {
    /// Public addresses only, none of this machine's.
    door: Door,
    /// The same, and loopback (for ports the operator opened).
    loopback_door: Door,
    config: BrokerConfig,
}

impl Broker {
    /// A broker resolving names with the system's resolver, refusing `own` (this machine's
    /// addresses, [`imurun_net::own_addresses`]).
    pub fn new(config: BrokerConfig, own: &[IpAddr]) -> Result<Self, NetError> {
        Self::with_lookup(config, own, Arc::new(SystemLookup))
    }

    /// A broker resolving names with `lookup` (a test's).
    pub fn with_lookup(
        config: BrokerConfig,
        own: &[IpAddr],
        lookup: Arc<dyn Lookup>,
    ) -> Result<Self, NetError> {
        let door = |loopback: bool| {
            Door::with_lookup_and_roots(
                DoorConfig {
                    rule: address_rule_for(loopback, own),
                    timeout: config.timeout,
                    // The broker follows redirects itself, deciding each as a new request.
                    redirects_max: 0,
                },
                Arc::clone(&lookup),
                &config.extra_roots,
            )
        };
        Ok(Self {
            door: door(false)?,
            loopback_door: door(true)?,
            config,
        })
    }

    /// Sends `request` for a cell holding `grant` (`tainted` if its session is), or refuses
    /// it. `clock` is the cell's wall clock, stopped while the person decides.
    pub async fn send(
        &self,
        grant: &EgressGrant,
        tainted: bool,
        request: HttpRequest,
        host: &dyn EgressHost,
        clock: &WallClock,
    ) -> Result<HttpResponse, Refusal> {
        let HttpRequest {
            mut method,
            url,
            headers,
            mut body,
        } = request;
        let mut target = url;
        // Every credential of the grant is taken out of every answer, whichever request
        // carried it: an upstream may hand back later what an earlier request sent.
        let mut secrets: Vec<String> = Vec::new();
        for credential in &grant.credentials {
            if let Some(value) = host.credential(&credential.name).await {
                add_secret_forms(&mut secrets, &value);
            }
        }
        for hop in 0..=self.config.redirects_max {
            // A redirect's target is the upstream's choice: every later hop is decided as a
            // tainted session's request (no write follows one unasked).
            let tainted = tainted || hop > 0;
            let checked = match check_request(grant, tainted, &method, &target, &headers) {
                Ok(checked) => checked,
                Err(mut refusal) => {
                    // A later hop's address came from upstream: no credential in its refusal.
                    refusal.reason = redact(&refusal.reason, &secrets);
                    return Err(refuse(
                        host,
                        used_of(&method, &target, None, grant, &headers, &body),
                        refusal,
                    ));
                }
            };
            let used = used_of(&method, &target, Some(&checked), grant, &headers, &body);
            if crate::egress::names_method_override(&body) {
                // Rails, Laravel and Symfony read a `_method` field of a body as the method.
                let refusal = Refusal {
                    rule: "method",
                    reason: "a body naming `_method` asks some servers for another method than \
                             the rules saw"
                        .to_owned(),
                };
                return Err(refuse(host, used, refusal));
            }
            if tainted
                && !body.is_empty()
                && crate::egress::TAINTED_METHODS.contains(&method.as_str())
            {
                // The methods a tainted session keeps are for reading: a body would be a way
                // to send what it read.
                let refusal = Refusal {
                    rule: "tainted",
                    reason: format!(
                        "the session is tainted, so its {method} requests carry no body"
                    ),
                };
                return Err(refuse(host, used, refusal));
            }
            if checked.approval != Approval::None {
                let approved = {
                    let _paused = clock.pause();
                    tokio::time::timeout(
                        grant.approval_timeout,
                        host.approve(&used, checked.approval),
                    )
                    .await
                };
                let refusal = match approved {
                    Ok(true) => None,
                    Ok(false) => Some(Refusal {
                        rule: "approval",
                        reason: format!("the person denied {method} {}", checked.url),
                    }),
                    Err(_) => Some(Refusal {
                        rule: "approval",
                        reason: format!(
                            "no one approved {method} {} within {} s",
                            checked.url,
                            grant.approval_timeout.as_secs()
                        ),
                    }),
                };
                if let Some(refusal) = refusal {
                    return Err(refuse(host, used, refusal));
                }
            }
            let sent = self
                .exchange(grant, &checked, &headers, &body, host, &mut secrets)
                .await;
            let response = match sent {
                Ok(response) => response,
                Err(mut refusal) => {
                    refusal.reason = redact(&refusal.reason, &secrets);
                    return Err(refuse(host, used, refusal));
                }
            };
            host.decided(&EgressDecision {
                used: used.clone(),
                refusal: None,
                approval: checked.approval,
            });
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get(header::LOCATION)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
            if let (true, Some(location)) =
                (matches!(status, 301 | 302 | 303 | 307 | 308), location)
            {
                if hop == self.config.redirects_max {
                    break;
                }
                let next = match checked.url.join(&location) {
                    Ok(next) => next,
                    Err(error) => {
                        // The target is not quoted: it is the upstream's text.
                        let refusal = Refusal {
                            rule: "redirect",
                            reason: format!(
                                "{} redirected to something that is not an address: {error}",
                                checked.url
                            ),
                        };
                        return Err(refuse(host, used, refusal));
                    }
                };
                // The raw header, the address as the parser joined it (tabs and newlines
                // dropped) and its decoded form are all checked.
                let joined = next.as_str();
                let decoded = percent_decoded(joined);
                if [location.as_str(), joined, decoded.as_str()]
                    .iter()
                    .any(|text| carries_secret(text, &secrets))
                {
                    return Err(refuse(
                        host,
                        used,
                        Refusal {
                            rule: "redirect",
                            reason: format!(
                                "{} redirected to an address carrying a credential; not followed",
                                checked.url
                            ),
                        },
                    ));
                }
                // As browsers do: a 303, and a 301 or 302 after a POST, become a GET.
                if status == 303 || (matches!(status, 301 | 302) && method == "POST") {
                    method = "GET".to_owned();
                    body = Vec::new();
                }
                target = next.to_string();
                continue;
            }
            return self.answer(response, &checked, &secrets).await;
        }
        Err(refuse(
            host,
            used_of(&method, &target, None, grant, &headers, &body),
            Refusal {
                rule: "redirect",
                reason: format!("more than {} redirects", self.config.redirects_max),
            },
        ))
    }

    /// One request through the right door, with the credentials its bindings cover.
    async fn exchange(
        &self,
        grant: &EgressGrant,
        checked: &Checked,
        headers: &[Header],
        body: &[u8],
        host: &dyn EgressHost,
        secrets: &mut Vec<String>,
    ) -> Result<imurun_net::http::Response, Refusal> {
        let door = if checked.loopback {
            &self.loopback_door
        } else {
            &self.door
        };
        let method = Method::from_bytes(checked.method.as_bytes()).map_err(|_| Refusal {
            rule: "method",
            reason: format!("{:?} is not a method", checked.method),
        })?;
        let mut builder = door
            .request(method, checked.url.clone())
            .map_err(|error| refusal_from_net(&error))?;
        for header in headers {
            builder = builder.header(header.name.as_str(), header.value.as_str());
        }
        // Unencoded answers only: what is taken out of an answer must be there to be found.
        builder = builder.header(header::ACCEPT_ENCODING, "identity");
        for &index in &checked.credentials {
            let credential = &grant.credentials[index];
            let Some(value) = host.credential(&credential.name).await else {
                return Err(Refusal {
                    rule: "credential",
                    reason: format!("the vault has no {:?} for this person", credential.name),
                });
            };
            builder = builder.header(credential.header.as_str(), value.as_str());
            add_secret_forms(secrets, &value);
        }
        if !body.is_empty() {
            builder = builder.body(body.to_vec());
        }
        door.send(builder, checked.url.as_str())
            .await
            .map_err(|error| refusal_from_net(&error))
    }

    /// The answer as the cell gets it: bounded, and with every credential value taken out.
    async fn answer(
        &self,
        response: imurun_net::http::Response,
        checked: &Checked,
        secrets: &[String],
    ) -> Result<HttpResponse, Refusal> {
        let door = if checked.loopback {
            &self.loopback_door
        } else {
            &self.door
        };
        let status = response.status().as_u16();
        let encoded = response
            .headers()
            .get_all(header::CONTENT_ENCODING)
            .iter()
            .any(|value| !value.as_bytes().eq_ignore_ascii_case(b"identity"));
        if encoded && !secrets.is_empty() {
            return Err(Refusal {
                rule: "encoding",
                reason: format!(
                    "{} answered an encoded body to a request carrying a credential; only \
                     unencoded answers are handed over then",
                    checked.url
                ),
            });
        }
        let headers: Vec<Header> = response
            .headers()
            .iter()
            .map(|(name, value)| Header {
                name: redact_name(name.as_str(), secrets),
                value: redact(&String::from_utf8_lossy(value.as_bytes()), secrets),
            })
            .collect();
        let body = read_body(
            door,
            response,
            self.config.body_bytes_max,
            checked.url.as_str(),
        )
        .await
        .map_err(|error| refusal_from_net(&error))?;
        if body.cut {
            return Err(Refusal {
                rule: "size",
                reason: format!(
                    "{} answered more than {} bytes",
                    checked.url, self.config.body_bytes_max
                ),
            });
        }
        let body = if secrets.is_empty() {
            body.bytes
        } else {
            redact_bytes(&body.bytes, secrets)
        };
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }
}

fn used_of(
    method: &str,
    url: &str,
    checked: Option<&Checked>,
    grant: &EgressGrant,
    headers: &[Header],
    body: &[u8],
) -> EgressUse {
    EgressUse {
        method: method.to_owned(),
        url: checked.map_or_else(|| url.to_owned(), |checked| checked.url.to_string()),
        headers: headers.to_vec(),
        body_bytes: body.len(),
        body_sha256: crate::sha256_hex(body),
        rule: checked.map(|checked| checked.rule),
        credentials: checked
            .map(|checked| {
                checked
                    .credentials
                    .iter()
                    .map(|&index| grant.credentials[index].name.clone())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn refuse(host: &dyn EgressHost, used: EgressUse, refusal: Refusal) -> Refusal {
    host.decided(&EgressDecision {
        used,
        refusal: Some(refusal.clone()),
        approval: Approval::None,
    });
    refusal
}

const REDACTED: &str = "[credential]";

/// The forms a credential's value may come back in: as sent, without an auth scheme
/// (`Bearer x` → `x`), JSON-escaped, percent-encoded and base64. Forms shorter than 8
/// characters are left out: they would blank ordinary text.
fn secret_forms(value: &str) -> Vec<String> {
    use base64::Engine;
    let mut forms = vec![value.to_owned()];
    if let Some((_, token)) = value.split_once(' ') {
        forms.push(token.trim().to_owned());
    }
    for form in forms.clone() {
        forms.push(form.replace('/', "\\/"));
        let encoded = percent_encoded(&form);
        forms.push(encoded.to_ascii_lowercase());
        forms.push(encoded);
        let engines = [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ];
        for engine in engines {
            forms.push(engine.encode(form.as_bytes()));
        }
    }
    forms.retain(|form| form.len() >= 8);
    forms.sort();
    forms.dedup();
    // Longest first, so a form inside another is not replaced first.
    forms.sort_by_key(|form| std::cmp::Reverse(form.len()));
    forms
}

fn carries_secret(text: &str, secrets: &[String]) -> bool {
    let lower = text.to_ascii_lowercase();
    secrets.iter().any(|secret| {
        text.contains(secret.as_str()) || lower.contains(&secret.to_ascii_lowercase())
    })
}

fn redact(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|secret| !secret.is_empty())
        .fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), REDACTED)
        })
}

/// A header name with a credential in it, in any case (names arrive lower-cased), is taken out
/// whole.
fn redact_name(name: &str, secrets: &[String]) -> String {
    if carries_secret(name, secrets) {
        REDACTED.to_owned()
    } else {
        name.to_owned()
    }
}

/// `text` with every `%XX` escape decoded (invalid UTF-8 replaced).
fn percent_decoded(text: &str) -> String {
    String::from_utf8_lossy(&imurun_core::percent_decoded_bytes(text)).into_owned()
}

/// Adds the forms of credential `value` to `secrets`, longest first.
fn add_secret_forms(secrets: &mut Vec<String>, value: &str) {
    for variant in secret_forms(value) {
        if !secrets.contains(&variant) {
            secrets.push(variant);
        }
    }
    secrets.sort_by_key(|form| std::cmp::Reverse(form.len()));
}

fn redact_bytes(bytes: &[u8], secrets: &[String]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for secret in secrets.iter().filter(|secret| !secret.is_empty()) {
        let needle = secret.as_bytes();
        let mut result = Vec::with_capacity(out.len());
        let mut index = 0;
        while index < out.len() {
            if out[index..].starts_with(needle) {
                result.extend_from_slice(REDACTED.as_bytes());
                index += needle.len();
            } else {
                result.push(out[index]);
                index += 1;
            }
        }
        out = result;
    }
    out
}
