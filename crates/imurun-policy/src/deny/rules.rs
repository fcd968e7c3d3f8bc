//! The rules for one program and its arguments, once wrappers are looked through: each says
//! why a call is destructive, or nothing. POSIX, cmd.exe and PowerShell names share one
//! table, because agents write all three whatever the machine is.

use std::cell::LazyCell;

use super::lexer::{Command, Pipeline, Word};
use super::runners::{Step, command_name, effective};
use super::targets::{dangerous, is_raw_disk};

/// Why running `name` with `args` is destructive, or `None`. `cwd` is the folder an earlier
/// `cd` in the same command line moved to, when it is known.
pub(crate) fn destructive(name: &str, args: &[Word], cwd: Option<&str>) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|word| word.text.as_str()).collect();
    // Lowercased only when a rule reads it: most commands have no rule at all.
    let lowered_owned = LazyCell::new(|| {
        texts
            .iter()
            .map(|t| t.to_ascii_lowercase())
            .collect::<Vec<_>>()
    });
    let lowered = LazyCell::new(|| {
        lowered_owned
            .iter()
            .map(String::as_str)
            .collect::<Vec<&str>>()
    });
    match name {
        "rm" | "remove-item" | "ri" | "del" | "erase" | "rd" | "rmdir" => {
            recursive_delete(name, &texts, &lowered, cwd)
        }
        "chmod" | "chown" | "chgrp" => recursive_change(name, &texts, cwd),
        "find" => find_delete(&texts, &lowered, cwd),
        "dd" => texts.iter().find_map(|t| {
            let target = t.strip_prefix("of=")?;
            is_raw_disk(target).then(|| format!("writes to the raw disk `{target}`"))
        }),
        "tee" | "shred" | "truncate" | "wipe" => raw_disk_among(&texts),
        "cp" | "install" | "ddrescue" => {
            let last = texts.iter().rev().find(|t| !t.starts_with('-'))?;
            raw_disk_among(&[last])
        }
        "blkdiscard" => Some("discards every block of a disk".to_string()),
        _ if is_mkfs(name) => {
            Some("makes a new filesystem, erasing what the disk held".to_string())
        }
        "diskutil" => {
            const ERASING: &[&str] = &[
                "erasedisk",
                "erasevolume",
                "partitiondisk",
                "zerodisk",
                "randomdisk",
                "secureerase",
                "reformat",
            ];
            let verb = lowered.first()?;
            ERASING
                .contains(verb)
                .then(|| format!("erases a disk (`diskutil {verb}`)"))
        }
        "shutdown" | "reboot" | "halt" | "poweroff" | "restart-computer" | "stop-computer" => {
            Some("shuts down or restarts the machine".to_string())
        }
        "init" | "telinit" => matches!(lowered.first(), Some(&("0" | "6")))
            .then(|| "shuts down or restarts the machine".to_string()),
        "systemctl" | "loginctl" => {
            const POWER: &[&str] = &["poweroff", "reboot", "halt", "kexec", "soft-reboot"];
            let verb = lowered.iter().find(|t| !t.starts_with('-'))?;
            POWER
                .contains(verb)
                .then(|| "shuts down or restarts the machine".to_string())
        }
        "format" => lowered
            .iter()
            .find(|t| is_drive(t))
            .map(|drive| format!("formats drive `{drive}`")),
        "format-volume" | "clear-disk" | "initialize-disk" | "remove-partition" => {
            Some(format!("`{name}` erases a disk or volume"))
        }
        "diskpart" => Some("`diskpart` can erase and repartition disks".to_string()),
        "bcdedit" => Some("`bcdedit` changes how the machine boots".to_string()),
        "reg" => (lowered.first() == Some(&"delete")).then(|| "deletes registry keys".to_string()),
        "vssadmin" => lowered
            .iter()
            .any(|t| *t == "delete" || *t == "resize")
            .then(|| "deletes the shadow copies Windows restores from".to_string()),
        "wmic" => (lowered.iter().any(|t| t.contains("shadowcopy")) && lowered.contains(&"delete"))
            .then(|| "deletes the shadow copies Windows restores from".to_string()),
        "wbadmin" => lowered
            .contains(&"delete")
            .then(|| "deletes the backups Windows restores from".to_string()),
        "cipher" => lowered
            .iter()
            .any(|t| t.starts_with("/w"))
            .then(|| "`cipher /w` overwrites all free space on a drive".to_string()),
        "net" | "net1" => (matches!(lowered.first(), Some(&("user" | "localgroup")))
            && lowered.contains(&"/add"))
        .then(|| "adds a user account or group member".to_string()),
        "new-localuser" => Some("adds a user account".to_string()),
        "add-localgroupmember" => lowered
            .iter()
            .any(|t| t.contains("administrators"))
            .then(|| "adds a member to the Administrators group".to_string()),
        "icacls" | "cacls" => lowered
            .iter()
            .any(|t| grants_everyone_full(t))
            .then(|| "gives Everyone full control".to_string()),
        "takeown" => texts
            .iter()
            .filter(|t| !t.starts_with('/'))
            .find_map(|t| dangerous(t, cwd))
            .map(|what| format!("takes ownership of {what}")),
        "set-executionpolicy" => lowered
            .iter()
            .any(|t| *t == "bypass" || *t == "unrestricted")
            .then(|| "turns off PowerShell's script execution policy".to_string()),
        _ => None,
    }
}

