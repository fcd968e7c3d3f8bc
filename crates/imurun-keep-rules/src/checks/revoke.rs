//! Revoking a person's tool: every version deployed so far, whatever its rows say.

/// What a revoke reads under the lock.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    /// The tool's row, if there is one: its version and whether it holds this host's seal.
    pub row: Option<Row>,
    /// The highest version ever deployed (the database's mark and the Keep folder's).
    pub deployed: i64,
    /// The highest version deployed by this host's own mark (the Keep folder's).
    pub deployed_here: i64,
}

/// A tool's row as a revoke sees it.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub version: i64,
    pub sealed: bool,
}

/// What a revoke writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The revocation mark: every version up to it is refused. The highest version ever
    /// deployed, so a row whose version was lowered, or that was marked revoked or deleted in
    /// the database beforehand, leaves no version outside it.
    pub revoked_version: i64,
    /// The mark kept outside the database: only versions this host vouches for (its own deploy
    /// mark, and a row that holds its seal), so an edited database mark cannot refuse a later
    /// version here for good. 0: nothing to mark.
    pub vouched: i64,
}

/// The revoke's plan, or `None` where there is nothing to revoke (no row and nothing ever
/// deployed: the tool does not exist).
pub fn check(snapshot: &Snapshot) -> Option<Plan> {
    let row = snapshot.row;
    if row.is_none() && snapshot.deployed == 0 {
        return None;
    }
    let row_version = row.map_or(0, |row| row.version);
    let sealed_version = row.filter(|row| row.sealed).map_or(0, |row| row.version);
    Some(Plan {
        revoked_version: row_version.max(snapshot.deployed),
        vouched: snapshot.deployed_here.max(sealed_version),
    })
}

/// What a revoke answers once written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The database's rows were marked revoked now: the tool as it is.
    Revoked,
    /// The rows were revoked already (the mark still holds every version deployed).
    AlreadyRevoked,
    /// There was no row (only a mark): as for a tool that does not exist.
    NoRow,
}

/// The answer of a revoke that found a row (`existed`) and marked some revoked (`changed`).
pub fn outcome(existed: bool, changed: bool) -> Outcome {
    match (existed, changed) {
        (_, true) => Outcome::Revoked,
        (true, false) => Outcome::AlreadyRevoked,
        (false, false) => Outcome::NoRow,
    }
}
