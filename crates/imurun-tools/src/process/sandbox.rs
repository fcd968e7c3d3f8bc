//! The OS sandbox around every process imurun starts. On Linux it is Landlock: the process
//! may write, remove, rename and make folders only beneath the folders it is given (the
//! workspace and a private temporary folder) and a few harmless devices (`/dev/null`, ...);
//! reads are left as they are; with the network toggle off it cannot connect or bind TCP
//! sockets, and a seccomp filter refuses the sockets Landlock does not cover (UDP, raw, packet,
//! SCTP, MPTCP, vsock, and io_uring); it cannot signal processes outside its sandbox nor reach
//! abstract Unix sockets made outside it. The deny-list still runs first: the sandbox is what holds when a command the
//! list does not model gets through.
//!
//! Landlock restricts the calling thread and everything it starts afterwards, so the ruleset
//! is applied to a short-lived thread of its own, which starts the process and ends. No thread
//! imurun keeps is ever restricted, and no code runs between `fork` and `exec` (no
//! `pre_exec`, no `unsafe`).
//!
//! Where the kernel has no Landlock (or the system is not Linux) processes run as before, and
//! [`sandbox_status`] says so. Where it has Landlock and a ruleset cannot be applied, the
//! process is not started: the sandbox fails closed.

use std::path::Path;
use std::sync::OnceLock;

use imurun_core::SandboxStatus;

/// What a confined process may write and reach.
#[derive(Debug, Clone, Copy)]
pub struct Confinement<'a> {
    /// Folders the process may write in, and everything beneath them.
    pub writable: &'a [&'a Path],
    /// Whether TCP connect and bind stay allowed. With `false` both are refused, where the
    /// kernel's Landlock has network rules (ABI 4 and later).
    pub network: bool,
}

/// What the sandbox enforces on this machine; probed once, by applying a ruleset to a
/// throwaway thread, so the report is what the kernel did, not what it claims.
pub fn sandbox_status() -> SandboxStatus {
    static STATUS: OnceLock<SandboxStatus> = OnceLock::new();
    STATUS.get_or_init(platform::probe).clone()
}

/// Starts `command` confined as `confinement` says. Must be called inside a Tokio runtime.
pub fn spawn_confined(
    command: &mut tokio::process::Command,
    confinement: &Confinement<'_>,
) -> std::io::Result<tokio::process::Child> {
    match sandbox_status() {
        SandboxStatus::None { .. } => command.spawn(),
        SandboxStatus::Landlock { .. } => platform::spawn(command, confinement),
    }
}

/// Starts `command` confined to `writable` plus a private temporary folder made for it in
/// `temp_parent` (named `prefix…`, given to it as `TMPDIR`). The folder is removed, with
/// everything in it, when the returned value is dropped: keep it while the process runs.
pub(crate) fn spawn_with_private_temp(
    command: &mut tokio::process::Command,
    writable: &[&Path],
    network: bool,
    temp_parent: &Path,
    prefix: &str,
) -> std::io::Result<(tokio::process::Child, tempfile::TempDir)> {
    let private_temp = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(temp_parent)?;
    command.env("TMPDIR", private_temp.path());
    let mut folders = writable.to_vec();
    folders.push(private_temp.path());
    let confinement = Confinement {
        writable: &folders,
        network,
    };
    let child = spawn_confined(command, &confinement)?;
    Ok((child, private_temp))
}

#[cfg(target_os = "linux")]
mod platform {
    use std::collections::BTreeMap;
    use std::io;
    use std::path::Path;

    use imurun_core::SandboxStatus;
    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, PathBeneath, PathFd,
        RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus,
        Scope,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::Confinement;

    /// The newest Landlock ABI whose rights imurun asks for and has been tested with. A newer
    /// kernel adds rights (ABI 9's control over named Unix sockets, say) only once they are
    /// added here and tested; an older one gets what it has (the crate's best effort).
    const ABI_USED: ABI = ABI::V7;

