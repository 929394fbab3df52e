//! What keeps confirm's sequencer from forcing a finding's trace (campaign::confirm::obstacle),
//! and the fuzz aimed at it after (campaign::confirm::aim), on the corpus hazards and small
//! protocols. No GPU.

use campaign::confirm::aim;
use campaign::confirm::obstacle;
use campaign::confirm::plan;
use gpu_harness::lower;
use protocols::SourceFile;

mod common;
use campaign::confirm::obstacle::{Obstacle, ObstacleClass};
use campaign::confirm::plan::{ReplayPlan, plan};
use checker::{Class, Finding, Severity};
use common::{findings, findings_of};
use gpu_harness::decode::LaunchResult;
use gpu_harness::lower::{LowerOptions, Lowered, Mode};
use protocols::ir::Program;

/// Every corpus hazard's error findings with their obstacles, as
/// `dir: rule -> [classes]`, for the files that lower in confirm mode.
fn corpus_obstacles() -> Vec<(String, String, Vec<ObstacleClass>, Vec<Obstacle>)> {
    let root =
        std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("corpus/hazards");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .expect("corpus/hazards")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let path = dir.join("fail.phase");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let file = SourceFile::new(path.display().to_string(), text);
        let program = protocols::load(&file, &[]).expect("loads");
        let report = checker::check(&program, &checker::CheckOptions::default());
        let options = LowerOptions {
            mode: Mode::Confirm,
            ..Default::default()
        };
        let Ok(lowered) = lower::lower(&program, Some(&file), &options) else {
            continue;
        };
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        for f in report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
        {
            let p = plan(&program, &lowered, f);
            let o = obstacle::obstacles(f, p.as_ref().map_err(|e| e.as_str()), &lowered, &file);
            out.push((
                name.clone(),
                f.rule.name.to_string(),
                o.iter().map(|o| o.class).collect(),
                o,
            ));
        }
    }
    out
}

fn classes_of(
    all: &[(String, String, Vec<ObstacleClass>, Vec<Obstacle>)],
    dir: &str,
    rule: &str,
) -> Vec<Vec<ObstacleClass>> {
    all.iter()
        .filter(|(d, r, _, _)| d == dir && r == rule)
        .map(|(_, _, c, _)| c.clone())
        .collect()
}

/// The classes of the corpus hazards: a finding at a hardware collective, the proxy-fence
/// race (unsequenced), a multicast copy landed late; lanes of one warp a loop iteration
/// apart are asked for, not forced (wait-phase-behind's deadlock, which the H100 shows);
/// plain traces have none.
#[test]
fn corpus_hazards_classify_what_cannot_be_forced() {
    use ObstacleClass::*;
    let all = corpus_obstacles();
    assert!(all.len() > 40, "{}", all.len());
    // named-barrier-rearrive's hazard is a scaled-down model (one thread per warp, counts
    // in warps), which `lower` refuses: it has no replay plan.
    assert!(classes_of(&all, "named-barrier-rearrive", "named-barrier-rearrive").is_empty());
    assert_eq!(
        classes_of(&all, "barrier-divergence", "barrier-divergence"),
        [vec![HardwareCollective]]
    );
    // The race of the divergent loop (t1's read against t0's next write; reported once,
    // at the later statement, whichever side the schedule reaches first) is a plain trace.
    assert_eq!(
        classes_of(&all, "barrier-divergence", "data-race"),
        [vec![]]
    );
    assert_eq!(
        classes_of(&all, "missing-proxy-fence", "missing-proxy-fence"),
        [vec![StoreWindow]]
    );
    assert_eq!(
        classes_of(&all, "remote-cta-exited", "remote-cta-exited"),
        [vec![AsyncCopy]]
    );
    assert_eq!(
        classes_of(&all, "wait-phase-behind", "deadlock"),
        [vec![WarpLanes]]
    );
    let lanes = all
        .iter()
        .find(|(d, r, _, _)| d == "wait-phase-behind" && r == "deadlock")
        .expect("the deadlock");
    assert!(
        lanes.3[0].detail.contains("asked for, not forced"),
        "{}",
        lanes.3[0].detail
    );
    assert_eq!(lanes.3[0].laggards, vec![(0, 1)]);
    for (dir, rule) in [
        ("data-race", "data-race"),
        ("deadlock", "deadlock"),
        ("stale-phase", "stale-phase"),
        ("expect-after-completion", "data-race"),
        ("stale-token", "stale-token"),
    ] {
        for c in classes_of(&all, dir, rule) {
            assert!(c.is_empty(), "{dir}: {rule}: {c:?}");
        }
    }
    // No corpus trace has a lane pass a statement its warp runs together while a
    // warp-mate is held (the checker's own `syncwarp`/`elect` wait for the warp).
    for (dir, rule, _, o) in &all {
        for x in o {
            assert!(
                !x.detail.contains("cannot run ahead"),
                "{dir}: {rule}: {}",
                x.detail
            );
        }
    }
}

