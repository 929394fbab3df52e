//! Operands: a thread's registers, special registers (`%tid`, `%cluster_ctarank`, ...), symbol
//! addresses and immediates, read and written at the width the instruction names; kept apart from
//! the instruction families so that each family sees one way to read a value.

use super::*;

impl<'a> Exec<'a> {
    pub(super) fn get(&mut self, th: &Th, ins: &Instr, op: &Operand, bits: u32) -> Val {
        match op {
            Operand::Reg(r) => match th.regs[*r as usize] {
                Val::K(v) => Val::K(v & mask(bits)),
                u => u,
            },
            Operand::Imm(v) => Val::K(*v as u64 & mask(bits)),
            Operand::Float => self.why(ins, WHY_FLOAT, || "a floating-point value".into()),
            Operand::Special(s) => self.special(th, ins, s),
            Operand::Sym(s) => self.sym_addr(ins, s),
            Operand::Not(inner) => match self.get(th, ins, inner, 1) {
                Val::K(v) => Val::K((v == 0) as u64),
                u => u,
            },
            Operand::Addr { base, offset } => {
                let b = match base {
                    Some(b) => self.get(th, ins, b, 64),
                    None => Val::K(0),
                };
                match b {
                    Val::K(v) => Val::K(v.wrapping_add(*offset as u64)),
                    u => u,
                }
            }
            _ => self.why(ins, WHY_OP, || format!("an operand of `{}`", ins.text)),
        }
    }

    fn sym_addr(&mut self, ins: &Instr, s: &str) -> Val {
        if let Some(&b) = self.shared_by_name.get(s) {
            return Val::K(b);
        }
        if let Some(&b) = self.local_by_name.get(s) {
            return Val::K(b);
        }
        if let Some(&i) = self.param_by_name.get(s) {
            return Val::K(GEN_PARAM + ((i as u64) << PARAM_SHIFT));
        }
        if let Some(&g) = self.global_by_name.get(s) {
            return Val::K(g);
        }
        self.why(ins, WHY_OP, || format!("the address of `{s}`"))
    }

    fn special(&mut self, th: &Th, ins: &Instr, s: &str) -> Val {
        let [bx, by, bz] = self.cfg.block;
        let t = th.tid;
        let lane = t % 32;
        let v = match s {
            "%tid.x" => t % bx,
            "%tid.y" => (t / bx) % by,
            "%tid.z" => t / (bx * by),
            "%ntid.x" => bx,
            "%ntid.y" => by,
            "%ntid.z" => bz,
            "%laneid" => lane,
            "%warpid" => t / 32,
            "%nwarpid" => self.nthreads.div_ceil(32),
            "%ctaid.x" | "%cluster_ctaid.x" | "%cluster_ctarank" => th.rank,
            "%ctaid.y" | "%ctaid.z" | "%cluster_ctaid.y" | "%cluster_ctaid.z" => 0,
            "%nctaid.x" | "%cluster_nctaid.x" | "%cluster_nctarank" => self.cfg.cluster,
            "%nctaid.y" | "%nctaid.z" | "%cluster_nctaid.y" | "%cluster_nctaid.z" => 1,
            "%clusterid.x" | "%clusterid.y" | "%clusterid.z" | "%is_explicit_cluster" => 0,
            "%nclusterid.x" | "%nclusterid.y" | "%nclusterid.z" => 1,
            "%lanemask_eq" => 1 << lane,
            "%lanemask_lt" => (1u32 << lane) - 1,
            "%lanemask_le" => ((1u64 << (lane + 1)) - 1) as u32,
            "%lanemask_gt" => !(((1u64 << (lane + 1)) - 1) as u32),
            "%lanemask_ge" => !((1u32 << lane) - 1),
            _ => {
                let name = s.to_string();
                return self.why(ins, WHY_SPECIAL, || {
                    format!("the special register `{name}` (not modelled)")
                });
            }
        };
        Val::K(v as u64)
    }

