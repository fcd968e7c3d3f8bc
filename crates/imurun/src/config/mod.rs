//! The configuration: the TOML file, the `IMURUN_*` environment variables and the command-line
//! flags, resolved into one [`ResolvedConfig`] that records where each value came from.
//!
//! One precedence order, documented in `docs/configuration.md`: command-line flag >
//! environment variable > settings stored by the server (`agent.*`, `permissions.*`, applied by
//! the server at start-up to the keys whose value came from the file or the default) > config
//! file > built-in default. The resolution itself is a pure function of its [`Sources`], so the
//! order is tested without touching the process environment.
//!
//! This module is the binary's only reader of the environment ([`Environment`]): the
//! `IMURUN_*` keys here, and the variables that are not keys ([`Variables`]: credentials,
//! providers, the log filter, what child processes start from).
//!
//! - `environment.rs`: the process environment, read once, and imurun's folders;
//! - `flags.rs`: the flags that set keys, and the parsers every layer shares;
//! - `file.rs`: the file as written;
//! - `variables.rs`: the variables that are not keys;
//! - `show.rs`: the annotated TOML of `imurun config show`.

mod environment;
mod file;
mod flags;
mod show;
mod variables;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result, anyhow, bail};
use imurun_agent::{MAX_STEPS_CAP, MAX_STEPS_DEFAULT};
use imurun_integrations::{McpServerConfig, validate_mcp_servers};
use imurun_policy::{Mode, Toggles};

pub(crate) use environment::{Environment, Paths};
use file::{FileAgent, FileConfig, FilePermissions};
pub(crate) use flags::{
    ConfigFlags, parse_addr, parse_approval_timeout_s, parse_bool, parse_max_steps,
};
pub(crate) use variables::Variables;

use crate::model_spec::{DEFAULT_MODEL_FILE, ModelSpec};

/// The configuration file's name in the data folder.
pub(crate) const CONFIG_FILE_NAME: &str = "config.toml";

/// The address the server binds when nothing says otherwise: loopback only.
pub(crate) const ADDR_DEFAULT: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 8484);

/// `permissions.approval_timeout_s` default: the executor's own default, in seconds.
pub(crate) const APPROVAL_TIMEOUT_S_DEFAULT: u64 = 180;

/// The longest approval wait that may be configured: an hour. A card that waits longer keeps
/// a turn (and its model) busy for nothing.
pub(crate) const APPROVAL_TIMEOUT_S_MAX: u64 = 3600;

/// A configuration file is a few hundred bytes; anything past a mebibyte is not one.
pub(crate) const CONFIG_FILE_BYTES_MAX: u64 = 1 << 20;

/// `agent.call_prefill`: when the model's reply is pre-started with a tool-call opening.
pub(crate) use imurun_agent::CallPrefill;

/// The API token. Its `Debug` never shows it, so that a logged configuration leaks nothing.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiToken(String);

impl ApiToken {
    pub(crate) fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token itself, for the one place that compares or sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiToken(<redacted>)")
    }
}

/// Where a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The built-in default.
    Default,
    /// The configuration file.
    File,
    /// The named environment variable.
    Env(&'static str),
    /// The named command-line flag.
    Flag(&'static str),
}

impl Origin {
    /// Whether a setting stored by the server may replace this value: only values from the
    /// file or the default, because a flag or a variable is what the person asked for now.
    pub(crate) fn yields_to_stored_settings(self) -> bool {
        matches!(self, Origin::Default | Origin::File)
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::File => f.write_str("config file"),
            Origin::Env(name) => write!(f, "environment {name}"),
            Origin::Flag(name) => write!(f, "flag {name}"),
        }
    }
}

