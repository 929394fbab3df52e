//! The random schedules reach the end of a long kernel (issue 24, "Long kernels"): a walk may
//! take twice the protocol's own run length, whatever the fixed step caps, so a bug late in a
//! long pipeline is found when the exhaustive search cannot get there.

use checker::{CheckOptions, Verdict};
use protocols::SourceFile;

/// A TMA ring whose last trip expects one byte too many: the producer's last wait never
/// returns. The run is about 3 * (NC + 1) * K = 8 127 steps, beyond the largest fixed cap
/// (6 144 steps), and the exhaustive search is stopped long before that depth.
const LATE_BUG: &str = "protocol late_bug
param NC = 8
param K = 300
block 32 + NC
mbarrier full
mbarrier empty
buffer tile
if tid == 0 {
  init full, 1
  init empty, NC
}
syncthreads
role producer when tid == 0 {
  for k in 0..K {
    wait empty parity (k & 1) ^ 1
    if k == K - 1 {
      arrive_expect_tx full, 4097
    } else {
      arrive_expect_tx full, 4096
    }
    tma tile -> full, 4096
  }
}
role consumer when warp >= 1 {
  for k in 0..K {
    wait full parity k & 1
    mma tile
    arrive empty
  }
}
";

#[test]
fn walks_reach_a_bug_at_the_end_of_a_long_run() {
    let f = SourceFile::new("late.phase", LATE_BUG);
    let p = protocols::load(&f, &[]).expect("loads");
    let r = checker::check(
        &p,
        &CheckOptions {
            max_states: 1_001,
            ..CheckOptions::default()
        },
    );
    assert_eq!(r.verdict, Verdict::Hazard, "{:?}", r.findings);
    let rules: Vec<_> = r.findings.iter().map(|f| f.rule.name).collect();
    assert!(rules.contains(&"deadlock"), "{rules:?}");
}
