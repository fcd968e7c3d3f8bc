//! `imurun config show`'s text: the configuration as TOML, each value with where it came from.

use super::{ResolvedConfig, stored_setting_key};

impl ResolvedConfig {
    /// The configuration as TOML, each value followed by a comment saying where it came from.
    /// The API token is never printed.
    pub(crate) fn to_annotated_toml(&self) -> String {
        let mut out = String::new();
        let mut line = |key: &'static str, value: Option<toml::Value>| {
            let name = key.rsplit('.').next().unwrap_or(key);
            let origin = self.origin(key);
            let note = match stored_setting_key(key) {
                Some(setting) if origin.yields_to_stored_settings() => {
                    format!("{origin}; the server's stored {setting} wins if set")
                }
                _ => origin.to_string(),
            };
            match value {
                Some(value) => out.push_str(&format!("{name} = {value}  # {note}\n")),
                None => out.push_str(&format!("# {name} is not set  # {note}\n")),
            }
        };
        let text = |text: &str| Some(toml::Value::String(text.to_owned()));
        let flag = |on: bool| Some(toml::Value::Boolean(on));
        let number = |n: u64| Some(toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX)));

        line("model", text(&self.model));
        line("server.addr", text(&self.server.addr.to_string()));
        line(
            "server.api_token",
            self.server.api_token.as_ref().and(text("<redacted>")),
        );
        let tls = self.server.tls.as_ref();
        line(
            "server.tls_cert",
            tls.and_then(|files| text(&files.cert.to_string_lossy())),
        );
        line(
            "server.tls_key",
            tls.and_then(|files| text(&files.key.to_string_lossy())),
        );
        // A PostgreSQL URL may hold a password: shown without it.
        line(
            "database.url",
            self.database_url
                .as_ref()
                .and_then(|url| text(&url.shown())),
        );
        let agent = &self.agent;
        line("agent.max_steps", number(agent.max_steps as u64));
        line("agent.persona", agent.persona.as_deref().and_then(text));
        line("agent.summarise_history", flag(agent.summarise_history));
        line("agent.call_prefill", text(agent.call_prefill.as_str()));
        line("agent.tool_examples", flag(agent.tool_examples));
        line("agent.grammar", flag(agent.grammar));
        line("agent.prefetch", flag(agent.prefetch));
        let permissions = &self.permissions;
        line("permissions.mode", text(permissions.mode.as_str()));
        line(
            "permissions.workspace_root",
            text(&permissions.workspace_root.to_string_lossy()),
        );
        line(
            "permissions.approval_timeout_s",
            number(permissions.approval_timeout_s),
        );
        let toggles = &permissions.toggles;
        line("permissions.toggles.read_files", flag(toggles.read_files));
        line("permissions.toggles.write_files", flag(toggles.write_files));
        line("permissions.toggles.run_shell", flag(toggles.run_shell));
        line("permissions.toggles.network", flag(toggles.network));
        line("keep.enabled", flag(self.keep.enabled));
        line("keep.dir", text(&self.keep.dir.to_string_lossy()));
        line("keep.host_id", self.keep.host_id.as_deref().and_then(text));
        let mut out = section_headers(&out);
        for server in &self.mcp_servers {
            // The transport's environment and headers may hold secrets: only the shape shows.
            out.push_str(&format!(
                "\n[[mcp.servers]]  # from the file\nname = {}\n# transport: {} {}\n",
                toml::Value::String(server.name.clone()),
                server.transport_kind(),
                server.target()
            ));
        }
        out
    }
}

/// Adds the `[server]`, `[agent]`, ... headers before the first key of each table.
fn section_headers(lines: &str) -> String {
    const SECTIONS: [(&str, &str); 6] = [
        ("addr", "[server]"),
        ("url", "[database]"),
        ("max_steps", "[agent]"),
        ("mode", "[permissions]"),
        ("read_files", "[permissions.toggles]"),
        ("enabled", "[keep]"),
    ];
    let mut out = String::new();
    for line in lines.lines() {
        let key = line
            .trim_start_matches("# ")
            .split([' ', '='])
            .next()
            .unwrap_or("");
        if let Some((_, header)) = SECTIONS.iter().find(|(first, _)| *first == key) {
            out.push('\n');
            out.push_str(header);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
