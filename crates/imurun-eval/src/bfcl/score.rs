//! Scoring with BFCL's AST rules: the function name; every required parameter present; no
//! parameter the function or the answer does not know; each value of the declared type
//! (Python's rules: an integer is accepted where a float is declared); each value among the
//! acceptable ones, strings compared after BFCL's normalisation; an optional parameter left
//! out only when the answer allows it (`""`). Parallel categories match calls in any order;
//! `irrelevance` is right when no call was made.

use imurun_core::ToolCall;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::data::{Case, Category};

/// A model's calls for one case, as `imurun eval bfcl --out` writes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub id: String,
    pub calls: Vec<ToolCall>,
    /// What the model wrote instead, when it made no call: where a missed call went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why the model gave no prediction at all (it failed, or could not be reached); such a
    /// case is scored wrong, whatever its category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The log-odds the model gave to starting its reply as a call, where the back-end
    /// scores (`docs/agent-loop.md`, "Decisions by likelihood"): one run's margins and
    /// outcomes give the accuracy at every threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
    /// Figures behind the decision, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Value>,
    /// Whether BFCL's rules score the prediction right (written by the run that asked it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
}

/// Why a prediction is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// A different number of calls than the answer has.
    WrongCount { expected: usize, got: usize },
    /// A call to a function the answer does not call.
    WrongName { got: String },
    /// A required parameter is missing.
    MissingRequired { function: String, parameter: String },
    /// A parameter the function or the answer does not know.
    Unexpected { function: String, parameter: String },
    /// A value of the wrong type.
    WrongType {
        function: String,
        parameter: String,
        expected: String,
    },
    /// A value that is not among the acceptable ones.
    UnacceptableValue { function: String, parameter: String },
    /// An optional parameter the answer needs was left out.
    MissingOptional { function: String, parameter: String },
    /// A call where no function fits (`irrelevance`).
    CalledIrrelevant { got: usize },
}

/// A category's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CategoryScore {
    pub correct: usize,
    pub total: usize,
    /// Cases the model or its transport failed on: counted in `total`, never as correct (in
    /// `irrelevance`, a failure is not "no call").
    pub errors: usize,
}

impl CategoryScore {
    pub fn add(&mut self, correct: bool) {
        self.total += 1;
        self.correct += usize::from(correct);
    }

    /// A case the model failed on: wrong, and counted as an error.
    pub fn add_error(&mut self) {
        self.total += 1;
        self.errors += 1;
    }

    /// The share of cases that failed, from 0 to 1; 0 for an empty category.
    pub fn error_share(self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let ratio = self.errors as f64 / self.total as f64;
        ratio
    }

    /// Accuracy in percent; 0 for an empty category.
    pub fn percent(self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss)]
        let ratio = self.correct as f64 / self.total as f64;
        ratio * 100.0
    }
}

/// Judges one prediction against its case.
pub fn score_case(case: &Case, calls: &[ToolCall]) -> Result<(), Mismatch> {
    if case.category == Category::Irrelevance {
        return if calls.is_empty() {
            Ok(())
        } else {
            Err(Mismatch::CalledIrrelevant { got: calls.len() })
        };
    }
    if calls.len() != case.ground_truth.len() {
        return Err(Mismatch::WrongCount {
            expected: case.ground_truth.len(),
            got: calls.len(),
        });
    }
    if !case.category.is_parallel() {
        return check_call(case, &calls[0], &case.ground_truth[0]);
    }
    // Any order: each expected call takes the first unused call that matches it.
    let mut used = vec![false; calls.len()];
    for expected in &case.ground_truth {
        let mut first_error = None;
        let found = calls.iter().enumerate().find(|(slot, call)| {
            if used[*slot] {
                return false;
            }
            match check_call(case, call, expected) {
                Ok(()) => true,
                Err(error) => {
                    first_error.get_or_insert(error);
                    false
                }
            }
        });
        match found {
            Some((slot, _)) => used[slot] = true,
            None => {
                return Err(first_error.unwrap_or(Mismatch::WrongCount {
                    expected: case.ground_truth.len(),
                    got: calls.len(),
                }));
            }
        }
    }
    Ok(())
}

