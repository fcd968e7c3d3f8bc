//! Skills: instruction packs a person stores in `<dir>/<id>/SKILL.md` ([`SkillStore`]) and
//! invokes by writing `/<id>` in a prompt ([`take_skills`]).
//!
//! A `SKILL.md` may open with YAML front matter (`---`, `key: value` lines, `---`), as other
//! agent tools write them; only `name` and `description` are read, other keys are ignored,
//! and a file without front matter is a skill named after its directory. The front matter is
//! read by hand: a flat list of `key: value` lines needs no YAML library.
//!
//! Invocation rules (`docs/agent-loop.md`, "Skills"): a token is `/` followed by a stored
//! skill's id or the slug of its name, at the start of the prompt or after whitespace, and
//! ending at whitespace or the end of the prompt (so `/haiku.` is not a token: punctuation
//! glued to it makes it text, as in a path). Letters match whatever their case. The first
//! [`SKILLS_MAX`] distinct skills are invoked; their tokens are removed from the prompt the
//! model sees, and every other token (`/usr/bin`, a fourth skill) stays as it was typed.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::prompt::{SKILLS_MAX, Skill};

/// The file of a skill inside its directory.
pub const SKILL_FILE: &str = "SKILL.md";

/// The longest skill id, in characters.
pub const SKILL_ID_CHARS_MAX: usize = 64;

/// The longest skill name accepted by [`SkillStore::create`], in characters.
pub const SKILL_NAME_CHARS_MAX: usize = 200;

/// The longest description accepted by [`SkillStore::create`], in characters.
pub const SKILL_DESCRIPTION_CHARS_MAX: usize = 1000;

/// The largest body [`SkillStore::create`] stores, in bytes. The prompt only ever takes the
/// first 4000 characters ([`crate::SKILL_BODY_CHARS_MAX`]); the rest is kept for the person.
pub const SKILL_BODY_BYTES_MAX: usize = 64 << 10;

/// The most skills [`SkillStore::list`] returns and the store holds.
pub const SKILLS_LISTED_MAX: usize = 1000;

/// What the model is asked when a prompt held nothing but skill tokens.
pub const ONLY_SKILLS_PROMPT: &str = "Follow the skill.";

/// Bytes read of one `SKILL.md`: the largest body plus room for front matter. A bigger file
/// written by another tool is read up to this bound and its body cut there.
const SKILL_FILE_BYTES_MAX: u64 = (SKILL_BODY_BYTES_MAX + (8 << 10)) as u64;

/// Why a skill could not be read, stored or removed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The id is not 1 to 64 ASCII letters, digits, `-`, `_` or `.` not starting with `.`.
    #[error(
        "`{id}` is not a skill id: use 1 to 64 ASCII letters, digits, `-`, `_` or `.`, not starting with `.`"
    )]
    InvalidId { id: String },
    /// A field of a new skill is empty, too long, or its name has no letter or digit to make
    /// an id from; the message says which.
    #[error("{message}")]
    Invalid { message: String },
    /// A new skill's body is over [`SKILL_BODY_BYTES_MAX`].
    #[error("the skill's body is {bytes} bytes long; at most {bytes_max} are stored")]
    TooLarge { bytes: usize, bytes_max: usize },
    /// No skill has this id.
    #[error("no skill has the id `{id}`")]
    NotFound { id: String },
    /// A skill with this id exists already (a new skill's id is the slug of its name).
    #[error("a skill with the id `{id}` exists already; delete it first or choose another name")]
    AlreadyExists { id: String },
    /// The store holds [`SKILLS_LISTED_MAX`] skills already.
    #[error("the skill store holds its most skills ({skills_max}); delete one first")]
    Full { skills_max: usize },
    /// Reading or writing the skill directory failed.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// One skill as listed: everything but its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillSummary {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The body's length in characters.
    pub chars: usize,
}

/// One stored skill with its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub body: String,
}

impl StoredSkill {
    /// The skill as the prompt injects it.
    pub fn to_skill(&self) -> Skill {
        Skill::new(self.name.clone(), self.body.clone()).with_id(self.id.clone())
    }

