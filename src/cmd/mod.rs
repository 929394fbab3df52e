//! One module per subcommand.

pub mod test;
pub mod verify;
