//! Loads, stores and atomics: where an address goes (shared symbols, the thread's own locals,
//! global memory) and the shared-memory events they make.

use super::*;

impl<'a> Exec<'a> {
    pub(super) fn access_len(ins: &Instr) -> u64 {
        let ty = Self::ty(ins).map_or(4, |t| t.bits.max(8) as u64 / 8);
        let ty = if ins.has("b128") { 16 } else { ty };
        let v = ins
            .parts
            .iter()
            .find_map(|p| p.strip_prefix('v').and_then(|n| n.parse::<u64>().ok()))
            .unwrap_or(1);
        ty * v
    }

    pub(super) fn space(ins: &Instr) -> &str {
        for p in &ins.parts[1..] {
            let s = p.split("::").next().unwrap_or("");
            if matches!(s, "shared" | "global" | "local" | "param" | "const") {
                return s;
            }
        }
        "generic"
    }

    /// Where a load or store goes: the address operand decoded by the instruction's space.
    pub(super) fn place(&mut self, th: &Th, ins: &Instr, idx: usize) -> R<Option<Place>> {
        let space = Self::space(ins);
        if matches!(space, "global" | "const") {
            return Ok(Some(Place::Global));
        }
        if space == "param"
            && let Some(Operand::Addr {
                base: Some(b),
                offset,
            }) = ins.operands.get(idx)
            && let Operand::Sym(name) = b.as_ref()
        {
            if let Some(&i) = self.param_by_name.get(name) {
                return Ok(Some(Place::Param {
                    index: i,
                    off: *offset as u64,
                }));
            }
            if let Some(&b) = self.local_by_name.get(name) {
                return Ok(Some(Place::Local(b + *offset as u64)));
            }
        }
        let v = self.addr(th, ins, idx)?;
        let Val::K(x) = v else {
            if space == "generic"
                && let Val::U(u) = v
                && self.whys[u as usize]
                    .fix
                    .as_deref()
                    .is_some_and(|f| f.starts_with("--arg"))
            {
                // A pointer parameter without a value: global memory.
                return Ok(Some(Place::Global));
            }
            return Err(self.unknown(ins, "the address of this access", v).into());
        };
        Ok(Some(match space {
            "shared" => shared_window(x),
            "local" => Place::Local(x),
            "param" => generic(x),
            _ => generic(x),
        }))
    }

    pub(super) fn load(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let len = Self::access_len(ins);
        let bits = Self::ty(ins).map_or(32, |t| t.bits);
        let d = ins.operands.first().cloned().unwrap_or(Operand::Sink);
        match self.place(th, ins, 1)? {
            Some(Place::Shared { rank, off }) => {
                let rank = rank.filter(|&r| r != th.rank);
                self.event(
                    th,
                    Ev::Read(Range {
                        at: SAddr { rank, off },
                        len,
                    }),
                )?;
                // Values another thread stored before a block-wide barrier (`mem.rs`).
                let items = d.elements();
                let step = (bits / 8).max(1) as u64;
                for (k, it) in items.iter().enumerate() {
                    let at = off + step * k as u64;
                    let known = if rank.is_none() && !self.mem.borrow().poisoned.contains(&ins.line)
                    {
                        let mut mem = self.mem.borrow_mut();
                        let seen = mem.seen(th.rank);
                        let v = mem.read(th.rank, th.tid, th.epoch, at, step, seen);
                        if let Some(value) = v {
                            mem.resolved.push(Resolved {
                                rank: th.rank,
                                tid: th.tid,
                                epoch: th.epoch,
                                off: at,
                                len: step,
                                seen,
                                line: ins.line,
                                value,
                            });
                        }
                        v
                    } else {
                        None
                    };
                    let v = match known {
                        Some(x) => Val::K(x),
                        None => self.why(ins, WHY_SHARED, || {
                            "a value loaded from shared memory".into()
                        }),
                    };
                    self.set(th, it, v, bits);
                }
            }
            Some(Place::Local(a)) => {
                let v = match th.local.get(&a) {
                    Some(&(v, b)) if b >= bits => match v {
                        Val::K(x) => Val::K(x & mask(bits)),
                        u => u,
                    },
                    _ => self.why(ins, WHY_OP, || {
                        "a local-memory value that was not stored before".into()
                    }),
                };
                self.load_vector(th, &d, v, bits, a, ins);
            }
            Some(Place::Param { index, off }) => {
                // `ld.param.v4.u32 {a, b, c, d}`: consecutive fields.
                let items = d.elements();
                let step = (bits / 8).max(1) as u64;
                for (k, it) in items.iter().enumerate() {
                    let at = off + step * k as u64;
                    let v = match self.cfg.params.get(&(index, at)) {
                        Some(&v) => Val::K(v as u64 & mask(bits)),
                        None => match self.cfg.param_value(index, at, bits) {
                            Some(v) => Val::K(v),
                            None => self.param_why(ins, index, at),
                        },
                    };
                    self.set(th, it, v, bits);
                }
            }
            Some(Place::Global) | None => {
                let u = self.why(ins, WHY_GLOBAL, || {
                    "a value loaded from global memory".into()
                });
                self.set(th, &d, u, bits);
            }
        }
        Ok(Flow::Next)
    }

