//! A person's Keep commands against a running host: their tool proposals and the review in a
//! terminal (new authority marked, escapes visible), decisions signed with their device key
//! file on this machine, clearing a tool's taint, revoking a tool, retiring a device. The key
//! never leaves the machine: only the signed decision is sent.

use imurun_keep::key_files::read_key;
use imurun_keep::random::OsRandom;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::Signed;
use imurun_keep::keys::{KeyPair, PublicKey};
use imurun_keep::proposals::escape;
use serde_json::{Value, json};

use crate::config::{ConfigFlags, Environment, ResolvedConfig};

/// How long a decision the command line signs is valid, in seconds.
const DECISION_TTL_S: i64 = 300;

/// Where the host is and whose token speaks to it.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ClientArgs {
    /// The host (default: IMURUN_URL, else http://<server.addr> from the configuration).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Your Keep token: a person's, or the operator's for operator commands (default:
    /// IMURUN_KEEP_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

/// A person's command.
#[derive(Debug, Clone)]
pub(crate) enum ClientCommand {
    Proposals,
    Show {
        id: String,
    },
    Decide {
        id: String,
        device: PathBuf,
        approve: bool,
        confirm_tainted: bool,
    },
    ClearTaint {
        name: String,
        device: PathBuf,
    },
    Revoke {
        name: String,
    },
    Tools,
    RetireDevice {
        key_id: String,
        device: PathBuf,
    },
}

pub(crate) fn run(
    command: ClientCommand,
    args: &ClientArgs,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let (client, _) = Client::new(args, config_flag, environment)?;
    let colour = environment.get("NO_COLOR").is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    super::runtime()?.block_on(client.run(command, colour))
}

/// A Keep host over HTTP, and the token that speaks to it.
pub(crate) struct Client {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Client {
    /// The host `args` name (else `IMURUN_URL`, else the configuration's `server.addr`) with
    /// the token they name (else `IMURUN_KEEP_TOKEN`), and the configuration.
    pub(crate) fn new(
        args: &ClientArgs,
        config_flag: Option<&Path>,
        environment: &Environment,
    ) -> Result<(Client, ResolvedConfig)> {
        let config = ResolvedConfig::load(config_flag, &ConfigFlags::default(), environment)?;
        let given = args.url.clone().or_else(|| environment.get("IMURUN_URL"));
        if let Some(given) = &given {
            check_host_url(given)?;
        }
        let base = super::chat::server_url(given.as_deref(), config.server.addr);
        let token = args
            .token
            .clone()
            .or_else(|| environment.get("IMURUN_KEEP_TOKEN"))
            .ok_or_else(|| anyhow!("a Keep token is needed: --token TOKEN or IMURUN_KEEP_TOKEN"))?;
        let client = Client {
            base,
            token,
            http: reqwest::Client::new(),
        };
        Ok((client, config))
    }