    pub(super) fn set(&mut self, th: &mut Th, op: &Operand, v: Val, bits: u32) {
        match op {
            Operand::Reg(r) => {
                th.regs[*r as usize] = match v {
                    Val::K(x) => Val::K(x & mask(bits)),
                    u => u,
                }
            }
            Operand::Pair(a, b) => {
                // `d|p` for setp: handled by the instructions that have it.
                self.set(th, a, v, bits);
                let _ = b;
            }
            Operand::Vector(items) => {
                for it in items {
                    self.set(th, it, v, bits);
                }
            }
            _ => {}
        }
    }

    /// Every destination of an instruction the executor does not model becomes unknown.
    pub(super) fn clobber(&mut self, th: &mut Th, ins: &Instr, kind: u8) {
        let Some(d) = ins.operands.first() else {
            return;
        };
        let text = ins.text.clone();
        let u = self.why(ins, kind, || match kind {
            WHY_FLOAT => "a floating-point value".into(),
            _ => format!("the result of `{text}` (not modelled)"),
        });
        match d {
            Operand::Pair(a, b) => {
                self.set(th, a, u, 64);
                self.set(th, b, u, 64);
            }
            d => self.set(th, d, u, 64),
        }
    }

    pub(super) fn ty(ins: &Instr) -> Option<Ty> {
        ins.parts.iter().rev().find_map(|p| ty_of(p))
    }

    pub(super) fn addr(&mut self, th: &Th, ins: &Instr, idx: usize) -> R<Val> {
        let op = ins
            .operands
            .get(idx)
            .ok_or_else(|| StepErr::Err(self.err(ins, format!("missing operand {idx}"), None)))?;
        Ok(self.get(th, ins, op, 64))
    }

    /// A shared address operand of a synchronization instruction (`.shared::cta`,
    /// `.shared::cluster` or generic).
    pub(super) fn shared_addr(&mut self, th: &Th, ins: &Instr, idx: usize, what: &str) -> R<SAddr> {
        let v = self.addr(th, ins, idx)?;
        let Val::K(v) = v else {
            return Err(self
                .unknown(ins, &format!("the address of {what}"), v)
                .into());
        };
        let generic_form = !ins.parts.iter().any(|p| p.starts_with("shared"));
        let place = if generic_form {
            generic(v)
        } else {
            shared_window(v)
        };
        match place {
            Place::Shared { rank, off } => {
                if !(SHARED_START..OFF_MASK).contains(&off) {
                    return Err(self
                        .err(
                            ins,
                            format!("{what} is at {v:#x}, which is not in shared memory"),
                            None,
                        )
                        .into());
                }
                let rank = rank.filter(|&r| r != th.rank);
                if let Some(r) = rank
                    && r >= self.cfg.cluster
                {
                    return Err(self
                        .err(
                            ins,
                            format!(
                                "{what} is in block {r} of the cluster, which has {} blocks",
                                self.cfg.cluster
                            ),
                            Some("give the cluster size with --cluster N".into()),
                        )
                        .into());
                }
                Ok(SAddr { rank, off })
            }
            _ => Err(self
                .err(
                    ins,
                    format!("{what} is at {v:#x}, which is not in shared memory"),
                    None,
                )
                .into()),
        }
    }

    pub(super) fn int(&mut self, th: &Th, ins: &Instr, idx: usize, what: &str) -> R<i64> {
        let op =
            ins.operands.get(idx).cloned().ok_or_else(|| {
                StepErr::Err(self.err(ins, format!("missing operand {idx}"), None))
            })?;
        match self.get(th, ins, &op, 64) {
            // Counts, ids, byte counts and masks: the low 32 bits, unsigned.
            Val::K(v) => Ok((v & 0xffff_ffff) as i64),
            u => Err(self.unknown(ins, what, u).into()),
        }
    }
}
