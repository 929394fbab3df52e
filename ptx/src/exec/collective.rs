//! Warp collectives (`shfl.sync`, `vote.sync`, `elect.sync`, `match.sync`, `redux.sync`,
//! `activemask`, `bar.warp.sync`): computed once every lane of the warp has stopped at one.

use super::*;

impl<'a> Exec<'a> {
    pub(super) fn resolve_collectives(&mut self, ths: &mut [Th]) -> Result<(), Error> {
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, t) in ths.iter().enumerate() {
            if t.st == St::Coll {
                groups.entry(t.pc).or_default().push(i);
            }
        }
        let live: u32 = ths
            .iter()
            .filter(|t| t.st != St::Done)
            .map(|t| 1u32 << (t.tid % 32))
            .fold(0, |a, b| a | b);
        let mut progress = false;
        let mut problem = None;
        for (pc, members) in &groups {
            let ins = self.instr(*pc);
            let present: u32 = members
                .iter()
                .map(|&i| 1u32 << (ths[i].tid % 32))
                .fold(0, |a, b| a | b);
            let mask_idx = match ins.base() {
                "activemask" => None,
                "bar" => Some(0),
                _ => Some(ins.operands.len() - 1),
            };
            let mask = match mask_idx {
                None => present,
                Some(mi) => {
                    let op = ins.operands[mi].clone();
                    match self.get(&ths[members[0]], ins, &op, 32) {
                        Val::K(m) => m as u32,
                        u => {
                            return Err(self.unknown(
                                ins,
                                "the member mask of this warp collective",
                                u,
                            ));
                        }
                    }
                }
            };
            let expected = mask & live;
            if expected & !present != 0 {
                problem = Some((ins, expected & !present));
                continue;
            }
            self.collective(ths, members, ins, expected, live)?;
            progress = true;
        }
        if !progress {
            let (ins, missing) = problem.expect("a blocked collective");
            return Err(self.err(
                ins,
                format!(
                    "warp collective `{}`: lanes {} of its member mask do not reach it (they \
                     wait at another collective)",
                    ins.parts.join("."),
                    lanes_text(missing)
                ),
                None,
            ));
        }
        Ok(())
    }

    pub(super) fn collective(
        &mut self,
        ths: &mut [Th],
        members: &[usize],
        ins: &Instr,
        expected: u32,
        live: u32,
    ) -> Result<(), Error> {
        let base = ins.base();
        let bits = Self::ty(ins).map_or(32, |t| t.bits);
        let lane_of = |t: &Th| t.tid % 32;
        let in_group: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| expected & (1 << lane_of(&ths[i])) != 0)
            .collect();
        // Values of operand `idx` per lane.
        let vals = |this: &mut Self, ths: &[Th], idx: usize, b: u32| -> HashMap<u32, Val> {
            let op = ins.operands.get(idx).cloned().unwrap_or(Operand::Sink);
            in_group
                .iter()
                .map(|&i| (lane_of(&ths[i]), this.get(&ths[i], ins, &op, b)))
                .collect()
        };
        match base {
            "elect" => {
                // The lowest lane of the mask: what an H200 elects (docs/gpu.md, "Which lane
                // elect.sync elects"). The ISA promises only "one predicated active leader
                // thread", the same one "for the same membermask every time"; the extraction
                // notes every `elect.sync` that chose among several lanes (`lib.rs`).
                let leader = expected.trailing_zeros();
                if expected.count_ones() > 1 {
                    self.elected_lowest.insert(ins.line);
                }
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    let me = lane_of(&ths[i]);
                    match &d {
                        Operand::Pair(a, p) => {
                            self.set(&mut ths[i], a, Val::K(leader as u64), 32);
                            self.set(&mut ths[i], p, Val::K((me == leader) as u64), 1);
                        }
                        d => self.set(&mut ths[i], d, Val::K(leader as u64), 32),
                    }
                }
            }
            "activemask" => {
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    self.set(&mut ths[i], &d, Val::K(expected as u64), 32);
                }
            }
            "bar" => {
                for &i in &in_group {
                    ths[i].events.push(Event {
                        ev: Ev::SyncWarp,
                        instr: ths[i].pc as u32,
                    });
                }
            }
            "shfl" => {
                let mode = ins.parts.get(2).cloned().unwrap_or_default();
                let a = vals(self, ths, 1, 32);
                let b = vals(self, ths, 2, 32);
                let c = vals(self, ths, 3, 32);
                for &i in &in_group {
                    let lane = lane_of(&ths[i]);
                    let (Val::K(bv), Val::K(cv)) = (b[&lane], c[&lane]) else {
                        let u = if let Val::U(_) = b[&lane] {
                            b[&lane]
                        } else {
                            c[&lane]
                        };
                        return Err(self.unknown(ins, "the source lane of this shuffle", u));
                    };
                    let bval = (bv & 31) as i64;
                    let cval = (cv & 31) as i64;
                    let seg = ((cv >> 8) & 31) as i64;
                    let l = lane as i64;
                    let max_lane = (l & seg) | (cval & !seg);
                    let min_lane = l & seg;
                    let (j, pval) = match mode.as_str() {
                        "up" => (l - bval, l - bval >= max_lane),
                        "down" => (l + bval, l + bval <= max_lane),
                        "bfly" => (l ^ bval, (l ^ bval) <= max_lane),
                        _ => {
                            let j = min_lane | (bval & !seg);
                            (j, j <= max_lane)
                        }
                    };
                    let j = if pval { j as u32 } else { lane };
                    let v = match a.get(&j) {
                        Some(v) => *v,
                        None => self.why(ins, WHY_COLL, || {
                            "a shuffle from a lane that is not there".into()
                        }),
                    };
                    let d = ins.operands[0].clone();
                    match &d {
                        Operand::Pair(x, p) => {
                            self.set(&mut ths[i], x, v, 32);
                            self.set(&mut ths[i], p, Val::K(pval as u64), 1);
                        }
                        d => self.set(&mut ths[i], d, v, 32),
                    }
                }
            }
            "vote" => {
                let mode = ins.parts.get(2).cloned().unwrap_or_default();
                let a = vals(self, ths, 1, 1);
                let unknown = a.values().find(|v| matches!(v, Val::U(_))).copied();
                let ballot: u32 = a
                    .iter()
                    .filter(|(_, v)| matches!(v, Val::K(x) if *x != 0))
                    .map(|(l, _)| 1u32 << l)
                    .fold(0, |x, y| x | y);
                let v = match unknown {
                    Some(u) => u,
                    None => Val::K(match mode.as_str() {
                        "all" => (ballot == expected) as u64,
                        "any" => (ballot != 0) as u64,
                        "uni" => (ballot == expected || ballot == 0) as u64,
                        _ => ballot as u64,
                    }),
                };
                let vb = if mode == "ballot" { 32 } else { 1 };
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    self.set(&mut ths[i], &d, v, vb);
                }
            }
            "match" => {
                let a = vals(self, ths, 1, bits);
                let all = ins.has("all");
                for &i in &in_group {
                    let lane = lane_of(&ths[i]);
                    let mine = a[&lane];
                    let v = if a.values().any(|v| matches!(v, Val::U(_))) {
                        self.why(ins, WHY_COLL, || "a match over unknown values".into())
                    } else {
                        let same: u32 = a
                            .iter()
                            .filter(|(_, v)| **v == mine)
                            .map(|(l, _)| 1u32 << l)
                            .fold(0, |x, y| x | y);
                        Val::K(if all {
                            if same == expected { expected } else { 0 }
                        } else {
                            same
                        } as u64)
                    };
                    let d = ins.operands[0].clone();
                    match &d {
                        Operand::Pair(x, p) => {
                            let pv = match v {
                                Val::K(m) => Val::K((m != 0) as u64),
                                u => u,
                            };
                            self.set(&mut ths[i], x, v, 32);
                            self.set(&mut ths[i], p, pv, 1);
                        }
                        d => self.set(&mut ths[i], d, v, 32),
                    }
                }
            }
            "redux" => {
                let op = ins.parts.get(2).cloned().unwrap_or_default();
                let a = vals(self, ths, 1, 32);
                let signed = Self::ty(ins).is_some_and(|t| t.signed);
                let v = if let Some(u) = a.values().find(|v| matches!(v, Val::U(_))) {
                    *u
                } else {
                    let xs: Vec<u64> = a.values().map(|v| v.known().unwrap_or(0)).collect();
                    let key = |x: &u64| if signed { sext(*x, 32) } else { *x as i64 };
                    Val::K(match op.as_str() {
                        "add" => xs.iter().fold(0u64, |s, x| s.wrapping_add(*x)),
                        "and" => xs.iter().fold(u64::MAX, |s, x| s & x),
                        "or" => xs.iter().fold(0, |s, x| s | x),
                        "xor" => xs.iter().fold(0, |s, x| s ^ x),
                        "min" => *xs.iter().min_by_key(|x| key(x)).unwrap_or(&0),
                        _ => *xs.iter().max_by_key(|x| key(x)).unwrap_or(&0),
                    })
                };
                for &i in &in_group {
                    let d = ins.operands[0].clone();
                    self.set(&mut ths[i], &d, v, 32);
                }
            }
            _ => unreachable!("not a collective: {base}"),
        }
        // A `.sync` collective of every lane of the warp that has not exited: the lanes ran it
        // together (`activemask` does not wait for the others; `bar.warp.sync` is a `syncwarp`
        // of its own, above).
        let whole_warp = expected == live;
        if !matches!(base, "activemask" | "bar") && whole_warp {
            for &i in &in_group {
                ths[i].events.push(Event {
                    ev: Ev::Converged,
                    instr: ths[i].pc as u32,
                });
            }
        }
        for &i in &in_group {
            ths[i].pc += 1;
            ths[i].st = St::Run;
        }
        Ok(())
    }
}

fn lanes_text(mask: u32) -> String {
    let v: Vec<String> = (0..32)
        .filter(|l| mask & (1 << l) != 0)
        .map(|l| l.to_string())
        .collect();
    v.join(", ")
}
