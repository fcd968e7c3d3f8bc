//! `imurun keep ...`: setting up Keep mode, tokens and enrolment codes at the host, and the
//! offline tools for keys, signatures and decisions (what an operator or a person runs on their
//! own machine: nothing there touches the host's database).

use imurun_keep::key_files::{read_key, write_key};
use imurun_keep::random::OsRandom;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use imurun_keep::decision::{Decision, DecisionKind, Expected};
use imurun_keep::documents::{Signature, Signed};
use imurun_keep::keys::{KeyPair, PublicKey};
use imurun_keep::service::{ENROL_CODE_TTL_S_DEFAULT, Identity, KeepService, TokenRole};
use imurun_store::Store;
use serde_json::{Value, json};

use super::keep_client::{self, ClientArgs, ClientCommand};
use super::keep_operator::{self, CeilingCommand, DeployArgs, PackSigning, PeopleCommand};
use crate::config::{ConfigFlags, Environment, ResolvedConfig};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum KeepCommand {
    /// Create the Keep folder (keys, trust root), install the trust root in the database and
    /// print the first operator token (once).
    Init(InitArgs),
    /// Make or revoke tokens (at the host).
    #[command(subcommand)]
    Token(TokenCommand),
    /// Issue a one-time code for a user's first device (at the host).
    EnrolCode(EnrolCodeArgs),
    /// Make an Ed25519 key file (0600) and print its id and public key.
    Keygen(KeygenArgs),
    /// Sign a pack folder into one signed pack file (`--bundle PACK_DIR`), a bundle (its
    /// SHA-256), or a JSON document (its RFC 8785 canonical text).
    Sign(SignArgs),
    /// Deploy an agent: sign a pack folder on this machine and send it to the host with the
    /// operator's token, or send a pack signed before (`--signed FILE`).
    Deploy(DeployArgs),
    /// A person's ceiling: what their tools may ever be granted.
    #[command(subcommand)]
    Ceiling(CeilingCommand),
    /// People: list them, add one (a token and an enrolment code), revoke one.
    #[command(subcommand)]
    People(PeopleCommand),
    /// Check a signature over a bundle or a signed document.
    Verify(VerifyArgs),
    /// Print the exact bytes a signature over a JSON document covers: its RFC 8785 canonical
    /// text, read as `keep sign` reads it, with no newline added (`imurun keep canonical
    /// d.json | sha256sum` is the document's hash).
    Canonical(CanonicalArgs),
    /// A person's device key.
    #[command(subcommand)]
    Device(DeviceCommand),
    /// Sign a decision with a device key and print it as JSON.
    Decide(DecideArgs),
    /// The journal.
    #[command(subcommand)]
    Journal(JournalCommand),
    /// The egress broker's rules.
    #[command(subcommand)]
    Egress(EgressCommand),
    /// Your tool proposals on the host (a person's token).
    Proposals {
        #[command(flatten)]
        client: ClientArgs,
    },
    /// One tool proposal's review: origin, authority diff (new authority marked), what your
    /// ceiling drops, and the clamped manifest an approval deploys.
    Show {
        /// The tool proposal's id (`kt-...`, as `keep proposals` lists it).
        id: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Approve a tool proposal with a decision signed by your device key on this machine.
    Approve {
        /// The tool proposal's id (`kt-...`).
        id: String,
        /// Your device key file.
        #[arg(long, value_name = "KEYFILE")]
        device: PathBuf,
        /// Approve a tool proposed by a tainted session.
        #[arg(long)]
        confirm_tainted: bool,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Deny a tool proposal with a decision signed by your device key.
    Deny {
        /// The tool proposal's id (`kt-...`).
        id: String,
        /// Your device key file.
        #[arg(long, value_name = "KEYFILE")]
        device: PathBuf,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Clear a deployed tool's taint (its egress leaves ask mode), signed by your device key.
    ClearTaint {
        /// The tool's name (as `keep tools` lists it, without `u/<user>/`).
        name: String,
        /// Your device key file.
        #[arg(long, value_name = "KEYFILE")]
        device: PathBuf,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Revoke one of your tools, every version, at once (the operator: any person's, as
    /// u/<user>/<name>).
    Revoke {
        /// The tool's name; the operator names `u/<user>/<name>`.
        name: String,
        #[command(flatten)]
        client: ClientArgs,
    },
    /// Your deployed tools.
    Tools {
        #[command(flatten)]
        client: ClientArgs,
    },
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum EgressCommand {
    /// Read JSON lines {"rules": [...], "method", "url", "resolved": [...], "headers": {...}}
    /// on stdin and print the broker's decision for each, without the network.
    Check,
}

/// What a command run at the host takes beyond the configuration file: the database.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct HostFlags {
    /// The database: postgres://user:password@host/database or sqlite://path (default:
    /// IMURUN_DATABASE_URL, else the configuration's, else the SQLite file
    /// <IMURUN_HOME>/imurun.db).
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl HostFlags {
    fn config_flags(&self) -> ConfigFlags {
        ConfigFlags {
            database: self.database.clone(),
            ..ConfigFlags::default()
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct InitArgs {
    /// The Keep folder (default: keep.dir, `<IMURUN_HOME>/keep`).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    flags: HostFlags,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokenCommand {
    /// Make a token for a user (`--user NAME`) or the operator (`--operator`); printed once.
    Create {
        #[arg(
            long,
            conflicts_with = "operator",
            required_unless_present = "operator"
        )]
        /// The person the token is for.
        user: Option<String>,
        /// A token for the operator instead.
        #[arg(long)]
        operator: bool,
        #[command(flatten)]
        flags: HostFlags,
    },
    /// Revoke a token by its id: it stops working at once.
    Revoke {
        /// The token's id (as the journal and `keep token create` name it).
        id: String,
        #[command(flatten)]
        flags: HostFlags,
    },
}

#[derive(Debug, clap::Args)]
pub(crate) struct EnrolCodeArgs {
    /// The person the code is for.
    #[arg(long)]
    user: String,
    /// Seconds the code works (default 900, at most 604800).
    #[arg(long, default_value_t = ENROL_CODE_TTL_S_DEFAULT)]
    ttl_s: i64,
    #[command(flatten)]
    flags: HostFlags,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KeygenArgs {
    /// The new key file; never overwritten.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct SignArgs {
    /// The key file (needed for a bundle file or a document; for a pack folder, the signer
    /// key, as --signer-key).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// PATH is a pack folder (`manifest.json` and its component): sign the component and a
    /// policy holding the manifest, and write one signed pack file, the body `imurun keep
    /// deploy --signed` and the console's upload take (docs/keep/packs.md). Or PATH is a
    /// bundle file: sign its SHA-256 and print `{key_id, sig}`. Without it, PATH is a JSON
    /// document, read strictly, and the signed envelope is printed.
    #[arg(long)]
    bundle: bool,
    /// The pack folder, bundle file or document to sign.
    path: PathBuf,
    /// With a pack folder: the signed pack file to write (default: <name>-<version>.pack.json
    /// here); an existing file is never overwritten.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    signing: PackSigning,
}

#[derive(Debug, clap::Args)]
pub(crate) struct CanonicalArgs {
    /// The JSON document, read strictly as `keep sign` reads it (duplicate member names,
    /// non-integers and a missing `type` refused); `-` reads standard input.
    path: PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// The signer's public key (64 hexadecimal characters).
    #[arg(long, value_name = "HEX")]
    public_key: String,
    /// With `--bundle`: the signature file (`{key_id, sig}`) and PATH the bundle. Without:
    /// PATH is a signed envelope.
    #[arg(long, value_name = "SIGNATURE_FILE")]
    bundle_signature: Option<PathBuf>,
    /// The bundle file, or the signed envelope.
    path: PathBuf,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DeviceCommand {
    /// Make a device key in a new 0600 file and print the body that registers it
    /// (`POST /v1/devices`, with an enrolment code or a decision from an existing device).
    Enrol {
        /// The new key file (0600); an existing file is never overwritten.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The user the device is for (the possession proof names them).
        #[arg(long)]
        user: String,
        /// A name for the device, shown in lists instead of its key id.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// Retire one of your devices (it signs nothing from then on) with a decision signed by
    /// your device key: the key retired itself, or another of yours (a lost phone).
    Retire {
        /// The id of the device to retire (as `GET /v1/devices` lists it).
        key_id: String,
        /// Your device key file that signs the decision.
        #[arg(long, value_name = "KEYFILE")]
        device: PathBuf,
        #[command(flatten)]
        client: ClientArgs,
    },
}

#[derive(Debug, clap::Args)]
pub(crate) struct DecideArgs {
    /// The device key file.
    #[arg(long, value_name = "KEYFILE")]
    device: PathBuf,
    /// approve_proposal, deny_proposal, clear_taint, approve_egress, enrol_device or
    /// retire_device.
    #[arg(long)]
    kind: String,
    /// The id of what is decided.
    #[arg(long)]
    subject: String,
    /// A hash of the subject, `name=HEX`; repeat for several.
    #[arg(long = "hash", value_name = "NAME=HEX")]
    hashes: Vec<String>,
    /// Whose decision it is.
    #[arg(long)]
    user: String,
    /// The ceiling version it is decided against (0: the empty ceiling).
    #[arg(long, default_value_t = 0)]
    ceiling_version: i64,
    /// The policy version it is decided against (0 where none applies).
    #[arg(long, default_value_t = 0)]
    policy_version: i64,
    /// Seconds the decision is valid (at most 86400).
    #[arg(long, default_value_t = 300)]
    ttl_s: i64,
    /// Accept a tainted subject explicitly.
    #[arg(long)]
    confirm_tainted: bool,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum JournalCommand {
    /// Check the hash chain; names the first bad entry and exits 1 when there is one.
    Verify {
        #[command(flatten)]
        flags: HostFlags,
    },
}

pub(crate) fn run(
    command: &KeepCommand,
    config_flag: Option<&Path>,
    environment: &Environment,
) -> Result<ExitCode> {
    match command {
        KeepCommand::Keygen(args) => keygen(&args.out),
        KeepCommand::Sign(args) if args.bundle && args.path.is_dir() => {
            let mut signing = args.signing.clone();
            signing.signer_key = signing.signer_key.or_else(|| args.key.clone());
            keep_operator::write_pack(
                &args.path,
                &signing,
                args.out.as_deref(),
                config_flag,
                environment,
            )
        }
        KeepCommand::Sign(args) => sign(args),
        KeepCommand::Deploy(args) => keep_operator::deploy(args, config_flag, environment),
        KeepCommand::Ceiling(CeilingCommand::Set(args)) => {
            keep_operator::ceiling_set(args, config_flag, environment)
        }
        KeepCommand::People(command) => keep_operator::people(command, config_flag, environment),
        KeepCommand::Verify(args) => verify(args),
        KeepCommand::Canonical(args) => canonical(&args.path),
        KeepCommand::Device(DeviceCommand::Enrol { out, user, label }) => {
            device_enrol(out, user, label)
        }
        KeepCommand::Device(DeviceCommand::Retire {
            key_id,
            device,
            client,
        }) => keep_client::run(
            ClientCommand::RetireDevice {
                key_id: key_id.clone(),
                device: device.clone(),
            },
            client,
            config_flag,
            environment,
        ),
        KeepCommand::Decide(args) => decide(args),
        KeepCommand::Egress(EgressCommand::Check) => egress_check(),
        KeepCommand::Proposals { client } => {
            keep_client::run(ClientCommand::Proposals, client, config_flag, environment)
        }
        KeepCommand::Show { id, client } => keep_client::run(
            ClientCommand::Show { id: id.clone() },
            client,
            config_flag,
            environment,
        ),
        KeepCommand::Approve {
            id,
            device,
            confirm_tainted,
            client,
        } => keep_client::run(
            ClientCommand::Decide {
                id: id.clone(),
                device: device.clone(),
                approve: true,
                confirm_tainted: *confirm_tainted,
            },
            client,
            config_flag,
            environment,
        ),
        KeepCommand::Deny { id, device, client } => keep_client::run(
            ClientCommand::Decide {
                id: id.clone(),
                device: device.clone(),
                approve: false,
                confirm_tainted: false,
            },
            client,
            config_flag,
            environment,
        ),
        KeepCommand::ClearTaint {
            name,
            device,
            client,
        } => keep_client::run(
            ClientCommand::ClearTaint {
                name: name.clone(),
                device: device.clone(),
            },
            client,
            config_flag,
            environment,
        ),
        KeepCommand::Revoke { name, client } => keep_client::run(
            ClientCommand::Revoke { name: name.clone() },
            client,
            config_flag,
            environment,
        ),
        KeepCommand::Tools { client } => {
            keep_client::run(ClientCommand::Tools, client, config_flag, environment)
        }
        KeepCommand::Init(args) => {
            at_host(config_flag, &args.flags, environment, |config, store| {
                init(config, store, args.dir.clone())
            })
        }
        KeepCommand::Token(TokenCommand::Create {
            user,
            operator,
            flags,
        }) => {
            let role = match (user, operator) {
                (Some(user), false) => TokenRole::User(user.clone()),
                _ => TokenRole::Operator,
            };
            at_keep(config_flag, flags, environment, move |keep| async move {
                let token = keep
                    .tokens()
                    .create(&Identity::local_operator(), &role)
                    .await?;
                println!("{}", json!({"id": token.id, "token": token.token}));
                eprintln!("the token is shown once; it is stored only as its hash");
                Ok(ExitCode::SUCCESS)
            })
        }
        KeepCommand::Token(TokenCommand::Revoke { id, flags }) => {
            let id = id.clone();
            at_keep(config_flag, flags, environment, move |keep| async move {
                keep.tokens()
                    .revoke(&Identity::local_operator(), &id)
                    .await?;
                println!("{}", json!({"id": id, "revoked": true}));
                Ok(ExitCode::SUCCESS)
            })
        }
        KeepCommand::EnrolCode(args) => {
            let (user, ttl_s) = (args.user.clone(), args.ttl_s);
            at_keep(
                config_flag,
                &args.flags,
                environment,
                move |keep| async move {
                    let code = keep
                        .devices()
                        .enrol_code(&Identity::local_operator(), &user, ttl_s)
                        .await?;
                    println!(
                        "{}",
                        json!({"user": user, "code": code, "expires_in_s": ttl_s})
                    );
                    Ok(ExitCode::SUCCESS)
                },
            )
        }
        KeepCommand::Journal(JournalCommand::Verify { flags }) => {
            at_keep(config_flag, flags, environment, |keep| async move {
                let report = keep.journal().verify(&Identity::local_operator()).await?;
                println!("{}", serde_json::to_string(&report)?);
                Ok(match report.first_bad {
                    None => ExitCode::SUCCESS,
                    Some(bad) => {
                        // The local operator is shown every entry, so the number is there.
                        let seq = bad
                            .seq
                            .map_or_else(|| "?".to_owned(), |seq| seq.to_string());
                        eprintln!("the journal is broken at entry {seq}: {}", bad.reason);
                        ExitCode::from(1)
                    }
                })
            })
        }
    }
}

/// Runs `work` on the host's database.
fn at_host<F, Fut>(
    config_flag: Option<&Path>,
    flags: &HostFlags,
    environment: &Environment,
    work: F,
) -> Result<ExitCode>
where
    F: FnOnce(ResolvedConfig, Store) -> Fut,
    Fut: std::future::Future<Output = Result<ExitCode>>,
{
    let config = ResolvedConfig::load(config_flag, &flags.config_flags(), environment)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let store = crate::wiring::open_store(&config).await?;
        let result = work(config, store.clone()).await;
        store.close().await;
        result
    })
}

/// Runs `work` with the host's Keep service.
fn at_keep<F, Fut>(
    config_flag: Option<&Path>,
    flags: &HostFlags,
    environment: &Environment,
    work: F,
) -> Result<ExitCode>
where
    F: FnOnce(KeepService) -> Fut,
    Fut: std::future::Future<Output = Result<ExitCode>>,
{
    at_host(
        config_flag,
        flags,
        environment,
        |config, store| async move {
            let keep = imurun_keep::init::open(
                &config.keep.dir,
                store,
                std::sync::Arc::new(imurun_core::SystemClock),
            )
            .await
            .with_context(|| {
                format!(
                    "opening Keep from {} (run `imurun keep init` once first)",
                    config.keep.dir.display()
                )
            })?;
            work(keep).await
        },
    )
}

async fn init(config: ResolvedConfig, store: Store, dir: Option<PathBuf>) -> Result<ExitCode> {
    let dir = dir.unwrap_or(config.keep.dir);
    let report =
        imurun_keep::init::initialise(&dir, store, std::sync::Arc::new(imurun_core::SystemClock))
            .await?;
    println!("Keep is set up in {}", report.dir.display());
    println!(
        "  policy key {} (policy.key: sign policies, ceilings and trust roots; keep it off this host once set up)",
        report.policy_key_id
    );
    println!(
        "  signer key {} (signer.key: sign bundles)",
        report.signer_key_id
    );
    println!("  host key   {} (host.key)", report.host_key_id);
    println!("  vault key  (vault.key)");
    println!();
    println!("The first operator token, shown once (it is stored only as its hash):");
    println!("{}", report.operator_token.token);
    println!();
    println!(
        "Serve Keep mode with `imurun serve --keep` (from the repository: `scripts/run --keep`)."
    );
    Ok(ExitCode::SUCCESS)
}

fn keygen(out: &Path) -> Result<ExitCode> {
    let pair = KeyPair::generate(&OsRandom)?;
    write_key(&pair, out)?;
    println!(
        "{}",
        json!({"key_id": pair.key_id(), "public_key": pair.public().to_hex()})
    );
    Ok(ExitCode::SUCCESS)
}

fn sign(args: &SignArgs) -> Result<ExitCode> {
    let path = args
        .key
        .as_deref()
        .ok_or_else(|| anyhow!("--key FILE is needed to sign a bundle file or a document"))?;
    let key = read_key(path)?;
    let bytes =
        std::fs::read(&args.path).with_context(|| format!("reading {}", args.path.display()))?;
    if args.bundle {
        let signature = imurun_keep::trust::sign_bundle(&bytes, &key);
        println!("{}", serde_json::to_string(&signature)?);
    } else {
        let document = document_to_sign(&bytes, &args.path)?;
        println!(
            "{}",
            serde_json::to_string_pretty(&Signed::sign(&document, &key)?)?
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads `bytes` (the text of `path`) as a document to sign: strictly, and naming its `type`.
/// `keep sign` and `keep canonical` both read through here, so the bytes one prints are the
/// bytes the other signs.
fn document_to_sign(bytes: &[u8], path: &Path) -> Result<Value> {
    let document = imurun_keep::canonical::parse_document(bytes)
        .map_err(|error| anyhow!("{}: {error}", path.display()))?;
    if document.get("type").and_then(Value::as_str).is_none() {
        bail!(
            "{}: a document to sign names its `type` (imurun.policy, imurun.ceiling, \
             imurun.trust_root, imurun.decision)",
            path.display()
        );
    }
    Ok(document)
}

/// Writes the canonical text of the document at `path` (`-`: standard input) to stdout, as
/// [`Signed::sign`] computes the bytes it signs, and nothing else.
fn canonical(path: &Path) -> Result<ExitCode> {
    use std::io::{Read, Write};

    let bytes = if path == Path::new("-") {
        // One byte past the bound is enough for the strict reader to refuse it by size, so a
        // stream of any length is never held whole.
        let bytes_max = imurun_keep::canonical::DOCUMENT_BYTES_MAX as u64 + 1;
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(bytes_max)
            .read_to_end(&mut bytes)
            .context("reading standard input")?;
        bytes
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))?
    };
    let document = document_to_sign(&bytes, path)?;
    let canonical = imurun_keep::canonical::canonical_document(&document)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&canonical)?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Decides each line of stdin as the egress broker does before connecting (the request
/// against the rules, then the addresses given as `resolved`, with this machine's own
/// addresses refused); nothing is sent. A line that is not a question prints an error and
/// makes the exit status 1.
fn egress_check() -> Result<ExitCode> {
    let own = imurun_net::own_addresses();
    super::answer_json_lines(
        r#"{"rules": [...], "method", "url", "resolved", "headers"}"#,
        |question: imurun_cell::egress::Question| {
            Ok(serde_json::to_value(imurun_cell::egress::decide(
                &question, &own,
            ))?)
        },
    )
}

fn verify(args: &VerifyArgs) -> Result<ExitCode> {
    let key = PublicKey::from_hex(&args.public_key)?;
    let bytes =
        std::fs::read(&args.path).with_context(|| format!("reading {}", args.path.display()))?;
    let outcome = match &args.bundle_signature {
        Some(signature_file) => {
            let text = std::fs::read(signature_file)
                .with_context(|| format!("reading {}", signature_file.display()))?;
            let signature: Signature = serde_json::from_slice(&text)
                .with_context(|| format!("{}: not {{key_id, sig}}", signature_file.display()))?;
            imurun_keep::trust::verify_bundle_signature(&bytes, &signature, &key).map(|_| ())
        }
        None => {
            let envelope = Signed::from_text(&bytes)?;
            let kind = envelope
                .signed
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            envelope.verify_with(&key, &kind)
        }
    };
    match outcome {
        Ok(()) => {
            println!("{}", json!({"valid": true, "key_id": key.key_id()}));
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => {
            println!("{}", json!({"valid": false, "reason": error.to_string()}));
            Ok(ExitCode::from(1))
        }
    }
}

fn device_enrol(out: &Path, user: &str, label: &str) -> Result<ExitCode> {
    imurun_keep::documents::check_user(user, "--user")?;
    let pair = KeyPair::generate(&OsRandom)?;
    write_key(&pair, out)?;
    let possession = pair.sign(&imurun_keep::service::possession_message(
        user,
        &pair.public(),
    ));
    println!(
        "{}",
        json!({"public_key": pair.public().to_hex(), "label": label, "possession": possession, "key_id": pair.key_id()})
    );
    eprintln!(
        "register it with POST /v1/devices: this body and `enrol_code` (the first device) or \
         `decision` (an enrol_device decision signed by an existing device)"
    );
    Ok(ExitCode::SUCCESS)
}

fn decide(args: &DecideArgs) -> Result<ExitCode> {
    let device = read_key(&args.device)?;
    let kind: DecisionKind = serde_json::from_value(Value::String(args.kind.clone()))
        .map_err(|_| anyhow!("--kind {:?} is not one of approve_proposal, deny_proposal, clear_taint, approve_egress, enrol_device, retire_device", args.kind))?;
    let mut hashes = BTreeMap::new();
    for pair in &args.hashes {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| anyhow!("--hash {pair:?} is not NAME=HEX"))?;
        hashes.insert(name.to_owned(), value.to_owned());
    }
    let expected = Expected {
        kind,
        subject: &args.subject,
        hashes: &hashes,
        ceiling_version: args.ceiling_version,
        policy_version: args.policy_version,
        user: &args.user,
    };
    let now = imurun_core::now_unix_s();
    let decision = Decision::new(
        &OsRandom,
        &expected,
        &device,
        now,
        args.ttl_s,
        args.confirm_tainted,
    )?;
    let envelope = Signed::sign(&decision, &device)?;
    println!("{}", serde_json::to_string_pretty(&envelope)?);
    Ok(ExitCode::SUCCESS)
}