/// The configuration every command reads, resolved from every source. The serve command
/// hands it to the server, which applies its stored settings on top (see [`Self::origin`]).
#[derive(Debug, Clone)]
pub(crate) struct ResolvedConfig {
    /// imurun's folders.
    pub(crate) paths: Paths,
    /// The configuration file that was read, if one was.
    pub(crate) file: Option<PathBuf>,
    /// A GGUF path, `openai:URL`, `ollama:URL` or `scripted:FILE`.
    pub(crate) model: String,
    pub(crate) server: ServerConfig,
    pub(crate) agent: AgentSettings,
    pub(crate) permissions: PermissionSettings,
    /// `[[mcp.servers]]`: only the file sets them.
    pub(crate) mcp_servers: Vec<McpServerConfig>,
    pub(crate) keep: KeepConfig,
    /// `database.url`: `None` for the SQLite file in the data folder.
    pub(crate) database_url: Option<DatabaseUrl>,
    /// What the environment says beyond the keys.
    pub(crate) variables: Variables,
    /// Where each key's value came from, by its dotted name (`server.addr`).
    origins: BTreeMap<&'static str, Origin>,
}

/// A database URL, which may hold a password: its `Debug` and [`DatabaseUrl::shown`] leave
/// the password out.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DatabaseUrl(String);

impl DatabaseUrl {
    /// The whole URL, to connect with.
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }

    /// The URL without its password, to show.
    pub(crate) fn shown(&self) -> String {
        imurun_store::redact_url(&self.0)
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.shown())
    }
}

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerConfig {
    pub(crate) addr: SocketAddr,
    pub(crate) api_token: Option<ApiToken>,
    /// HTTPS: the certificate chain and its key (PEM files), both or neither.
    pub(crate) tls: Option<TlsFiles>,
}

/// `server.tls_cert` and `server.tls_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsFiles {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// `[keep]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeepConfig {
    /// Whether `imurun serve` serves Keep mode (also `--keep`).
    pub(crate) enabled: bool,
    /// The Keep folder: keys and the first trust root (`imurun keep init`). Default
    /// `<IMURUN_HOME>/keep`.
    pub(crate) dir: PathBuf,
    /// Loopback ports cells' egress rules may reach (tests, local services); empty by default.
    /// Journaled when the server starts.
    pub(crate) egress_loopback_ports: Vec<u16>,
    /// This host's name among the Keep hosts that share one database; `None`: the machine's
    /// name and the port the server binds.
    pub(crate) host_id: Option<String>,
}

/// `[agent]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentSettings {
    /// 1..=`MAX_STEPS_CAP`.
    pub(crate) max_steps: usize,
    /// What was asked when it was more than `MAX_STEPS_CAP` (and capped to it), for
    /// `imurun config show`'s note.
    pub(crate) max_steps_asked: Option<usize>,
    /// `None`: the built-in persona.
    pub(crate) persona: Option<String>,
    pub(crate) summarise_history: bool,
    pub(crate) call_prefill: CallPrefill,
    pub(crate) tool_examples: bool,
    pub(crate) grammar: bool,
    /// Look up what a prompt plainly asks about the present before the model reads it.
    pub(crate) prefetch: bool,
}

/// `[permissions]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PermissionSettings {
    pub(crate) mode: Mode,
    pub(crate) workspace_root: PathBuf,
    /// 1..=`APPROVAL_TIMEOUT_S_MAX`.
    pub(crate) approval_timeout_s: u64,
    pub(crate) toggles: Toggles,
}

/// Everything the configuration is resolved from.
#[derive(Debug)]
pub(crate) struct Sources<'a> {
    /// `--config FILE`.
    pub(crate) config_flag: Option<&'a Path>,
    pub(crate) flags: &'a ConfigFlags,
    pub(crate) environment: &'a Environment,
    /// imurun's folders: the data folder holds the default config file, model and workspace.
    pub(crate) paths: &'a Paths,
}

impl Sources<'_> {
    /// One variable, when set and not blank.
    fn env(&self, name: &str) -> Option<String> {
        self.environment.get(name)
    }
}

impl ResolvedConfig {
    /// Resolves the configuration from `environment`, the file and `flags`.
    pub(crate) fn load(
        config_flag: Option<&Path>,
        flags: &ConfigFlags,
        environment: &Environment,
    ) -> Result<Self> {
        let paths = environment.paths()?;
        resolve(&Sources {
            config_flag,
            flags,
            environment,
            paths: &paths,
        })
    }