/// The answer's first concrete acceptable value for each parameter, as a prediction: a right
/// answer by construction (a parameter whose only acceptable value is `""` is left out).
pub fn ground_truth_prediction(case: &Case) -> Prediction {
    let calls = case
        .ground_truth
        .iter()
        .filter_map(|call| call.iter().next())
        .map(|(name, parameters)| {
            let declared = declared_properties(case, name);
            let args = parameters
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(parameter, acceptable)| {
                    let declared = declared.and_then(|properties| properties.get(parameter));
                    pick(acceptable.as_array()?, declared).map(|value| (parameter.clone(), value))
                })
                .collect();
            ToolCall::new(name.clone(), args)
        })
        .collect();
    Prediction {
        id: case.id.clone(),
        calls,
        answer: None,
        error: None,
        margin: None,
        features: None,
        correct: None,
    }
}

/// The value a right answer gives: the first acceptable value of the declared type; else
/// none when `""` ("left out") is acceptable; else the first concrete one. BFCL's data lists
/// `""` first for some required parameters and values of another type for some optional
/// ones, so the first listed value is not always a right answer.
fn pick(acceptable: &[Value], declared: Option<&Value>) -> Option<Value> {
    // A parameter the function does not declare is never part of a right answer (BFCL's data
    // lists a few under the wrong function, always with "" acceptable).
    let declared = declared?;
    let (kind, items) = declared_type(declared);
    let concrete_values: Vec<Value> = acceptable.iter().filter_map(concrete).collect();
    if let Some(typed) = concrete_values
        .iter()
        .find(|value| has_type(value, kind, items))
    {
        return Some(typed.clone());
    }
    if acceptable.iter().any(|value| value.as_str() == Some("")) {
        return None;
    }
    concrete_values.into_iter().next()
}

fn declared_properties<'c>(case: &'c Case, name: &str) -> Option<&'c Map<String, Value>> {
    case.functions
        .iter()
        .find(|function| function.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|function| function["parameters"].get("properties"))
        .and_then(Value::as_object)
}

/// A concrete value from an acceptable one: nested objects hold lists of acceptable values
/// per key, of which the first is taken; `""` means "left out".
fn concrete(acceptable: &Value) -> Option<Value> {
    match acceptable {
        Value::String(text) if text.is_empty() => None,
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter_map(|(key, options)| {
                    let first = options
                        .as_array()
                        .and_then(|options| options.first())
                        .unwrap_or(options);
                    concrete(first).map(|value| (key.clone(), value))
                })
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(items.iter().filter_map(concrete).collect())),
        other => Some(other.clone()),
    }
}

fn check_call(case: &Case, call: &ToolCall, expected: &Map<String, Value>) -> Result<(), Mismatch> {
    let Some((name, acceptable)) = expected.iter().next() else {
        return Err(Mismatch::WrongName {
            got: call.name.clone(),
        });
    };
    if call.name != *name {
        return Err(Mismatch::WrongName {
            got: call.name.clone(),
        });
    }
    let function = case
        .functions
        .iter()
        .find(|function| function.get("name").and_then(Value::as_str) == Some(name.as_str()))
        .ok_or_else(|| Mismatch::WrongName {
            got: call.name.clone(),
        })?;
    let parameters = &function["parameters"];
    let properties = parameters.get("properties").and_then(Value::as_object);
    let acceptable = acceptable.as_object().cloned().unwrap_or_default();
    let mismatch = |parameter: &str, make: fn(String, String) -> Mismatch| {
        make(name.clone(), parameter.to_owned())
    };

    for required in parameters
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !call.args.contains_key(required) {
            return Err(mismatch(required, |function, parameter| {
                Mismatch::MissingRequired {
                    function,
                    parameter,
                }
            }));
        }
    }
    for (parameter, value) in &call.args {
        let (Some(declared), Some(options)) = (
            properties.and_then(|p| p.get(parameter)),
            acceptable.get(parameter),
        ) else {
            return Err(mismatch(parameter, |function, parameter| {
                Mismatch::Unexpected {
                    function,
                    parameter,
                }
            }));
        };
        let options = options.as_array().map(Vec::as_slice).unwrap_or_default();
        check_value(name, parameter, value, declared, options)?;
    }
    for (parameter, options) in &acceptable {
        let may_omit = options
            .as_array()
            .is_some_and(|options| options.iter().any(|option| option.as_str() == Some("")));
        if !call.args.contains_key(parameter) && !may_omit {
            return Err(mismatch(parameter, |function, parameter| {
                Mismatch::MissingOptional {
                    function,
                    parameter,
                }
            }));
        }
    }
    Ok(())
}

