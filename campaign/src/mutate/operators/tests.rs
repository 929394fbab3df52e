use super::*;

/// A fixture with one of everything the operators change.
const FIXTURE: &str = "protocol fixture
param STAGES = 2
param K = 3
param BYTES = 64
block 3
mbarrier full[STAGES]
mbarrier empty[STAGES]
mbarrier done
buffer slot[STAGES]
if tid == 0 {
  for s in 0..STAGES {
init full[s], 1
init empty[s], 2
  }
  init done, 3
}
syncthreads
role producer when tid == 0 {
  for k in 0..K {
let s = k % STAGES
wait empty[s] parity ((k / STAGES) % 2) ^ 1
write slot[s]
fence_proxy_async
arrive_expect_tx full[s], BYTES
complete_tx full[s], 32
expect_tx full[s], 32
complete_tx full[s], BYTES
  }
  arrive done
}
role consumer when tid >= 1 {
  for k in 0..K {
let s = k % STAGES
wait full[s] parity (k / STAGES) % 2
read slot[s]
arrive empty[s]
  }
  arrive_drop done
}
bar_sync 1, 3
";

fn proposals(op: Operator) -> Vec<Change> {
    let file = SourceFile::new("fixture.phase", FIXTURE);
    let program = protocols::load(&file, &[]).expect("the fixture loads");
    mutants(&file, &program, &[op])
        .iter()
        .map(|p| {
            let text = p.apply(FIXTURE);
            let mutant = SourceFile::new("m.phase", &text);
            if let Err(e) = protocols::load(&mutant, &[]) {
                panic!("{} does not load: {:?}\n{text}", op.name(), e.errors);
            }
            change(FIXTURE, &text)
        })
        .collect()
}

fn one(line: u32, before: &str, after: &str) -> Change {
    Change {
        line,
        before: vec![before.into()],
        after: vec![after.into()],
    }
}

#[test]
fn flip_parity() {
    assert_eq!(
        proposals(Operator::FlipParity),
        vec![
            one(
                21,
                "wait empty[s] parity ((k / STAGES) % 2) ^ 1",
                "wait empty[s] parity (((k / STAGES) % 2) ^ 1) ^ 1"
            ),
            one(
                34,
                "wait full[s] parity (k / STAGES) % 2",
                "wait full[s] parity ((k / STAGES) % 2) ^ 1"
            ),
        ]
    );
}

#[test]
fn counts_plus_and_minus_one() {
    assert_eq!(
        proposals(Operator::CountPlusOne),
        vec![
            one(12, "init full[s], 1", "init full[s], 2"),
            one(13, "init empty[s], 2", "init empty[s], 3"),
            one(15, "init done, 3", "init done, 4"),
            one(29, "arrive done", "arrive done, 2"),
            one(36, "arrive empty[s]", "arrive empty[s], 2"),
            one(40, "bar_sync 1, 3", "bar_sync 1, 4"),
        ]
    );
    assert_eq!(
        proposals(Operator::CountMinusOne),
        vec![
            one(12, "init full[s], 1", "init full[s], 0"),
            one(13, "init empty[s], 2", "init empty[s], 1"),
            one(15, "init done, 3", "init done, 2"),
            one(40, "bar_sync 1, 3", "bar_sync 1, 2"),
        ]
    );
}

#[test]
fn arrive_and_arrive_drop() {
    assert_eq!(
        proposals(Operator::ArriveToDrop),
        vec![
            one(29, "arrive done", "arrive_drop done"),
            one(36, "arrive empty[s]", "arrive_drop empty[s]"),
        ]
    );
    assert_eq!(
        proposals(Operator::DropToArrive),
        vec![one(38, "arrive_drop done", "arrive done")]
    );
}

#[test]
fn remove_wait_and_fence() {
    assert_eq!(
        proposals(Operator::RemoveWait),
        vec![
            one(21, "wait empty[s] parity ((k / STAGES) % 2) ^ 1", ""),
            one(34, "wait full[s] parity (k / STAGES) % 2", ""),
        ]
    );
    assert_eq!(
        proposals(Operator::RemoveFence),
        vec![one(23, "fence_proxy_async", "")]
    );
}

#[test]
fn swap_stage() {
    let got = proposals(Operator::SwapStage);
    assert_eq!(got.len(), 9, "{got:#?}");
    assert_eq!(
        got[0],
        one(
            21,
            "wait empty[s] parity ((k / STAGES) % 2) ^ 1",
            "wait empty[(s + 1) % STAGES] parity ((k / STAGES) % 2) ^ 1"
        )
    );
    assert_eq!(
        got[1],
        one(22, "write slot[s]", "write slot[(s + 1) % STAGES]")
    );
    // `init` is left alone (the inits of a loop over the stages are a permutation).
    assert!(got.iter().all(|c| !c.before[0].starts_with("init")));
}

