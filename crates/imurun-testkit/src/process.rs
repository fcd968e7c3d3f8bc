//! Whether a process is gone, for tests that check what a tool or a server left running.

use std::fs;

/// Whether the process is gone: no `/proc` entry, or only a zombie nobody has reaped yet (in
/// a container the reaper may be missing; a zombie runs nothing).
pub fn is_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // The state follows the command name, which is in parentheses and may hold spaces.
            let after_name = stat.rfind(')').map_or("", |end| &stat[end + 1..]);
            let state = after_name.split_whitespace().next().unwrap_or("");
            matches!(state, "Z" | "X")
        }
    }
}
