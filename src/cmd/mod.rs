//! One module per subcommand.

pub mod confirm;
pub mod fuzz;
pub mod lower;
pub mod test;
pub mod verify;