/// A lone leader lane: lane 0 of the consumer warp arrives on `empty` alone, so the
/// producer runs two phases ahead of lanes 1-31, still waiting on `ready`.
const LONE_LEADER: &str = "protocol lone_leader\nparam N = 3\nblock 64\nmbarrier ready\n\
    mbarrier empty\nif tid == 0 {\n  init ready, 1\n  init empty, 1\n}\nsyncthreads\n\
    role producer when tid == 32 {\n  for i in 0..N {\n    wait empty parity (i % 2) ^ 1\n    \
    arrive ready\n  }\n}\nrole consumer when tid < 32 {\n  for i in 0..N {\n    \
    wait ready parity i % 2\n    if lane == 0 { arrive empty }\n  }\n}\n";

fn lone_leader() -> (SourceFile, Program, Lowered, Finding) {
    lone_leader_with(LONE_LEADER)
}

fn lone_leader_with(text: &str) -> (SourceFile, Program, Lowered, Finding) {
    let file = SourceFile::new("lone_leader.phase", text);
    let (program, lowered, errors) = findings_of(file.clone());
    let f = errors
        .into_iter()
        .find(|f| f.class() == Class::Deadlock)
        .expect("a deadlock");
    (file, program, lowered, f)
}

#[test]
fn a_lone_leader_lane_running_ahead_holds_its_warp_mates_apart() {
    let (file, program, lowered, f) = lone_leader();
    let p = plan(&program, &lowered, &f).expect("a plan");
    let o = obstacle::obstacles(&f, Ok(&p), &lowered, &file);
    let classes: Vec<ObstacleClass> = o.iter().map(|o| o.class).collect();
    assert_eq!(classes, [ObstacleClass::WarpLanes], "{o:?}");
    let w = &o[0];
    let wait = plan::stmt_of(&lowered, f.span).expect("the wait");
    assert_eq!(lowered.stmts[wait as usize].keyword, "wait");
    assert_eq!(w.stmts, vec![wait]);
    let held: Vec<(u32, u32)> = (1..32).map(|t| (0, t)).collect();
    assert_eq!(w.laggards, held, "the warp-mates still waiting on `ready`");
    assert!(
        w.detail.contains("the trace runs t0 through line 19"),
        "{}",
        w.detail
    );
    assert!(w.detail.contains("(held: t1-t31)"), "{}", w.detail);
    assert!(w.detail.contains("asked for, not forced"), "{}", w.detail);
    // The aimed fuzz delays the held lanes before the wait, and the statements of the
    // finding's wait-for graph.
    let a = aim::aim_of(&f, &lowered, &o);
    assert!(a.stmts.contains(&wait));
    assert_eq!(a.laggards, held);
    // Had t0 passed a statement its warp runs together (a `syncwarp`) on its way around
    // the loop, the order could not be forced at all.
    let (file, _, lowered, f) = lone_leader_with(
        &LONE_LEADER.replace("arrive empty }\n", "arrive empty }\n    syncwarp\n"),
    );
    let wait = plan::stmt_of(&lowered, f.span).expect("the wait");
    let sync = lowered
        .stmts
        .iter()
        .find(|s| s.keyword == "syncwarp")
        .expect("a syncwarp")
        .id;
    assert!(lowered.stmts[sync as usize].warp_sync);
    let st = |tid, stmt| gpu_harness::sequencer::SeqStep { cta: 0, tid, stmt };
    let steps = vec![st(0, wait), st(0, sync), st(0, wait), st(1, wait)];
    let plan2 = ReplayPlan {
        steps,
        table: Default::default(),
        extra_wanted: None,
        unsequenced: false,
    };
    let o = obstacle::obstacles(&f, Ok(&plan2), &lowered, &file);
    let lanes = o
        .iter()
        .find(|o| o.class == ObstacleClass::WarpLanes)
        .expect("warp lanes");
    assert!(
        lanes.detail.contains("passes line 21 (`syncwarp`)"),
        "{}",
        lanes.detail
    );
    assert!(
        lanes.detail.contains("cannot run ahead"),
        "{}",
        lanes.detail
    );
    assert!(lanes.stmts.contains(&sync));
}

