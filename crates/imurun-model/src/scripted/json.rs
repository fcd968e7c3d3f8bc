//! The JSON script format (`docs/scripted-model.md`): reading it, bounded, with errors that
//! say where in the text a mistake is.
//!
//! Each check runs inside the JSON reader at the value it is about (a reply is checked by
//! its own map visitor, the reply count by the list visitor), so serde_json can attach the
//! line and column of that value rather than of the end of the file.

use std::fmt;
use std::io::Read;
use std::path::Path;

use imurun_core::ModelError;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::ScriptError;
use crate::scripted::pieces::split_pieces;
use crate::scripted::script::{NAME_CHARS_MAX, Reply, SCRIPT_REPLIES_MAX, Script};

/// The longest script text read, in bytes: 4 MiB, far beyond any hand-written script. Larger
/// input is refused before it is parsed.
pub const SCRIPT_BYTES_MAX: usize = 4 * 1024 * 1024;

/// What the error messages call a script that came as a string.
const STRING_ORIGIN: &str = "the script";

impl Script {
    /// Reads a script from JSON text (at most `SCRIPT_BYTES_MAX` bytes).
    pub fn from_json(json: &str) -> Result<Self, ScriptError> {
        parse(json, STRING_ORIGIN)
    }

    /// Reads a script from a JSON file (at most `SCRIPT_BYTES_MAX` bytes); errors name the
    /// file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ScriptError> {
        let path = path.as_ref();
        let read_error = |source| ScriptError::Read {
            path: path.to_owned(),
            source,
        };
        let origin = path.display().to_string();
        let file = std::fs::File::open(path).map_err(read_error)?;
        // Read one byte past the bound so an oversized file is refused without being read
        // whole; the file's metadata could be stale or absent (a pipe).
        // Bytes first, text after the size check: the cut could fall inside a character.
        let bytes_max = SCRIPT_BYTES_MAX as u64;
        let mut bytes = Vec::new();
        file.take(bytes_max + 1)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() > SCRIPT_BYTES_MAX {
            let bytes = std::fs::metadata(path).map_or(bytes_max + 1, |meta| meta.len());
            return Err(ScriptError::TooLarge {
                origin,
                bytes,
                bytes_max,
            });
        }
        let json = String::from_utf8(bytes).map_err(|error| {
            read_error(std::io::Error::new(std::io::ErrorKind::InvalidData, error))
        })?;
        parse(&json, &origin)
    }
}

fn parse(json: &str, origin: &str) -> Result<Script, ScriptError> {
    if json.len() > SCRIPT_BYTES_MAX {
        return Err(ScriptError::TooLarge {
            origin: origin.to_owned(),
            bytes: json.len() as u64,
            bytes_max: SCRIPT_BYTES_MAX as u64,
        });
    }
    let file = serde_json::from_str::<TopLevel>(json)
        .map_err(|error| invalid(&error, origin))?
        .0;
    let mut script = Script::checked(file.replies.0).with_checked_fallback(file.fallback);
    if let Some(name) = file.name {
        script = script.with_name(&name);
    }
    if let Some(context_limit) = file.context_limit {
        script = script.with_context_limit(context_limit);
    }
    if let Some(enforce) = file.enforce_context_limit {
        script = script.with_enforced_context_limit(enforce);
    }
    Ok(script)
}

/// serde_json's message without its own " at line L column C" tail, which the error's
/// fields carry instead.
fn invalid(error: &serde_json::Error, origin: &str) -> ScriptError {
    let (line, column) = (error.line(), error.column());
    let text = error.to_string();
    let tail = format!(" at line {line} column {column}");
    let message = text.strip_suffix(&tail).unwrap_or(&text).to_owned();
    // serde_json says column 0 for an error before the first character of a line; people
    // count from 1, and that character is what is wrong.
    ScriptError::Invalid {
        origin: origin.to_owned(),
        line,
        column: column.max(1),
        message,
    }
}

/// The top level, read as a map only: serde's derive would also take a list of values in
/// field order, and then explain a mistake in terms of that form.
struct TopLevel(ScriptFile);

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TopLevelVisitor)
    }
}

struct TopLevelVisitor;

impl<'de> Visitor<'de> for TopLevelVisitor {
    type Value = TopLevel;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a script object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TopLevel, A::Error> {
        ScriptFile::deserialize(MapAccessDeserializer::new(map)).map(TopLevel)
    }
}

/// The fields of a script file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    /// Free text for the script's reader; JSON has no comments.
    #[serde(default, rename = "comment")]
    _comment: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "name")]
    name: Option<String>,
    #[serde(default, deserialize_with = "context_limit")]
    context_limit: Option<usize>,
    #[serde(default)]
    enforce_context_limit: Option<bool>,
    replies: Replies,
    #[serde(default, deserialize_with = "fallback")]
    fallback: Option<Reply>,
}

// `name` and `context_limit` are checked by visitors, inside the JSON reader's call for
// the value, so an error points just after the value rather than at the end of the script.

fn name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    deserializer.deserialize_str(NameVisitor).map(Some)
}

struct NameVisitor;

