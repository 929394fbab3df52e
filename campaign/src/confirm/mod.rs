//! `confirm`'s campaign pieces: from a checker finding to a replay on the GPU and back.
//!
//! - [`plan`]: the thread steps of the finding's trace and the sequencer's table.
//! - [`obstacle`]: what keeps a finding from being replayed as the checker found it.
//! - [`aim`]: fuzz rounds aimed at the finding's statements, and judging them.
//! - [`judge`]: whether one replay launch showed the finding.
//! - [`replay`]: the replay of a finding on the GPU and the aimed fuzz after it.
//! - [`report`]: the result per finding, and where its evidence came from.
//! - [`driver`]: the whole run of a checked program: each finding replayed, or the file fuzzed.

pub mod aim;
pub mod driver;
pub mod judge;
pub mod obstacle;
pub mod plan;
pub mod replay;
pub mod report;
