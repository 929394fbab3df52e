use super::*;

#[test]
fn scans_inline_asm_on_one_line() {
    let m = parse(
        ".version 8.0\n.target sm_90a\n.visible .entry k(\n .param .u32 k_param_0\n)\n.maxntid 64, 1, 1\n{\n .reg .b32 %r<4>;\n .shared .align 8 .b8 bar[16];\n mov.u32 %r1, bar;\n { .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%r1+8], %r2; @!p bra W; }\n ret;\n}\n",
    )
    .unwrap();
    let f = &m.functions[0];
    assert_eq!(f.name, "k");
    assert_eq!(f.maxntid, Some([64, 1, 1]));
    assert_eq!(f.params[0].name, "k_param_0");
    assert_eq!(f.symbols[0].size, Some(16));
    assert_eq!(f.instrs.len(), 4);
    assert_eq!(f.instrs[2].target, Some(1));
    assert_eq!(f.instrs[2].guard.map(|g| g.1), Some(true));
    match &f.instrs[1].operands[1] {
        Operand::Addr { offset, .. } => assert_eq!(*offset, 8),
        o => panic!("{o:?}"),
    }
}

#[test]
fn labels_are_scoped_to_their_block() {
    let m = parse(
        ".visible .entry k()\n{\n .reg .pred %p<2>;\n { W: nanosleep.u32 1; @%p1 bra W; }\n { W: nanosleep.u32 2; @%p1 bra W; }\n bra W;\n W: ret;\n}\n",
    )
    .unwrap();
    let f = &m.functions[0];
    assert_eq!(f.instrs[1].target, Some(0));
    assert_eq!(f.instrs[3].target, Some(2));
    assert_eq!(f.instrs[4].target, Some(5));
}

#[test]
fn loc_follows_inlined_at() {
    let mut map = Stacks::default();
    let a = parse_loc(
        ".loc 1 14 23, function_name $x, inlined_at 1 43 7",
        &mut map,
    )
    .unwrap();
    let b = parse_loc(
        ".loc 2 153 3, function_name $y, inlined_at 1 14 23",
        &mut map,
    )
    .unwrap();
    let lines = |m: &Stacks, id: u32| -> Vec<u32> {
        m.list[id as usize].iter().map(|f| f.pos.line).collect()
    };
    assert_eq!(lines(&map, a.stack), [43, 14]);
    assert_eq!(lines(&map, b.stack), [43, 14, 153]);
    assert_eq!(b.candidates, NO_CANDIDATES);
    // The same helper called at line 44 too: a later `.loc` inside it, naming only the
    // helper's position, may be in either call.
    parse_loc(
        ".loc 1 14 23, function_name $x, inlined_at 1 44 7",
        &mut map,
    )
    .unwrap();
    // (Right after it, the `.loc` would be the next link of its chain: not ambiguous.)
    map.chain = None;
    let c = parse_loc(
        ".loc 2 153 3, function_name $y, inlined_at 1 14 23",
        &mut map,
    )
    .unwrap();
    assert_eq!(lines(&map, c.stack), [44, 14, 153]);
    let cands: Vec<Vec<u32>> = map.candidates[c.candidates as usize]
        .iter()
        .map(|&s| lines(&map, s))
        .collect();
    assert_eq!(cands, [vec![43, 14, 153], vec![44, 14, 153]]);
    assert!(parse_loc(".loc 1 0 0", &mut map).is_none());
}