impl Visitor<'_> for NameVisitor {
    type Value = String;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<String, E> {
        let chars = name.chars().count();
        if name.trim().is_empty() || chars > NAME_CHARS_MAX {
            return Err(E::custom(format!(
                "name must have 1 to {NAME_CHARS_MAX} characters, not all white space (it has \
                 {chars})"
            )));
        }
        Ok(name.to_owned())
    }
}

fn context_limit<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    deserializer.deserialize_u64(ContextLimitVisitor).map(Some)
}

struct ContextLimitVisitor;

impl Visitor<'_> for ContextLimitVisitor {
    type Value = usize;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a number of tokens")
    }

    fn visit_u64<E: serde::de::Error>(self, context_limit: u64) -> Result<usize, E> {
        match usize::try_from(context_limit) {
            Ok(0) => Err(E::custom("context_limit must be at least 1")),
            Ok(context_limit) => Ok(context_limit),
            Err(_) => Err(E::custom("context_limit is too large for this machine")),
        }
    }
}

fn fallback<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Reply>, D::Error> {
    deserializer
        .deserialize_map(ReplyVisitor { fallback: true })
        .map(Some)
}

/// The `replies` list, counted as it is read so an overlong one stops at the first reply
/// past the bound.
struct Replies(Vec<Reply>);

impl<'de> Deserialize<'de> for Replies {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(RepliesVisitor)
    }
}

struct RepliesVisitor;

impl<'de> Visitor<'de> for RepliesVisitor {
    type Value = Replies;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a list of reply objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Replies, A::Error> {
        let mut replies = Vec::new();
        while replies.len() < SCRIPT_REPLIES_MAX {
            match seq.next_element::<Reply>()? {
                Some(reply) => replies.push(reply),
                None => return Ok(Replies(replies)),
            }
        }
        // Only called when one more element follows, so the error points at its start.
        seq.next_element_seed(RefuseReply)?;
        Ok(Replies(replies))
    }
}

/// Stands in for the reply past `SCRIPT_REPLIES_MAX`: refuses it without reading it.
struct RefuseReply;

impl<'de> DeserializeSeed<'de> for RefuseReply {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, _deserializer: D) -> Result<(), D::Error> {
        Err(D::Error::custom(format!(
            "a script may have at most {SCRIPT_REPLIES_MAX} replies; this is one more"
        )))
    }
}

impl<'de> Deserialize<'de> for Reply {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ReplyVisitor { fallback: false })
    }
}

/// Reads one reply object and checks it before the reader leaves the object, so a mistake
/// is reported at the reply's closing brace.
struct ReplyVisitor {
    fallback: bool,
}

impl<'de> Visitor<'de> for ReplyVisitor {
    type Value = Reply;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a reply object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Reply, A::Error> {
        let file = ReplyFile::deserialize(MapAccessDeserializer::new(map))?;
        let reply = file.into_reply().map_err(A::Error::custom)?;
        let checked = if self.fallback {
            reply.check_fallback()
        } else {
            reply.check()
        };
        checked.map_err(A::Error::custom)?;
        Ok(reply)
    }
}

/// One reply as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplyFile {
    #[serde(default, rename = "comment")]
    _comment: Option<IgnoredAny>,
    #[serde(default)]
    when_last_user_contains: Option<String>,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    token_delay_ms: u64,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tokens: Option<Vec<String>>,
    #[serde(default)]
    error: Option<FailureFile>,
}

impl ReplyFile {
    fn into_reply(self) -> Result<Reply, String> {
        let pieces = match (self.text, self.tokens, &self.error) {
            (Some(_), Some(_), _) => {
                return Err("a reply has either text or tokens, not both".into());
            }
            (Some(text), None, _) => split_pieces(&text),
            (None, Some(tokens), _) if tokens.is_empty() => {
                return Err(
                    "tokens is empty; give at least one piece, or use \"text\": \"\"".into(),
                );
            }
            (None, Some(tokens), _) => tokens,
            (None, None, Some(_)) => Vec::new(),
            (None, None, None) => {
                return Err("a reply needs text, tokens or error".into());
            }
        };
        let mut reply = Reply::tokens(pieces)
            .delay_ms(self.delay_ms)
            .token_delay_ms(self.token_delay_ms);
        if let Some(error) = self.error {
            reply = reply.then_error(error.into());
        }
        if let Some(needle) = &self.when_last_user_contains {
            reply = reply.when_last_user_contains(needle);
        }
        Ok(reply)
    }
}

/// A `ModelError` as written, in the shape `ModelError` serializes to.
#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum FailureFile {
    Transport {
        message: String,
    },
    RateLimited {
        #[serde(default)]
        retry_after_ms: Option<u64>,
    },
    ContextOverflow {
        tokens: usize,
        limit: usize,
    },
    Protocol {
        message: String,
    },
}

impl From<FailureFile> for ModelError {
    fn from(failure: FailureFile) -> Self {
        match failure {
            FailureFile::Transport { message } => ModelError::Transport { message },
            FailureFile::RateLimited { retry_after_ms } => {
                ModelError::RateLimited { retry_after_ms }
            }
            FailureFile::ContextOverflow { tokens, limit } => {
                ModelError::ContextOverflow { tokens, limit }
            }
            FailureFile::Protocol { message } => ModelError::Protocol { message },
        }
    }
}
