//! One module per subcommand.

pub mod verify;
