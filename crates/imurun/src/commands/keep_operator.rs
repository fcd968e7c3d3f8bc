//! The operator's Keep steps, one command each, run on the operator's machine: a pack folder
//! signed into one pack file, a pack deployed over HTTP, a person's ceiling signed and
//! installed. The signing keys are read here and never sent: only what they signed travels.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use imurun_keep::documents::Signed;
use imurun_keep::key_files::read_key;
use imurun_keep::keys::{KeyPair, sha256_hex};
use serde_json::{Value, json};

use super::keep_client::{Client, ClientArgs};
use crate::config::{ConfigFlags, Environment, ResolvedConfig};

/// The manifest's file in a pack folder.
pub(crate) const PACK_MANIFEST_FILE: &str = "manifest.json";

/// Days a policy `keep deploy` and `keep sign --bundle` make is valid, unless told otherwise.
pub(crate) const POLICY_DAYS_DEFAULT: i64 = 90;

/// Days a ceiling `keep ceiling set` signs is valid, when its file names no `expires_at`.
pub(crate) const CEILING_DAYS_DEFAULT: i64 = 365;

/// Days a signed document may be made valid for, at most.
const DAYS_MAX: i64 = 3_650;

/// The keys that sign a pack, and how long its policy is valid.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PackSigning {
    /// The signer key that signs the component (default: signer.key in the Keep folder,
    /// `keep.dir`).
    #[arg(long, value_name = "FILE")]
    pub(crate) signer_key: Option<PathBuf>,
    /// The policy key that signs the policy (default: policy.key in the Keep folder).
    #[arg(long, value_name = "FILE")]
    pub(crate) policy_key: Option<PathBuf>,
    /// The component, when the folder holds none or several `.wasm` files.
    #[arg(long, value_name = "FILE")]
    pub(crate) component: Option<PathBuf>,
    /// Days the policy is valid (1 to 3650).
    #[arg(long, value_name = "DAYS", default_value_t = POLICY_DAYS_DEFAULT,
          value_parser = clap::value_parser!(i64).range(1..=DAYS_MAX))]
    pub(crate) expires_in_days: i64,
}

