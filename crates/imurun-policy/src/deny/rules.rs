//! The rules for one program and its arguments, once wrappers are looked through: each says
//! why a call is destructive, or nothing. POSIX, cmd.exe and PowerShell names share one
//! table, because agents write all three whatever the machine is.

use std::cell::LazyCell;

use super::lexer::{Command, Pipeline, SUBSTITUTION, VARIABLE, Word, shell_quote};
use super::runners::{Step, command_name, effective, is_short_cluster_with};
use super::targets::{dangerous, in_system_tree, is_kernel_control, is_raw_disk};

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
        "rm" | "remove-item" | "ri" | "del" | "erase" | "rd" | "rmdir" | "unlink" => {
            recursive_delete(name, &texts, &lowered, cwd)
        }
        "chmod" | "chown" | "chgrp" | "setfacl" | "chattr" | "chcon" => {
            recursive_change(name, &texts, cwd)
        }
        "srm" | "wipe" => recursive_delete("rm", &texts, &lowered, cwd)
            .or_else(|| texts.iter().find_map(|t| written(t))),
        "rsync" => {
            let deletes = texts
                .iter()
                .any(|t| t.starts_with("--del") || *t == "--remove-source-files");
            let removes_sources = texts.contains(&"--remove-source-files");
            let paths: Vec<&str> = operands(&texts).collect();
            let (destination, sources) = paths.split_last()?;
            let mirrored = deletes
                .then(|| dangerous(destination, cwd))
                .flatten()
                .map(|what| format!("mirrors onto {what}, deleting what it held"));
            mirrored.or_else(|| {
                removes_sources
                    .then(|| sources.iter().find_map(|t| dangerous(t, cwd)))
                    .flatten()
                    .map(|what| format!("moves away {what}"))
            })
        }
        "nwipe" => Some("wipes disks".to_string()),
        "scrub" => texts.iter().find_map(|t| written(t)),
        "lvm" => matches!(
            lowered.first(),
            Some(&("lvremove" | "vgremove" | "pvremove" | "lvreduce"))
        )
        .then(|| "erases LVM volumes".to_string()),
        "lvreduce" => Some("shrinks an LVM volume, destroying what no longer fits".to_string()),
        "efivar" => texts
            .iter()
            .any(|t| matches!(*t, "-w" | "--write"))
            .then(|| "changes the firmware's variables".to_string()),
        "dbus-send" | "busctl" | "gdbus" | "qdbus" => {
            let login = lowered.iter().any(|t| t.contains("login1"));
            let power = lowered.iter().any(|m| {
                [
                    "poweroff",
                    "reboot",
                    "halt",
                    "kexec",
                    "suspend",
                    "hibernate",
                ]
                .iter()
                .any(|verb| m.contains(verb))
            });
            (login && power).then(|| "asks the system to shut down or restart".to_string())
        }
        "rtcwake" => texts
            .windows(2)
            .any(|w| w[0] == "-m" && matches!(w[1], "off" | "disk"))
            .then(|| "shuts down the machine".to_string()),
        "openrc-shutdown" => Some("shuts down or restarts the machine".to_string()),
        "launchctl" => matches!(lowered.first(), Some(&("reboot" | "halt")))
            .then(|| "shuts down or restarts the machine".to_string()),
        "find" => find_delete(&texts, &lowered, cwd),
        "dd" | "dcfldd" | "dc3dd" => texts
            .iter()
            .find_map(|t| written(t.strip_prefix("of=").or_else(|| t.strip_prefix("hof="))?)),
        "fd" | "fdfind" => fd_delete(&texts, cwd),
        "tee" | "shred" | "truncate" => texts.iter().find_map(|t| written(t)),
        "cp" | "install" | "ddrescue" | "mv" | "ln" => {
            let last = texts.iter().rev().find(|t| !t.starts_with('-'))?;
            let moved_away = || {
                let sources: Vec<&str> = operands(&texts).collect();
                let (_, sources) = sources.split_last()?;
                let what = sources.iter().find_map(|t| dangerous(t, cwd))?;
                Some(format!("moves away {what}"))
            };
            written(last).or_else(|| (name == "mv").then(moved_away).flatten())
        }
        "blkdiscard" => Some("discards every block of a disk".to_string()),
        _ if is_mkfs(name) => operands(&texts)
            .any(|t| is_raw_disk(t) || is_unknown(t))
            .then(|| "makes a new filesystem, erasing what the disk held".to_string()),
        "wipefs" => {
            let acts = texts.iter().any(|t| {
                matches!(*t, "--all" | "--al" | "--offset" | "--types" | "--force")
                    || t.starts_with("--offset=")
                    || is_short_cluster_with(t, &['a', 'o', 't'])
            });
            let dry = texts
                .iter()
                .any(|t| *t == "--no-act" || is_short_cluster_with(t, &['n']));
            (acts && !dry).then(|| "wipes the signatures that make a disk readable".to_string())
        }
        "sgdisk" => sgdisk(&texts),
        "fdisk" | "gdisk" | "cfdisk" | "sfdisk" | "cgdisk" => partitioner(name, &texts),
        "parted" => parted(&lowered),
        "hdparm" => texts
            .iter()
            .any(|t| {
                t.starts_with("--security-erase")
                    || t.starts_with("--fwdownload")
                    || matches!(
                        *t,
                        "--trim-sector-ranges"
                            | "--trim-sector-ranges-stdin"
                            | "--write-sector"
                            | "--make-bad-sector"
                            | "--dco-restore"
                            | "--security-set-pass"
                    )
            })
            .then(|| "erases or rewrites a disk's sectors or firmware".to_string()),
        "nvme" => {
            const ERASING: &[&str] = &[
                "format",
                "sanitize",
                "delete-ns",
                "detach-ns",
                "fw-download",
                "fw-commit",
                "fw-activate",
                "write",
                "write-zeroes",
                "write-uncor",
                "dsm",
            ];
            let verb = lowered.first()?;
            ERASING
                .contains(verb)
                .then(|| format!("erases or rewrites an NVMe drive (`nvme {verb}`)"))
        }
        "cryptsetup" => {
            const ERASING: &[&str] = &[
                "luksformat",
                "erase",
                "lukserase",
                "lukskillslot",
                "luksremovekey",
                "reencrypt",
                "convert",
                "luksheaderrestore",
            ];
            lowered
                .iter()
                .find(|t| !t.starts_with('-'))
                .filter(|verb| ERASING.contains(verb))
                .map(|verb| format!("destroys an encrypted volume's keys (`cryptsetup {verb}`)"))
        }
        "mdadm" => texts
            .iter()
            .any(|t| {
                matches!(*t, "--create" | "-C")
                    || (t.len() >= 6 && "--zero-superblock".starts_with(t))
            })
            .then(|| "erases or rebuilds a RAID array's disks".to_string()),
        "zpool" => matches!(
            lowered.first(),
            Some(&("destroy" | "labelclear" | "create"))
        )
        .then(|| "destroys or overwrites a ZFS pool".to_string()),
        "zfs" => matches!(lowered.first(), Some(&("destroy" | "rollback")))
            .then(|| "destroys ZFS datasets or snapshots".to_string()),
        "pvremove" | "vgremove" | "lvremove" | "pvcreate" => {
            Some(format!("`{name}` erases LVM volumes"))
        }
        "dmsetup" => matches!(
            lowered.first(),
            Some(&("remove_all" | "remove" | "wipe_table"))
        )
        .then(|| "removes device-mapper devices".to_string()),
        "badblocks" => texts
            .iter()
            .any(|t| is_short_cluster_with(t, &['w']))
            .then(|| "`badblocks -w` overwrites every block of a disk".to_string()),
        "flashrom" => texts
            .iter()
            .any(|t| matches!(*t, "--write" | "--erase") || is_short_cluster_with(t, &['w', 'E']))
            .then(|| "rewrites the machine's firmware".to_string()),
        "sg_format" => texts
            .iter()
            .any(|t| *t == "--format" || is_short_cluster_with(t, &['F']))
            .then(|| "low-level formats a disk".to_string()),
        "sg_sanitize" => Some("sanitizes (erases) a disk".to_string()),
        "efibootmgr" => texts
            .iter()
            .any(|t| {
                matches!(
                    *t,
                    "--delete-bootnum"
                        | "--create"
                        | "--create-only"
                        | "--bootorder"
                        | "--delete-bootorder"
                        | "--bootnext"
                        | "--delete-bootnext"
                        | "--active"
                        | "--inactive"
                ) || is_short_cluster_with(t, &['B', 'c', 'C', 'o', 'O', 'n', 'N', 'a', 'A'])
            })
            .then(|| "changes how the machine boots".to_string()),
        "sysctl" => texts
            .iter()
            .any(|t| {
                matches!(*t, "--write" | "--load" | "--system" | "-f")
                    || t.starts_with("--load=")
                    || (t.contains('=') && !t.starts_with('-'))
                    || is_short_cluster_with(t, &['w', 'p'])
            })
            .then(|| "changes the running kernel's settings".to_string()),
        "kexec" => Some("loads or starts another kernel in place of the running one".to_string()),
        "insmod" | "rmmod" => Some("loads or removes a kernel module".to_string()),
        "modprobe" => {
            let only_looks = texts.iter().any(|t| {
                matches!(
                    *t,
                    "--dry-run"
                        | "--show"
                        | "--showconfig"
                        | "--show-depends"
                        | "--help"
                        | "--version"
                        | "--show-modversions"
                        | "--dump-modversions"
                ) || is_short_cluster_with(t, &['n', 'c', 'D', 'h', 'V'])
            });
            (!only_looks).then(|| "loads or removes a kernel module".to_string())
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
        "shutdown" if texts.iter().any(|t| matches!(*t, "-c" | "--help")) => None,
        "shutdown" | "reboot" | "halt" | "poweroff" | "restart-computer" | "stop-computer" => {
            Some("shuts down or restarts the machine".to_string())
        }
        "init" | "telinit" => matches!(lowered.first(), Some(&("0" | "6" | "1" | "s")))
            .then(|| "shuts down, restarts or isolates the machine".to_string()),
        "systemctl" | "loginctl" => {
            const POWER: &[&str] = &[
                "poweroff",
                "reboot",
                "halt",
                "kexec",
                "soft-reboot",
                "rescue",
                "emergency",
                "suspend",
                "hibernate",
                "hybrid-sleep",
                "suspend-then-hibernate",
            ];
            const TARGETS: &[&str] = &[
                "poweroff.target",
                "reboot.target",
                "halt.target",
                "kexec.target",
                "rescue.target",
                "emergency.target",
                "soft-reboot.target",
                "ctrl-alt-del.target",
            ];
            const VALUE_OPTIONS: &[&str] = &[
                "-t",
                "--type",
                "-H",
                "--host",
                "-M",
                "--machine",
                "-p",
                "--property",
                "-s",
                "--signal",
                "--state",
                "-n",
                "--lines",
                "-o",
                "--output",
                "--root",
                "--kill-whom",
                "--job-mode",
                "--when",
                "--message",
            ];
            let mut words = Vec::new();
            let mut i = 0;
            while let Some(t) = lowered.get(i) {
                if VALUE_OPTIONS.contains(t) {
                    i += 2;
                    continue;
                }
                if !t.starts_with('-') {
                    words.push(*t);
                }
                i += 1;
            }
            let verb = words.first()?;
            let power = POWER.contains(verb)
                || (matches!(*verb, "isolate" | "start" | "restart")
                    && words[1..].iter().any(|t| TARGETS.contains(t)));
            power.then(|| "shuts down, restarts or isolates the machine".to_string())
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
/// Whether `command` is one of the listers whose output the piped-delete rule reads.
pub(crate) fn is_lister(command: &Command) -> bool {
    matches!(effective(&command.words), Step::Run { name, .. } if LISTERS.contains(&name.as_str()))
}

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

pub(crate) fn piped_targets_reason(
    name: &str,
    args: &[Word],
    producer: &Command,
    cwd: Option<&str>,
) -> Option<String> {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    // `{}` is where `xargs -I{}` puts each line: the targets still come from the pipe.
    let operands = texts
        .iter()
        .filter(|t| !t.starts_with('-') && !is_cmd_switch(&t.to_ascii_lowercase()) && **t != "{}");
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

/// A recursive delete or permission change that names no target: it takes them from its
/// input (`… | xargs rm -rf`).
pub(crate) fn takes_targets_from_input(name: &str, args: &[Word]) -> bool {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let mut operands = texts.iter().filter(|t| !t.starts_with('-') && **t != "{}");
    match name {
        "rm" | "shred" | "unlink" | "rmdir" => {
            operands.next().is_none()
                && texts
                    .iter()
                    .any(|t| is_recursive_flag(&t.to_ascii_lowercase()))
        }
        "chmod" | "chown" | "chgrp" => operands.count() <= 1 && texts.contains(&"-R"),
        _ => false,
    }
}

/// Why a delete that takes its targets from its input is destructive, when the input is
/// written in the command (`xargs rm -rf <<< /etc`).
pub(crate) fn input_targets_reason(lines: &str, cwd: Option<&str>) -> Option<String> {
    lines
        .split(['\n', '\0', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .find_map(|t| dangerous(t, cwd))
        .map(|what| format!("deletes what its input lists: {what}"))
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
        if is_kernel_control(target) {
            return Some(format!("deletes the kernel control `{target}`"));
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
    // GNU takes any unambiguous prefix of a long option: `--r`, `--rec` are `--recursive`.
    if (flag.len() >= 3 && "--recursive".starts_with(flag)) || flag.starts_with("--recursive=") {
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
        (t.len() >= 5 && "--recursive".starts_with(t))
            || t.strip_prefix('-').is_some_and(|letters| {
                !letters.starts_with('-')
                    && letters.contains('R')
                    && letters.chars().all(|c| "RfvchHLP".contains(c))
            })
    });
    if !recursive {
        return None;
    }
    let change = match name {
        "chmod" | "setfacl" => "permission",
        "chattr" => "attribute",
        "chcon" => "security label",
        _ => "owner",
    };
    texts
        .iter()
        .filter(|t| !t.starts_with('-'))
        .find_map(|t| dangerous(t, cwd))
        .map(|what| format!("recursive {change} change of {what}"))
}

/// The commands a `find` runs with `-exec`, `-execdir`, `-ok` and `-okdir`, as command lines
/// with `{}` (and a shell's `$1`, `$@` when the found path is passed to `sh -c`) standing
/// for what is found: the start folder when no test narrows it, else some file inside.
pub(crate) fn find_exec_commands(args: &[Word]) -> Vec<String> {
    let texts: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
    let (starts_at, expression_at) = find_parts(&texts);
    let lowered: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
    let expression: Vec<&str> = lowered[expression_at..]
        .iter()
        .map(String::as_str)
        .collect();
    let narrowed = narrows(&expression);
    let found = match texts[starts_at..expression_at].first() {
        Some(start) if !narrowed => (*start).to_string(),
        Some(start) => format!("{}/found", start.trim_end_matches('/')),
        None => "./found".to_string(),
    };
    let mut commands = Vec::new();
    let mut i = expression_at;
    while i < texts.len() {
        if !matches!(lowered[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            i += 1;
            continue;
        }
        let start = i + 1;
        let end = texts[start..]
            .iter()
            .position(|t| *t == ";" || *t == "+")
            .map_or(texts.len(), |p| start + p);
        let words: Vec<String> = texts[start..end]
            .iter()
            .map(|t| {
                let replaced = t.replace("{}", &found);
                let replaced = [
                    "\"$1\"", "\"$@\"", "\"$*\"", "\"$0\"", "${1}", "$1", "$@", "$*", "$0",
                ]
                .iter()
                .fold(replaced, |text, positional| {
                    text.replace(positional, &found)
                });
                shell_quote(&replaced)
            })
            .collect();
        commands.push(words.join(" "));
        i = end + 1;
    }
    commands
}

/// `find / -delete` and `find ~ -exec rm -rf {} +` delete everything under the start
/// unless a test narrows what matches; a narrowed find (`-name '*.pyc'`) is allowed.
fn find_delete(texts: &[&str], lowered: &[&str], cwd: Option<&str>) -> Option<String> {
    let (starts_at, expression_at) = find_parts(texts);
    let expression = &lowered[expression_at..];
    let mut deletes = false;
    let mut changes = false;
    for (i, t) in expression.iter().enumerate() {
        deletes |= *t == "-delete";
        if matches!(*t, "-exec" | "-execdir" | "-ok" | "-okdir")
            && let Some(next) = expression.get(i + 1)
        {
            deletes |= DELETING.contains(&command_name(next).as_str());
            changes |= CHANGING.contains(&command_name(next).as_str());
        }
    }
    if !deletes && !changes {
        return None;
    }
    let starts = &texts[starts_at..expression_at];
    if narrows(expression) {
        // A narrowed find is fine in a project; in a system tree it still removes files the
        // operating system needs.
        return starts
            .iter()
            .find(|t| in_system_tree(t))
            .map(|start| format!("deletes or changes files inside the system location `{start}`"));
    }
    let what = starts.iter().find_map(|t| dangerous(t, cwd))?;
    Some(if deletes {
        format!("deletes everything under {what}")
    } else {
        format!("changes every file under {what}")
    })
}

/// Programs that delete what they are given.
const DELETING: &[&str] = &["rm", "shred", "unlink", "rmdir", "srm", "wipe"];
/// Programs that destroy or re-permission what they are given.
const CHANGING: &[&str] = &[
    "truncate", "chmod", "chown", "chgrp", "dd", "mv", "tee", "cp",
];

/// Where a `find`'s start folders begin (after `-H`, `-L`, `-P`, `-O3`, `-D opts`) and where
/// its expression begins.
fn find_parts(texts: &[&str]) -> (usize, usize) {
    let mut starts_at = 0;
    while let Some(t) = texts.get(starts_at) {
        match *t {
            "-H" | "-L" | "-P" | "--" => starts_at += 1,
            "-D" => starts_at += 2,
            _ if t.starts_with("-O") => starts_at += 1,
            _ => break,
        }
    }
    let starts_at = starts_at.min(texts.len());
    let expression_at = texts[starts_at..]
        .iter()
        .position(|t| t.starts_with('-') || *t == "(" || *t == "!")
        .map_or(texts.len(), |p| starts_at + p);
    (starts_at, expression_at)
}

/// Whether a find expression narrows what its action reaches: a name, path or pattern test
/// with some literal text in its value (`-name '*.pyc'`; `-name '*'`, `'?*'` and `-regex '.+'`
/// match everything), before the first action, in an expression with no `-o`, `!`, `-not` or
/// `,` that could route around it.
fn narrows(expression: &[&str]) -> bool {
    const NAME_TESTS: &[&str] = &[
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
    ];
    const ACTIONS: &[&str] = &["-delete", "-exec", "-execdir", "-ok", "-okdir"];
    if expression
        .iter()
        .any(|t| matches!(*t, "-o" | "-or" | "!" | "-not" | ","))
    {
        return false;
    }
    let action_at = expression
        .iter()
        .position(|t| ACTIONS.contains(t))
        .unwrap_or(expression.len());
    expression[..action_at].iter().enumerate().any(|(i, t)| {
        NAME_TESTS.contains(t)
            && expression
                .get(i + 1)
                .is_some_and(|value| has_literal_letter(value))
    })
}

/// Whether a pattern holds a character that must match itself: outside brackets (`[a-z]`
/// matches a class) and not a glob or regex operator.
fn has_literal_letter(pattern: &str) -> bool {
    let mut in_bracket = false;
    pattern.chars().any(|c| {
        match c {
            '[' => in_bracket = true,
            ']' => in_bracket = false,
            _ => {}
        }
        !in_bracket && !"*?[]!^.+$()|{}\\/".contains(c)
    })
}

/// `fd [pattern] [path...] -x command` / `-X command`: like `find -exec`, the command runs
/// on everything fd matches; a pattern that matches everything under a catastrophic path
/// deletes it all.
fn fd_delete(texts: &[&str], cwd: Option<&str>) -> Option<String> {
    let exec_at = texts
        .iter()
        .position(|t| matches!(*t, "-x" | "--exec" | "-X" | "--exec-batch"))?;
    let program = command_name(texts.get(exec_at + 1)?);
    if !DELETING.contains(&program.as_str()) && !CHANGING.contains(&program.as_str()) {
        return None;
    }
    const VALUE_OPTIONS: &[&str] = &[
        "-t",
        "--type",
        "-e",
        "--extension",
        "-d",
        "--max-depth",
        "--min-depth",
        "--exact-depth",
        "-E",
        "--exclude",
        "-S",
        "--size",
        "--changed-within",
        "--changed-before",
        "-o",
        "--owner",
        "-j",
        "--threads",
        "--max-results",
        "--base-directory",
        "-c",
        "--color",
        "--ignore-file",
        "--and",
        "--format",
    ];
    let mut positionals: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < exec_at {
        let t = texts[i];
        if VALUE_OPTIONS.contains(&t) {
            i += 2;
            continue;
        }
        if t == "--search-path" {
            // A start folder given as an option: the pattern stays first.
            if positionals.is_empty() {
                positionals.push(".");
            }
            if let Some(path) = texts.get(i + 1) {
                positionals.push(path);
            }
            i += 2;
            continue;
        }
        if !t.starts_with('-') {
            positionals.push(t);
        }
        i += 1;
    }
    let everything = matches!(
        positionals.first().copied(),
        None | Some("." | "" | "^" | ".*")
    );
    if !everything {
        return None;
    }
    positionals
        .get(1..)
        .unwrap_or_default()
        .iter()
        .find_map(|t| dangerous(t, cwd))
        .map(|what| format!("runs `{program}` on everything under {what}"))
}

/// Whether `name` is given a disk or a kernel control (`/dev/sda`, `/proc/sysrq-trigger`)
/// as an argument without being a program known to only read it or one whose own rule
/// judged it: `curl -o /dev/sda`, `tar -cf /dev/sda`, `sponge /proc/sys/…` may write it.
pub(crate) fn hands_over_a_device(name: &str, args: &[Word]) -> bool {
    const READERS: &[&str] = &[
        "cat",
        "less",
        "more",
        "head",
        "tail",
        "hexdump",
        "hd",
        "od",
        "strings",
        "file",
        "stat",
        "ls",
        "lsblk",
        "blkid",
        "smartctl",
        "udevadm",
        "blockdev",
        "lsof",
        "fuser",
        "findmnt",
        "mount",
        "umount",
        "dumpe2fs",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "wc",
        "sha256sum",
        "sha1sum",
        "md5sum",
        "b2sum",
        "cksum",
        "cmp",
        "diff",
        "echo",
        "printf",
        "test",
        "[",
        "[[",
        "readlink",
        "realpath",
        "pv",
        "lvs",
        "pvs",
        "vgs",
        "pvdisplay",
        "vgdisplay",
        "lvdisplay",
        "sync",
        "eject",
        "xxd",
        "dmesg",
        "journalctl",
        "partx",
        "kpartx",
        "e2fsck",
        "fsck",
        "xfs_info",
        "btrfs",
        "iostat",
        "hwinfo",
        "lshw",
        "isosize",
        "sfdisk",
        "fdisk",
        "gdisk",
        "cgdisk",
        "cfdisk",
        "sgdisk",
        "parted",
        "hdparm",
        "nvme",
        "cryptsetup",
        "mdadm",
        "wipefs",
        "badblocks",
        "dd",
        "dcfldd",
        "dc3dd",
        "tee",
        "shred",
        "truncate",
        "wipe",
        "cp",
        "install",
        "ddrescue",
        "mv",
        "ln",
        "rm",
        "unlink",
        "sysctl",
        "efibootmgr",
        "zpool",
        "zfs",
        "dmsetup",
        "flashrom",
        "sg_format",
        "sg_sanitize",
        "blkdiscard",
        "chmod",
        "chown",
        "chgrp",
        "find",
        "cd",
        "pushd",
        "df",
        "du",
        "partprobe",
        "tune2fs",
        "e2label",
        "growpart",
        "resize2fs",
        "xfs_growfs",
        "fatlabel",
        "ntfslabel",
        "swapon",
        "swapoff",
        "udisksctl",
        "lsattr",
        "findfs",
        "losetup",
    ];
    if READERS.contains(&name)
        || is_mkfs(name)
        || (name == "xxd" && !args.iter().any(|w| w.text == "-r"))
    {
        return false;
    }
    args.iter().any(|word| {
        let text = word.text.as_str();
        let value = text.split_once('=').map_or(text, |(_, value)| value);
        [text, value]
            .iter()
            .any(|t| is_raw_disk(t) || is_kernel_control(t))
    })
}

/// Why writing to `target` is destructive: a kernel control or a raw disk.
pub(crate) fn written(target: &str) -> Option<String> {
    if super::targets::glob_could_name_device(target) {
        return Some(format!(
            "writes to `{target}`, a pattern that can name a kernel control or a disk"
        ));
    }
    if is_kernel_control(target) {
        Some(format!("writes to the kernel control `{target}`"))
    } else if is_raw_disk(target) {
        Some(format!("writes to the raw disk `{target}`"))
    } else {
        None
    }
}

/// The words that are not options.
fn operands<'t>(texts: &'t [&'t str]) -> impl Iterator<Item = &'t str> {
    texts.iter().copied().filter(|t| !t.starts_with('-'))
}

/// A value nobody knows before the command runs.
fn is_unknown(text: &str) -> bool {
    text.contains([VARIABLE, SUBSTITUTION])
}

/// `sgdisk`: only its printing and checking options leave the disk alone (or `--pretend`).
fn sgdisk(texts: &[&str]) -> Option<String> {
    const LOOKS: &[&str] = &[
        "-p",
        "--print",
        "-i",
        "--info",
        "-v",
        "--verify",
        "-L",
        "--list-types",
        "-b",
        "--backup",
        "-O",
        "--print-mbr",
        "-D",
        "--display-alignment",
        "-F",
        "--first-in-largest",
        "--first-aligned-in-largest",
        "-E",
        "--end-of-largest",
        "-?",
        "--help",
        "-V",
        "--version",
        "--usage",
    ];
    if texts.iter().any(|t| matches!(*t, "-P" | "--pretend")) {
        return None;
    }
    let changes = texts.iter().any(|t| {
        let option = t.split_once('=').map_or(*t, |(o, _)| o);
        t.starts_with('-') && !LOOKS.contains(&option)
    });
    changes.then(|| "rewrites a disk's partition table".to_string())
}

/// `fdisk`, `sfdisk`, `gdisk`, `cfdisk`: listing is harmless; pointed at a disk, they
/// rewrite its partition table.
fn partitioner(name: &str, texts: &[&str]) -> Option<String> {
    const LISTS: &[&str] = &[
        "-l",
        "--list",
        "-x",
        "--list-details",
        "-d",
        "--dump",
        "-J",
        "--json",
        "-s",
        "--show-size",
        "-V",
        "--verify",
        "-g",
        "--show-geometry",
        "-F",
        "--list-free",
        "-h",
        "--help",
        "--version",
        "--list-types",
        "-T",
    ];
    if texts.iter().any(|t| LISTS.contains(t)) {
        return None;
    }
    operands(texts)
        .any(|t| is_raw_disk(t) || is_unknown(t))
        .then(|| format!("`{name}` rewrites a disk's partition table"))
}

/// `parted`: `-l`, and `print` on a disk, only look; any other command changes it.
fn parted(lowered: &[&str]) -> Option<String> {
    const LOOKS: &[&str] = &[
        "print", "p", "unit", "s", "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "%", "cyl",
        "chs", "compact", "help", "version", "quit", "free", "list", "all",
    ];
    if lowered
        .iter()
        .any(|t| matches!(*t, "-l" | "--list" | "-h" | "--help" | "-v" | "--version"))
    {
        return None;
    }
    let mut words = lowered.iter().filter(|t| !t.starts_with('-'));
    let disk = words.next()?;
    let changes = words.any(|t| !LOOKS.contains(t));
    (changes && (is_raw_disk(disk) || is_unknown(disk)))
        .then(|| "rewrites a disk's partition table".to_string())
}

fn is_mkfs(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "mkfs",
        "mke2fs",
        "mkdosfs",
        "mkswap",
        "mkntfs",
        "newfs",
        "mkexfatfs",
        "mkudffs",
        "mkreiserfs",
        "mkjfs",
        "mkhfs",
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
    if matches!(name.as_str(), "popd" | "pop-location") {
        return Some(None);
    }
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
        Some(t)
            if t == "-"
                || t.contains(super::lexer::VARIABLE)
                || t.contains(super::lexer::SUBSTITUTION) =>
        {
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