/// Rules that need a whole pipeline: PowerShell deletes shadow copies by piping
/// `Get-WmiObject Win32_ShadowCopy` into `Remove-WmiObject` or a `.Delete()` call.
pub(crate) fn pipeline_reason(pipeline: &Pipeline) -> Option<String> {
    let mut mentions_shadow_copies = false;
    let mut removes = false;
    for command in &pipeline.commands {
        if let Some(first) = command.words.first()
            && command_name(&first.text).starts_with("remove-")
        {
            removes = true;
        }
        for word in &command.words {
            let lowered = word.text.to_ascii_lowercase();
            mentions_shadow_copies |= lowered.contains("shadowcopy");
            removes |= lowered.contains("delete");
        }
    }
    (mentions_shadow_copies && removes && pipeline.commands.len() > 1)
        .then(|| "deletes the shadow copies Windows restores from".to_string())
}

/// `find / | xargs rm -rf`, `Get-ChildItem C:\ | Remove-Item -Recurse`: a delete, or a
/// recursive permission change, that names no target of its own takes them from the pipe,
/// and is judged by what the command before it lists.
pub(crate) fn piped_targets_reason(
    name: &str,
    args: &[Word],
    producer: &Command,
    cwd: Option<&str>,
) -> Option<String> {
    const LISTERS: &[&str] = &[
        "find",
        "ls",
        "dir",
        "gci",
        "get-childitem",
        "get-item",
        "gi",
        "echo",
        "printf",
        "write-output",
        "fd",
    ];
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let operands = texts
        .iter()
        .filter(|t| !t.starts_with('-') && !is_cmd_switch(&t.to_ascii_lowercase()));
    let action = match name {
        "rm" | "remove-item" | "ri" | "del" | "erase" | "rd" | "rmdir" | "unlink" | "shred" => {
            (operands.count() == 0).then_some("delete")
        }
        "chmod" | "chown" | "chgrp" => (operands.count() <= 1).then_some("change"),
        _ => None,
    }?;
    let Step::Run {
        name: lister,
        args: listed,
    } = effective(&producer.words)
    else {
        return None;
    };
    if !LISTERS.contains(&lister.as_str()) {
        return None;
    }
    let what = listed
        .iter()
        .filter(|w| !w.text.starts_with('-'))
        .find_map(|w| dangerous(&w.text, cwd))?;
    Some(match action {
        "delete" => format!("deletes what `{lister}` lists in {what}"),
        _ => format!("changes what `{lister}` lists in {what}"),
    })
}