#[derive(Debug, clap::Args)]
pub(crate) struct DeployArgs {
    /// A pack folder: `manifest.json` (the agent's manifest) and its component (`*.wasm`).
    #[arg(
        value_name = "PACK_DIR",
        required_unless_present = "signed",
        conflicts_with = "signed"
    )]
    pack: Option<PathBuf>,
    /// Deploy a pack file signed before (`imurun keep sign --bundle PACK_DIR`) instead.
    #[arg(long, value_name = "FILE")]
    signed: Option<PathBuf>,
    #[command(flatten)]
    signing: PackSigning,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum CeilingCommand {
    /// Sign a person's ceiling with the policy key and install it: `user`, `version` (one
    /// above the one in force) and `expires_at` (in 365 days) are filled in when the file
    /// leaves them out.
    Set(CeilingSetArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct CeilingSetArgs {
    /// The person.
    user: String,
    /// An `imurun.ceiling` document (JSON); see docs/keep/tenancy.md.
    file: PathBuf,
    /// The policy key (default: policy.key in the Keep folder, `keep.dir`).
    #[arg(long, value_name = "FILE")]
    policy_key: Option<PathBuf>,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum PeopleCommand {
    /// Everyone tokens were made for, with how many tokens, devices, tools and live sessions
    /// each has.
    List {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Add a person: prints her token and an enrolment code for her first device, once each.
    Add {
        user: String,
        /// Seconds the enrolment code works (at most 604800).
        #[arg(long, value_name = "SECONDS", default_value_t = imurun_keep::service::ENROL_CODE_TTL_S_DEFAULT)]
        code_ttl_s: i64,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Revoke a person at once: her tokens stop working, her enrolment codes are voided, her
    /// sessions stop, her tools are revoked and her devices retired (each journaled). Her
    /// conversations, proposals and journal stay.
    Revoke {
        user: String,
        #[command(flatten)]
        client: ClientArgs,
    },
}

/// `imurun keep people ...`.
pub(crate) fn people(
    command: &PeopleCommand,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let client_args = match command {
        PeopleCommand::List { client }
        | PeopleCommand::Add { client, .. }
        | PeopleCommand::Revoke { client, .. } => client,
    };
    let (client, _) = Client::new(client_args, config_flag, environment)?;
    super::runtime()?.block_on(async {
        match command {
            PeopleCommand::List { .. } => {
                let listed = client.call("GET", "/v1/people", None).await?;
                let people = listed["people"].as_array().cloned().unwrap_or_default();
                if people.is_empty() {
                    println!("nobody yet: imurun keep people add NAME");
                }
                for person in people {
                    let revoked = if person["tokens"] == 0 {
                        "  (revoked)"
                    } else {
                        ""
                    };
                    println!(
                        "{:<20} tokens {}  devices {}  tools {}  live sessions {}{revoked}",
                        text(&person["user"]),
                        person["tokens"],
                        person["devices"],
                        person["tools"],
                        person["live_sessions"]
                    );
                }
            }
            PeopleCommand::Add {
                user, code_ttl_s, ..
            } => {
                let added = client
                    .call(
                        "POST",
                        "/v1/people",
                        Some(json!({"user": user, "enrol_code_ttl_s": code_ttl_s})),
                    )
                    .await?;
                println!("added {user}; give them these, each shown once:");
                println!("  token        {}", text(&added["token"]));
                println!(
                    "  enrolment code {} (for her first device, within {} s)",
                    text(&added["enrol_code"]),
                    added["enrol_code_expires_in_s"]
                );
            }
            PeopleCommand::Revoke { user, .. } => {
                let revoked = client
                    .call(
                        "DELETE",
                        &format!("/v1/people/{}", imurun_core::percent_encoded(user)),
                        None,
                    )
                    .await?;
                let n = |field: &str| revoked[field].as_array().map_or(0, Vec::len);
                // What the host answered is what is said: a host that revoked someone else, or
                // answered something that is not a revoke, is an error.
                if revoked["user"].as_str() != Some(user.as_str()) {
                    bail!("the host's answer is not the revoke of {user}: {revoked}");
                }
                println!("revoked {user}:");
                println!(
                    "  tokens revoked     {} (they stop working now)",
                    n("tokens_revoked")
                );
                println!(
                    "  enrolment codes    {} voided",
                    revoked["enrol_codes_voided"]
                );
                println!("  sessions stopped   {}", revoked["sessions_stopped"]);
                println!(
                    "  proposals closed   {} (nothing asked of her before can be decided)",
                    revoked["proposals_closed"]
                );
                println!("  tools revoked      {}", n("tools_revoked"));
                println!("  devices retired    {}", n("devices_retired"));
                println!("her conversations, proposals and journal entries stay.");
            }
        }
        Ok(ExitCode::SUCCESS)
    })
}

/// A pack as signed: the body of `POST /v1/agents`, and what it deploys.
pub(crate) struct SignedPack {
    pub(crate) body: Value,
    pub(crate) name: String,
    pub(crate) version: i64,
    pub(crate) expires_at: i64,
}

/// Signs the pack folder `dir` with the keys `signing` names (the Keep folder's by default).
pub(crate) fn sign_pack(
    dir: &Path,
    signing: &PackSigning,
    config: &ResolvedConfig,
) -> Result<SignedPack> {
    let manifest_path = dir.join(PACK_MANIFEST_FILE);
    let text = std::fs::read(&manifest_path).with_context(|| {
        format!(
            "reading {} (a pack folder holds the agent's manifest as {PACK_MANIFEST_FILE})",
            manifest_path.display()
        )
    })?;
    let manifest = imurun_keep::canonical::parse_document(&text)
        .map_err(|error| anyhow!("{}: {error}", manifest_path.display()))?;
    let checked: imurun_keep::manifest::Manifest = serde_json::from_value(manifest.clone())
        .map_err(|error| anyhow!("{}: not a manifest: {error}", manifest_path.display()))?;
    let component = component_of(dir, signing.component.as_deref())?;
    let bundle = std::fs::read(&component)
        .with_context(|| format!("reading the component {}", component.display()))?;
    let signer = key_or_default(signing.signer_key.as_deref(), config, "signer.key")?;
    let policy_key = key_or_default(signing.policy_key.as_deref(), config, "policy.key")?;
    let expires_at = imurun_core::now_unix_s() + signing.expires_in_days * 86_400;
    let policy = json!({
        "type": "imurun.policy",
        "agent": checked.name,
        "version": checked.version,
        "expires_at": expires_at,
        "bundle_sha256": sha256_hex(&bundle),
        "manifest": manifest,
    });
    let body = json!({
        "bundle": base64::engine::general_purpose::STANDARD.encode(&bundle),
        "bundle_signature": imurun_keep::trust::sign_bundle(&bundle, &signer),
        "policy": Signed::sign(&policy, &policy_key)?,
    });
    Ok(SignedPack {
        body,
        name: checked.name,
        version: checked.version,
        expires_at,
    })
}

/// The component of pack folder `dir`: the one named, or the folder's only `.wasm` file.
fn component_of(dir: &Path, named: Option<&Path>) -> Result<PathBuf> {
    if let Some(named) = named {
        return Ok(named.to_owned());
    }
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading the folder {}", dir.display()))?;
    let mut found = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path
            .extension()
            .is_some_and(|extension| extension == "wasm")
        {
            found.push(path);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!(
            "{} holds no component (a .wasm file): build it and copy it there, or name it with \
             --component FILE",
            dir.display()
        ),
        n => bail!(
            "{} holds {n} .wasm files: name the component with --component FILE",
            dir.display()
        ),
    }
}

/// The key at `given`, else `name` in the Keep folder.
fn key_or_default(given: Option<&Path>, config: &ResolvedConfig, name: &str) -> Result<KeyPair> {
    let path = given.map_or_else(|| config.keep.dir.join(name), Path::to_path_buf);
    read_key(&path).with_context(|| {
        format!(
            "reading the key {} (name another with --{})",
            path.display(),
            name.trim_end_matches(".key").replace('.', "-") + "-key"
        )
    })
}

/// `imurun keep sign --bundle PACK_DIR`: writes the signed pack to `out` (default
/// `<name>-<version>.pack.json` here).
pub(crate) fn write_pack(
    dir: &Path,
    signing: &PackSigning,
    out: Option<&Path>,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let config = ResolvedConfig::load(config_flag, &ConfigFlags::default(), environment)?;
    let pack = sign_pack(dir, signing, &config)?;
    let out = out.map_or_else(
        || PathBuf::from(format!("{}-{}.pack.json", pack.name, pack.version)),
        Path::to_path_buf,
    );
    write_new(&out, &serde_json::to_vec(&pack.body)?)?;
    println!(
        "signed {} version {} into {} (its policy expires {}; --expires-in-days for another)",
        pack.name,
        pack.version,
        out.display(),
        date_of(pack.expires_at)
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to a new file at `path`; an existing file is never overwritten.
fn write_new(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {} (an existing file is kept)", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// `imurun keep deploy`.
pub(crate) fn deploy(
    args: &DeployArgs,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let (client, config) = Client::new(&args.client, config_flag, environment)?;
    let (body, expires_at) = match (&args.pack, &args.signed) {
        (Some(dir), _) => {
            let pack = sign_pack(dir, &args.signing, &config)?;
            (pack.body, Some(pack.expires_at))
        }
        (None, Some(file)) => {
            let text =
                std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
            let body: Value = serde_json::from_slice(&text)
                .with_context(|| format!("{}: not a signed pack (JSON)", file.display()))?;
            (body, None)
        }
        (None, None) => bail!("name a pack folder, or a signed pack with --signed FILE"),
    };
    let deployed = super::runtime()?.block_on(client.call("POST", "/v1/agents", Some(body)))?;
    let expiry = expires_at.map_or_else(String::new, |at| {
        format!(
            " (its policy expires {}; --expires-in-days for another)",
            date_of(at)
        )
    });
    println!(
        "deployed {} version {}{expiry}",
        text(&deployed["name"]),
        deployed["version"]
    );
    Ok(ExitCode::SUCCESS)
}

/// `imurun keep ceiling set USER FILE`.
pub(crate) fn ceiling_set(
    args: &CeilingSetArgs,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    let (client, config) = Client::new(&args.client, config_flag, environment)?;
    let text =
        std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
    let mut document = imurun_keep::canonical::parse_document(&text)
        .map_err(|error| anyhow!("{}: {error}", args.file.display()))?;
    let key = key_or_default(args.policy_key.as_deref(), &config, "policy.key")?;
    let user = imurun_core::percent_encoded(&args.user);
    super::runtime()?.block_on(async {
        let object = document
            .as_object_mut()
            .ok_or_else(|| anyhow!("{}: a ceiling is a JSON object", args.file.display()))?;
        // The policy key signs what this command sends: a ceiling, and nothing else.
        match object.get("type") {
            None => {
                object.insert("type".into(), json!("imurun.ceiling"));
            }
            Some(kind) if kind == "imurun.ceiling" => {}
            Some(kind) => bail!(
                "{} is a {kind} document, not a ceiling (imurun.ceiling): nothing was signed",
                args.file.display()
            ),
        }
        match object.get("user") {
            None => {
                object.insert("user".into(), json!(args.user));
            }
            Some(named) if named.as_str() == Some(args.user.as_str()) => {}
            Some(named) => bail!(
                "{} is a ceiling for {named}, not {}",
                args.file.display(),
                args.user
            ),
        }
        if !object.contains_key("version") {
            let current = client
                .call("GET", &format!("/v1/ceilings/{user}"), None)
                .await?;
            let version = current["ceiling"]["version"].as_i64().unwrap_or(0);
            object.insert("version".into(), json!(version + 1));
        }
        let expires_at = imurun_core::now_unix_s() + CEILING_DAYS_DEFAULT * 86_400;
        object
            .entry("expires_at")
            .or_insert_with(|| json!(expires_at));
        let signed = Signed::sign(&document, &key)?;
        let answer = client
            .call(
                "PUT",
                &format!("/v1/ceilings/{user}"),
                Some(serde_json::to_value(&signed)?),
            )
            .await?;
        let ceiling = if answer["ceiling"].is_object() {
            &answer["ceiling"]
        } else {
            &answer
        };
        println!(
            "{}'s ceiling version {} is in force until {}",
            args.user,
            ceiling["version"],
            ceiling["expires_at"]
                .as_i64()
                .map_or_else(|| "?".to_owned(), date_of)
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// A Unix time as a calendar date (UTC).
fn date_of(unix_s: i64) -> String {
    jiff::Timestamp::from_second(unix_s)
        .map(|at| at.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| unix_s.to_string())
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}
