//! Finding and killing every process one shell run started, including those that left its
//! process group.
//!
//! The shell starts in a process group of its own, so one signal to the group reaches every
//! process that stayed in it. A process can leave the group (`setsid`, `setpgid`), so on
//! Linux each run is also tagged with a unique environment variable, inherited by everything
//! it starts, and `/proc` is scanned for three kinds of member: processes in the group,
//! processes carrying the tag, and children of either (a child that cleared its environment
//! and left the group is still found while its parent lives). Every member found is
//! remembered by pid and start time, so a member that later changes group or is reparented
//! is still killed, and a recycled pid never is.
//!
//! What this cannot catch: a process that left the group, cleared its environment *and*
//! whose parent already exited before the scan (a double-forked daemon started with
//! `env -i`); on macOS, where there is no `/proc`, anything that left the group. Only a
//! cgroup or a PID namespace bounds those, which is a sandbox's job, not this tool's.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

/// The environment variable that tags every process of one run.
pub(crate) const RUN_TAG_VAR: &str = "IMURUN_RUN_TAG";

/// How often a kill checks whether the run's processes are gone.
const POLL_MS: u64 = 10;

/// SIGKILL rounds before giving up on a process that will not die (stuck in the kernel).
/// Each round also catches processes forked since the previous one.
const KILL_ROUNDS_MAX: usize = 20;

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A tag no other run of any imurun process shares: this process's id, a counter, and a
/// random salt (so a command cannot predict another run's tag and hide in it).
pub(crate) fn new_tag() -> String {
    let count = RUN_COUNTER.fetch_add(1, Ordering::Relaxed);
    let salt = RandomState::new().hash_one(count);
    format!("{}-{count}-{salt:016x}", std::process::id())
}

/// The processes of one run.
#[derive(Debug)]
pub(crate) struct ProcessTree {
    /// The run's process group, or `None` when its id could not be signalled safely.
    group: Option<Pid>,
    /// `RUN_TAG_VAR=tag`, exactly as it appears in `/proc/<pid>/environ`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    tag_entry: Vec<u8>,
    /// Every member seen so far: pid → start time (clock ticks after boot).
    known: HashMap<i32, u64>,
    /// The shell's start time. Nothing that started before it can be part of the run, so
    /// older processes are skipped without reading their environment.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    shell_start: Option<u64>,
}

/// Members still alive at one look. On Linux `members` lists them; elsewhere only `any`.
struct Alive {
    members: Vec<(i32, u64)>,
    any: bool,
}

impl ProcessTree {
    /// The tree of a shell started as the leader of process group `group_id` with `tag`.
    pub(crate) fn new(group_id: u32, tag: &str) -> Self {
        Self {
            group: safe_group(group_id),
            tag_entry: format!("{RUN_TAG_VAR}={tag}").into_bytes(),
            known: HashMap::new(),
            shell_start: i32::try_from(group_id).ok().and_then(procfs::start_time),
        }
    }