    async fn run(&self, command: ClientCommand, colour: bool) -> Result<ExitCode> {
        match command {
            ClientCommand::Proposals => {
                let listed = self.call("GET", "/v1/proposals?kind=tool", None).await?;
                let reviews = listed["tools"].as_array().cloned().unwrap_or_default();
                if reviews.is_empty() {
                    println!("no tool proposals");
                }
                for review in reviews {
                    let authority = if review["no_new_authority"] == true {
                        "no new authority".to_owned()
                    } else {
                        let n = review["authority_diff"].as_array().map_or(0, Vec::len);
                        format!(
                            "{n} new {}",
                            if n == 1 { "authority" } else { "authorities" }
                        )
                    };
                    println!(
                        "{}  {:<8}  {}@{}  {}{}",
                        text(&review["id"]),
                        text(&review["state"]),
                        text(&review["qualified_name"]),
                        review["version"],
                        authority,
                        if review["tainted"] == true {
                            "  TAINTED"
                        } else {
                            ""
                        }
                    );
                }
            }
            ClientCommand::Show { id } => {
                let review = self
                    .call("GET", &format!("/v1/proposals/{id}"), None)
                    .await?;
                print!("{}", show(&review, colour));
            }
            ClientCommand::Decide {
                id,
                device,
                approve,
                confirm_tainted,
            } => {
                let device = read_key(&device)?;
                let review = self
                    .call("GET", &format!("/v1/proposals/{id}"), None)
                    .await?;
                check_review(&review)?;
                // What is signed is what is shown, here, now.
                print!("{}", show(&review, colour));
                let user = self.user().await?;
                let kind = if approve {
                    DecisionKind::ApproveProposal
                } else {
                    DecisionKind::DenyProposal
                };
                let hashes = serde_json::from_value(review["hashes"].clone())
                    .context("the review's hashes")?;
                let decision = sign(
                    &device,
                    &Expected {
                        kind,
                        subject: &id,
                        hashes: &hashes,
                        ceiling_version: review["ceiling_version"].as_i64().unwrap_or(0),
                        policy_version: review["policy_version"].as_i64().unwrap_or(0),
                        user: &user,
                    },
                    confirm_tainted,
                )?;
                let decided = self
                    .call(
                        "POST",
                        &format!("/v1/proposals/{id}/decision"),
                        Some(json!({ "decision": decision })),
                    )
                    .await?;
                println!(
                    "{} {}@{}: {}",
                    text(&decided["id"]),
                    text(&decided["qualified_name"]),
                    decided["version"],
                    text(&decided["state"])
                );
            }
            ClientCommand::ClearTaint { name, device } => {
                let device = read_key(&device)?;
                let tool = self
                    .call(
                        "GET",
                        &format!("/v1/tools/{}", imurun_core::percent_encoded(&name)),
                        None,
                    )
                    .await?;
                let basis = &tool["clear_taint"];
                if basis.is_null() {
                    bail!("{name} carries no taint to clear");
                }
                let user = self.user().await?;
                let subject = clear_taint_subject(&tool, &name, &user)?;
                let hashes =
                    serde_json::from_value(basis["hashes"].clone()).context("the hashes")?;
                let decision = sign(
                    &device,
                    &Expected {
                        kind: DecisionKind::ClearTaint,
                        subject: &subject,
                        hashes: &hashes,
                        ceiling_version: basis["ceiling_version"].as_i64().unwrap_or(0),
                        policy_version: basis["policy_version"].as_i64().unwrap_or(0),
                        user: &user,
                    },
                    false,
                )?;
                let cleared = self
                    .call(
                        "POST",
                        &format!(
                            "/v1/tools/{}/clear-taint",
                            imurun_core::percent_encoded(&name)
                        ),
                        Some(json!({ "decision": decision })),
                    )
                    .await?;
                println!(
                    "{}: taint cleared, egress {}",
                    text(&cleared["qualified_name"]),
                    text(&cleared["egress_mode"])
                );
            }
            ClientCommand::RetireDevice { key_id, device } => {
                let signer = read_key(&device)?;
                let path = format!("/v1/devices/{}", imurun_core::percent_encoded(&key_id));
                let shown = self.call("GET", &path, None).await?;
                let public_key = PublicKey::from_hex(shown["public_key"].as_str().unwrap_or(""))
                    .context("the device's public key")?;
                let user = self.user().await?;
                let hashes = imurun_keep::checks::device_hashes(&public_key);
                let decision = sign(
                    &signer,
                    &Expected {
                        kind: DecisionKind::RetireDevice,
                        subject: &key_id,
                        hashes: &hashes,
                        ceiling_version: 0,
                        policy_version: 0,
                        user: &user,
                    },
                    false,
                )?;
                let retired = self
                    .call(
                        "POST",
                        &format!("{path}/retire"),
                        Some(json!({ "decision": decision })),
                    )
                    .await?;
                println!("device {}: retired", text(&retired["key_id"]));
            }
            ClientCommand::Revoke { name } => {
                let revoked = self
                    .call(
                        "POST",
                        &format!("/v1/tools/{}/revoke", imurun_core::percent_encoded(&name)),
                        None,
                    )
                    .await?;
                println!("{}: revoked", text(&revoked["qualified_name"]));
            }
            ClientCommand::Tools => {
                let listed = self.call("GET", "/v1/tools", None).await?;
                for tool in listed["tools"].as_array().cloned().unwrap_or_default() {
                    let state = if tool["revoked_at_ms"].is_null() {
                        "in force"
                    } else {
                        "revoked"
                    };
                    println!(
                        "{}@{}  {}  egress {}{}",
                        text(&tool["qualified_name"]),
                        tool["version"],
                        state,
                        text(&tool["egress_mode"]),
                        if tool["clear_taint"].is_null() {
                            ""
                        } else {
                            "  TAINTED"
                        }
                    );
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    async fn user(&self) -> Result<String> {
        let who = self.call("GET", "/v1/whoami", None).await?;
        who["user"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("this token is not a person's: decisions are a person's"))
    }

    /// One request; the answer's JSON, or the host's refusal (its code and message) as the
    /// error. A host that cannot be reached is named, with how to name another.
    pub(crate) async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value> {
        let method = reqwest::Method::from_bytes(method.as_bytes())?;
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.map_err(|error| {
            let why = if error.is_connect() {
                "nothing answered there"
            } else if error.is_timeout() {
                "it did not answer in time"
            } else {
                "the request failed"
            };
            anyhow!(
                "could not reach the Keep host at {} ({why}: {error}). Is `imurun serve --keep` \
                 running there? Name another host with --url URL or IMURUN_URL.",
                self.base
            )
        })?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!(
                "the host refused ({status}, {}): {}",
                text(&value["error"]["code"]),
                text(&value["error"]["message"])
            );
        }
        Ok(value)
    }
}

/// Refuses a host URL that is not `http(s)://host[:port][/path]`: a query or a fragment would
/// swallow the route the command appends, and a user name or password in it would be sent
/// instead of the token.
fn check_host_url(given: &str) -> Result<()> {
    let url = reqwest::Url::parse(given)
        .map_err(|error| anyhow!("the host's URL {given:?} is not a URL: {error}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        bail!("the host's URL {given:?} is not http:// or https://");
    }
    if url.query().is_some() || url.fragment().is_some() {
        bail!(
            "the host's URL {given:?} has a query or a fragment: name the host alone (a path prefix is fine)"
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        bail!(
            "the host's URL {given:?} holds a user name or password: the token is the only credential sent (--token or IMURUN_KEEP_TOKEN)"
        );
    }
    Ok(())
}

/// Refuses to sign a review whose hashes are not those of what it shows: the clamped
/// manifest, the description and what it says about authority, hashed here.
fn check_review(review: &Value) -> Result<()> {
    let manifest: imurun_keep::manifest::Manifest =
        serde_json::from_value(review["clamped_manifest"].clone())
            .context("the review's clamped manifest")?;
    let manifest_sha256 = imurun_keep::authority::manifest_sha256(&manifest);
    let description = review["description"].as_str().unwrap_or_default();
    let description_sha256 = imurun_keep::keys::sha256_hex(description.as_bytes());
    let authority_sha256 = imurun_keep::authority::review_sha256(
        &review["authority_diff"],
        &review["dropped"],
        &review["granted_diff"],
    );
    let hashes = &review["hashes"];
    if !same_keys(hashes, &["authority", "bundle", "description", "manifest"])
        || hashes["manifest"].as_str() != Some(manifest_sha256.as_str())
        || hashes["description"].as_str() != Some(description_sha256.as_str())
        || hashes["authority"].as_str() != Some(authority_sha256.as_str())
        || hashes["bundle"].as_str() != review["bundle_sha256"].as_str()
    {
        bail!(
            "the host's review names other hashes than the manifest, description and authority \
             it shows: nothing was signed"
        );
    }
    Ok(())
}

/// Whether `value` is an object with exactly the members `names`.
fn same_keys(value: &Value, names: &[&str]) -> bool {
    value.as_object().is_some_and(|members| {
        members.len() == names.len() && names.iter().all(|name| members.contains_key(*name))
    })
}

/// The subject of a `clear_taint` decision on the tool the person named (`name`, with or
/// without `u/<user>/`), built here: refused when the host answered about another tool, or
/// names hashes other than those of the tool's bundle and manifest it shows.
fn clear_taint_subject(tool: &Value, name: &str, user: &str) -> Result<String> {
    let own = format!("u/{user}/");
    let named = name.strip_prefix(&own).unwrap_or(name);
    let manifest: imurun_keep::manifest::Manifest =
        serde_json::from_value(tool["manifest"].clone()).context("the tool's manifest")?;
    let hashes = &tool["clear_taint"]["hashes"];
    if tool["name"].as_str() != Some(named)
        || !same_keys(hashes, &["bundle", "manifest"])
        || hashes["bundle"].as_str() != tool["bundle_sha256"].as_str()
        || hashes["manifest"].as_str()
            != Some(imurun_keep::authority::manifest_sha256(&manifest).as_str())
    {
        bail!(
            "the host's answer is about another tool than {named}, or names other hashes than              its bundle and manifest: nothing was signed"
        );
    }
    Ok(format!("{own}{named}@{}", tool["version"]))
}

fn sign(device: &KeyPair, expected: &Expected<'_>, confirm_tainted: bool) -> Result<Signed> {
    let now = imurun_core::now_unix_s();
    let decision = Decision::new(
        &OsRandom,
        expected,
        device,
        now,
        DECISION_TTL_S,
        confirm_tainted,
    )?;
    Ok(Signed::sign(&decision, device)?)
}

/// A JSON value as plain text with every control and bidi character a visible escape.
fn text(value: &Value) -> String {
    match value {
        Value::String(text) => escape(text),
        other => escape(&other.to_string()),
    }
}

/// The review as a person reads it in a terminal: new authority marked (`+`, bold red on a
/// terminal), what the ceiling dropped marked `-`.
pub(crate) fn show(review: &Value, colour: bool) -> String {
    let (on, off) = if colour {
        ("\u{1b}[1;31m", "\u{1b}[0m")
    } else {
        ("", "")
    };
    let origin = &review["origin"];
    let mut out = format!(
        "{} {}@{}  ({})\n",
        text(&review["id"]),
        text(&review["qualified_name"]),
        review["version"],
        text(&review["state"])
    );
    // Each line of the description indented and marked, so none can pass for the review's own.
    out.push_str(&format!(
        "description:\n  | {}\n",
        text(&review["description"]).replace('\n', "\n  | ")
    ));
    out.push_str(&format!(
        "bundle: sha256 {}, {} bytes (code is shown as its hash: review the authority)\n",
        text(&review["bundle_sha256"]),
        review["bundle_size"]
    ));
    out.push_str(&format!(
        "from: agent {}@{} signed by {}, session {}\n",
        text(&origin["agent"]),
        origin["agent_version"],
        text(&origin["signer_key_id"]),
        text(&origin["session_id"])
    ));
    if review["tainted"] == true {
        out.push_str(&format!(
            "{on}TAINTED{off}: its session had read {}; approving needs --confirm-tainted, and \
             it deploys asking for each request until its taint is cleared\n",
            text(&origin["taint_source"])
        ));
    }
    let changes = review["authority_diff"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if changes.is_empty() {
        out.push_str("authority: no new authority\n");
    } else {
        out.push_str("authority it asks for beyond its agent:\n");
        for change in changes {
            out.push_str(&format!(
                "  {on}+ [{}] {}{off}\n",
                text(&change["class"]),
                text(&change["summary"])
            ));
        }
    }
    let dropped = review["dropped"].as_array().cloned().unwrap_or_default();
    if !dropped.is_empty() {
        out.push_str("your ceiling drops:\n");
        for entry in dropped {
            out.push_str(&format!(
                "  - {} {}: {}\n",
                text(&entry["field"]),
                text(&entry["entry"]),
                text(&entry["reason"])
            ));
        }
    }
    out.push_str(&format!(
        "approving deploys (ceiling version {}, agent version {}):\n{}\n",
        review["ceiling_version"],
        review["policy_version"],
        escape(&serde_json::to_string_pretty(&review["clamped_manifest"]).unwrap_or_default())
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_marks_new_authority_and_shows_escapes_without_acting() {
        let review = json!({
            "id": "kt-1", "qualified_name": "u/alice/x", "version": 1, "state": "pending",
            "description": "No new authority ✓\u{1b}[0m \u{202e}", "bundle_sha256": "ab",
            "bundle_size": 3, "tainted": true,
            "origin": {"agent": "maker", "agent_version": 1, "signer_key_id": "k",
                       "session_id": "s", "taint_source": "an egress answer"},
            "authority_diff": [{"class": "new_host", "summary": "GET https://x:443/"}],
            "dropped": [], "clamped_manifest": {}, "ceiling_version": 1, "policy_version": 1,
        });
        let shown = show(&review, false);
        assert!(shown.contains("+ [new_host] GET https://x:443/"), "{shown}");
        assert!(shown.contains("\\u{001B}[0m \\u{202E}"), "{shown}");
        assert!(!shown.contains('\u{1b}') && !shown.contains('\u{202e}'));
        assert!(shown.contains("TAINTED"));
        assert!(!shown.contains("authority: no new authority"));
        assert!(show(&review, true).contains("\u{1b}[1;31m+ [new_host]"));
    }

    /// A review whose hashes are those of what it shows.
    fn honest_review() -> Value {
        let manifest: imurun_keep::manifest::Manifest = serde_json::from_value(json!({
            "name": "x", "version": 1,
            "resources": {"memory_mb": 16, "cpu_ms": 100, "timeout_ms": 1000},
            "approval_timeout_s": 30
        }))
        .expect("manifest");
        let mut review = json!({
            "description": "Adds.", "bundle_sha256": "b1", "clamped_manifest": manifest,
            "authority_diff": [], "dropped": [], "granted_diff": [],
        });
        review["hashes"] = json!({
            "manifest": imurun_keep::authority::manifest_sha256(&manifest),
            "description": imurun_keep::keys::sha256_hex(b"Adds."),
            "authority": imurun_keep::authority::review_sha256(
                &review["authority_diff"], &review["dropped"], &review["granted_diff"]),
            "bundle": "b1",
        });
        review
    }

    #[test]
    fn a_review_is_signed_only_when_its_hashes_are_those_of_what_it_shows() {
        assert!(check_review(&honest_review()).is_ok());
        let mut other_bundle = honest_review();
        other_bundle["hashes"]["bundle"] = json!("b2");
        assert!(check_review(&other_bundle).is_err(), "a bundle not shown");
        let mut shown_other = honest_review();
        shown_other["bundle_sha256"] = json!("b2");
        assert!(check_review(&shown_other).is_err(), "another bundle shown");
        let mut extra = honest_review();
        extra["hashes"]["policy"] = json!("p");
        assert!(check_review(&extra).is_err(), "a hash not shown");
    }

    #[test]
    fn a_taint_is_cleared_only_on_the_tool_the_person_named_as_shown() {
        let review = honest_review();
        let manifest_sha256 = review["hashes"]["manifest"].clone();
        let tool = json!({
            "name": "weather", "version": 3, "bundle_sha256": "b1",
            "manifest": review["clamped_manifest"],
            "clear_taint": {"hashes": {"bundle": "b1", "manifest": manifest_sha256},
                            "subject": "u/alice/evil@1"},
        });
        assert_eq!(
            clear_taint_subject(&tool, "weather", "alice").expect("holds"),
            "u/alice/weather@3"
        );
        assert_eq!(
            clear_taint_subject(&tool, "u/alice/weather", "alice").expect("holds"),
            "u/alice/weather@3"
        );
        assert!(
            clear_taint_subject(&tool, "evil", "alice").is_err(),
            "another tool"
        );
        let mut other_bundle = tool.clone();
        other_bundle["clear_taint"]["hashes"]["bundle"] = json!("b9");
        assert!(clear_taint_subject(&other_bundle, "weather", "alice").is_err());
        let mut other_manifest = tool.clone();
        other_manifest["clear_taint"]["hashes"]["manifest"] = json!("m9");
        assert!(clear_taint_subject(&other_manifest, "weather", "alice").is_err());
    }
}
