//! Chat templates: turning messages into the one prompt string a model was trained on, by
//! rendering the Jinja template a model file carries, the way Hugging Face's
//! `apply_chat_template` renders it.
//!
//! Hugging Face renders with Python's `jinja2` in an `ImmutableSandboxedEnvironment` with
//! `trim_blocks` and `lstrip_blocks` on, the loop-controls extension, the globals
//! `raise_exception` and `strftime_now`, and its own `tojson` filter (Python's `json.dumps`
//! with `ensure_ascii=False`, so no HTML escaping). `ChatTemplate` sets up `minijinja` the same
//! way, with `minijinja-contrib`'s Python string methods (`.strip()`, `.startswith()`, ...)
//! that templates call. `tests/fixtures/templates/` holds outputs rendered by `jinja2` itself
//! (`scripts/make-template-fixtures.py`); a test compares them byte for byte.

mod json;

use imurun_core::Message;
use minijinja::{Environment, Error, ErrorKind, Value, context};

/// The template used when a model file has none: ChatML, the format of SmolLM2, Qwen and
/// many fine-tunes.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// The longest template source accepted, in bytes. Real chat templates are at most tens of
/// kilobytes; the bound keeps a hostile model file from feeding the parser megabytes.
pub const TEMPLATE_BYTES_MAX: usize = 1024 * 1024;

/// The most template instructions one render may run (minijinja's fuel): real templates
/// use a few thousand per message; a template that loops forever stops with an error.
pub const TEMPLATE_FUEL_MAX: u64 = 10_000_000;

const TEMPLATE_NAME: &str = "chat_template";

/// Why a template could not be compiled or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template source is not valid Jinja (or is longer than `TEMPLATE_BYTES_MAX`).
    #[error("the chat template does not compile: {message}")]
    Syntax { message: String },
    /// Rendering failed: the template called `raise_exception` (its way of refusing a
    /// conversation, e.g. roles that do not alternate) or hit an error.
    #[error("the chat template failed: {message}")]
    Render { message: String },
}

/// A compiled chat template with the special tokens its file declares.
#[derive(Debug)]
pub struct ChatTemplate {
    environment: Environment<'static>,
    source: String,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source`; `bos_token` and `eos_token` are the texts of the model's
    /// begin- and end-of-sequence tokens, which templates print as `bos_token`/`eos_token`.
    pub fn new(
        source: &str,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
    ) -> Result<Self, TemplateError> {
        if source.len() > TEMPLATE_BYTES_MAX {
            return Err(TemplateError::Syntax {
                message: format!(
                    "{} bytes; a template may be at most {TEMPLATE_BYTES_MAX}",
                    source.len()
                ),
            });
        }
        let mut environment = Environment::new();
        // jinja2's settings in Hugging Face's environment; the trailing newline of the
        // source is dropped in both (jinja2's `keep_trailing_newline=False`).
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(false)
            .build()
            .map_err(|error| TemplateError::Syntax {
                message: describe(&error),
            })?;
        environment.set_syntax(syntax);
        environment.set_fuel(Some(TEMPLATE_FUEL_MAX));
        environment
            .set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        environment.add_function("raise_exception", raise_exception);
        environment.add_function("strftime_now", strftime_now);
        environment.add_filter("tojson", json::tojson);
        environment
            .add_template_owned(TEMPLATE_NAME, source.to_owned())
            .map_err(|error| TemplateError::Syntax {
                message: describe(&error),
            })?;
        Ok(Self {
            environment,
            source: source.to_owned(),
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
        })
    }

    /// The ChatML fallback, with ChatML's end token.
    pub fn chatml() -> Self {
        match Self::new(CHATML_TEMPLATE, "", "<|im_end|>") {
            Ok(template) => template,
            // The constant compiles: `the_chatml_fallback_compiles` checks it.
            Err(error) => unreachable!("the ChatML template does not compile: {error}"),
        }
    }

    /// The template's source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    pub fn eos_token(&self) -> &str {
        &self.eos_token
    }

    /// Renders `messages` (roles as `Role::as_str` names them); `add_generation_prompt`
    /// appends the header of an assistant turn so the model answers next.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|message| {
                context! {
                    role => message.role.as_str(),
                    content => message.content.as_str(),
                }
            })
            .collect();
        let template = self
            .environment
            .get_template(TEMPLATE_NAME)
            .map_err(|error| TemplateError::Render {
                message: describe(&error),
            })?;
        template
            .render(context! {
                messages => messages,
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos_token.as_str(),
                eos_token => self.eos_token.as_str(),
            })
            .map_err(|error| TemplateError::Render {
                message: describe(&error),
            })
    }
}

/// `raise_exception(message)`: how templates refuse a conversation.
fn raise_exception(message: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `strftime_now(format)`: the local time, as Python's `datetime.now().strftime` prints it
/// (Llama 3.1+ templates print today's date in the system prompt).
fn strftime_now(format: String) -> Result<Value, Error> {
    let now = jiff::Zoned::now();
    jiff::fmt::strtime::format(format.as_str(), &now)
        .map(Value::from)
        .map_err(|error| Error::new(ErrorKind::InvalidOperation, error.to_string()))
}

/// An error with its cause chain, on one line.
fn describe(error: &Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(source: &str, messages: &[Message], add_generation_prompt: bool) -> String {
        ChatTemplate::new(source, "<s>", "</s>")
            .unwrap()
            .render(messages, add_generation_prompt)
            .unwrap()
    }

    #[test]
    fn the_chatml_fallback_compiles_and_renders_chatml() {
        let template = ChatTemplate::chatml();
        assert_eq!(template.source(), CHATML_TEMPLATE);
        let text = template.render(&[Message::user("Hi")], true).unwrap();
        assert_eq!(
            text,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn helpers_that_chat_templates_call_work() {
        let cases: &[(&str, &str)] = &[
            ("{{ bos_token }}|{{ eos_token }}", "<s>|</s>"),
            (
                "{{ '  x  '.strip() }}|{{ 'abc'.startswith('a') }}",
                "x|True",
            ),
            (
                "{{ {'a': [1, 2.5, none, true], 'é': '\"<'} | tojson }}",
                "{\"a\": [1, 2.5, null, true], \"é\": \"\\\"<\"}",
            ),
            ("{{ {'a': 1} | tojson(indent=2) }}", "{\n  \"a\": 1\n}"),
            (
                "{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ m.content }}{% break %}{% endfor %}",
                "b",
            ),
            ("{{ strftime_now('%Y') | length }}", "4"),
        ];
        for (source, expected) in cases {
            let messages = [Message::user("a"), Message::user("b"), Message::user("c")];
            assert_eq!(&render(source, &messages, false), expected, "{source}");
        }
    }

    #[test]
    fn raise_exception_and_bad_syntax_are_errors() {
        let template =
            ChatTemplate::new("{{ raise_exception('roles must alternate') }}", "", "").unwrap();
        let error = template.render(&[], false).unwrap_err();
        assert!(
            matches!(&error, TemplateError::Render { message } if message.contains("roles must alternate")),
            "{error}"
        );
        assert!(matches!(
            ChatTemplate::new("{% if %}", "", ""),
            Err(TemplateError::Syntax { .. })
        ));
    }

    #[test]
    fn a_template_that_never_ends_runs_out_of_fuel() {
        let source =
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}";
        let template = ChatTemplate::new(source, "", "").unwrap();
        assert!(matches!(
            template.render(&[], false),
            Err(TemplateError::Render { .. })
        ));
    }
}