fn recursive_delete(
    name: &str,
    texts: &[&str],
    lowered: &[&str],
    cwd: Option<&str>,
) -> Option<String> {
    let cmd_style = matches!(name, "del" | "erase" | "rd" | "rmdir");
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut options_done = false;
    for (text, lower) in texts.iter().zip(lowered) {
        if !options_done && *text == "--" {
            options_done = true;
        } else if !options_done && text.starts_with('-') && text.len() > 1 {
            recursive |= is_recursive_flag(lower);
        } else if cmd_style && is_cmd_switch(lower) {
            recursive |= lower.split('/').any(|s| s == "s" || s.starts_with("s:"));
        } else {
            targets.push(*text);
        }
    }
    for target in &targets {
        if is_registry(target) {
            return Some(format!("deletes the registry key `{target}`"));
        }
    }
    if !recursive {
        return None;
    }
    targets
        .iter()
        .find_map(|t| dangerous(t, cwd))
        .map(|what| format!("recursive delete of {what}"))
}

/// `-r`, `-R`, `-rf`, `-fr`, `-Rfv`, `--recursive`, and PowerShell's `-Recurse` with any
/// unambiguous prefix (`-r`, `-rec`) or a value (`-Recurse:$true`). Input is lowercase.
fn is_recursive_flag(lower: &str) -> bool {
    let flag = lower.split(':').next().unwrap_or(lower);
    if flag == "--recursive" || flag.starts_with("--recursive=") {
        return true;
    }
    if flag.len() >= 2 && "-recurse".starts_with(flag) {
        return true;
    }
    // A cluster of rm's one-letter flags (GNU and BSD) that includes `r`.
    let Some(letters) = flag.strip_prefix('-') else {
        return false;
    };
    !letters.starts_with('-')
        && letters.contains('r')
        && letters.chars().all(|c| "firdvpwx".contains(c))
}

/// A cmd.exe switch or a run of them: `/s`, `/q`, `/s/q`, `/a:h`. Input is lowercase.
fn is_cmd_switch(lower: &str) -> bool {
    lower.starts_with('/')
        && lower.len() > 1
        && lower[1..].split('/').all(|s| {
            let mut chars = s.chars();
            matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
                && (s.len() == 1 || s[1..].starts_with(':'))
        })
}

fn is_registry(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    ["hklm:", "hkcu:", "hkcr:", "hku:", "hkcc:", "registry::"]
        .iter()
        .any(|hive| lower.starts_with(hive))
}

fn recursive_change(name: &str, texts: &[&str], cwd: Option<&str>) -> Option<String> {
    let recursive = texts.iter().any(|t| {
        *t == "--recursive"
            || t.strip_prefix('-').is_some_and(|letters| {
                !letters.starts_with('-')
                    && letters.contains('R')
                    && letters.chars().all(|c| "RfvchHLP".contains(c))
            })
    });
    if !recursive {
        return None;
    }
    let change = if name == "chmod" {
        "permission"
    } else {
        "owner"
    };
    texts
        .iter()
        .filter(|t| !t.starts_with('-'))
        .find_map(|t| dangerous(t, cwd))
        .map(|what| format!("recursive {change} change of {what}"))
}

/// `find / -delete` and `find ~ -exec rm -rf {} +` delete everything under the start
/// unless a test narrows what matches; a narrowed find (`-name '*.pyc'`) is allowed.
fn find_delete(texts: &[&str], lowered: &[&str], cwd: Option<&str>) -> Option<String> {
    const NARROWING: &[&str] = &[
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-lname",
        "-ilname",
        "-newer",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-size",
        "-empty",
        "-user",
        "-group",
        "-inum",
        "-samefile",
        "-perm",
    ];
    let expression_at = texts
        .iter()
        .position(|t| t.starts_with('-') || *t == "(" || *t == "!")
        .unwrap_or(texts.len());
    let expression = &lowered[expression_at..];
    let deletes = expression.iter().enumerate().any(|(i, t)| {
        *t == "-delete"
            || (matches!(*t, "-exec" | "-execdir" | "-ok" | "-okdir")
                && expression.get(i + 1).is_some_and(|next| {
                    matches!(
                        command_name(next).as_str(),
                        "rm" | "shred" | "unlink" | "rmdir"
                    )
                }))
    });
    if !deletes || expression.iter().any(|t| NARROWING.contains(t)) {
        return None;
    }
    texts[..expression_at]
        .iter()
        .find_map(|t| dangerous(t, cwd))
        .map(|what| format!("deletes everything under {what}"))
}