#[test]
fn expect_tx_bytes() {
    assert_eq!(
        proposals(Operator::TxPlus16),
        vec![
            one(
                24,
                "arrive_expect_tx full[s], BYTES",
                "arrive_expect_tx full[s], BYTES + 16"
            ),
            one(26, "expect_tx full[s], 32", "expect_tx full[s], 48"),
        ]
    );
    assert_eq!(
        proposals(Operator::TxMinus16)[1],
        one(26, "expect_tx full[s], 32", "expect_tx full[s], 16")
    );
    assert_eq!(
        proposals(Operator::TxTimes2),
        vec![
            one(
                24,
                "arrive_expect_tx full[s], BYTES",
                "arrive_expect_tx full[s], BYTES * 2"
            ),
            one(26, "expect_tx full[s], 32", "expect_tx full[s], 64"),
        ]
    );
}

#[test]
fn exit_early_in_one_role() {
    assert_eq!(
        proposals(Operator::ExitEarly),
        vec![
            one(19, "for k in 0..K {", "for k in 0..K { if k == 1 { exit }"),
            one(32, "for k in 0..K {", "for k in 0..K { if k == 1 { exit }"),
        ]
    );
}

#[test]
fn trip_count_of_one_role() {
    assert_eq!(
        proposals(Operator::TripsPlusOne),
        vec![
            one(19, "for k in 0..K {", "for k in 0..K + 1 {"),
            one(32, "for k in 0..K {", "for k in 0..K + 1 {"),
        ]
    );
    assert_eq!(
        proposals(Operator::TripsMinusOne)[0],
        one(19, "for k in 0..K {", "for k in 0..K - 1 {")
    );
}

#[test]
fn arrive_before_access_swaps_two_lines() {
    assert_eq!(
        proposals(Operator::ArriveBeforeAccess),
        vec![Change {
            line: 35,
            before: vec!["read slot[s]".into(), "arrive empty[s]".into()],
            after: vec!["arrive empty[s]".into(), "read slot[s]".into()],
        }]
    );
}

#[test]
fn literals_and_neighbours() {
    let text = "protocol p\nblock 2\nmbarrier b\nbuffer x\nif tid == 0 { init b, 2 }\n\
                syncthreads\nread x; wait b parity 0\narrive b; wait b parity 0; read x\n";
    let file = SourceFile::new("p.phase", text);
    let program = protocols::load(&file, &[]).expect("loads");
    let changes: Vec<(Operator, Change)> = mutants(&file, &program, &[])
        .iter()
        .map(|p| (p.operator, change(text, &p.apply(text))))
        .collect();
    let find = |op: Operator, line: u32| {
        changes
            .iter()
            .filter(|(o, c)| *o == op && c.line == line)
            .map(|(_, c)| c.after[0].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        find(Operator::FlipParity, 7),
        vec!["read x; wait b parity 1"]
    );
    assert_eq!(find(Operator::RemoveWait, 7), vec!["read x"]);
    assert_eq!(find(Operator::RemoveWait, 8), vec!["arrive b; read x"]);
    assert!(find(Operator::ArriveBeforeAccess, 8).is_empty());
}

#[test]
fn value_and_unaligned_are_dropped() {
    let text = "protocol p\nblock 4\nbuffer x\nif tid < 2 { write x value 1 }\n\
                bar_sync 1 unaligned\nbar_sync 2, 4 unaligned\nwrite x\nbar_sync 3\nread x\n";
    let file = SourceFile::new("p.phase", text);
    let program = protocols::load(&file, &[]).expect("loads");
    let got = |op: Operator| -> Vec<Change> {
        mutants(&file, &program, &[op])
            .iter()
            .map(|p| change(text, &p.apply(text)))
            .collect()
    };
    assert_eq!(
        got(Operator::DropValue),
        vec![one(
            4,
            "if tid < 2 { write x value 1 }",
            "if tid < 2 { write x }"
        )]
    );
    assert_eq!(
        got(Operator::DropUnaligned),
        vec![
            one(5, "bar_sync 1 unaligned", "bar_sync 1"),
            one(6, "bar_sync 2, 4 unaligned", "bar_sync 2, 4"),
        ]
    );
    // Every mutant loads.
    for p in mutants(
        &file,
        &program,
        &[Operator::DropValue, Operator::DropUnaligned],
    ) {
        let m = p.apply(text);
        let f = SourceFile::new("m.phase", &m);
        assert!(protocols::load(&f, &[]).is_ok(), "{m}");
    }
}

#[test]
fn wrapping() {
    assert_eq!(wrap("K"), "K");
    assert_eq!(wrap("(a + b)"), "(a + b)");
    assert_eq!(wrap("(a) + (b)"), "((a) + (b))");
    assert_eq!(wrap("a + b"), "(a + b)");
    assert_eq!(literal("128"), Some(128));
    assert_eq!(literal("0x10"), None);
}

#[test]
fn operator_names_round_trip() {
    for op in Operator::ALL {
        assert_eq!(Operator::parse(op.name()), Some(op));
        let json = serde_json::to_value(op).expect("serializes");
        assert_eq!(json, op.name());
    }
}
