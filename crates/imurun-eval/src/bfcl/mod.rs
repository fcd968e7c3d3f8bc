//! BFCL: categories, data files, conversion to tool specs, and AST scoring.

mod convert;
mod data;
mod score;

pub use convert::convert_function;
pub use data::{CATEGORIES, Case, Category, EvalError, load_category};
pub use score::{CategoryScore, Mismatch, Prediction, ground_truth_prediction, score_case};
