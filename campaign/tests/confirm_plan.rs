//! confirm's replay plans (campaign::confirm::plan) on the corpus hazards: the sequencer's table
//! per finding (what is held, what lands when), a file that cannot be lowered, the UB a
//! race's interleaving runs into first. No GPU.

use campaign::confirm::replay::{lower_for_replay, not_lowered, ub_on_trace};
use campaign::confirm::report::Outcome;
use protocols::SourceFile;

mod common;
use campaign::confirm::judge::judge;
use campaign::confirm::obstacle::ObstacleClass;
use campaign::confirm::plan::plan;
use checker::Actor;
use checker::{Class, Finding, Severity};
use common::{findings, findings_of};
use gpu_harness::decode::LaunchResult;
use gpu_harness::sequencer::{self, LANDING, NONE};

/// A finding whose file cannot be lowered for its replay says why, by class: a file of
/// several kernels (what `confirm` and `mutate --gpu` report for it without a GPU).
#[test]
fn a_file_of_several_kernels_is_not_lowered_for_its_replay() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("corpus/domains/memsync_domains.phase");
    let text = std::fs::read_to_string(&path).expect("corpus file");
    let file = SourceFile::new("memsync_domains.phase", text);
    let program = protocols::load(&file, &[]).expect("loads");
    let report = checker::check(&program, &checker::CheckOptions::default());
    let f = report
        .findings
        .iter()
        .find(|f| f.severity == Severity::Error)
        .expect("an error-level finding");
    let Err(e) = lower_for_replay(&program, &file, f) else {
        panic!("confirm mode runs one kernel");
    };
    let r = not_lowered(&program, &file, f, &e.message);
    assert_eq!(r.outcome, Outcome::NotObservable);
    assert!(
        r.detail.starts_with("the protocol cannot be lowered: "),
        "{}",
        r.detail
    );
    assert_eq!(r.why_not_shown.len(), 1);
    assert_eq!(r.why_not_shown[0].class, ObstacleClass::SeveralKernels);
    assert_eq!(r.why_not_shown[0].detail, e.message);
    assert_eq!((r.trials, r.stuck), (0, false));
}

