//! The events a thread keeps (its `Trace`), and what each writes into shared memory, so that
//! `mem.rs` can tell a later load whether the bytes it reads are known.

use super::*;

impl<'a> Exec<'a> {
    pub(super) fn event(&self, th: &mut Th, ev: Ev) -> R<()> {
        if th.probe.is_some() {
            return Err(StepErr::Probe(ProbeFail(format!(
                "`{}` at PTX line {}",
                self.instr(th.pc).text,
                self.instr(th.pc).line
            ))));
        }
        self.record_write(th, &ev);
        th.events.push(Event {
            ev,
            instr: th.pc as u32,
        });
        Ok(())
    }

    /// Record what an event writes into shared memory (`mem.rs`): bytes not known yet (a
    /// store or an atomic fills them in), or an asynchronous write.
    fn record_write(&self, th: &Th, ev: &Ev) {
        // (where, bytes, asynchronous)
        let mut writes: Vec<(SAddr, u64, bool)> = Vec::new();
        match ev {
            Ev::Write(r, _) => writes.push((r.at, r.len, false)),
            Ev::CpAsync { dst } => writes.push((dst.at, dst.len, true)),
            Ev::Copy {
                dst,
                bytes,
                multicast,
                bar,
                ..
            } => {
                // A tensor copy's size is in its tensor map: `--arg MAP=BYTES`, else a window
                // that covers any box.
                let len = match bytes {
                    CopyBytes::Known(n) | CopyBytes::Share(n) => (*n).max(1) as u64,
                    CopyBytes::TensorMap { param } => {
                        // Else at most the bytes the thread last expected on the copy's barrier.
                        let expected = th.events.iter().rev().find_map(|e| match &e.ev {
                            Ev::Arrive {
                                bar: b,
                                tx: Some(n),
                                ..
                            }
                            | Ev::ExpectTx { bar: b, bytes: n }
                                if b == bar =>
                            {
                                Some(*n)
                            }
                            _ => None,
                        });
                        param
                            .and_then(|p| self.cfg.map_bytes.get(&p).copied())
                            .or(expected)
                            .map_or(1 << 20, |n| n.max(1) as u64)
                    }
                };
                writes.push((*dst, len, true));
                if let Some(mask) = multicast {
                    for r in (0..self.cfg.cluster).filter(|r| mask >> r & 1 == 1) {
                        let at = SAddr {
                            rank: Some(r),
                            off: dst.off,
                        };
                        writes.push((at, len, true));
                    }
                }
            }
            _ => return,
        }
        let mut mem = self.mem.borrow_mut();
        for (at, len, asynchronous) in writes {
            match at.rank {
                Some(r) if r != th.rank => mem.write(r, 0, th.tid, at.off, len, Op::Async),
                _ if asynchronous => mem.write(th.rank, th.epoch, th.tid, at.off, len, Op::Async),
                _ => mem.write(
                    th.rank,
                    th.epoch,
                    th.tid,
                    at.off,
                    len,
                    Op::Bytes(vec![None; len as usize]),
                ),
            }
        }
    }
}
