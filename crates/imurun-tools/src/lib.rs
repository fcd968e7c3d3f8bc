//! Built-in tools and the executor that every call goes through.

mod catalog;

pub use catalog::builtin_specs;
