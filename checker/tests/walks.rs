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

/// Every `.phase` file under `dir`, sorted.
fn phase_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("readable")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            phase_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "phase") {
            out.push(p);
        }
    }
}

/// Every corpus file, with its own parameters.
fn corpus_cases(root: &std::path::Path) -> Vec<(String, Vec<(String, i64)>)> {
    let mut files = Vec::new();
    phase_files(&root.join("corpus"), &mut files);
    files
        .iter()
        .map(|p| (p.to_string_lossy().into_owned(), Vec::new()))
        .collect()
}

/// The random schedules step one state in place and examine only what each step changed
/// (checker/src/model/walk.rs); the exhaustive search and the traces use the full transition
/// function and the full checks. On random paths through every corpus protocol of at most 200
/// threads (and the per-warp ring of issue 24 with its mutants), both must agree
/// ([`compare_walks`]).
#[test]
fn walks_agree_with_full_steps() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cases = corpus_cases(&root);
    let bench = root.join("bench/per_warp_release.phase");
    for bug in ["SHORT", "FLIP", "EARLY"] {
        for elect in [0, 1] {
            cases.push((
                bench.to_string_lossy().into_owned(),
                vec![("NW".into(), 3), (bug.into(), 1), ("ELECT".into(), elect)],
            ));
        }
    }
    let (mut walked, mut steps, mut first_findings) = (0, 0u64, 0u64);
    for (path, params) in &cases {
        // Large kernels make the full checks slow (`walks_agree_at_scale` takes a few).
        let text = std::fs::read_to_string(path).expect("readable");
        if let Some((s, f)) = compare_walks(path, &text, params, 1..=200, 3, 400) {
            walked += 1;
            steps += s;
            first_findings += f;
        }
    }
    // The comparison saw something: most of the corpus, many steps, many findings.
    assert!(walked > 80, "{walked} protocols walked");
    assert!(steps > 20_000, "{steps} steps");
    assert!(first_findings > 50, "{first_findings} findings compared");
}

/// 224 threads: six consumer warps read a tile that the producer refills by TMA, each lane
/// stores the same value into a shared word after a `syncwarp`, and writes its part of the
/// tile back through the generic proxy with no `fence_proxy_async` before the next refill
/// (`missing-proxy-fence`: a kept access met by a new in-flight copy); at trip `SKIP` the
/// producer does not wait for the consumers (a data race on `tile`). A barrier phase or a warp
/// collective changes hundreds of kept accesses at once.
const SCALE_RACE: &str = "protocol scale_race
param W = 6
param K = 3
param SKIP = 1
block 32 * W + 32
mbarrier full
mbarrier empty
buffer tile
buffer flag
if tid == 0 {
  init full, 1
  init empty, 32 * W
}
syncthreads
role producer when tid == 0 {
  for k in 0..K {
    if k != SKIP {
      wait empty parity (k & 1) ^ 1
    }
    arrive_expect_tx full, 4096
    tma tile -> full, 4096
  }
}
role consumer when warp >= 1 {
  for k in 0..K {
    wait full parity k & 1
    read tile
    syncwarp
    write flag value 1
    write part tile
    arrive empty
  }
}
";

/// [`walks_agree_with_full_steps`] on kernels of hundreds of threads, where a step that
/// completes a barrier or a warp collective changes hundreds of threads and their kept
/// accesses at once: the walk's race check then weighs the changed accesses by instance
/// (checker/src/model/race.rs, over 16 changed), and its pruning weighs the lost witnesses as
/// bit sets per instance (`Exec::prune_kept_after`). Fewer and shorter walks: the full
/// checks are slow at this size.
#[test]
fn walks_agree_at_scale() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cases = corpus_cases(&root);
    let ring = root.join("bench/per_warp_release.phase");
    for (bug, elect) in [("SHORT", 0), ("FLIP", 1), ("EARLY", 0), ("TRIPS", 1)] {
        cases.push((
            ring.to_string_lossy().into_owned(),
            vec![("NW".into(), 8), (bug.into(), 1), ("ELECT".into(), elect)],
        ));
    }
    let prologue = root.join("bench/cluster_prologue_384.phase");
    for bug in ["SHORT", "MISS"] {
        cases.push((
            prologue.to_string_lossy().into_owned(),
            vec![("K_TILES".into(), 2), (bug.into(), 1)],
        ));
    }
    let (mut walked, mut steps, mut first_findings) = (0, 0u64, 0u64);
    for (path, params) in &cases {
        let text = std::fs::read_to_string(path).expect("readable");
        if let Some((s, f)) = compare_walks(path, &text, params, 201..=1024, 1, 300) {
            walked += 1;
            steps += s;
            first_findings += f;
        }
    }
    // Races and same-value stores among hundreds of threads, on the way.
    for skip in [1, -1] {
        let params = [("SKIP".to_string(), skip)];
        let (s, f) = compare_walks(
            "scale_race.phase",
            SCALE_RACE,
            &params,
            201..=1024,
            2,
            1_500,
        )
        .expect("scale_race loads");
        steps += s;
        first_findings += f;
    }
    assert!(walked >= 20, "{walked} protocols walked");
    assert!(steps > 8_000, "{steps} steps");
    assert!(first_findings >= 6, "{first_findings} findings compared");
}

