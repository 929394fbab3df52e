//! Partial-order reduction: which enabled thread step may be taken alone (docs/design.md,
//! "Partial-order reduction").

use super::*;

/// Partial-order reduction: the first enabled thread step that is independent of everything
/// any other actor can still do (docs/design.md, "Partial-order reduction"):
/// - a read (or `mma`) of a buffer no other live thread can still write and no in-flight copy
///   writes;
/// - a write of a buffer no other live thread can still read or write and no in-flight
///   operation touches;
/// - a passing wait on a barrier no other live thread can still signal, init or invalidate
///   and no in-flight event targets;
/// - a visible `exit`/end when no other live thread can still address a peer block and no
///   in-flight copy crosses blocks.
pub fn ample(m: &PhaseModel, s: &State, actions: &[u32]) -> Option<u32> {
    if !m.por {
        return None;
    }
    let n = m.nthreads();
    actions
        .iter()
        .copied()
        .take_while(|&a| a < n)
        .find(|&t| safe(m, s, t))
}

/// Can a live thread other than `t` still do `f` (given its reach at its pc and whether
/// `block` is its own block)?
fn others_reach(
    m: &PhaseModel,
    s: &State,
    t: u32,
    block: u32,
    f: impl Fn(&super::super::code::Reach, usize, bool) -> bool,
) -> bool {
    (0..m.nthreads()).any(|u| {
        if u == t {
            return false;
        }
        let th = &s.threads[u as usize];
        th.mode.live()
            && f(
                &m.kernels[m.threads[u as usize].kernel as usize].reach,
                th.pc as usize,
                block == u32::MAX || m.block_of(u) == block,
            )
    })
}

fn safe(m: &PhaseModel, s: &State, t: u32) -> bool {
    use super::super::code::has;
    let th = &s.threads[t as usize];
    match &m.code_of(t).instrs[th.pc as usize] {
        Instr::Exit { .. } | Instr::End { .. } => {
            let crossing = s.events.iter().any(|e| match *e {
                Event::Tma { bar, issuer, .. } => m.bar_block[bar as usize] != m.block_of(issuer),
                Event::CpArrive { .. } => false,
            });
            !crossing && !others_reach(m, s, t, u32::MAX, |r, pc, _| r.remote[pc])
        }
        Instr::Op { op, .. } => match op {
            Op::Read { buf } | Op::Load { global: buf } | Op::Mma { buf } => {
                let obj = buf.object.0;
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                let in_flight = s
                    .events
                    .iter()
                    .any(|e| matches!(*e, Event::Tma { buf, .. } if buf == x))
                    || s.threads.iter().any(|th| th.cp.iter().any(|c| c.buf == x));
                let block = buf_block(m, x);
                !in_flight
                    && !others_reach(m, s, t, block, |r, pc, own| has(&r.writes[pc], obj, own))
            }
            Op::Write { buf } | Op::Store { global: buf } => {
                let obj = buf.object.0;
                let Some(x) = peek_bar(m, s, t, buf) else {
                    return false;
                };
                let in_flight = s
                    .events
                    .iter()
                    .any(|e| matches!(*e, Event::Tma { buf, .. } if buf == x))
                    || s.threads.iter().any(|th| {
                        th.cp.iter().any(|c| c.buf == x) || th.bulk.iter().any(|b| b.0 == x)
                    });
                let block = buf_block(m, x);
                !in_flight
                    && !others_reach(m, s, t, block, |r, pc, own| {
                        has(&r.writes[pc], obj, own) || has(&r.reads[pc], obj, own)
                    })
            }
            Op::WaitParity { bar, .. } | Op::WaitToken { bar, .. } | Op::TestWait { bar, .. } => {
                let obj = bar.object.0;
                let Some(b) = peek_bar(m, s, t, bar) else {
                    return false;
                };
                let targeted = s.events.iter().any(|e| match *e {
                    Event::Tma { bar, .. } | Event::CpArrive { bar, .. } => bar == b,
                });
                let block = m.bar_block[b as usize];
                !targeted
                    && !others_reach(m, s, t, block, |r, pc, own| has(&r.signals[pc], obj, own))
            }
            _ => false,
        },
        _ => false,
    }
}

/// Block of a buffer instance (`u32::MAX` for globals, which every thread may touch).
fn buf_block(m: &PhaseModel, x: u32) -> u32 {
    m.buf_block[x as usize]
}
