//! Which model to run (the configuration's `model`: `--model`, `IMURUN_MODEL`, the file or
//! the default file), and loading it.
//!
//! A spec is a GGUF path, `openai:URL`, `ollama:URL` (or `ollama:` for the local default) or
//! `scripted:FILE`. The HTTP back-ends' keys and model names, and the embedded back-end's
//! repetition penalty, come from the configuration's [`Variables`].

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use imurun_core::{Model, ToolIndex};
use imurun_model::{
    EmbeddedConfig, EmbeddedModel, OllamaConfig, OllamaModel, OpenAiConfig, OpenAiModel,
    ScriptedModel, ToolCallGrammar,
};
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Variables;

/// The default model's file name under `~/.imurun/models/`.
pub(crate) const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// A model to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelSpec {
    Gguf(PathBuf),
    OpenAi(String),
    Ollama(Option<String>),
    Scripted(PathBuf),
}

impl ModelSpec {
    pub(crate) fn parse(spec: &str) -> Self {
        if let Some(url) = spec.strip_prefix("openai:") {
            return ModelSpec::OpenAi(url.to_owned());
        }
        if let Some(url) = spec.strip_prefix("ollama:") {
            return ModelSpec::Ollama((!url.is_empty()).then(|| url.to_owned()));
        }
        if let Some(file) = spec.strip_prefix("scripted:") {
            return ModelSpec::Scripted(PathBuf::from(file));
        }
        ModelSpec::Gguf(PathBuf::from(spec))
    }
}

/// A loaded model. The embedded one keeps its concrete handle, so each tool set can get its
/// own call grammar.
#[derive(Clone)]
pub(crate) enum Loaded {
    Embedded(EmbeddedModel),
    Other(Arc<dyn Model>),
}

impl Loaded {
    /// The model for a step offering `tools`. With `grammar` (the default), the embedded
    /// back-end constrains a started call to a valid call of a runnable tool; a step with no
    /// tools gets no grammar. Other back-ends are returned as they are.
    pub(crate) fn for_tools(&self, tools: &ToolIndex, grammar: bool) -> Arc<dyn Model> {
        match self {
            Loaded::Embedded(model) => {
                let grammar = grammar
                    .then(|| ToolCallGrammar::from_index(tools).ok())
                    .flatten();
                Arc::new(model.with_tool_grammar(grammar.map(Arc::new)))
            }
            Loaded::Other(model) => Arc::clone(model),
        }
    }

    pub(crate) fn name(&self) -> String {
        match self {
            Loaded::Embedded(model) => model.name().to_owned(),
            Loaded::Other(model) => model.name().to_owned(),
        }
    }
}

/// Loads the model, with a progress bar on stderr while a GGUF file loads.
pub(crate) async fn load(spec: &ModelSpec, variables: &Variables) -> Result<Loaded> {
    match spec {
        ModelSpec::Gguf(path) => {
            if !path.is_file() {
                bail!(
                    "no model file at {} (run scripts/fetch-model.sh, or pass --model PATH, openai:URL, ollama:URL or scripted:FILE)",
                    path.display()
                );
            }
            let path = path.clone();
            let mut config = EmbeddedConfig::default();
            if let Some(penalty) = variables.repeat_penalty {
                config.repeat_penalty.penalty = penalty;
            }
            config.threads = variables.threads;
            let model = tokio::task::spawn_blocking(move || load_gguf(&path, config))
                .await
                .context("loading the model")??;
            Ok(Loaded::Embedded(model))
        }
        ModelSpec::OpenAi(url) => Ok(Loaded::Other(Arc::new(
            connect_openai(url, variables).await?,
        ))),
        ModelSpec::Ollama(url) => {
            let name = variables.ollama_model.clone().context(
                "set IMURUN_OLLAMA_MODEL to the Ollama model to use (for example llama3.2)",
            )?;
            let mut config = OllamaConfig::new(name);
            if let Some(url) = url {
                config = config.with_base_url(url.clone());
            }
            if let Some(key) = &variables.ollama_api_key {
                config = config.with_api_key(key.clone());
            }
            let model = OllamaModel::connect(config)
                .await
                .context("connecting to Ollama")?;
            Ok(Loaded::Other(Arc::new(model)))
        }
        ModelSpec::Scripted(file) => {
            let model = ScriptedModel::from_file(file)
                .with_context(|| format!("reading the script {}", file.display()))?;
            Ok(Loaded::Other(Arc::new(model)))
        }
    }
}

fn load_gguf(path: &std::path::Path, config: EmbeddedConfig) -> Result<EmbeddedModel> {
    let bar = ProgressBar::new(100);
    bar.set_style(
        ProgressStyle::with_template("loading {msg} [{bar:30}] {percent}%")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(
        path.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    let progress = bar.clone();
    let model = EmbeddedModel::load_with_progress(path, config, move |done| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        progress.set_position((done.clamp(0.0, 1.0) * 100.0) as u64);
        true
    });
    bar.finish_and_clear();
    model.with_context(|| format!("loading {}", path.display()))
}

/// The OpenAI-compatible back-end at `url`, with the key and model of the environment,
/// connected (its context and model asked of the server).
pub(crate) async fn connect_openai(url: &str, variables: &Variables) -> Result<OpenAiModel> {
    let mut config = OpenAiConfig::new(url);
    if let Some(key) = &variables.openai_api_key {
        config = config.with_api_key(key.clone());
    }
    if let Some(model) = &variables.openai_model {
        config = config.with_model(model.clone());
    }
    OpenAiModel::connect(config)
        .await
        .with_context(|| format!("connecting to {url}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_their_back_end() {
        let cases = [
            (
                "openai:http://127.0.0.1:8080",
                ModelSpec::OpenAi("http://127.0.0.1:8080".into()),
            ),
            ("ollama:", ModelSpec::Ollama(None)),
            (
                "ollama:http://box:11434",
                ModelSpec::Ollama(Some("http://box:11434".into())),
            ),
            (
                "scripted:demo.json",
                ModelSpec::Scripted("demo.json".into()),
            ),
            (
                "/models/qwen.gguf",
                ModelSpec::Gguf("/models/qwen.gguf".into()),
            ),
        ];
        for (spec, expect) in cases {
            assert_eq!(ModelSpec::parse(spec), expect, "{spec}");
        }
    }
}