    /// Devices every program may write to, whatever folder it was confined to: discarding
    /// output is not a way out. Missing ones are skipped.
    const WRITABLE_DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

    /// The rights the sandbox takes away outside the writable folders: every kind of write,
    /// removal, rename, link, truncation and device control. Reading and running programs are
    /// not handled, so they stay as the user's own rights allow.
    fn write_rights() -> BitFlags<AccessFs> {
        AccessFs::from_write(ABI_USED)
    }

    pub(super) fn probe() -> SandboxStatus {
        let applied = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let ruleset = ruleset(&Confinement {
                        writable: &[],
                        network: false,
                    })?;
                    ruleset.restrict_self().map_err(io::Error::other)
                })
                .join()
        });
        match applied {
            Ok(Ok(status)) => report(&status),
            Ok(Err(error)) => SandboxStatus::None {
                reason: format!(
                    "this kernel offers Landlock but a ruleset could not be applied ({error}); \
                     commands run with the user's own rights"
                ),
            },
            Err(_) => SandboxStatus::None {
                reason: "the Landlock probe failed; commands run with the user's own rights"
                    .to_string(),
            },
        }
    }

    fn report(status: &RestrictionStatus) -> SandboxStatus {
        match (&status.ruleset, &status.landlock) {
            (
                RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced,
                LandlockStatus::Available { effective_abi, .. },
            ) => {
                let in_force = (*effective_abi).min(ABI_USED);
                SandboxStatus::Landlock {
                    abi: abi_number(in_force),
                    filesystem: true,
                    network: in_force >= ABI::V4,
                    scoped: in_force >= ABI::V6,
                }
            }
            (_, LandlockStatus::NotEnabled) => SandboxStatus::None {
                reason: "this Linux kernel has Landlock but it is not enabled at boot (add \
                         `landlock` to the `lsm=` kernel parameter); commands run with the \
                         user's own rights"
                    .to_string(),
            },
            _ => SandboxStatus::None {
                reason: "this Linux kernel has no Landlock (it needs Linux 5.13 or later, built \
                         with CONFIG_SECURITY_LANDLOCK); commands run with the user's own rights"
                    .to_string(),
            },
        }
    }

    /// The ABI's number (its `Display` is the number for every supported version).
    fn abi_number(abi: ABI) -> u32 {
        abi.to_string().parse().unwrap_or(0)
    }

    /// The ruleset for one process, with its rules added; not yet applied.
    fn ruleset(confinement: &Confinement<'_>) -> io::Result<RulesetCreated> {
        let write = write_rights();
        let mut ruleset = Ruleset::default()
            .handle_access(write)
            .map_err(io::Error::other)?
            .scope(Scope::from_all(ABI_USED))
            .map_err(io::Error::other)?;
        if !confinement.network {
            // No rule allows any port, so every TCP connect and bind is refused.
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI_USED))
                .map_err(io::Error::other)?;
        }
        let mut created = ruleset.create().map_err(io::Error::other)?;
        for folder in confinement.writable {
            created = created
                .add_rule(PathBeneath::new(open(folder)?, write))
                .map_err(io::Error::other)?;
        }
        let device_rights = write & AccessFs::from_file(ABI_USED);
        for device in WRITABLE_DEVICES {
            let Ok(fd) = PathFd::new(device) else {
                continue;
            };
            created = created
                .add_rule(PathBeneath::new(fd, device_rights))
                .map_err(io::Error::other)?;
        }
        Ok(created)
    }

    fn open(folder: &Path) -> io::Result<PathFd> {
        PathFd::new(folder).map_err(|error| {
            io::Error::other(format!(
                "cannot open {} for the sandbox: {error}",
                folder.display()
            ))
        })
    }

    /// With the network toggle off, the sockets Landlock's TCP rules do not cover: datagram,
    /// raw, sequenced and packet sockets of IPv4 and IPv6 (UDP, ICMP, raw IP), stream sockets
    /// of any protocol but TCP (SCTP; MPTCP, which falls back to plain TCP toward any server),
    /// packet and vsock sockets, and io_uring, whose socket operations pass by system-call
    /// filters. Each is refused with `EPERM`; TCP stream sockets are left to Landlock.
    fn network_filter() -> io::Result<BpfProgram> {
        let condition = |arg: u8, op: SeccompCmpOp, value: u64| {
            SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(io::Error::other)
        };
        let rule = |conditions: Vec<SeccompCondition>| {
            SeccompRule::new(conditions).map_err(io::Error::other)
        };
        let family = |family: libc::c_int| u64::try_from(family).unwrap_or(u64::MAX);
        let mut socket = Vec::new();
        for ip in [family(libc::AF_INET), family(libc::AF_INET6)] {
            for kind in [
                libc::SOCK_DGRAM,
                libc::SOCK_RAW,
                libc::SOCK_RDM,
                libc::SOCK_SEQPACKET,
                libc::SOCK_DCCP,
                // SOCK_PACKET, the old packet type, which `libc` marks deprecated.
                10,
            ] {
                socket.push(rule(vec![
                    condition(0, SeccompCmpOp::Eq, ip)?,
                    condition(1, SeccompCmpOp::MaskedEq(0xf), family(kind))?,
                ])?);
            }
            // Protocol 0 and 6 are TCP; anything above or between is another protocol.
            socket.push(rule(vec![
                condition(0, SeccompCmpOp::Eq, ip)?,
                condition(2, SeccompCmpOp::Gt, 6)?,
            ])?);
            socket.push(rule(vec![
                condition(0, SeccompCmpOp::Eq, ip)?,
                condition(2, SeccompCmpOp::Ge, 1)?,
                condition(2, SeccompCmpOp::Lt, 6)?,
            ])?);
        }
        for other in [family(libc::AF_PACKET), family(libc::AF_VSOCK)] {
            socket.push(rule(vec![condition(0, SeccompCmpOp::Eq, other)?])?);
        }
        let mut rules = BTreeMap::new();
        rules.insert(libc::SYS_socket, socket);
        // No conditions: every call is refused.
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(io::Error::other)?;
        let refused = SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1));
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, refused, arch)
            .map_err(io::Error::other)?;
        filter.try_into().map_err(io::Error::other)
    }

    pub(super) fn spawn(
        command: &mut tokio::process::Command,
        confinement: &Confinement<'_>,
    ) -> io::Result<tokio::process::Child> {
        // Built here, where opening the folders may fail with a clear error; applied below.
        let ruleset = ruleset(confinement)?;
        let filter = if confinement.network {
            None
        } else {
            Some(network_filter()?)
        };
        let runtime = tokio::runtime::Handle::current();
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    // The child is registered with the runtime's process driver from here.
                    let _entered = runtime.enter();
                    let status = ruleset.restrict_self().map_err(io::Error::other)?;
                    if status.ruleset == RulesetStatus::NotEnforced {
                        return Err(io::Error::other(
                            "the Landlock ruleset was not enforced; the command was not started",
                        ));
                    }
                    if let Some(filter) = &filter {
                        seccompiler::apply_filter(filter).map_err(|error| {
                            io::Error::other(format!(
                                "the network filter could not be applied ({error}); the command \
                                 was not started"
                            ))
                        })?;
                    }
                    command.spawn()
                })
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the sandboxed start failed")))
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use imurun_core::SandboxStatus;

    use super::Confinement;

    pub(super) fn probe() -> SandboxStatus {
        SandboxStatus::None {
            reason: "the OS sandbox is Linux's Landlock, and this system is not Linux (Seatbelt \
                     on macOS is not built yet); commands run with the user's own rights"
                .to_string(),
        }
    }

    pub(super) fn spawn(
        command: &mut tokio::process::Command,
        _confinement: &Confinement<'_>,
    ) -> std::io::Result<tokio::process::Child> {
        command.spawn()
    }
}