    fn summary(&self) -> SkillSummary {
        SkillSummary {
            id: self.id.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            chars: self.body.chars().count(),
        }
    }
}

/// The skills in one directory, one sub-directory per skill. Cloning is cheap; every call
/// reads the directory afresh, so skills written by other tools appear at once.
#[derive(Debug, Clone)]
pub struct SkillStore {
    dir: PathBuf,
}

impl SkillStore {
    /// The store in `dir`, created if missing.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, SkillError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| SkillError::Io {
            action: "creating",
            path: dir.clone(),
            source,
        })?;
        Ok(Self { dir })
    }

    /// The directory the skills live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The stored skills, by id, at most [`SKILLS_LISTED_MAX`]. A directory whose name is not
    /// a valid id, or without a readable `SKILL.md`, is skipped.
    pub fn list(&self) -> Result<Vec<SkillSummary>, SkillError> {
        Ok(self
            .ids()?
            .into_iter()
            .filter_map(|id| self.read(&id).ok())
            .map(|skill| skill.summary())
            .collect())
    }

    /// The skill `id` with its body.
    pub fn get(&self, id: &str) -> Result<StoredSkill, SkillError> {
        check_id(id)?;
        self.read(id)
    }

    /// Stores a new skill under the slug of `name` and returns it. Newlines in the
    /// description become spaces (front matter values are one line each).
    pub fn create(
        &self,
        name: &str,
        description: &str,
        body: &str,
    ) -> Result<StoredSkill, SkillError> {
        let name = name.trim();
        check_field("name", name, SKILL_NAME_CHARS_MAX)?;
        if name.contains(['\n', '\r']) {
            return Err(invalid("the skill's name must be one line"));
        }
        let description = description.split_whitespace().collect::<Vec<_>>().join(" ");
        if description.chars().count() > SKILL_DESCRIPTION_CHARS_MAX {
            return Err(invalid(format!(
                "the skill's description is over {SKILL_DESCRIPTION_CHARS_MAX} characters"
            )));
        }
        if body.trim().is_empty() {
            return Err(invalid("the skill's body is empty; write its instructions"));
        }
        if body.len() > SKILL_BODY_BYTES_MAX {
            return Err(SkillError::TooLarge {
                bytes: body.len(),
                bytes_max: SKILL_BODY_BYTES_MAX,
            });
        }
        let id = slug(name);
        if id.is_empty() {
            return Err(invalid(format!(
                "the name `{name}` has no ASCII letter or digit to make the skill's id from"
            )));
        }
        if self.ids()?.len() >= SKILLS_LISTED_MAX {
            return Err(SkillError::Full {
                skills_max: SKILLS_LISTED_MAX,
            });
        }
        let skill_dir = self.dir.join(&id);
        // `create_dir` (not `_all`) fails when the directory exists: the check and the claim
        // are one step, so two creations of one id cannot both succeed.
        match fs::create_dir(&skill_dir) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                return Err(SkillError::AlreadyExists { id });
            }
            Err(source) => return Err(io_error("creating", &skill_dir, source)),
        }
        let text = format!(
            "---\nname: {}\ndescription: {}\n---\n{body}",
            yaml_value(name),
            yaml_value(&description)
        );
        let file = skill_dir.join(SKILL_FILE);
        if let Err(source) = fs::write(&file, text) {
            // Leave no half-made skill behind; the write error is the one worth reporting.
            let _ = fs::remove_dir_all(&skill_dir);
            return Err(io_error("writing", &file, source));
        }
        Ok(StoredSkill {
            id,
            name: name.to_owned(),
            description,
            body: body.to_owned(),
        })
    }

    /// Removes the skill `id` and its directory.
    pub fn delete(&self, id: &str) -> Result<(), SkillError> {
        check_id(id)?;
        let skill_dir = self.dir.join(id);
        if !skill_dir.join(SKILL_FILE).is_file() {
            return Err(SkillError::NotFound { id: id.to_owned() });
        }
        fs::remove_dir_all(&skill_dir).map_err(|source| io_error("removing", &skill_dir, source))
    }

    /// The valid ids of skill directories, sorted, at most [`SKILLS_LISTED_MAX`].
    fn ids(&self) -> Result<Vec<String>, SkillError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(io_error("reading", &self.dir, source)),
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter(|id| check_id(id).is_ok())
            .filter(|id| self.dir.join(id).join(SKILL_FILE).is_file())
            .collect();
        ids.sort_unstable();
        ids.truncate(SKILLS_LISTED_MAX);
        Ok(ids)
    }

    /// Reads `<dir>/<id>/SKILL.md`; `id` is already checked.
    fn read(&self, id: &str) -> Result<StoredSkill, SkillError> {
        let path = self.dir.join(id).join(SKILL_FILE);
        let file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(SkillError::NotFound { id: id.to_owned() });
            }
            Err(source) => return Err(io_error("reading", &path, source)),
        };
        let mut bytes = Vec::new();
        file.take(SKILL_FILE_BYTES_MAX)
            .read_to_end(&mut bytes)
            .map_err(|source| io_error("reading", &path, source))?;
        let text = String::from_utf8_lossy(&bytes);
        Ok(parse_skill(id, &text))
    }
}

