//! Which paths are catastrophic to delete or re-permission recursively: the filesystem root,
//! a drive, the home folder, the system's own folders, and folders above the current one.
//!
//! Paths are judged as written, after the lexer's quote removal: `~`, `$HOME` and `${HOME}`
//! arrive as the home marker, other variables as the unknown marker. `.`, `..`, `//` and
//! trailing globs (`/*`, `/.*`, `C:\*.*`) are folded first, so `/./`, `//` and `/*` all read
//! as `/`. Brace lists (`/{etc,usr}`) are expanded, up to a bound.

use super::lexer::{HOME, SUBSTITUTION, VARIABLE};

/// System trees whose every file belongs to the operating system: a recursive delete or
/// permission change anywhere inside them breaks the machine.
const OS_TREES: &[&str] = &[
    "etc", "usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "boot", "dev", "proc", "sys",
    "system", "library", "private",
];

/// Trees that hold many owners' folders: the tree itself and each folder directly inside it
/// (`/home/alice`, `/var/lib`) are catastrophic; deeper folders (`/var/tmp/build`) are not.
const HOLDING_TREES: &[&str] = &[
    "home", "users", "var", "srv", "opt", "mnt", "media", "nix", "snap",
];

/// Folders of a Windows drive that belong to the system.
const WINDOWS_SYSTEM: &[&str] = &[
    "windows",
    "program files",
    "program files (x86)",
    "programdata",
];

/// How many words one brace expansion may produce before the rest is ignored.
const BRACE_EXPANSIONS_MAX: usize = 64;

/// Describes what `word` would destroy if deleted recursively, or `None` when it is an
/// ordinary path. `cwd` is the folder an earlier `cd` moved to in the same command, if known.
pub(crate) fn dangerous(word: &str, cwd: Option<&str>) -> Option<String> {
    // `{}` is what `find -exec`, `xargs -I{}` and `parallel` put there: anything.
    let word = word.replace("{}", "*");
    let mut expanded = Vec::new();
    if word.len() > LONG_WORD_CHARS {
        // No real path is this long; judged as written, without copies of it.
        expanded.push(word);
    } else {
        expand_braces(&word, &mut expanded);
    }
    expanded.iter().find_map(|one| dangerous_one(one, cwd))
}

fn dangerous_one(word: &str, cwd: Option<&str>) -> Option<String> {
    let joined;
    let word = match cwd {
        Some(cwd) if is_relative(word) => {
            joined = format!("{cwd}/{word}");
            joined.as_str()
        }
        _ => word,
    };
    posix(word)
        .or_else(|| windows(word))
        .or_else(|| repository(word))
}

/// A `.git` folder: the repository's whole history. The file tools refuse it as a protected
/// path; through the shell, deleting it recursively is refused here.
fn repository(word: &str) -> Option<String> {
    // The folder itself, spelled by a glob too (`.gi?`, `.[g]it`, `.*`, `.git/*`, `.git/.`),
    // or the history inside it (`.git/objects`, `.git/refs`); not git's own scratch folders
    // (`.git/rebase-merge`, `.git/modules/x`, `.git/hooks/x`).
    let lowered = word.to_ascii_lowercase().replace('\\', "/");
    let components: Vec<&str> = lowered
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let mut trimmed = components.as_slice();
    while let [rest @ .., last] = trimmed
        && is_glob_all(last)
        && !rest.is_empty()
    {
        trimmed = rest;
    }
    let history = match trimmed {
        [.., last] if glob_matches(last, ".git") => true,
        [.., git, inner] => glob_matches(git, ".git") && matches!(*inner, "objects" | "refs"),
        _ => false,
    };
    history.then(|| "the repository's history (`.git`)".to_string())
}