    pub(super) fn load_vector(
        &mut self,
        th: &mut Th,
        d: &Operand,
        first: Val,
        bits: u32,
        a: u64,
        ins: &Instr,
    ) {
        if let Operand::Vector(items) = d {
            let step = (bits / 8).max(1) as u64;
            for (k, it) in items.iter().enumerate() {
                let v = if k == 0 {
                    first
                } else {
                    match th.local.get(&(a + step * k as u64)) {
                        Some(&(v, _)) => v,
                        None => self.why(ins, WHY_OP, || {
                            "a local-memory value that was not stored before".into()
                        }),
                    }
                };
                self.set(th, it, v, bits);
            }
        } else {
            self.set(th, d, first, bits);
        }
    }

    pub(super) fn store(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let len = Self::access_len(ins);
        let bits = Self::ty(ins).map_or(32, |t| t.bits);
        match self.place(th, ins, 0)? {
            Some(Place::Shared { rank, off }) => {
                let rank = rank.filter(|&r| r != th.rank);
                // The bytes stored (little-endian; unknown values are unknown bytes).
                let src = ins.operands.get(1).cloned().unwrap_or(Operand::Sink);
                let items = src.elements();
                let step = (bits / 8).max(1) as usize;
                let mut bytes = Vec::with_capacity(len as usize);
                for it in items {
                    let v = self.get(th, ins, it, bits);
                    for k in 0..step {
                        bytes.push(match v {
                            Val::K(x) if k < 8 => Some((x >> (8 * k)) as u8),
                            _ => None,
                        });
                    }
                }
                bytes.resize(len as usize, None);
                // Every byte known: the store's value (`write X value N`, emit.rs), with the
                // size of its elements (a vector store is one store per element).
                let value = bytes
                    .iter()
                    .copied()
                    .collect::<Option<Vec<u8>>>()
                    .map(|b| (step as u32, b));
                self.event(
                    th,
                    Ev::Write(
                        Range {
                            at: SAddr { rank, off },
                            len,
                        },
                        value,
                    ),
                )?;
                if rank.is_none() {
                    self.mem.get_mut().set_last(th.rank, Op::Bytes(bytes));
                }
            }
            Some(Place::Local(a)) => {
                let src = ins.operands.get(1).cloned().unwrap_or(Operand::Sink);
                match &src {
                    Operand::Vector(items) => {
                        let step = (bits / 8).max(1) as u64;
                        for (k, it) in items.iter().enumerate() {
                            let v = self.get(th, ins, it, bits);
                            th.local.insert(a + step * k as u64, (v, bits));
                        }
                    }
                    s => {
                        let v = self.get(th, ins, s, bits);
                        th.local.insert(a, (v, bits));
                    }
                }
            }
            Some(Place::Param { .. }) => {
                // A store into a call's parameter buffer: not supported (no calls).
            }
            Some(Place::Global) | None => {}
        }
        Ok(Flow::Next)
    }

    pub(super) fn atomic(&mut self, th: &mut Th, ins: &Instr) -> R<Flow> {
        let is_red = ins.base() == "red";
        let addr_idx = if is_red { 0 } else { 1 };
        let len = Self::access_len(ins);
        match self.place(th, ins, addr_idx)? {
            Some(Place::Shared { rank, off }) => {
                let rank = rank.filter(|&r| r != th.rank);
                self.event(
                    th,
                    Ev::Write(
                        Range {
                            at: SAddr { rank, off },
                            len,
                        },
                        None,
                    ),
                )?;
                // An integer addition of a known amount: the additions of one epoch commute.
                let float = Self::ty(ins).is_some_and(|t| t.float);
                if rank.is_none() && ins.has("add") && !float && ins.operands.len() > addr_idx + 1 {
                    let op = ins.operands[addr_idx + 1].clone();
                    if let Val::K(d) = self.get(th, ins, &op, (len * 8).min(64) as u32) {
                        self.mem.get_mut().set_last(th.rank, Op::Add(d));
                    }
                }
            }
            Some(Place::Local(_)) => {
                return Err(self
                    .err(
                        ins,
                        "atomics on local memory are not supported".into(),
                        None,
                    )
                    .into());
            }
            _ => {}
        }
        if !is_red {
            let kind = if Self::space(ins) == "shared" {
                WHY_SHARED
            } else {
                WHY_GLOBAL
            };
            let d = ins.operands[0].clone();
            let u = self.why(ins, kind, || "the old value returned by an atomic".into());
            self.set(th, &d, u, 64);
        }
        Ok(Flow::Next)
    }
}
