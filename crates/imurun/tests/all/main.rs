//! Integration tests of the `imurun` binary and of the workspace as a whole, in one binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod architecture;
mod ask_cli;
mod backtrace;
mod chat_cli;
mod config_cli;
mod embedded_cli;
mod eval_cli;
mod everyday;
mod keep_cli;
mod keep_deploy_cli;
mod keep_hosts;
#[path = "../kit/keep_hosts.rs"]
mod keep_hosts_kit;
mod keep_page;
mod keep_talk_page;
mod likely_values;
mod parse_cli;
mod policy_cli;
mod schemathesis;
mod serve_cli;
mod serve_tls;
mod support;
mod version_cli;