    /// Checks the rules that join several keys. Today one: a server that listens beyond this
    /// machine must require a token, because whoever reaches the API can have the agent run
    /// shell commands and edit files here.
    pub(crate) fn validate(&self) -> Result<()> {
        let addr = self.server.addr;
        if self.keep.enabled && self.server.api_token.is_some() {
            bail!(
                "Keep mode is on and server.api_token is set ({}): in Keep mode the Keep tokens \
                 (`imurun keep token create`) are the only tokens; remove the API token",
                self.origin("server.api_token")
            );
        }
        if !addr.ip().is_loopback() && self.server.api_token.is_none() && !self.keep.enabled {
            bail!(
                "server.addr {addr} ({}) is not a loopback address, so other machines could reach \
                 the API, and the API can run shell commands and change files on this machine: \
                 set an API token (server.api_token in the config file, IMURUN_API_TOKEN, or \
                 --api-token), or bind to 127.0.0.1",
                self.origin("server.addr")
            );
        }
        Ok(())
    }

    /// Where `key` (dotted, as in the file: `permissions.mode`) came from. The server applies a
    /// stored setting only where [`Origin::yields_to_stored_settings`] says so.
    pub(crate) fn origin(&self, key: &str) -> Origin {
        self.origins.get(key).copied().unwrap_or(Origin::Default)
    }
}

/// The keys the server's settings endpoints store, by config key: (config key, setting key).
/// The setting keys are the store's (`agent.maxSteps`); `docs/configuration.md` has the table.
pub(crate) const STORED_SETTINGS: [(&str, &str); 12] = [
    ("agent.max_steps", "agent.maxSteps"),
    ("agent.persona", "agent.persona"),
    ("agent.summarise_history", "agent.summariseHistory"),
    ("agent.call_prefill", "agent.callPrefill"),
    ("agent.tool_examples", "agent.toolExamples"),
    ("agent.grammar", "agent.grammar"),
    ("permissions.mode", "permissions.mode"),
    (
        "permissions.approval_timeout_s",
        "permissions.approvalTimeout",
    ),
    ("permissions.toggles.read_files", "permissions.readFiles"),
    ("permissions.toggles.write_files", "permissions.writeFiles"),
    ("permissions.toggles.run_shell", "permissions.runShell"),
    ("permissions.toggles.network", "permissions.network"),
];

/// The server's setting key for config `key`, if the server stores one.
pub(crate) fn stored_setting_key(key: &str) -> Option<&'static str> {
    STORED_SETTINGS
        .iter()
        .find(|(config_key, _)| *config_key == key)
        .map(|(_, setting)| *setting)
}

/// Resolves every key from `sources`, reading the config file if there is one.
pub(crate) fn resolve(sources: &Sources<'_>) -> Result<ResolvedConfig> {
    let (path, required) = config_file_path(sources);
    let text = read_config_file(&path, required)?;
    resolve_with_file(sources, text.as_deref().map(|text| (path.as_path(), text)))
}

