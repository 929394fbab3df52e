//! An independent oracle for the checker: the barrier primitives of docs/semantics.md as a
//! small runtime of real threads, explored with [loom](https://docs.rs/loom).
//!
//! The checker (crate `checker`) decides deadlocks, undefined behaviour and races with an
//! explicit-state search over its own transition function. This crate answers the same
//! question a second, unrelated way: it runs the protocol's threads as loom threads,
//! interpreting the IR (`protocols::ir`, plain data) thread by thread, with every primitive
//! implemented on loom's synchronization objects, and lets loom enumerate the interleavings.
//! It shares no code with the checker (the library does not depend on it; only the tests
//! do, to compare). docs/design.md, "The loom oracle", describes the design and its bounds.
//!
//! Seams:
//! - [`prog`]: which programs the oracle can run (one block of at most 4 threads; no
//!   clusters, pipelines, globals, `inval` or `while`) and the flat object indices;
//! - [`clock`]: vector clocks, the oracle's happens-before;
//! - [`data`]: the protocol state and the semantics of each primitive, as plain data;
//! - [`runtime`]: loom gates, blocking waits, deadlock detection, the asynchronous agent;
//! - [`interp`]: one thread's interpretation of the IR;
//! - [`explore`]: the loom exploration and what it observed.
//!
//! The oracle exists only to be run under loom: it uses `loom::sync` and `loom::thread`
//! directly (no `cfg(loom)`), so `cargo test -p oracle` explores without special flags.

pub mod clock;
pub mod data;
pub mod explore;
pub mod interp;
pub mod prog;
pub mod runtime;

pub use data::Class;
pub use explore::{Options, Outcome, explore};
pub use prog::{MAX_THREADS, Prog, prepare};