/// The slug of a skill's name, which is its id: ASCII letters lower-cased and digits kept,
/// every other run of characters one `-`, no `-` at either end, at most 64 characters.
/// `"My Skill"` → `my-skill`; empty when the name has no ASCII letter or digit.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= SKILL_ID_CHARS_MAX {
            break;
        }
    }
    out.truncate(SKILL_ID_CHARS_MAX);
    out.trim_end_matches('-').to_owned()
}

/// The prompt for the model and the skills it invokes: every `/<id>` token (or `/<slug of
/// the name>`) naming one of the first [`SKILLS_MAX`] distinct stored skills is removed, with
/// the whitespace after it. A prompt left empty becomes [`ONLY_SKILLS_PROMPT`]. Without
/// any such token the prompt comes back exactly as given. A store that cannot be read
/// invokes nothing: the prompt still runs.
pub fn take_skills(prompt: &str, store: &SkillStore) -> (String, Vec<Skill>) {
    let words = words(prompt);
    let has_candidate = words
        .iter()
        .any(|&(start, end)| token_key(&prompt[start..end]).is_some());
    if !has_candidate {
        return (prompt.to_owned(), Vec::new());
    }
    let stored = store.list().unwrap_or_default();
    let mut skills: Vec<Skill> = Vec::new();
    let mut removed: Vec<(usize, usize)> = Vec::new();
    for &(start, end) in &words {
        let Some(key) = token_key(&prompt[start..end]) else {
            continue;
        };
        let Some(found) = stored.iter().find(|skill| {
            skill.id.eq_ignore_ascii_case(key) || slug(&skill.name).eq_ignore_ascii_case(key)
        }) else {
            continue;
        };
        let invoked = skills.iter().any(|skill| skill.id == found.id);
        if !invoked {
            if skills.len() >= SKILLS_MAX {
                continue;
            }
            match store.get(&found.id) {
                Ok(skill) => skills.push(skill.to_skill()),
                // Deleted between the listing and now: the token is left as text.
                Err(_) => continue,
            }
        }
        removed.push((start, end));
    }
    if removed.is_empty() {
        return (prompt.to_owned(), skills);
    }
    let cleaned = without_tokens(prompt, &removed);
    let cleaned = if cleaned.is_empty() {
        ONLY_SKILLS_PROMPT.to_owned()
    } else {
        cleaned
    };
    (cleaned, skills)
}

/// Byte ranges of the whitespace-separated words of `text`.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(from)) => {
                words.push((from, at));
                start = None;
            }
            (false, None) => start = Some(at),
            _ => {}
        }
    }
    if let Some(from) = start {
        words.push((from, text.len()));
    }
    words
}

/// What follows the `/` of a word that could be a skill token (`/` and a valid id).
fn token_key(word: &str) -> Option<&str> {
    let key = word.strip_prefix('/')?;
    check_id(key).ok().map(|()| key)
}

