//! One module per subcommand.

pub mod capture;
pub mod confirm;
pub mod explain;
pub mod extract;
pub mod fuzz;
pub mod fuzz_app;
pub mod lint;
pub mod lower;
pub mod mutate;
pub mod rules;
pub mod test;
pub mod verify;