/// Resolves every key from `sources` and the file's text (`None`: no file).
pub(crate) fn resolve_with_file(
    sources: &Sources<'_>,
    file: Option<(&Path, &str)>,
) -> Result<ResolvedConfig> {
    let parsed = match file {
        Some((path, text)) => toml::from_str::<FileConfig>(text)
            .map_err(|error| anyhow!("config file {}: {error}", path.display()))?,
        None => FileConfig::default(),
    };
    let file_dir = file
        .and_then(|(path, _)| path.parent())
        .unwrap_or(Path::new("."));
    let in_file = |path: &Path| file_path(path, file_dir, sources.paths.home.as_deref());
    let flags = sources.flags;
    let mut pick = Picker {
        environment: sources.environment,
        origins: BTreeMap::new(),
    };

    let model_default = sources
        .paths
        .data_dir
        .join("models")
        .join(DEFAULT_MODEL_FILE);
    let model = pick.one(
        "model",
        flags.model.clone().map(|model| ("--model", model)),
        "IMURUN_MODEL",
        |text| Ok(text.to_owned()),
        parsed.model.map(|spec| file_model_spec(&spec, &in_file)),
        model_default.to_string_lossy().into_owned(),
    )?;
    let server = ServerConfig {
        addr: pick.one(
            "server.addr",
            flags.addr.map(|addr| ("--addr", addr)),
            "IMURUN_ADDR",
            parse_addr,
            parsed.server.addr,
            ADDR_DEFAULT,
        )?,
        api_token: pick
            .one(
                "server.api_token",
                flags
                    .api_token
                    .clone()
                    .map(|token| ("--api-token", Some(token))),
                "IMURUN_API_TOKEN",
                |text| Ok(Some(text.to_owned())),
                parsed.server.api_token.map(Some),
                None,
            )?
            .filter(|token| !token.trim().is_empty())
            .map(ApiToken::new),
        tls: {
            let cert = pick.one(
                "server.tls_cert",
                flags
                    .tls_cert
                    .clone()
                    .map(|path| ("--tls-cert", Some(path))),
                "IMURUN_TLS_CERT",
                |text| Ok(Some(PathBuf::from(text))),
                parsed
                    .server
                    .tls_cert
                    .map(|path| Some(in_file(Path::new(&path)))),
                None,
            )?;
            let key = pick.one(
                "server.tls_key",
                flags.tls_key.clone().map(|path| ("--tls-key", Some(path))),
                "IMURUN_TLS_KEY",
                |text| Ok(Some(PathBuf::from(text))),
                parsed
                    .server
                    .tls_key
                    .map(|path| Some(in_file(Path::new(&path)))),
                None,
            )?;
            match (cert, key) {
                (Some(cert), Some(key)) => Some(TlsFiles { cert, key }),
                (None, None) => None,
                _ => bail!(
                    "HTTPS needs both a certificate and its key: set server.tls_cert and \
                     server.tls_key (--tls-cert/--tls-key, IMURUN_TLS_CERT/IMURUN_TLS_KEY), or \
                     neither"
                ),
            }
        },
    };
    let agent = resolve_agent(&mut pick, flags, parsed.agent)?;
    let permissions = resolve_permissions(
        &mut pick,
        flags,
        parsed.permissions,
        &in_file,
        sources.paths.data_dir.join("workspace"),
    )?;
    let mcp_servers = parsed.mcp.servers;
    validate_mcp_servers(&mcp_servers).map_err(|error| {
        anyhow::anyhow!(
            "{}: [[mcp.servers]]: {error}",
            file.map_or_else(
                || "the configuration".to_owned(),
                |(path, _)| path.display().to_string()
            )
        )
    })?;
    let keep = KeepConfig {
        enabled: pick.one(
            "keep.enabled",
            None,
            "IMURUN_KEEP",
            parse_bool,
            parsed.keep.enabled,
            false,
        )?,
        dir: pick.one(
            "keep.dir",
            None,
            "IMURUN_KEEP_DIR",
            |text| Ok(PathBuf::from(text)),
            parsed.keep.dir.map(|dir| in_file(Path::new(&dir))),
            sources.paths.data_dir.join("keep"),
        )?,
        egress_loopback_ports: pick.one(
            "keep.egress_loopback_ports",
            None,
            "IMURUN_KEEP_EGRESS_LOOPBACK_PORTS",
            parse_ports,
            parsed.keep.egress_loopback_ports,
            Vec::new(),
        )?,
        host_id: pick
            .one(
                "keep.host_id",
                None,
                "IMURUN_KEEP_HOST_ID",
                parse_host_id,
                parsed.keep.host_id.map(Some),
                None,
            )?
            .filter(|id| !id.is_empty()),
    };
    if let Some(id) = &keep.host_id {
        parse_host_id(id).map_err(|error| anyhow::anyhow!("keep.host_id: {error}"))?;
    }
    if keep.egress_loopback_ports.contains(&0) {
        bail!("keep.egress_loopback_ports: 0 is not a port (1 to 65535)");
    }
    let database_url = pick
        .one(
            "database.url",
            flags.database.clone().map(|url| ("--database", Some(url))),
            "IMURUN_DATABASE_URL",
            |text| Ok(Some(text.trim().to_owned())),
            parsed.database.url.map(Some),
            None,
        )?
        .filter(|url| !url.is_empty())
        .map(DatabaseUrl);
    Ok(ResolvedConfig {
        paths: sources.paths.clone(),
        file: file.map(|(path, _)| path.to_path_buf()),
        model,
        server,
        agent,
        permissions,
        mcp_servers,
        keep,
        database_url,
        variables: Variables::read(sources.environment)?,
        origins: pick.origins,
    })
}

