//! Reading BFCL's data files: one JSON object per line, questions with their function docs,
//! and (except for `irrelevance`) a file of possible answers with the same ids.

use std::path::{Path, PathBuf};

use imurun_core::ToolSpec;
use serde_json::{Map, Value};

use super::convert::convert_function;

/// How many cases one category may hold: the largest BFCL category has 400.
const CASES_MAX: usize = 10_000;

/// A BFCL category imurun evaluates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// One function, one call.
    Simple,
    /// Several functions, one call to the right one.
    Multiple,
    /// One function, several calls.
    Parallel,
    /// Several functions, several calls.
    ParallelMultiple,
    /// No function fits: the right answer is no call.
    Irrelevance,
}

/// Every category, in the order results are printed.
pub const CATEGORIES: [Category; 5] = [
    Category::Simple,
    Category::Multiple,
    Category::Parallel,
    Category::ParallelMultiple,
    Category::Irrelevance,
];

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Simple => "simple_python",
            Category::Multiple => "multiple",
            Category::Parallel => "parallel",
            Category::ParallelMultiple => "parallel_multiple",
            Category::Irrelevance => "irrelevance",
        }
    }

    fn file_name(self) -> String {
        format!("BFCL_v4_{}.json", self.name())
    }

    /// Whether a right answer may hold more than one call.
    pub fn is_parallel(self) -> bool {
        matches!(self, Category::Parallel | Category::ParallelMultiple)
    }
}

/// One question with the tools it offers and, outside `irrelevance`, its possible answers.
#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub category: Category,
    /// The conversation, as BFCL writes it (role and content).
    pub messages: Vec<(String, String)>,
    /// BFCL's function docs, as written (types such as `dict` and `float`).
    pub functions: Vec<Value>,
    /// The same functions as imurun tool specs.
    pub tools: Vec<ToolSpec>,
    /// One entry per expected call: function name → parameter → acceptable values.
    pub ground_truth: Vec<Map<String, Value>>,
}

/// Why data could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line is not what BFCL writes.
    #[error("{path}, line {line}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A question has no possible answer with the same id.
    #[error("{path}: no possible answer for `{id}`")]
    MissingAnswer { path: PathBuf, id: String },
    /// More cases than `CASES_MAX`.
    #[error("{path}: more than {CASES_MAX} cases")]
    TooMany { path: PathBuf },
}

/// Reads one category from `dir` (the folder holding `BFCL_v4_*.json` and
/// `possible_answer/`), keeping the first `limit` cases when given.
pub fn load_category(
    dir: &Path,
    category: Category,
    limit: Option<usize>,
) -> Result<Vec<Case>, EvalError> {
    let questions_path = dir.join(category.file_name());
    let questions = read_lines(&questions_path)?;
    let answers_path = dir.join("possible_answer").join(category.file_name());
    let answers = if category == Category::Irrelevance {
        Vec::new()
    } else {
        read_lines(&answers_path)?
    };

    let mut cases = Vec::new();
    for (line, question) in questions
        .into_iter()
        .enumerate()
        .take(limit.unwrap_or(usize::MAX))
    {
        let invalid = |message: &str| EvalError::Invalid {
            path: questions_path.clone(),
            line: line + 1,
            message: message.to_owned(),
        };
        let id = question
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("no `id`"))?
            .to_owned();
        let functions = question
            .get("function")
            .and_then(Value::as_array)
            .cloned()
            .ok_or_else(|| invalid("no `function` list"))?;
        let tools = functions
            .iter()
            .map(convert_function)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|message| invalid(&message))?;
        let messages = first_turn(&question).ok_or_else(|| invalid("no `question` turn"))?;
        let ground_truth = match category {
            Category::Irrelevance => Vec::new(),
            _ => answers
                .iter()
                .find(|answer| answer.get("id").and_then(Value::as_str) == Some(id.as_str()))
                .and_then(|answer| answer.get("ground_truth").and_then(Value::as_array))
                .ok_or_else(|| EvalError::MissingAnswer {
                    path: answers_path.clone(),
                    id: id.clone(),
                })?
                .iter()
                .filter_map(|call| call.as_object().cloned())
                .collect(),
        };
        cases.push(Case {
            id,
            category,
            messages,
            functions,
            tools,
            ground_truth,
        });
    }
    Ok(cases)
}

fn read_lines(path: &Path) -> Result<Vec<Value>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut values = Vec::new();
    for (line, raw) in text
        .lines()
        .enumerate()
        .filter(|(_, raw)| !raw.trim().is_empty())
    {
        if values.len() >= CASES_MAX {
            return Err(EvalError::TooMany {
                path: path.to_owned(),
            });
        }
        let value = serde_json::from_str(raw).map_err(|error| EvalError::Invalid {
            path: path.to_owned(),
            line: line + 1,
            message: error.to_string(),
        })?;
        values.push(value);
    }
    Ok(values)
}

/// The first turn's messages: BFCL's `question` is a list of turns, each a list of messages.
fn first_turn(question: &Value) -> Option<Vec<(String, String)>> {
    let turn = question.get("question")?.as_array()?.first()?.as_array()?;
    turn.iter()
        .map(|message| {
            let role = message.get("role")?.as_str()?.to_owned();
            let content = message.get("content")?.as_str()?.to_owned();
            Some((role, content))
        })
        .collect()
}