/// Whether the shell glob `pattern` (`*`, `?`, `[…]`, `[!…]`) matches `name`; a pattern
/// without glob characters matches only itself. Bounded: patterns are path components.
fn glob_matches(pattern: &str, name: &str) -> bool {
    fn matches(pattern: &[char], name: &[char], budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        match pattern.split_first() {
            None => name.is_empty(),
            Some(('*', rest)) => (0..=name.len()).any(|skip| matches(rest, &name[skip..], budget)),
            Some(('?', rest)) => !name.is_empty() && matches(rest, &name[1..], budget),
            Some(('[', rest)) => {
                let Some(close) = rest.iter().skip(1).position(|c| *c == ']').map(|p| p + 1) else {
                    return name.first() == Some(&'[') && matches(rest, &name[1..], budget);
                };
                let (negated, set) = match rest[..close].split_first() {
                    Some(('!' | '^', set)) => (true, set),
                    _ => (false, &rest[..close]),
                };
                name.first().is_some_and(|c| set.contains(c) != negated)
                    && matches(&rest[close + 1..], &name[1..], budget)
            }
            Some((c, rest)) => name.first() == Some(c) && matches(rest, &name[1..], budget),
        }
    }
    // As the shell globs: a leading dot is matched only by a leading dot.
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let mut budget = 4096;
    matches(&pattern, &name, &mut budget)
}

fn is_relative(word: &str) -> bool {
    let first = word.chars().next();
    !matches!(
        first,
        None | Some('/' | '\\' | '%' | '$' | HOME | VARIABLE | SUBSTITUTION)
    ) && !is_drive_prefixed(word)
}

fn is_drive_prefixed(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// Where a path starts from, before its components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Root,
    Home,
    Relative,
}

fn posix(word: &str) -> Option<String> {
    let (base, rest, unknown_prefix) = if let Some(rest) = word.strip_prefix(HOME) {
        (Base::Home, rest, false)
    } else if let Some(rest) = word.strip_prefix(VARIABLE) {
        // `"$DIR/"` is `/` when DIR is empty or unset: the bug that has wiped machines.
        (Base::Root, rest, true)
    } else if word.starts_with('/') {
        (Base::Root, word, false)
    } else if word.starts_with(SUBSTITUTION) {
        return None;
    } else {
        (Base::Relative, word, false)
    };
    if unknown_prefix && !rest.starts_with('/') {
        return None;
    }
    let folded = fold(rest, '/')?;
    let what = describe_posix(base, &folded)?;
    Some(if unknown_prefix {
        format!("{what} if the variable before it is empty")
    } else {
        what
    })
}

/// A path after folding: its components, how far it climbed above its base, and whether a
/// component holds a partial glob (`e*`) that could match any name at that level.
#[derive(Debug)]
struct Folded {
    components: Vec<String>,
    climbed: usize,
    wildcard_at: Option<usize>,
}

fn fold(rest: &str, separator: char) -> Option<Folded> {
    let mut components: Vec<String> = Vec::new();
    let mut climbed = 0usize;
    for part in rest.split(separator) {
        match part {
            "" | "." => {}
            ".." => {
                if components.pop().is_none() {
                    climbed += 1;
                }
            }
            _ => components.push(part.to_ascii_lowercase()),
        }
    }
    while components.last().is_some_and(|c| is_glob_all(c)) {
        components.pop();
    }
    let wildcard_at = components
        .iter()
        .position(|c| c.contains(['*', '?', '[', VARIABLE, SUBSTITUTION]));
    Some(Folded {
        components,
        climbed,
        wildcard_at,
    })
}

/// A component that matches every name in its folder: `*`, `.*`, `*.*`, `?*`, `[!.]*`; or
/// one that is only a value nobody knows (`/$X` is `/` when `X` is empty).
fn is_glob_all(component: &str) -> bool {
    let unknown = !component.is_empty()
        && component
            .chars()
            .all(|c| c == VARIABLE || c == SUBSTITUTION);
    unknown
        || (component.contains(['*', '?'])
            && component
                .chars()
                .all(|c| matches!(c, '*' | '?' | '.' | '[' | ']' | '!' | '^')))
}

fn describe_posix(base: Base, folded: &Folded) -> Option<String> {
    let parts = &folded.components;
    match base {
        Base::Relative => (folded.climbed > 0 && parts.is_empty())
            .then(|| "a folder above the current one".to_string()),
        Base::Home => {
            if folded.climbed > 0 {
                Some("the folder that holds the home folder".to_string())
            } else if parts.is_empty() {
                Some("the home folder".to_string())
            } else {
                None
            }
        }
        Base::Root => describe_absolute(parts, folded.wildcard_at),
    }
}