/// The table's entries, as (cta, tid, stmt-or-issue, occurrence-or-slot).
fn entries(t: &sequencer::SeqTable) -> Vec<[u32; 4]> {
    t.words[4..]
        .chunks(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

#[test]
fn races_against_a_tma_in_flight_defer_its_landing_past_the_held_access() {
    for path in [
        "corpus/hazards/expect-after-completion/fail.phase",
        "corpus/hazards/expect-without-arrival/fail.phase",
    ] {
        let (program, lowered, errors) = findings(path);
        let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
        // A race is reported once, at the later of its two statements (checker race.rs).
        assert_eq!(races.len(), 3, "{path}");
        for f in races {
            let p = plan(&program, &lowered, f).expect("plan");
            let e = entries(&p.table);
            let what = format!("{path}: {} {:?}\n{e:?}", f.rule.name, p.table.words);
            let landing = e.iter().position(|x| x[1] == LANDING).expect(&what);
            let held = p.table.words[1] as usize;
            // The held access is a read of the TMA's buffer, before the landing; the
            // landing is what it waits for; the landing names the `tma` step.
            assert_eq!(p.table.words[2] as usize, landing, "{what}");
            assert!(held < landing, "{what}");
            assert_eq!(lowered.stmts[e[held][2] as usize].keyword, "read", "{what}");
            let issue = e[landing][2] as usize;
            assert!(issue < held, "{what}");
            assert_eq!(lowered.stmts[e[issue][2] as usize].keyword, "tma", "{what}");
        }
    }
}

/// pipeline-role: the races against t0's `memcpy_async` still in flight (t1's copy has
/// completed: its arrive-on event is in the trace) defer t0's copy, not t1's, past the
/// held read, and the replay stops after the trace.
#[test]
fn races_against_a_memcpy_in_flight_defer_that_copy() {
    let (program, lowered, errors) = findings("corpus/hazards/pipeline-role/fail.phase");
    let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
    assert_eq!(races.len(), 1);
    for f in races {
        let p = plan(&program, &lowered, f).expect("plan");
        let e = entries(&p.table);
        let what = format!("{} {:?}\n{e:?}", f.rule.name, p.table.words);
        assert_ne!(p.table.words[0] & sequencer::STOP, 0, "{what}");
        let held = p.table.words[1] as usize;
        assert_eq!(lowered.stmts[e[held][2] as usize].keyword, "read", "{what}");
        assert_eq!(e[held][1], 2, "t2 reads: {what}");
        // Either t0's copy was issued before the read and its landing is deferred past
        // it, or (the trace the reduced search finds) t0 issues it as the trace's last
        // step, after the read: then the landing follows at once (dropped from the table)
        // and the read is held open for the fixed window across it.
        let issue = match e.iter().position(|x| x[1] == LANDING) {
            Some(landing) => {
                assert_eq!(p.table.words[2] as usize, landing, "{what}");
                e[landing][2] as usize
            }
            None => {
                assert_eq!(p.table.words[2], NONE, "{what}");
                let last = p.table.words[3] as usize;
                assert!(held < last, "{what}");
                last
            }
        };
        assert_eq!(
            lowered.stmts[e[issue][2] as usize].keyword, "memcpy_async",
            "{what}"
        );
        assert_eq!(e[issue][1], 0, "t0's copy is the one in flight: {what}");
    }
}

/// barrier-divergence: the trace ends with t0's own read; the race is t1's read (enabled
/// once the divergent barrier completes) against t0's next write, so both are replayed
/// after the trace, t1's read held open across t0's write.
#[test]
fn a_race_the_trace_has_not_run_yet_is_replayed_after_it() {
    let (program, lowered, errors) = findings("corpus/hazards/barrier-divergence/fail.phase");
    // Two races: t1's read and t0's next write both enabled after the divergent use, and
    // t0's write after t1 moved on to the next use, which t0 has not acquired. The first.
    let f = errors
        .iter()
        .find(|f| f.class() == Class::Race && f.message.contains("at the same time"))
        .expect("a race");
    let p = plan(&program, &lowered, f).expect("plan");
    let e = entries(&p.table);
    let what = format!("{:?}\n{e:?}", p.table.words);
    let held = p.table.words[1] as usize;
    let partner = p.table.words[2] as usize;
    assert_eq!(
        (e[held][1], lowered.stmts[e[held][2] as usize].keyword),
        (1, "read"),
        "{what}"
    );
    assert_eq!(
        (e[partner][1], lowered.stmts[e[partner][2] as usize].keyword),
        (0, "write"),
        "{what}"
    );
    assert!(held < partner, "{what}");
}

#[test]
fn a_landing_right_after_its_issue_is_left_to_the_hardware() {
    let (program, lowered, errors) = findings("corpus/hazards/expect-without-arrival/fail.phase");
    let ub = errors
        .iter()
        .find(|f| f.rule.name == "expect-without-arrival")
        .expect("the UB finding");
    // Its trace lands the copy at once (tma, lands, arrive, expect_tx).
    assert!(
        ub.trace
            .iter()
            .any(|t| matches!(t.actor, Actor::Async { .. }))
    );
    let p = plan(&program, &lowered, ub).expect("plan");
    assert!(entries(&p.table).iter().all(|x| x[1] != LANDING));
    assert_eq!(p.table.words[1], NONE);
    assert_eq!(p.steps.len(), 4);
}

/// A race whose interleaving runs into a UB first names it (the hardware may fault or hang
/// there); one whose interleaving hits no UB does not, even when a UB statement of the same
/// file lies on it (pipeline-role: t1's commit is UB only once a phase went unobserved).
#[test]
fn races_behind_a_ub_name_it() {
    for (path, ub) in [
        (
            "corpus/hazards/barrier-divergence/fail.phase",
            Some("barrier-divergence"),
        ),
        ("corpus/hazards/pipeline-role/fail.phase", None),
        ("corpus/hazards/data-race/fail.phase", None),
    ] {
        let (program, _, errors) = findings(path);
        let file = SourceFile::new(
            path,
            std::fs::read_to_string(
                std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path),
            )
            .unwrap(),
        );
        let races: Vec<&Finding> = errors.iter().filter(|f| f.class() == Class::Race).collect();
        assert!(!races.is_empty(), "{path}");
        for f in races {
            let first = ub_on_trace(&program, f, &file);
            assert_eq!(
                first.as_ref().map(|u| u.rule),
                ub,
                "{path}: {}",
                f.rule.name
            );
        }
    }
}

/// The proxy-fence race is judged on what its `tma_store` landed: the racing write's stamp
/// still busy (the copy missed its last store) or no stamp confirms it; a stamp of another
/// statement (a write of the source while the copy reads it: a race of its own) does not.
#[test]
fn a_proxy_fence_race_is_judged_on_the_landed_stamp() {
    let path = "corpus/hazards/missing-proxy-fence/fail.phase";
    let (program, lowered, errors) = findings(path);
    let file = SourceFile::new(
        path,
        std::fs::read_to_string(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(path),
        )
        .unwrap(),
    );
    let f = errors
        .iter()
        .find(|f| f.rule.name == "missing-proxy-fence")
        .expect("the race");
    assert!(campaign::confirm::plan::unsequenced(&lowered, f));
    let p = plan(&program, &lowered, f).expect("a plan");
    assert!(p.unsequenced && p.steps.is_empty());
    let id = |kw: &str| {
        lowered
            .stmts
            .iter()
            .find(|s| s.keyword == kw)
            .map(|s| s.id)
            .unwrap_or_else(|| panic!("a `{kw}`"))
    };
    let (write, store, sync) = (id("write"), id("tma_store"), id("syncthreads"));
    // pc_stamp's layout: statement + 1, occurrence, cta, thread; bit 63 = busy.
    let stamp = |stmt: u32, busy: bool| (u64::from(stmt + 1) << 48) | (u64::from(busy) << 63) | 1;
    let judged = |at: u32, landed: u64| {
        let r = LaunchResult {
            events: vec![gpu_harness::decode::Event {
                kind: gpu_harness::decode::EventKind::Race,
                stmt: at,
                tid: 0,
                cta: 0,
                block: 5,
                a: landed,
                b: 3,
                raw: 0,
            }],
            ..Default::default()
        };
        judge(&lowered, &file, f, &p.steps, None, &r)
    };
    let (detail, n) = judged(store, stamp(write, true)).expect("confirmed");
    assert_eq!(n, 1);
    assert!(detail.contains("still busy"), "{detail}");
    assert!(judged(store, 0).is_some(), "no stamp: every store missed");
    assert!(judged(store, stamp(sync, false)).is_none());
    assert!(
        judged(write, stamp(write, true)).is_none(),
        "not at the tma_store"
    );
}

#[test]
fn a_trace_that_orders_a_thread_exit_sequences_it() {
    let (program, lowered, errors) = findings("corpus/hazards/remote-cta-exited/fail.phase");
    let f = errors
        .iter()
        .find(|f| f.rule.name == "remote-cta-exited")
        .expect("the UB finding");
    let p = plan(&program, &lowered, f).expect("a plan");
    let e = entries(&p.table);
    let finish = lowered
        .stmts
        .iter()
        .find(|s| s.keyword == "finish")
        .expect("a finish statement")
        .id;
    // Block 0's thread leaves at its turn, before block 1's remote arrive (the last step).
    let leaves = e
        .iter()
        .position(|x| x[0] == 0 && x[2] == finish)
        .unwrap_or_else(|| panic!("cta 0 finishes: {e:?}"));
    let arrive = e
        .iter()
        .rposition(|x| x[0] == 1 && x[1] != LANDING)
        .unwrap_or_else(|| panic!("cta 1 steps: {e:?}"));
    assert!(leaves < arrive, "{e:?}");
    assert_eq!(
        lowered.stmts[e[arrive][2] as usize].keyword, "arrive",
        "{e:?}"
    );
}

#[test]
fn an_explicit_exit_on_the_trace_is_sequenced_too() {
    // remote-cta-exited with block 0 leaving through `exit` instead of its end.
    let text = "protocol exit_early\nblock 1\ncluster 2\nmbarrier full\nmbarrier empty\n\
                buffer tile\nif tid == 0 {\n  init full, 1\n  init empty, 2\n  \
                fence_mbarrier_init\n}\ncluster_sync\narrive_expect_tx full, 1024\n\
                if cta == 0 {\n  tma tile -> full, 1024 multicast 0b11\n}\n\
                wait full parity 0\nread tile\nif cta == 0 {\n  exit\n}\n\
                arrive empty @ 0\n";
    let (program, lowered, errors) = findings_of(SourceFile::new("exit_early.phase", text));
    let f = errors
        .iter()
        .find(|f| f.rule.name == "remote-cta-exited")
        .expect("the UB finding");
    let exit = lowered
        .stmts
        .iter()
        .find(|s| s.keyword == "exit")
        .expect("an exit statement")
        .id;
    let p = plan(&program, &lowered, f).expect("a plan");
    let e = entries(&p.table);
    assert!(
        e.iter().any(|x| x[0] == 0 && x[2] == exit),
        "block 0 leaves through its exit at its turn: {e:?}"
    );
}
