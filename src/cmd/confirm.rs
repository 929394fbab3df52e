//! `phasecheck confirm FILE`: replay the checker's counterexamples on the GPU.
use crate::cli::{ConfirmArgs, Exit};
pub fn run(_args: &ConfirmArgs) -> Exit {
    Exit::BadInput
}