    /// Ends every process of the run: SIGTERM, up to `grace` for them to exit, then SIGKILL
    /// until none is left. Returns at once when nothing is left to kill. Returns whether every
    /// process is gone.
    pub(crate) async fn terminate(&mut self, grace: Duration) -> bool {
        let alive = self.alive();
        if !alive.any {
            return true;
        }
        self.signal(Signal::TERM, &alive.members);
        let deadline = Instant::now() + grace;
        loop {
            tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
            if !self.alive().any {
                return true;
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        for _ in 0..KILL_ROUNDS_MAX {
            let alive = self.alive();
            if !alive.any {
                return true;
            }
            self.signal(Signal::KILL, &alive.members);
            tokio::time::sleep(Duration::from_millis(POLL_MS)).await;
        }
        !self.alive().any
    }

    /// SIGKILL to every process of the run, once and without waiting: for a run whose
    /// future was dropped, where there is no time to be polite.
    pub(crate) fn kill_now(&mut self) {
        let alive = self.alive();
        self.signal(Signal::KILL, &alive.members);
    }

    fn signal(&self, signal: Signal, members: &[(i32, u64)]) {
        if let Some(group) = self.group {
            // ESRCH (the group is empty) is the good case; nothing else can be done on error.
            let _ = rustix::process::kill_process_group(group, signal);
        }
        for &(pid, start) in members {
            // Signal only the process that was seen: same pid *and* same start time.
            if procfs::start_time(pid) == Some(start)
                && let Some(pid) = safe_pid(pid)
            {
                let _ = rustix::process::kill_process(pid, signal);
            }
        }
    }

    #[cfg(target_os = "linux")]
    fn alive(&mut self) -> Alive {
        let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
        let group = self.group.map(Pid::as_raw_pid);
        let all: Vec<procfs::Stat> = procfs::all()
            .into_iter()
            .filter(|process| process.pid != me && !process.zombie)
            .filter(|process| self.shell_start.is_none_or(|shell| process.start >= shell))
            .collect();
        let mut members: HashSet<i32> = all
            .iter()
            .filter(|process| {
                Some(process.pgrp) == group
                    || self.known.get(&process.pid) == Some(&process.start)
                    || procfs::has_environment_entry(process.pid, &self.tag_entry)
            })
            .map(|process| process.pid)
            .collect();
        // Children of members, transitively. Each pass adds at least one process or stops,
        // so this runs at most once per process on the machine.
        for _ in 0..all.len() {
            let before = members.len();
            for process in &all {
                if members.contains(&process.ppid) {
                    members.insert(process.pid);
                }
            }
            if members.len() == before {
                break;
            }
        }
        let members: Vec<(i32, u64)> = all
            .iter()
            .filter(|process| members.contains(&process.pid))
            .map(|process| (process.pid, process.start))
            .collect();
        self.known.extend(members.iter().copied());
        let any = !members.is_empty();
        Alive { members, any }
    }

    #[cfg(not(target_os = "linux"))]
    fn alive(&mut self) -> Alive {
        // Without /proc only the group can be seen: signal 0 says whether it has members.
        let any = self
            .group
            .is_some_and(|group| rustix::process::test_kill_process_group(group).is_ok());
        Alive {
            members: Vec::new(),
            any,
        }
    }
}

/// SIGKILL to every process in group `group_id`, at once and without waiting; nothing when the
/// id is not safe to signal (see [`safe_group`]).
pub(crate) fn kill_group(group_id: u32) {
    if let Some(group) = safe_group(group_id) {
        // ESRCH (the group is already empty) is the good case; nothing else can be done.
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
}

/// The group id as a `Pid` that is safe to pass to `kill(-pid)`: never 0 or 1 (`kill(-1)`
/// signals every process the user owns) and never this process's own group.
fn safe_group(group_id: u32) -> Option<Pid> {
    let raw = i32::try_from(group_id).ok().filter(|&raw| raw > 1)?;
    let pid = Pid::from_raw(raw)?;
    (pid != rustix::process::getpgrp()).then_some(pid)
}

/// A member's pid, if it is safe to signal: not init, not this process.
fn safe_pid(raw: i32) -> Option<Pid> {
    let me = i32::try_from(std::process::id()).ok()?;
    if raw <= 1 || raw == me {
        return None;
    }
    Pid::from_raw(raw)
}

/// Reading `/proc`. Every function here fails soft: a process that exits while it is read
/// simply is not there.
#[cfg(target_os = "linux")]
mod procfs {
    use std::fs;

    /// The fields of `/proc/<pid>/stat` the tree needs.
    pub(super) struct Stat {
        pub(super) pid: i32,
        pub(super) ppid: i32,
        pub(super) pgrp: i32,
        pub(super) start: u64,
        pub(super) zombie: bool,
    }

    /// Every process on the machine. Bounded by the kernel's `pid_max`.
    pub(super) fn all() -> Vec<Stat> {
        let Ok(entries) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(stat)
            .collect()
    }

    pub(super) fn stat(pid: i32) -> Option<Stat> {
        let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces and `)`: the
        // fields that follow start after the last `)`.
        let after_name = &text[text.rfind(')')? + 1..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // Fields 3 (state), 4 (ppid), 5 (pgrp) and 22 (start time) of proc(5).
        Some(Stat {
            pid,
            zombie: matches!(*fields.first()?, "Z" | "X"),
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
        })
    }

    pub(super) fn start_time(pid: i32) -> Option<u64> {
        stat(pid).map(|stat| stat.start)
    }

    /// Whether the process's environment holds exactly `entry` (`NAME=value`). Fails soft:
    /// another user's process cannot be read, and is not ours anyway.
    pub(super) fn has_environment_entry(pid: i32, entry: &[u8]) -> bool {
        fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|&byte| byte == 0)
                .any(|variable| variable == entry)
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod procfs {
    /// Without `/proc` no single member is known, so none is signalled by pid.
    pub(super) fn start_time(_pid: i32) -> Option<u64> {
        None
    }
}