/// `text` without the byte ranges `removed` (sorted, disjoint), each taken with the
/// whitespace that follows it, and trimmed.
fn without_tokens(text: &str, removed: &[(usize, usize)]) -> String {
    let mut out = String::new();
    let mut from = 0;
    for &(start, end) in removed {
        out.push_str(&text[from..start]);
        let rest = &text[end..];
        from = end + (rest.len() - rest.trim_start().len());
    }
    out.push_str(&text[from..]);
    out.trim().to_owned()
}

/// A skill from the text of its `SKILL.md`.
fn parse_skill(id: &str, text: &str) -> StoredSkill {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body) = split_front_matter(text).unwrap_or(("", text));
    let mut name = String::new();
    let mut description = String::new();
    for line in front.lines() {
        // Indented lines belong to a nested value of another key.
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "name" => name = unquote(value.trim()),
            "description" => description = unquote(value.trim()),
            _ => {}
        }
    }
    if name.trim().is_empty() {
        id.clone_into(&mut name);
    }
    StoredSkill {
        id: id.to_owned(),
        name,
        description,
        body: body.to_owned(),
    }
}

/// `(front matter, body)` when `text` opens with a `---` line closed by another.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    None
}

/// A front matter value without its quotes (`\"` and `\\` unescaped in double quotes).
fn unquote(value: &str) -> String {
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        return value[1..value.len() - 1]
            .replace("\\\"", "\"")
            .replace("\\\\", "\\");
    }
    if value.len() >= 2 && value.starts_with('\'') && value.ends_with('\'') {
        return value[1..value.len() - 1].replace("''", "'");
    }
    value.to_owned()
}

