//! Evaluations of how well a model calls tools through imurun. Today: the Berkeley Function
//! Calling Leaderboard (BFCL) — its data, the conversion of its function docs to tool specs
//! the way BFCL does it, and scoring with BFCL's AST rules. Running a model is the caller's
//! job; this crate only reads data and judges predictions.

mod bfcl;

pub use bfcl::{
    CATEGORIES, Case, Category, CategoryScore, EvalError, Mismatch, Prediction, convert_function,
    ground_truth_prediction, load_category, score_case,
};