fn describe_absolute(parts: &[String], wildcard_at: Option<usize>) -> Option<String> {
    let Some(first) = parts.first() else {
        return Some("the whole filesystem".to_string());
    };
    if wildcard_at == Some(0) {
        return Some(format!(
            "top-level folders matching `/{first}`, which may be system folders"
        ));
    }
    // macOS keeps `/etc`, `/var` and `/tmp` under `/private`: judge `/private/x` as `/x`.
    if first == "private" && parts.len() > 1 {
        return describe_absolute(&parts[1..], wildcard_at.map(|at| at - 1));
    }
    let shown = format!("/{}", parts.join("/"));
    // `/usr/local` holds software a person installed by hand: its own folders are the system's,
    // a package's folder two levels below them (`/usr/local/go`, `/usr/local/lib/x/y`) is not.
    let local_package = first == "usr"
        && parts.get(1).is_some_and(|p| p == "local")
        && wildcard_at.is_none_or(|at| at >= parts.len())
        && match parts.get(2).map(String::as_str) {
            Some(
                "bin" | "sbin" | "lib" | "lib64" | "libexec" | "share" | "include" | "etc" | "src"
                | "man",
            ) => parts.len() >= 5,
            Some(_) => true,
            None => false,
        };
    if local_package {
        return None;
    }
    if OS_TREES.contains(&first.as_str()) {
        return Some(if parts.len() == 1 {
            format!("the system location `{shown}`")
        } else {
            format!("`{shown}` inside the system location `/{first}`")
        });
    }
    if first == "root" && parts.len() == 1 {
        return Some("the root user's home folder `/root`".to_string());
    }
    if HOLDING_TREES.contains(&first.as_str()) && parts.len() <= 2 {
        return Some(match (first.as_str(), parts.len()) {
            (_, 1) => format!("the system location `{shown}`"),
            ("home" | "users", _) => format!("the home folder `{shown}`"),
            _ => format!("the system location `{shown}`"),
        });
    }
    None
}