/// A value as YAML reads it back unchanged: plain when that is safe, else double-quoted.
fn yaml_value(value: &str) -> String {
    let plain = !value.is_empty()
        && !value.starts_with(|c: char| "\"'!&*?|>%@`#{}[],-:".contains(c) || c.is_whitespace())
        && !value.ends_with(char::is_whitespace)
        && !value.contains(": ")
        && !value.contains(" #");
    if plain {
        value.to_owned()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

fn check_id(id: &str) -> Result<(), SkillError> {
    let valid = !id.is_empty()
        && id.len() <= SKILL_ID_CHARS_MAX
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(SkillError::InvalidId { id: id.to_owned() })
    }
}

fn check_field(field: &str, value: &str, chars_max: usize) -> Result<(), SkillError> {
    if value.is_empty() {
        return Err(invalid(format!("the skill's {field} is empty")));
    }
    if value.chars().count() > chars_max {
        return Err(invalid(format!(
            "the skill's {field} is over {chars_max} characters"
        )));
    }
    Ok(())
}

fn invalid(message: impl Into<String>) -> SkillError {
    SkillError::Invalid {
        message: message.into(),
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> SkillError {
    SkillError::Io {
        action,
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::{SKILL_BODY_CHARS_MAX, SystemPrompt, system_message};

    /// A store in a temporary directory holding `skills` as `(name, body)`.
    fn store_with(skills: &[(&str, &str)]) -> (tempfile::TempDir, SkillStore) {
        let temp = tempfile::tempdir().unwrap();
        let store = SkillStore::open(temp.path().join("skills")).unwrap();
        for (name, body) in skills {
            store.create(name, "", body).unwrap();
        }
        (temp, store)
    }

    /// Takes the skills of `prompt` and compares the cleaned prompt and the invoked ids.
    fn check(store: &SkillStore, prompt: &str, expected_prompt: &str, expected_ids: &[&str]) {
        let (cleaned, skills) = take_skills(prompt, store);
        let ids: Vec<&str> = skills.iter().map(|skill| skill.id.as_str()).collect();
        assert_eq!(
            (cleaned.as_str(), ids.as_slice()),
            (expected_prompt, expected_ids),
            "prompt: {prompt:?}"
        );
    }

    #[test]
    fn skill_tokens_are_taken_out_of_the_prompt() {
        let (_temp, store) = store_with(&[
            ("haiku", "Answer in a haiku."),
            ("My Skill", "Be mine."),
            ("terse", "One sentence."),
            ("formal", "Be formal."),
        ]);
        let cases: &[(&str, &str, &[&str])] = &[
            ("/haiku write about rain", "write about rain", &["haiku"]),
            ("write about rain /haiku", "write about rain", &["haiku"]),
            ("write /haiku about rain", "write about rain", &["haiku"]),
            ("/haiku", ONLY_SKILLS_PROMPT, &["haiku"]),
            (
                "  /haiku /terse \n",
                ONLY_SKILLS_PROMPT,
                &["haiku", "terse"],
            ),
            // Not stored, not a token, or glued to text: untouched, byte for byte.
            ("ls /usr/bin please", "ls /usr/bin please", &[]),
            ("/nothing here", "/nothing here", &[]),
            ("a/haiku b", "a/haiku b", &[]),
            ("write /haiku. now", "write /haiku. now", &[]),
            ("x  /etc  y", "x  /etc  y", &[]),
            // The slug of the name; the name itself is two words, not a token.
            ("/my-skill go", "go", &["my-skill"]),
            ("/My Skill go", "/My Skill go", &[]),
            // Case does not matter.
            ("/HAIKU rain", "rain", &["haiku"]),
            ("/My-Skill go", "go", &["my-skill"]),
            // Duplicates once; every token of an invoked skill goes.
            ("/haiku /haiku rain /haiku", "rain", &["haiku"]),
            // At most three, the first in prompt order; the fourth stays as typed.
            (
                "/formal /haiku /terse /my-skill go",
                "/my-skill go",
                &["formal", "haiku", "terse"],
            ),
            (
                "line one\n/haiku\nline two",
                "line one\nline two",
                &["haiku"],
            ),
        ];
        for (prompt, expected_prompt, expected_ids) in cases {
            check(&store, prompt, expected_prompt, expected_ids);
        }
    }

    #[test]
    fn an_invoked_skill_carries_its_name_and_body() {
        let (_temp, store) = store_with(&[("My Skill", "Be mine.")]);
        let (_, skills) = take_skills("/my-skill", &store);
        assert_eq!(
            skills,
            [Skill::new("My Skill", "Be mine.").with_id("my-skill")]
        );
    }

    #[test]
    fn a_long_skill_is_cut_at_4000_chars_in_the_system_message() {
        let body = format!("{}{}", "a".repeat(SKILL_BODY_CHARS_MAX), "b".repeat(1000));
        let (_temp, store) = store_with(&[("long", &body)]);
        assert_eq!(store.list().unwrap()[0].chars, 5000);
        let (prompt, skills) = take_skills("/long do it", &store);
        assert_eq!(prompt, "do it");
        let message = system_message(&SystemPrompt {
            persona: "p",
            today: jiff::civil::date(2026, 1, 1),
            tools: None,
            also_connected: None,
            skills: &skills,
            context: None,
            examples: false,
            question: &prompt,
        });
        // The body's last thousand characters are `b`s: none reached the message.
        assert!(message.ends_with(&format!("## Skill: long\n{}", "a".repeat(4000))));
    }

    #[test]
    fn the_store_creates_lists_reads_and_deletes() {
        let (_temp, store) = store_with(&[]);
        let made = store
            .create(
                "Code Review!",
                "Review a diff:\ncarefully",
                "Read every line.",
            )
            .unwrap();
        assert_eq!(made.id, "code-review");
        assert_eq!(made.description, "Review a diff: carefully");
        let text = fs::read_to_string(store.dir().join("code-review/SKILL.md")).unwrap();
        assert_eq!(
            text,
            "---\nname: Code Review!\ndescription: \"Review a diff: carefully\"\n---\nRead every line."
        );
        assert_eq!(store.get("code-review").unwrap(), made);
        assert_eq!(
            store.list().unwrap(),
            [SkillSummary {
                id: "code-review".into(),
                name: "Code Review!".into(),
                description: "Review a diff: carefully".into(),
                chars: 16,
            }]
        );
        assert!(matches!(
            store.create("code review", "", "again"),
            Err(SkillError::AlreadyExists { id }) if id == "code-review"
        ));
        store.delete("code-review").unwrap();
        assert!(matches!(
            store.get("code-review"),
            Err(SkillError::NotFound { .. })
        ));
        assert!(matches!(
            store.delete("code-review"),
            Err(SkillError::NotFound { .. })
        ));
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn bad_skills_are_refused_with_the_reason() {
        let (_temp, store) = store_with(&[]);
        let cases: &[(&str, &str, &str)] = &[
            ("", "body", "the skill's name is empty"),
            ("   ", "body", "the skill's name is empty"),
            ("!!!", "body", "no ASCII letter or digit"),
            ("ok", " \n", "the skill's body is empty"),
            ("two\nlines", "body", "must be one line"),
        ];
        for (name, body, message) in cases {
            let error = store.create(name, "", body).unwrap_err().to_string();
            assert!(error.contains(message), "{name:?}: {error}");
        }
        let big = "x".repeat(SKILL_BODY_BYTES_MAX + 1);
        assert!(matches!(
            store.create("big", "", &big),
            Err(SkillError::TooLarge { .. })
        ));
        assert!(store.create("just fits", "", &big[1..]).is_ok());
    }

    #[test]
    fn ids_that_leave_the_directory_are_refused() {
        let (_temp, store) = store_with(&[("haiku", "h")]);
        for id in [
            "..",
            ".",
            "../haiku",
            "a/b",
            "a\\b",
            ".hidden",
            "",
            &"a".repeat(65),
        ] {
            assert!(
                matches!(store.get(id), Err(SkillError::InvalidId { .. })),
                "{id:?}"
            );
            assert!(
                matches!(store.delete(id), Err(SkillError::InvalidId { .. })),
                "{id:?}"
            );
        }
        assert!(store.dir().join("haiku/SKILL.md").is_file());
    }

    #[test]
    fn slugs_are_short_lower_case_and_hyphenated() {
        let cases = [
            ("My Skill", "my-skill"),
            ("  --Haiku__Writer 2-- ", "haiku-writer-2"),
            ("café au lait", "caf-au-lait"),
            ("日本", ""),
            ("", ""),
        ];
        for (name, expected) in cases {
            assert_eq!(slug(name), expected, "{name:?}");
        }
        let long = slug(&"ab ".repeat(40));
        assert!(
            long.len() <= SKILL_ID_CHARS_MAX && !long.ends_with('-'),
            "{long}"
        );
    }

    #[test]
    fn skill_files_written_by_other_tools_are_read() {
        let (_temp, store) = store_with(&[]);
        let write = |id: &str, text: &str| {
            fs::create_dir_all(store.dir().join(id)).unwrap();
            fs::write(store.dir().join(id).join(SKILL_FILE), text).unwrap();
        };
        write(
            "pdf",
            "---\r\nname: 'PDF tools'\r\ndescription: \"Fill \\\"forms\\\"\"\r\nlicense: MIT\r\n\
             allowed-tools:\r\n  - Read\r\n---\r\nUse pdftotext.\r\n",
        );
        write("plain", "Just instructions.\n");
        write("unclosed", "---\nname: x\nno end");
        write(".hidden", "---\nname: hidden\n---\nsecret");
        fs::create_dir_all(store.dir().join("no-file")).unwrap();
        let listed: Vec<(String, String, String)> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|skill| (skill.id, skill.name, skill.description))
            .collect();
        assert_eq!(
            listed,
            [
                ("pdf".into(), "PDF tools".into(), "Fill \"forms\"".into()),
                ("plain".into(), "plain".into(), String::new()),
                ("unclosed".into(), "unclosed".into(), String::new()),
            ]
        );
        assert_eq!(store.get("pdf").unwrap().body, "Use pdftotext.\r\n");
        assert_eq!(store.get("unclosed").unwrap().body, "---\nname: x\nno end");
        // A token matches the slug of a name read from another tool's file too.
        let (prompt, skills) = take_skills("/pdf-tools fill it", &store);
        assert_eq!((prompt.as_str(), skills[0].id.as_str()), ("fill it", "pdf"));
    }

    #[test]
    fn values_round_trip_through_front_matter() {
        for value in [
            "plain",
            "a: b",
            "\"quoted\"",
            "- dash",
            "x #y",
            "back\\slash \"q\"",
        ] {
            let text = format!("---\nname: {}\n---\nbody", yaml_value(value));
            assert_eq!(parse_skill("id", &text).name, value, "{text}");
        }
    }
}