/// Walks `walks` random paths of at most `max_steps` steps through the protocol `text` (from
/// `path`, with `params`) both ways, the walk's (checker/src/model/walk.rs) and the full transition
/// function's with the full checks, and asserts that they agree: the same states (so the same
/// pruned kept accesses), the same enabled actions, the same findings of each step, and each
/// finding of a state at the first state of the path that has it, with the same message.
/// Returns the steps compared and the first findings compared; `None` when the protocol does
/// not load, its number of threads is not in `threads`, or its first run stops.
fn compare_walks(
    path: &str,
    text: &str,
    params: &[(String, i64)],
    threads: std::ops::RangeInclusive<u32>,
    walks: u64,
    max_steps: u32,
) -> Option<(u64, u64)> {
    use checker::explore::{Model, Step};
    use checker::model::{PhaseModel, Search, walk::Walk};
    use std::collections::BTreeSet;
    let f = SourceFile::new(path, text);
    let Ok(p) = protocols::load(&f, params) else {
        return None;
    };
    let mut m = PhaseModel::new(&p, 64, false);
    m.por = false;
    if !threads.contains(&m.nthreads()) {
        return None;
    }
    let (init, _, bound, stop) = m.initial();
    if bound.is_some() || stop {
        return None;
    }
    let search = Search::new(&m, init.clone());
    let (mut steps, mut first_findings) = (0u64, 0u64);
    for w in 0..walks {
        let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let mut walk = Walk::new(&m, init.clone());
        let mut full = init.clone();
        let mut had: BTreeSet<(&'static str, protocols::Span)> = BTreeSet::new();
        for step in 0..max_steps {
            let (mut a_walk, mut a_full) = (Vec::new(), Vec::new());
            walk.actions(&mut a_walk);
            search.actions(&full, &mut a_full);
            assert_eq!(a_walk, a_full, "{path} {params:?} walk {w} step {step}");
            let (mut f_walk, mut f_full) = (Vec::new(), Vec::new());
            walk.check(&a_walk, &mut f_walk);
            search.check_state(&full, &a_full, &mut f_full);
            let full_keys: BTreeSet<_> = f_full.iter().map(|f| (f.rule.code, f.span)).collect();
            for g in &f_walk {
                assert!(
                    full_keys.contains(&(g.rule.code, g.span)),
                    "{path} {params:?} walk {w} step {step}: the walk reports {} that the full check does not",
                    g.message
                );
            }
            for g in &f_full {
                if had.insert((g.rule.code, g.span)) {
                    first_findings += 1;
                    let same = f_walk
                        .iter()
                        .find(|x| (x.rule.code, x.span) == (g.rule.code, g.span));
                    assert_eq!(
                        same.map(|x| &x.message),
                        Some(&g.message),
                        "{path} {params:?} walk {w} step {step}: the first state with this finding"
                    );
                }
            }
            if a_full.is_empty() {
                break;
            }
            let a = a_full[next(a_full.len())];
            let (mut s_walk, mut s_full) = (Vec::new(), Vec::new());
            let goes_on = walk.step(a, &mut s_walk);
            let stepped = m.step_raw_full_prune(&full, a, &mut s_full);
            let msgs = |v: &[checker::model::MFinding]| {
                v.iter().map(|f| f.message.clone()).collect::<Vec<_>>()
            };
            assert_eq!(
                msgs(&s_walk),
                msgs(&s_full),
                "{path} {params:?} walk {w} step {step}"
            );
            steps += 1;
            match stepped {
                Step::Next(n) => {
                    assert!(goes_on, "{path} {params:?} walk {w} step {step}");
                    full = n;
                    assert!(
                        *walk.state() == full,
                        "{path} {params:?} walk {w} step {step}: the states differ"
                    );
                }
                _ => {
                    assert!(!goes_on, "{path} {params:?} walk {w} step {step}");
                    break;
                }
            }
        }
    }
    Some((steps, first_findings))
}
