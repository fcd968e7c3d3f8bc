//! One module per subcommand.

pub(crate) mod parse;
pub(crate) mod policy;
pub(crate) mod tools;
