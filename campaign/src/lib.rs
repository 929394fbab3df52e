//! `campaign`: the GPU campaigns of phasecheck, between the harness (`gpu-harness`: lowering,
//! launching, decoding) and the commands (`phasecheck-api`: options, rendering, exit codes).
//! Data flows one way: this crate calls `gpu-harness`, `checker` and `protocols`, returns report
//! values (serializable with serde) and prints nothing.
//!
//! - [`fuzz`]: rounds of launches accumulated into a [`fuzz::FuzzSummary`], the read-back of
//!   a stuck launch.
//! - [`confirm`]: a checker finding's replay plan and its replay on the GPU, its aimed fuzz
//!   rounds, the judging of a launch, the obstacles that keep a finding from being replayed,
//!   the result per finding.
//! - [`mutate`]: the mutation operators and the mutants that load (no GPU).

pub mod confirm;
pub mod fuzz;
pub mod mutate;