/// A host's name: 1 to 100 characters, ASCII letters, digits and `.`, `_`, `-`, `:`.
fn parse_host_id(text: &str) -> Result<Option<String>, String> {
    let text = text.trim();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':');
    if text.is_empty() || text.len() > 100 || !text.chars().all(allowed) {
        return Err(format!(
            "`{text}` is not a host name: 1 to 100 ASCII letters, digits, `.`, `_`, `-` or `:`"
        ));
    }
    Ok(Some(text.to_owned()))
}

/// A comma-separated list of ports, 1 to 65535 (empty: none).
fn parse_ports(text: &str) -> Result<Vec<u16>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| match part.parse::<u16>() {
            Ok(port) if port > 0 => Ok(port),
            _ => Err(format!("`{part}` is not a port (1 to 65535)")),
        })
        .collect()
}

fn resolve_agent(
    pick: &mut Picker<'_>,
    flags: &ConfigFlags,
    file: FileAgent,
) -> Result<AgentSettings> {
    let max_steps_asked = pick.one(
        "agent.max_steps",
        flags.max_steps.map(|steps| ("--max-steps", steps)),
        "IMURUN_MAX_STEPS",
        parse_max_steps,
        file.max_steps,
        MAX_STEPS_DEFAULT,
    )?;
    Ok(AgentSettings {
        // The seed's cap: a turn takes at most 20 steps, whatever was asked.
        max_steps: max_steps_asked.min(MAX_STEPS_CAP),
        max_steps_asked: (max_steps_asked > MAX_STEPS_CAP).then_some(max_steps_asked),
        persona: pick.one(
            "agent.persona",
            None,
            "IMURUN_PERSONA",
            |text| Ok(Some(text.to_owned())),
            file.persona.map(Some),
            None,
        )?,
        summarise_history: pick.one(
            "agent.summarise_history",
            None,
            "IMURUN_SUMMARISE_HISTORY",
            parse_bool,
            file.summarise_history,
            true,
        )?,
        call_prefill: pick.one(
            "agent.call_prefill",
            None,
            "IMURUN_CALL_PREFILL",
            CallPrefill::from_str,
            file.call_prefill,
            CallPrefill::default(),
        )?,
        tool_examples: pick.one(
            "agent.tool_examples",
            None,
            "IMURUN_TOOL_EXAMPLES",
            parse_bool,
            file.tool_examples,
            true,
        )?,
        grammar: pick.one(
            "agent.grammar",
            None,
            "IMURUN_GRAMMAR",
            parse_bool,
            file.grammar,
            true,
        )?,
        prefetch: pick.one(
            "agent.prefetch",
            None,
            "IMURUN_PREFETCH",
            parse_bool,
            file.prefetch,
            true,
        )?,
    })
}

fn resolve_permissions(
    pick: &mut Picker<'_>,
    flags: &ConfigFlags,
    file: FilePermissions,
    in_file: &dyn Fn(&Path) -> PathBuf,
    workspace_default: PathBuf,
) -> Result<PermissionSettings> {
    let defaults = Toggles::default();
    let toggle = |pick: &mut Picker<'_>, key, env, value: Option<bool>, default| {
        pick.one(key, None, env, parse_bool, value, default)
    };
    let toggles = Toggles {
        read_files: toggle(
            pick,
            "permissions.toggles.read_files",
            "IMURUN_READ_FILES",
            file.toggles.read_files,
            defaults.read_files,
        )?,
        write_files: toggle(
            pick,
            "permissions.toggles.write_files",
            "IMURUN_WRITE_FILES",
            file.toggles.write_files,
            defaults.write_files,
        )?,
        run_shell: toggle(
            pick,
            "permissions.toggles.run_shell",
            "IMURUN_RUN_SHELL",
            file.toggles.run_shell,
            defaults.run_shell,
        )?,
        network: toggle(
            pick,
            "permissions.toggles.network",
            "IMURUN_NETWORK",
            file.toggles.network,
            defaults.network,
        )?,
    };
    Ok(PermissionSettings {
        mode: pick.one(
            "permissions.mode",
            flags.mode.map(|mode| ("--mode", mode)),
            "IMURUN_MODE",
            |text| Mode::from_str(text).map_err(|error| error.to_string()),
            file.mode,
            Mode::default(),
        )?,
        workspace_root: pick.one(
            "permissions.workspace_root",
            flags.workspace.clone().map(|dir| ("--workspace", dir)),
            "IMURUN_WORKSPACE",
            |text| Ok(PathBuf::from(text)),
            file.workspace_root.as_deref().map(in_file),
            workspace_default,
        )?,
        approval_timeout_s: pick.one(
            "permissions.approval_timeout_s",
            flags
                .approval_timeout_s
                .map(|s| ("--approval-timeout-s", s)),
            "IMURUN_APPROVAL_TIMEOUT_S",
            parse_approval_timeout_s,
            file.approval_timeout_s,
            APPROVAL_TIMEOUT_S_DEFAULT,
        )?,
        toggles,
    })
}

