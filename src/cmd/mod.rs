//! One module per subcommand.

pub mod explain;
pub mod lint;
pub mod rules;
pub mod test;
pub mod verify;