/// What the run adds: UB the hardware tolerated, the UB a race passes first, threads that
/// left the trace, and "forced" only when nothing else explains it.
#[test]
fn after_the_run_the_reasons_say_what_the_hardware_did() {
    let (program, lowered, errors) = findings("corpus/hazards/drop-to-zero/fail.phase");
    let _ = (&program, &lowered);
    let ub = errors.iter().find(|f| f.class() == Class::Ub).expect("UB");
    let o = obstacle::after_run(ub, &[], None, 0, 1320);
    assert_eq!(o.len(), 1);
    assert_eq!(o[0].class, ObstacleClass::UbTolerated);
    assert!(
        o[0].detail.contains("1320 replayed trials"),
        "{}",
        o[0].detail
    );
    let (_, _, errors) = findings("corpus/hazards/data-race/fail.phase");
    let race = &errors[0];
    let o = obstacle::after_run(race, &[], None, 0, 1320);
    assert_eq!(o[0].class, ObstacleClass::Forced);
    let o = obstacle::after_run(race, &[], Some("`barrier-divergence` (line 22)"), 3, 1320);
    let classes: Vec<ObstacleClass> = o.iter().map(|o| o.class).collect();
    assert_eq!(classes, [ObstacleClass::UbOnTrace, ObstacleClass::Diverged]);
    // A static reason already explains it: no "forced".
    let stat = [Obstacle::new(ObstacleClass::HardwareCollective, "x")];
    assert!(obstacle::after_run(race, &stat, None, 0, 1320).is_empty());
    // Nothing ran (the replay got stuck): no claim about trials.
    assert!(obstacle::after_run(race, &[], None, 0, 0).is_empty());
}

/// The aim table the fuzz-mode kernel reads (`PC_AIM_MAGIC`): header, statement bits,
/// thread bits of one trial; the rounds cycle through the targets and delay bounds.
#[test]
fn aim_tables_mark_the_aimed_statements_and_threads() {
    let (_, _, lowered, _) = lone_leader();
    let a = aim::Aim {
        stmts: vec![1, 33],
        laggards: vec![(0, 1), (0, 2), (0, 40)],
    };
    let nstmt = lowered.stmts.len();
    assert!(nstmt < 32);
    let t = aim::table(&lowered, &a, aim::Targets::Laggards, 2000, 1);
    assert_eq!(&t[..4], &[aim::AIM_MAGIC, 2000, 1, 2]);
    assert_eq!(t[4], 1 << 1, "statement 33 is past the table");
    assert_eq!(&t[5..], &[0b110, 1 << 8]);
    let t = aim::table(&lowered, &a, aim::Targets::HalfOfTheWarps, 20000, 3);
    for w in &t[5..] {
        assert!(*w == 0 || *w == u32::MAX, "whole warps: {w:x}");
    }
    let t = aim::table(&lowered, &a, aim::Targets::HalfOfEachWarp, 20000, 3);
    let ones: u32 = t[5..].iter().map(|w| w.count_ones()).sum();
    assert!((10..54).contains(&ones), "about half of 64: {ones}");
    // Rounds: targets first, then the longer delays.
    let plans: Vec<(aim::Targets, u32)> = (0..6).map(|r| aim::round_plan(&a, r)).collect();
    assert_eq!(plans[0], (aim::Targets::Laggards, aim::AIM_NS[0]));
    assert_eq!(plans[1].0, aim::Targets::HalfOfEachWarp);
    assert_eq!(plans[3], (aim::Targets::Laggards, aim::AIM_NS[1]));
    let none = aim::Aim {
        stmts: vec![1],
        laggards: Vec::new(),
    };
    assert_eq!(aim::round_plan(&none, 0).0, aim::Targets::HalfOfEachWarp);
}

/// An aimed round shows a deadlock by expired waits at the finding's statements only;
/// what it saw elsewhere is listed, not counted.
#[test]
fn aimed_rounds_are_judged_at_the_findings_statements() {
    let (file, _, lowered, f) = lone_leader();
    let wait = plan::stmt_of(&lowered, f.span).expect("the wait");
    let other = lowered
        .stmts
        .iter()
        .find(|s| s.keyword == "arrive")
        .expect("an arrive")
        .id;
    let ev = |stmt, block| gpu_harness::decode::Event {
        kind: gpu_harness::decode::EventKind::Hang,
        stmt,
        tid: 1,
        cta: 0,
        block,
        a: 0,
        b: 0,
        raw: 0,
    };
    let r = LaunchResult {
        events: vec![ev(other, 0)],
        ..Default::default()
    };
    assert!(aim::judge_round(&lowered, &file, &f, &r).is_none());
    assert_eq!(
        aim::seen_elsewhere(&lowered, &file, &r),
        vec![format!(
            "1 hang(s) at line {}",
            file.line_of(lowered.stmts[other as usize].span)
        )]
    );
    let r = LaunchResult {
        events: vec![ev(wait, 3), ev(wait, 3), ev(wait, 9)],
        ..Default::default()
    };
    let (detail, n) = aim::judge_round(&lowered, &file, &f, &r).expect("shown");
    assert_eq!(n, 2);
    assert_eq!(detail, "bounded waits expired at line 19");
}
