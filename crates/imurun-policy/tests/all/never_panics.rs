//! Property tests: no input makes the deny-list or path checking panic.

use imurun_policy::{CommandRisk, Target, command_risk, destructive_reason};
use proptest::prelude::*;

use crate::support::TempWorkspace;

/// Pieces of shell syntax, so random commands reach deep into the lexer's paths.
const PIECES: &[&str] = &[
    "rm",
    "-rf",
    "/",
    "~",
    "$HOME",
    "${HOME",
    "$(",
    ")",
    "`",
    "'",
    "\"",
    "\\",
    "|",
    ";",
    "&&",
    "||",
    "&",
    "\n",
    "<<",
    "<<<",
    "EOF",
    ">",
    "<(",
    "{",
    "}",
    "(",
    "bash",
    "sh",
    "-c",
    "powershell",
    "-enc",
    "cmd",
    "/c",
    "iex",
    "iwr",
    "curl",
    "base64",
    "-d",
    ":(){",
    ":|:&",
    "};:",
    "%0|%0",
    "$'\\x",
    "^",
    "C:\\",
    "*",
    "..",
    "sudo",
    "env",
    "-S",
    "cd",
    "find",
    "-delete",
    " ",
    "\t",
    "$X",
    "${X:-rm}",
    "$IFS",
    "/bin/r?",
    "r[m]",
    "{rm,-rf,/}",
    "python3 -c",
    "perl -ne",
    "ruby -e",
    "node --eval=",
    "php -r",
    "awk",
    "xargs -I{}",
    "-exec",
    "{}",
    "\\;",
    "parallel",
    ":::",
    "alias x=",
    "trap",
    "function f",
    "f()",
    "PROMPT_COMMAND=",
    "ssh -p 22 host",
    "kubectl exec p --",
    "sgdisk -Z",
    "/dev/sda",
    "/proc/sysrq-trigger",
    "& (",
];

/// Pieces of interpreter code: strings of every kind, calls, interpolations.
#[rustfmt::skip]
const CODE_PIECES: &[&str] = &[
    "os.system(", "subprocess.run(", "[", "]", ",", "(", ")", "'", "\"", "`", "'''", "f'",
    "rb'", "{", "}", "#{", "${", "$x", "@a", "q{", "qx(", "%x(", "%w[", "exec(", "eval(",
    "__import__(", "getattr(", "shutil.rmtree(", "fs.rmSync(", "FileUtils.rm_rf", "unlink ",
    "system ", "open(", "'w'", "'>'", "/dev/sda", "rm -rf /", "~", "+", ".", ":", "=", "=>",
    "shell=True", "|", "getline", "\\", ";", "\n", " ", "pty.spawn(", "'/bin/sh'",
];

/// A one-liner for a random interpreter, its random code double-quoted for the shell.
fn inline_code() -> impl Strategy<Value = String> {
    let interpreter = prop::sample::select(
        &[
            "python3 -c",
            "perl -e",
            "ruby -e",
            "node -e",
            "php -r",
            "awk",
            "lua -e",
            "deno eval",
        ][..],
    );
    let code = prop::collection::vec(prop::sample::select(CODE_PIECES), 0..60)
        .prop_map(|pieces| pieces.concat());
    (interpreter, code).prop_map(|(interpreter, code)| {
        let quoted = code
            .replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('$', "\\$")
            .replace('`', "\\`");
        format!("{interpreter} \"{quoted}\"")
    })
}

fn shellish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..80).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn the_deny_list_never_panics_on_any_string(command in any::<String>()) {
        let _ = destructive_reason(&command);
    }

    #[test]
    fn the_deny_list_never_panics_on_shell_like_text(command in shellish()) {
        let _ = command_risk(&command);
    }

    #[test]
    fn the_deny_list_never_panics_on_interpreter_code(command in inline_code()) {
        let risk = command_risk(&command);
        // Whatever it decides, the destructive view agrees with the whole one.
        prop_assert_eq!(
            destructive_reason(&command).is_some(),
            matches!(risk, Some(CommandRisk::Destructive(_)))
        );
    }

    #[test]
    fn path_checks_never_panic(written in any::<String>()) {
        let t = TempWorkspace::new();
        let _ = t.workspace.check_path(&written, Target::Follow);
        let _ = t.workspace.check_path(&written, Target::Entry);
    }
}

/// Inputs that once overflowed the stack or took seconds: each is decided, on a thread with
/// the 2 MiB stack a runtime worker has.
#[test]
fn pathological_inputs_are_decided_on_a_small_stack() {
    let inputs = vec![
        format!("{}ls", "su -- ".repeat(6000)),
        format!("{}ls", "ssh h ".repeat(3000)),
        format!("{}ls", "kubectl exec p -- ".repeat(3000)),
        format!("{}ls", "docker exec c ".repeat(3000)),
        format!("parallel {}::: {}", "A ".repeat(2000), "x ".repeat(1000)),
        format!("python3 -c \"{}\"", "f(".repeat(6000)),
        format!("perl -e '{}'", "a ".repeat(10000)),
        format!("awk '{}'", "\"a\"|".repeat(10000)),
        format!("rm -rf {}", "{a,b}".repeat(12000)),
        format!("echo {}", "${X:-".repeat(3000)),
        format!("echo {}", "$((".repeat(3000)),
        format!("cd {}; {}", "a".repeat(8000), "rm -rf x; ".repeat(800)),
        format!("cd {}; {}", "a/".repeat(15000), "rm -rf x;".repeat(3500)),
    ];
    let risks = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            inputs
                .iter()
                .map(|input| command_risk(input))
                .collect::<Vec<_>>()
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(risks.len(), 13);
    // Nesting past the bound is refused, never waved through.
    for nested in &risks[..4] {
        assert!(
            matches!(nested, Some(CommandRisk::Destructive(reason)) if reason.contains("too deeply")),
            "{nested:?}"
        );
    }
}
