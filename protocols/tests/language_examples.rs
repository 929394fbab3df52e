//! Every example of language.md loads into the IR (the spec's code blocks are copied verbatim
//! into tests/fixtures/lang/).

use protocols::ir::*;
use protocols::{SourceFile, load};

fn load_fixture(name: &str, overrides: &[(String, i64)]) -> Program {
    let path = format!(
        "{}/tests/fixtures/lang/{name}.phase",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let file = SourceFile::new(path, text);
    match load(&file, overrides) {
        Ok(p) => p,
        Err(e) => panic!("{name} failed to load: {:#?}", e.errors),
    }
}

#[test]
fn double_buffer_loads() {
    let p = load_fixture("double_buffer", &[]);
    assert_eq!(p.name, "double_buffer");
    assert_eq!(p.param_value("STAGES"), Some(2));
    assert_eq!(p.param_value("K"), Some(8));
    assert_eq!(p.kernels.len(), 1);
    let k = &p.kernels[0];
    assert!(k.implicit);
    assert_eq!(k.block, 160);
    assert_eq!(k.cluster, 1);
    assert_eq!(p.objects.len(), 3);
    assert_eq!(p.objects[0].len, Some(2));
    assert_eq!(p.roles.len(), 2);
    assert_eq!(p.expects.len(), 2);
    assert_eq!(p.expects[1].overrides, vec![("K".to_string(), 1)]);
    // if, syncthreads, role, role
    assert_eq!(k.body.len(), 4);
}

#[test]
fn double_buffer_param_override() {
    let p = load_fixture("double_buffer", &[("K".into(), 64)]);
    assert_eq!(p.param_value("K"), Some(64));
    assert!(p.params[1].overridden);
    assert!(!p.params[0].overridden);
}

#[test]
fn multicast_pair_loads() {
    let p = load_fixture("multicast_pair", &[]);
    let k = &p.kernels[0];
    assert_eq!((k.block, k.cluster), (128, 2));
    let tma = find_op(&k.body, "tma").expect("has a tma");
    match tma {
        Op::Tma { multicast, .. } => assert!(matches!(
            multicast.as_ref().map(|m| &m.kind),
            Some(ExprKind::Int(3))
        )),
        _ => unreachable!(),
    }
}

#[test]
fn domains_loads() {
    let p = load_fixture("domains", &[]);
    assert_eq!(p.kernels.len(), 2);
    assert_eq!(p.kernels[0].domain, "default");
    assert_eq!(p.kernels[1].domain, "remote");
    assert!(!p.kernels[0].implicit);
    assert_eq!(p.kernels[1].block, 32);
    let acq = find_op(&p.kernels[1].body, "load_acquire").expect("has load_acquire");
    assert!(matches!(
        acq,
        Op::LoadAcquire {
            scope: MemScope::Gpu,
            ..
        }
    ));
}

fn find_op<'a>(body: &'a [Stmt], kw: &str) -> Option<&'a Op> {
    for s in body {
        let found = match &s.kind {
            StmtKind::Op(op) if op.keyword() == kw => Some(op),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => find_op(then_body, kw).or_else(|| find_op(else_body, kw)),
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Role { body, .. }
            | StmtKind::Elect { body } => find_op(body, kw),
            _ => None,
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

#[test]
fn every_statement_loads() {
    let path = format!(
        "{}/tests/fixtures/all_statements.phase",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let p = match load(&SourceFile::new(path, text), &[]) {
        Ok(p) => p,
        Err(e) => panic!("{:#?}", e.errors),
    };
    let mut seen = std::collections::BTreeSet::new();
    collect(&p.kernels[0].body, &mut seen);
    for kw in [
        "init",
        "inval",
        "arrive",
        "arrive_drop",
        "arrive_expect_tx",
        "expect_tx",
        "complete_tx",
        "wait",
        "arrive_and_wait",
        "test_wait",
        "syncthreads",
        "bar_sync",
        "bar_arrive",
        "syncwarp",
        "cluster_sync",
        "cluster_arrive",
        "cluster_wait",
        "fence_mbarrier_init",
        "read",
        "write",
        "write part",
        "mma",
        "fence_proxy_async",
        "tma",
        "tma_store",
        "bulk_commit",
        "bulk_wait_read",
        "cp_async",
        "commit_group",
        "wait_group",
        "cp_async_arrive",
        "producer_acquire",
        "producer_commit",
        "consumer_wait",
        "consumer_release",
        "consumer_wait_prior",
        "memcpy_async",
        "quit",
        "compute",
        "store",
        "load",
        "store_release",
        "load_acquire",
        "fence",
    ] {
        assert!(seen.contains(kw), "missing {kw}");
    }
    assert_eq!(p.roles.len(), 2, "two `role producer` share one id");
    assert_eq!(p.kernels[0].block, 128);
    assert_eq!(p.param_value("BYTES"), Some(16384));
    assert_eq!(p.param_value("MASK"), Some(3));
    assert_eq!(p.param_value("HEX"), Some(16));
    assert_eq!(p.expects.len(), 5);
    assert_eq!(p.expects[2].rule.as_deref(), Some("stale-token"));
    assert_eq!(p.expects[4].rule.as_deref(), Some("wait-prior-over-8"));
    assert_eq!(
        p.expects[2].overrides,
        vec![("STAGES".to_string(), 4), ("BYTES".to_string(), -1)]
    );
    let tokens = p
        .locals
        .iter()
        .filter(|l| l.kind == LocalKind::Token)
        .count();
    assert_eq!(tokens, 2);
}

fn collect(body: &[Stmt], seen: &mut std::collections::BTreeSet<&'static str>) {
    for s in body {
        match &s.kind {
            StmtKind::Op(op) => {
                seen.insert(op.keyword());
            }
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                collect(then_body, seen);
                collect(else_body, seen);
            }
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::Role { body, .. }
            | StmtKind::Elect { body } => collect(body, seen),
            _ => {}
        }
    }
}

#[test]
fn syntax_details() {
    // BOM, CRLF, `//` comments, `;`, continuation after `,` and operators and inside `[]`,
    // `else` on the next line, keywords as kernel names, hex/binary/underscored integers.
    let text = "\u{feff}protocol details\r\n\
                param N = 1_0 +\r\n  0x2 * 0b1   // twelve\r\n\
                block 64\r\n\
                mbarrier m[N]\r\n\
                if tid == 0 {\r\n  init m[\r\n 3], 1 ; init m[0],\r\n 2\r\n}\r\n\
                else if tid == 1 { compute }\r\n\
                else\r\n{ syncwarp }\r\n\
                let x = -(-3) << 2\r\n\
                expect ok\r\n";
    let p = load(&SourceFile::new("details.phase", text), &[]).unwrap_or_else(|e| {
        panic!("{:#?}", e.errors);
    });
    assert_eq!(p.param_value("N"), Some(12));
    assert_eq!(p.objects[0].len, Some(12));
    match &p.kernels[0].body[0].kind {
        StmtKind::If {
            then_body,
            else_body,
            ..
        } => {
            assert_eq!(then_body.len(), 2);
            match &else_body[0].kind {
                StmtKind::If { else_body, .. } => assert_eq!(else_body.len(), 1),
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn expressions_group_by_precedence() {
    let text = "protocol e\nblock 32\n\
                param A = 1 + 2 * 3 << 1\n\
                param B = 1 | 6 ^ 3 & 5\n\
                param C = 1 < 2 == 1 && 0 || 1\n\
                param D = -7 / 2 + -7 % 2\n\
                param E = min(4, max(2, 9)) - !0\n";
    let p = load(&SourceFile::new("e.phase", text), &[]).expect("loads");
    assert_eq!(p.param_value("A"), Some(14));
    assert_eq!(p.param_value("B"), Some(1 | (6 ^ (3 & 5))));
    assert_eq!(p.param_value("C"), Some(1));
    assert_eq!(p.param_value("D"), Some(-4));
    assert_eq!(p.param_value("E"), Some(3));
}

#[test]
fn overrides_flow_into_dependent_params_and_sizes() {
    let text = "protocol o\nparam S = 2\nparam T = S * 2\nblock 32 * S\nbuffer b[T]\n";
    let p = load(&SourceFile::new("o.phase", text), &[("S".to_string(), 4)]).expect("loads");
    assert_eq!(p.param_value("T"), Some(8));
    assert_eq!(p.kernels[0].block, 128);
    assert_eq!(p.objects[0].len, Some(8));
}
