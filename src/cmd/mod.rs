//! One module per subcommand.

pub mod explain;
pub mod lint;
pub mod rules;
pub mod confirm;
pub mod fuzz;
pub mod lower;
pub mod test;
pub mod verify;
