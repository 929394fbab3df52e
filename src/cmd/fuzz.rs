//! `phasecheck fuzz FILE`: random-delay stress runs on the GPU.
use crate::cli::{Exit, FuzzArgs};
pub fn run(_args: &FuzzArgs) -> Exit {
    Exit::BadInput
}