fn windows(word: &str) -> Option<String> {
    let lowered = expand_windows_names(&word.to_ascii_lowercase().replace('/', "\\"));
    let lowered = lowered.strip_prefix(r"\\?\").unwrap_or(&lowered);
    if let Some(rest) = lowered.strip_prefix(HOME) {
        let folded = fold(rest, '\\')?;
        return describe_posix(Base::Home, &folded);
    }
    if lowered.starts_with(r"\\") {
        // A network share: not this machine's drive.
        return None;
    }
    let (drive, rest) = if is_drive_prefixed(lowered) {
        (lowered[..2].to_string(), &lowered[2..])
    } else if lowered.starts_with('\\') {
        ("the current drive".to_string(), lowered)
    } else {
        let folded = fold(lowered, '\\')?;
        return describe_posix(Base::Relative, &folded);
    };
    let folded = fold(rest, '\\')?;
    let parts = &folded.components;
    let shown = |parts: &[String]| format!("{drive}\\{}", parts.join("\\"));
    let Some(first) = parts.first() else {
        return Some(if drive.len() == 2 {
            format!("the whole drive `{drive}`")
        } else {
            "the root of the current drive".to_string()
        });
    };
    if folded.wildcard_at == Some(0) {
        return Some(format!(
            "top-level folders matching `{}`, which may be system folders",
            shown(parts)
        ));
    }
    if first == "windows" || (WINDOWS_SYSTEM.contains(&first.as_str()) && parts.len() == 1) {
        return Some(format!("the system folder `{}`", shown(parts)));
    }
    if first == "users" && parts.len() <= 2 {
        return Some(if parts.len() == 1 {
            format!("the folder of all home folders `{}`", shown(parts))
        } else {
            format!("the home folder `{}`", shown(parts))
        });
    }
    None
}

/// Replaces the environment names that mean a drive, the system folder or the home folder
/// (`%SystemDrive%`, `$env:USERPROFILE`, ...) with what they stand for. Input is lowercase.
fn expand_windows_names(lowered: &str) -> String {
    const NAMES: &[(&str, &str)] = &[
        ("%homedrive%%homepath%", "\u{E000}"),
        ("$env:homedrive$env:homepath", "\u{E000}"),
        ("%userprofile%", "\u{E000}"),
        ("$env:userprofile", "\u{E000}"),
        ("%home%", "\u{E000}"),
        ("$env:home", "\u{E000}"),
        ("%systemdrive%", "c:"),
        ("$env:systemdrive", "c:"),
        ("%homedrive%", "c:"),
        ("$env:homedrive", "c:"),
        ("%systemroot%", "c:\\windows"),
        ("$env:systemroot", "c:\\windows"),
        ("%windir%", "c:\\windows"),
        ("$env:windir", "c:\\windows"),
        ("%programfiles%", "c:\\program files"),
        ("$env:programfiles", "c:\\program files"),
        ("%programdata%", "c:\\programdata"),
        ("$env:programdata", "c:\\programdata"),
    ];
    let mut out = lowered.to_string();
    for (name, meaning) in NAMES {
        if out.starts_with(name) {
            out = format!("{meaning}{}", &out[name.len()..]);
            break;
        }
    }
    out
}

/// Expands `{a,b}` lists the way bash does, appending at most `BRACE_EXPANSIONS_MAX` words.
fn expand_braces(word: &str, out: &mut Vec<String>) {
    expand_braces_within(word, out, BRACE_LISTS_MAX);
}

/// Words longer than this are judged as written, without brace expansion.
const LONG_WORD_CHARS: usize = 4096;

/// How many brace lists in one word are expanded, one inside the other's result; the rest of
/// the word is judged as written. Keeps the recursion shallow and the copies few.
const BRACE_LISTS_MAX: usize = 8;

fn expand_braces_within(word: &str, out: &mut Vec<String>, lists_left: usize) {
    if out.len() >= BRACE_EXPANSIONS_MAX {
        return;
    }
    if lists_left == 0 {
        out.push(word.to_string());
        return;
    }
    let Some((open, close)) = find_brace_list(word) else {
        out.push(word.to_string());
        return;
    };
    let head = &word[..open];
    let tail = &word[close + 1..];
    for choice in split_top_level(&word[open + 1..close]) {
        if out.len() >= BRACE_EXPANSIONS_MAX {
            return;
        }
        expand_braces_within(&format!("{head}{choice}{tail}"), out, lists_left - 1);
    }
}

/// The first `{…}` holding a top-level comma, as byte offsets of its braces.
fn find_brace_list(word: &str) -> Option<(usize, usize)> {
    let bytes = word.as_bytes();
    let open = word.find('{')?;
    let mut depth = 0usize;
    let mut has_comma = false;
    for (i, b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return has_comma.then_some((open, i));
                }
            }
            b',' if depth == 1 => has_comma = true,
            _ => {}
        }
    }
    None
}

fn split_top_level(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, b) in inner.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
}

/// Whether writing to `target` writes a whole disk or partition rather than a file:
/// `/dev/sda`, `/dev/nvme0n1`, `/dev/disk2`, `\\.\PhysicalDrive0`. The harmless devices
/// (`/dev/null`, `/dev/stdout`, terminals, `/dev/fd/N`, `/dev/tcp/...`) are not disks.
pub(crate) fn is_raw_disk(target: &str) -> bool {
    const SAFE: &[&str] = &[
        "null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr", "tty", "console",
        "ptmx",
    ];
    const SAFE_PREFIXES: &[&str] = &["fd/", "pts/", "shm/", "tcp/", "udp/", "tty", "mqueue/"];
    let lowered = target.to_ascii_lowercase().replace('\\', "/");
    let lowered = if lowered.starts_with("//./") {
        lowered
    } else {
        lexical(&lowered)
    };
    if let Some(device) = lowered.strip_prefix("/dev/") {
        return !device.is_empty()
            && !SAFE.contains(&device)
            && !SAFE_PREFIXES
                .iter()
                .any(|prefix| device.starts_with(prefix));
    }
    lowered.starts_with("//./physicaldrive")
        || lowered.starts_with("//./harddisk")
        || (lowered.starts_with("//./") && lowered.len() == 6 && lowered.ends_with(':'))
}