fn raw_disk_among(texts: &[&str]) -> Option<String> {
    texts
        .iter()
        .find(|t| is_raw_disk(t))
        .map(|disk| format!("writes to the raw disk `{disk}`"))
}

fn is_mkfs(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "mkfs", "mke2fs", "mkdosfs", "mkswap", "mkntfs", "wipefs", "newfs",
    ];
    NAMES.contains(&name) || name.starts_with("mkfs.") || name.starts_with("newfs_")
}

/// `c:`, `d:\` — a drive letter as cmd's `format` takes it. Input is lowercase.
fn is_drive(lower: &str) -> bool {
    let bytes = lower.as_bytes();
    bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && lower[2..].chars().all(|c| c == '\\' || c == '/')
}

/// `Everyone:F`, `Everyone:(OI)(CI)F`, `*S-1-1-0:(F)`. Input is lowercase.
fn grants_everyone_full(lower: &str) -> bool {
    let rights = lower
        .strip_prefix("everyone:")
        .or_else(|| lower.strip_prefix("*s-1-1-0:"))
        .or_else(|| lower.split_once("everyone:").map(|(_, rights)| rights));
    rights.is_some_and(|rights| {
        rights
            .split(['(', ')', ','])
            .any(|right| right == "f" || right == "ga")
    })
}

/// Whether `words` start a `cd` (or its cmd.exe and PowerShell names), and where it goes:
/// `Some(None)` means "somewhere we cannot know" (`cd -`, `cd $X`).
pub(crate) fn cd_target(words: &[Word]) -> Option<Option<String>> {
    let Step::Run { name, args } = effective(words) else {
        return None;
    };
    if !matches!(
        name.as_str(),
        "cd" | "chdir" | "pushd" | "set-location" | "sl" | "push-location"
    ) {
        return None;
    }
    let target = args.iter().map(|w| w.text.as_str()).find(|t| {
        let lower = t.to_ascii_lowercase();
        !(t.starts_with('-') && t.len() > 1) && lower != "/d"
    });
    Some(match target {
        None => Some(super::lexer::HOME.to_string()),
        Some(t) if t.contains(super::lexer::VARIABLE) || t.contains(super::lexer::SUBSTITUTION) => {
            None
        }
        Some(t) => Some(t.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursive_flags() {
        let cases = [
            ("-r", true),
            ("-rf", true),
            ("-fr", true),
            ("-rfv", true),
            ("-recurse", true),
            ("-rec", true),
            ("-recurse:$true", true),
            ("--recursive", true),
            ("-f", false),
            ("-force", false),
            ("-i", false),
            ("--force", false),
        ];
        for (flag, expect) in cases {
            assert_eq!(is_recursive_flag(flag), expect, "{flag}");
        }
    }

    #[test]
    fn cmd_switches() {
        for (text, expect) in [
            ("/s", true),
            ("/s/q", true),
            ("/a:h", true),
            ("/", false),
            ("/etc", false),
        ] {
            assert_eq!(is_cmd_switch(text), expect, "{text}");
        }
    }

    #[test]
    fn everyone_full() {
        for (text, expect) in [
            ("everyone:f", true),
            ("everyone:(oi)(ci)f", true),
            ("*s-1-1-0:(f)", true),
            ("everyone:(r)", false),
            ("alice:f", false),
        ] {
            assert_eq!(grants_everyone_full(text), expect, "{text}");
        }
    }
}