/// Picks each key's value from the highest layer that has one, and remembers which it was.
struct Picker<'a> {
    environment: &'a Environment,
    origins: BTreeMap<&'static str, Origin>,
}

impl Picker<'_> {
    /// Flag, then environment variable (an empty one counts as unset), then file, then default.
    fn one<T>(
        &mut self,
        key: &'static str,
        flag: Option<(&'static str, T)>,
        env_name: &'static str,
        parse: impl Fn(&str) -> Result<T, String>,
        file: Option<T>,
        default: T,
    ) -> Result<T> {
        let (value, origin) = if let Some((flag_name, value)) = flag {
            (value, Origin::Flag(flag_name))
        } else if let Some(text) = self.environment.get(env_name) {
            let value = parse(text.trim()).map_err(|why| anyhow!("{env_name}: {why}"))?;
            (value, Origin::Env(env_name))
        } else if let Some(value) = file {
            (value, Origin::File)
        } else {
            (default, Origin::Default)
        };
        self.origins.insert(key, origin);
        Ok(value)
    }
}

/// The file to read and whether it must exist: `--config`, then `IMURUN_CONFIG` (both must
/// exist: a file named on purpose that is missing is a mistake), then the default one.
fn config_file_path(sources: &Sources<'_>) -> (PathBuf, bool) {
    if let Some(path) = sources.config_flag {
        return (path.to_path_buf(), true);
    }
    match sources.env("IMURUN_CONFIG") {
        Some(path) => (PathBuf::from(path.trim()), true),
        None => (sources.paths.data_dir.join(CONFIG_FILE_NAME), false),
    }
}

fn read_config_file(path: &Path, required: bool) -> Result<Option<String>> {
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !required => {
            return Ok(None);
        }
        Err(error) => {
            return Err(error).with_context(|| format!("config file {}", path.display()));
        }
    };
    if metadata.len() > CONFIG_FILE_BYTES_MAX {
        bail!(
            "config file {}: {} bytes is more than the {CONFIG_FILE_BYTES_MAX} a config file may have",
            path.display(),
            metadata.len()
        );
    }
    std::fs::read_to_string(path)
        .map(Some)
        .with_context(|| format!("config file {}", path.display()))
}

/// A path written in the file: `~/` is the home folder, and a relative path is relative to the
/// file's folder, so that the file means the same whatever folder imurun runs in.
fn file_path(path: &Path, file_dir: &Path, home: Option<&Path>) -> PathBuf {
    if let (Ok(rest), Some(home)) = (path.strip_prefix("~"), home) {
        return home.join(rest);
    }
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        file_dir.join(path)
    }
}

/// The file's model spec, with its GGUF or script path read as a path in the file.
fn file_model_spec(spec: &str, in_file: &dyn Fn(&Path) -> PathBuf) -> String {
    match ModelSpec::parse(spec) {
        ModelSpec::Gguf(path) => in_file(&path).to_string_lossy().into_owned(),
        ModelSpec::Scripted(path) => format!("scripted:{}", in_file(&path).display()),
        ModelSpec::OpenAi(_) | ModelSpec::Ollama(_) => spec.to_owned(),
    }
}

#[cfg(test)]
mod tests;