/// Whether writing to `target` plants commands every new shell runs: a shell's startup and
/// logout files, for one user or for all.
pub(crate) fn is_startup_file(target: &str) -> bool {
    const NAMES: &[&str] = &[
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".mkshrc",
        ".cshrc",
        ".tcshrc",
        ".login",
        ".logout",
        "config.fish",
        ".bash_aliases",
        ".bash_completion",
        ".xinitrc",
        ".xprofile",
        ".xsession",
        ".xsessionrc",
        ".envrc",
        ".inputrc",
    ];
    const INSIDE: &[&str] = &[
        "/.ssh/rc",
        "/.git/hooks/",
        "/etc/bash_completion.d/",
        "/.config/autostart/",
        "/.config/fish/conf.d/",
        "/etc/profile.d/",
        "/etc/cron",
        "/var/spool/cron",
        "/.config/systemd/user/",
        "/etc/systemd/",
    ];
    let slashed = format!("/{}", target.trim_start_matches("./"));
    if INSIDE.iter().any(|inside| slashed.contains(inside)) {
        return true;
    }
    const SYSTEM: &[&str] = &[
        "/etc/profile",
        "/etc/bash.bashrc",
        "/etc/bashrc",
        "/etc/zsh",
        "/etc/environment",
    ];
    let name = target.rsplit(['/', '\\']).next().unwrap_or(target);
    NAMES.contains(&name) || SYSTEM.iter().any(|s| target.starts_with(s))
}

/// Whether `word` is an absolute path inside a system tree (`/etc`, `/boot/x`, `/usr/lib`),
/// where even a narrowed delete removes files the operating system needs.
pub(crate) fn in_system_tree(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('/') else {
        return false;
    };
    let first = rest
        .split('/')
        .find(|p| !p.is_empty() && *p != ".")
        .unwrap_or_default();
    OS_TREES.contains(&first.to_ascii_lowercase().as_str())
}

/// An absolute path with `//`, `.` and `..` folded as the kernel would (lexically), and
/// `/proc/…/root/` (a process's view of `/`) taken as `/`. Other paths are returned as given.
pub(crate) fn lexical(path: &str) -> String {
    if !path.starts_with('/') {
        return path.to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(part),
        }
        if parts.len() == 3 && parts[0] == "proc" && parts[2] == "root" {
            parts.clear();
        }
    }
    let trailing = if path.ends_with('/') && !parts.is_empty() {
        "/"
    } else {
        ""
    };
    format!("/{}{trailing}", parts.join("/"))
}

/// Whether a glob (`/proc/sysrq-*`, `/pro?/sys/…`) could name a kernel control or a raw
/// disk: bash expands a redirection's glob when it matches one file.
pub(crate) fn glob_could_name_device(target: &str) -> bool {
    let Some(at) = target.find(['*', '?', '[']) else {
        return false;
    };
    let prefix = lexical(&target[..at].to_ascii_lowercase());
    let prefix = if target[..at].ends_with('/') && !prefix.ends_with('/') {
        format!("{prefix}/")
    } else {
        prefix
    };
    [
        "/proc/sysrq-trigger",
        "/proc/sys/",
        "/sys/",
        "/dev/sd",
        "/dev/nvme",
        "/dev/hd",
        "/dev/vd",
        "/dev/mmcblk",
        "/dev/mem",
        "/dev/kmem",
        "/dev/port",
        "/dev/xvd",
        "/dev/md",
        "/dev/dm-",
        "/dev/disk/",
        "/dev/mapper/",
    ]
    .iter()
    .any(|device| device.starts_with(&prefix) || prefix.starts_with(device))
}

