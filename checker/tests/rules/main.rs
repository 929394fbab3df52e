//! One failing and one passing protocol per rule the checker's search reports, plus the
//! subtle cases of semantics.md. Every case runs with symmetry reduction on and off and the
//! two runs must agree (common::check).

#[path = "../common/mod.rs"]
mod common;
use common::*;

mod clusters;
mod cta_barriers;
mod limits;
mod mbarrier;
mod pipelines;
mod races;

const DB: &str = include_str!("../data/double_buffer.phase");

fn small_db() -> String {
    DB.replace("param K = 8", "param K = 3")
        .replace("param NC = 8", "param NC = 2")
}
