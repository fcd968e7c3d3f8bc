//! Calling a person's deployed tool from their session's cell (`tools.call`): the tool runs in
//! a cell of its own, with its own clamped manifest, the person's own connections, and the
//! session's taint.
//!
//! Revocation: each call reads the tool's row first, so from the revoke's write on no call
//! starts it. A call that read the row before the revoke committed runs to its end (bounded by
//! the calling session's wall-time limit; an approval it asks for after the revoke is refused);
//! the session's next call is refused. See
//! `docs/keep/tools.md`.

use std::sync::Arc;

use imurun_cell::World;

use super::KeepService;
use super::tool_access::own_tool_name;
use crate::cells::{SessionHost, ToolAnswer, cell_error, cut_text, imports_for, limits_for};

impl KeepService {
    /// Runs `user`'s tool `name` (`name` or `u/<user>/<name>`) for `parent`'s cell. A tool that
    /// does not exist, was revoked or is another person's gets one answer.
    pub(crate) async fn call_user_tool(
        &self,
        parent: &SessionHost,
        name: &str,
        args_json: &str,
    ) -> Result<ToolAnswer, String> {
        let missing = || format!("no tool named {:?} is yours to call", cut_text(name));
        let Some(own) = own_tool_name(&parent.user, name) else {
            return Err(missing());
        };
        let found = self
            .tool_for_call(&parent.user, own)
            .await
            .map_err(|error| format!("the tool cannot be run: {error}"))?;
        let Some((row, manifest)) = found else {
            return Err(missing());
        };
        let Some(cells) = parent.cells.upgrade() else {
            return Err("the host is stopping".to_owned());
        };
        let bundle = self
            .store()
            .keep_tool_bundle(&parent.user, own, row.version)
            .await
            .map_err(|error| error.to_string())?
            .ok_or_else(missing)?;
        let ask = row.tainted && row.taint_cleared.is_none();
        let qualified = format!("u/{}/{own}", parent.user);
        let host = Arc::new(parent.for_tool(qualified, manifest, ask, cells.loopback_ports()));
        let mut cell = cells
            .engine()
            .start(
                &row.bundle_sha256,
                &bundle,
                World::Tool,
                imports_for(&host.manifest, false),
                limits_for(&host.manifest),
                Arc::clone(&host) as Arc<dyn imurun_cell::CellHost>,
            )
            .await
            .map_err(|error| format!("the tool did not start: {}", cell_error(error)))?;
        let result = cell.call(args_json).await;
        drop(cell);
        // What the tool's cell read from outside taints the session that called it, and so
        // does anything a tool proposed by a tainted session answers until its taint is cleared.
        let untrusted = (host.tainted_by().is_some() || ask) && parent.tainted_by().is_none();
        match result {
            Ok(text) => Ok(ToolAnswer { text, untrusted }),
            Err(error) => {
                if untrusted && let Some(source) = host.tainted_by() {
                    parent.taint(&source).await.map_err(|error| {
                        format!("the session could not be marked tainted: {error}")
                    })?;
                }
                Err(format!("the tool failed: {}", cell_error(error)))
            }
        }
    }
}