/// Bash's network pseudo-devices: `/dev/tcp/host/port`, `/dev/udp/host/port`.
pub(crate) fn is_network_device(target: &str) -> bool {
    let path = lexical(&target.to_ascii_lowercase());
    path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/")
}

/// Whether writing to `target` drives the kernel rather than a file: `/proc/sysrq-trigger`
/// (reboot, crash, power off at once), the tunables under `/proc/sys/`, the device and power
/// controls under `/sys/`, a process's memory, and the memory and port devices.
pub(crate) fn is_kernel_control(target: &str) -> bool {
    let lowered = lexical(&target.to_ascii_lowercase());
    let path = lowered.trim_end_matches('/');
    path == "/proc/sysrq-trigger"
        || path.starts_with("/proc/sys/")
        || path.starts_with("/sys/")
        || matches!(path, "/dev/mem" | "/dev/kmem" | "/dev/port")
        || (path.starts_with("/proc/") && path.ends_with("/mem"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(word: &str, expect_dangerous: bool) {
        let word = word
            .replace("<H>", &HOME.to_string())
            .replace("<V>", &VARIABLE.to_string());
        let got = dangerous(&word, None);
        assert_eq!(got.is_some(), expect_dangerous, "{word:?} → {got:?}");
    }

    #[test]
    fn targets() {
        let cases = [
            ("/", true),
            ("//", true),
            ("/.", true),
            ("/./", true),
            ("/*", true),
            ("/..", true),
            ("/.*", true),
            ("/*/*", true),
            ("/e*", true),
            ("/{etc,tmp}", true),
            ("/etc", true),
            ("/etc/", true),
            ("/usr/lib/x86_64-linux-gnu", true),
            ("/home", true),
            ("/home/alice", true),
            ("/Users/alice/", true),
            ("/var/lib", true),
            ("/private/var/db", true),
            ("/root", true),
            ("<H>", true),
            ("<H>/", true),
            ("<H>/*", true),
            ("<H>/..", true),
            ("<V>/", true),
            ("<V>/*", true),
            ("..", true),
            ("../..", true),
            ("./../*", true),
            ("C:", true),
            (r"C:\", true),
            ("C:/", true),
            (r"c:\*.*", true),
            (r"C:\Windows\System32", true),
            (r"C:\Users\bob", true),
            ("%SystemDrive%", true),
            (r"%USERPROFILE%\", true),
            ("$env:USERPROFILE", true),
            (r"\", true),
            // Ordinary paths stay allowed.
            ("./build", false),
            ("build", false),
            ("node_modules", false),
            ("*", false),
            (".", false),
            ("../sibling", false),
            ("/tmp/x", false),
            ("/var/tmp/build-1", false),
            ("/home/alice/project/build", false),
            ("<H>/project/build", false),
            ("<H>/.cache/pip", false),
            ("<V>", false),
            ("<V>/out", false),
            (r"C:\Users\bob\project", false),
            (r".\build", false),
            (r"\\server\share", false),
        ];
        for (word, expect) in cases {
            check(word, expect);
        }
    }

    #[test]
    fn cwd_joins_relative_targets() {
        assert!(dangerous("*", Some("/")).is_some());
        assert!(dangerous(".", Some("\u{E000}")).is_some());
        assert!(dangerous("build", Some("/")).is_none());
    }

    #[test]
    fn raw_disks() {
        for disk in [
            "/dev/sda",
            "/dev/nvme0n1",
            "/dev/disk2",
            "/dev/mapper/root",
            r"\\.\PhysicalDrive0",
        ] {
            assert!(is_raw_disk(disk), "{disk}");
        }
        for safe in [
            "/dev/null",
            "/dev/stdout",
            "/dev/stderr",
            "/dev/tty",
            "/dev/fd/3",
            "out.img",
            "/dev/tcp/h/1",
        ] {
            assert!(!is_raw_disk(safe), "{safe}");
        }
    }

    #[test]
    fn brace_expansion_is_bounded() {
        let word = "/{a,b}".repeat(20);
        let mut out = Vec::new();
        expand_braces(&word, &mut out);
        assert!(out.len() <= BRACE_EXPANSIONS_MAX);
    }
}