fn check_value(
    function: &str,
    parameter: &str,
    value: &Value,
    declared: &Value,
    options: &[Value],
) -> Result<(), Mismatch> {
    let (kind, items) = declared_type(declared);
    if !type_fits(value, kind, items, options) {
        return Err(Mismatch::WrongType {
            function: function.to_owned(),
            parameter: parameter.to_owned(),
            expected: kind.to_owned(),
        });
    }
    if options.iter().any(|option| same_value(value, option)) {
        Ok(())
    } else {
        Err(Mismatch::UnacceptableValue {
            function: function.to_owned(),
            parameter: parameter.to_owned(),
        })
    }
}

/// BFCL's type check: the declared type (Python's rules), or else the type the acceptable
/// answers are written in (BFCL calls such a value a "variable"). For lists, each element
/// must fit the declared item type or the type of the answers' elements.
fn type_fits(value: &Value, kind: &str, items: Option<&str>, options: &[Value]) -> bool {
    let written_in = options
        .iter()
        .find(|option| option.as_str() != Some(""))
        .map(python_type);
    if !has_type(value, kind, None) {
        return written_in == Some(python_type(value));
    }
    let (Some(elements), Some(item_kind)) = (value.as_array(), items) else {
        return true;
    };
    let list_options: Vec<&Vec<Value>> = options.iter().filter_map(Value::as_array).collect();
    if list_options.is_empty() {
        return elements
            .iter()
            .all(|element| has_type(element, item_kind, None));
    }
    list_options.iter().any(|option| {
        let element_type = option.first().map(python_type);
        elements.iter().all(|element| {
            has_type(element, item_kind, None) || element_type == Some(python_type(element))
        })
    })
}

/// The Python type a JSON value reads as, for comparing the types of two values.
fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "none",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// A parameter's declared BFCL type, and its items' type for lists.
fn declared_type(declared: &Value) -> (&str, Option<&str>) {
    let kind = declared
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("any");
    let items = declared
        .get("items")
        .and_then(|items| items.get("type"))
        .and_then(Value::as_str);
    (kind, items)
}

/// Python's type rules as BFCL applies them.
fn has_type(value: &Value, kind: &str, items: Option<&str>) -> bool {
    match kind {
        "integer" => value.is_i64() || value.is_u64(),
        // Python turns an int into a float where a float is declared.
        "float" | "number" => value.is_number(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "dict" | "object" => value.is_object(),
        "array" | "tuple" => match (value.as_array(), items) {
            (Some(elements), Some(item_kind)) => elements
                .iter()
                .all(|element| has_type(element, item_kind, None)),
            (Some(_), None) => true,
            (None, _) => false,
        },
        _ => true,
    }
}

/// Whether `value` equals an acceptable `option`: strings after normalisation, numbers by
/// value (5 and 5.0 are the same), lists element by element, objects key by key where the
/// option holds a list of acceptable values per key.
fn same_value(value: &Value, option: &Value) -> bool {
    match (value, option) {
        (Value::String(got), Value::String(want)) => normalise(got) == normalise(want),
        (Value::Number(got), Value::Number(want)) => got.as_f64() == want.as_f64(),
        (Value::Array(got), Value::Array(want)) => {
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(got, want)| same_value(got, want))
        }
        (Value::Object(got), Value::Object(want)) => same_object(got, want),
        (got, want) => got == want,
    }
}

fn same_object(got: &Map<String, Value>, want: &Map<String, Value>) -> bool {
    let keys_known = got.keys().all(|key| want.contains_key(key));
    let values_fit = want.iter().all(|(key, options)| {
        let options = options
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(std::slice::from_ref(options));
        match got.get(key) {
            Some(value) => options.iter().any(|option| same_value(value, option)),
            None => options.iter().any(|option| option.as_str() == Some("")),
        }
    });
    keys_known && values_fit
}

/// BFCL's `standardize_string`: spaces and `,./-_*^` removed, lower case, `'` as `"`.
fn normalise(text: &str) -> String {
    text.chars()
        .filter(|ch| !matches!(ch, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .flat_map(char::to_lowercase)
        .map(|ch| if ch == '\'' { '"' } else { ch })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_normalised_as_bfcl_does() {
        assert_eq!(normalise("New York, NY"), normalise("new york ny"));
        assert_eq!(normalise("math.factorial"), "mathfactorial");
        assert_ne!(normalise("Paris"), normalise("Lyon"));
        assert_eq!(normalise("it's"), "it\"s");
    }
}
