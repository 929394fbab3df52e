//! The size of a multicast tensor copy whose size the PTX does not say (issue 23 point 2).
//!
//! A copy's size is otherwise taken as its share of the `expect_tx` the issuing thread pairs it
//! with (`emit::resolve_tensor_bytes`). With `.multicast::cluster` that is wrong: the PTX ISA
//! (cp.async.bulk.tensor) says the copy writes "to the same CTA-relative offset as dstMem in
//! the shared memory of each destination CTA" and that "the mbarrier signal is also multicast
//! to the same CTA-relative offset as mbar in the destination CTAs", so a block's barrier also
//! counts the bytes its peers' copies land there: CUTLASS's 2-block multicast expects the whole
//! tile on each block while each block loads half of it, and the share gave each half the whole
//! tile (and a false race between the two halves).
//!
//! What is inferred: when every block of the mask issues, in the same window of that barrier,
//! the same number `n` of multicast copies of unknown size with the same mask `M` and the same
//! expected bytes `E`, each block's barrier receives `n * |M|` copies and each moves
//! `(E - the issuer's own copies of known size) / (n * |M|)` bytes. Anything else (masks that
//! differ, a block of the mask that issues nothing, a block outside the cluster, a window that
//! also has multicast copies of known size) is refused with an error that names the copy and
//! asks for its size: a guessed size could hide a race or make one up.

use crate::events::{CopyBytes, Ev, SAddr, Trace};
use std::collections::HashMap;

/// One tx window of a thread on a barrier: its expected bytes and its copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub expected: Option<i64>,
    /// Bytes of the thread's copies of known size that are not multicast.
    pub known: i64,
    /// Whether a copy of known size is multicast (its bytes land on peers too).
    pub known_multicast: bool,
    /// The multicast masks of the copies of unknown size (`None`: not multicast).
    pub open: Vec<Option<u64>>,
}

/// The threads that issue multicast copies, per barrier offset: (rank, tid, windows).
#[derive(Default)]
pub(crate) struct Plan {
    by_bar: HashMap<u64, Vec<(u32, u32, Vec<Window>)>>,
}

/// A window's events, as `emit::resolve_tensor_bytes` splits a thread's tx events on a
/// barrier: (the expect, the copies it owns).
pub(crate) type Split = (Option<usize>, Vec<usize>);

impl Plan {
    /// `windows(t, bar)`: the thread's windows on `bar` (the split of `resolve_tensor_bytes`);
    /// `params`: the tensor maps' given sizes.
    pub fn new(
        traces: &[Trace],
        windows: impl Fn(&Trace, SAddr) -> Vec<Split>,
        params: &HashMap<(u32, u64), i64>,
    ) -> Plan {
        let mut plan = Plan::default();
        for t in traces {
            let mut bars: Vec<SAddr> = t
                .events
                .iter()
                .filter_map(|e| match &e.ev {
                    Ev::Copy {
                        bar,
                        multicast: Some(_),
                        ..
                    } => Some(*bar),
                    _ => None,
                })
                .collect();
            bars.sort_unstable();
            bars.dedup();
            for bar in bars {
                let ws = windows(t, bar)
                    .into_iter()
                    .map(|(exp, copies)| window(t, exp, &copies, params))
                    .collect();
                plan.by_bar
                    .entry(bar.off)
                    .or_default()
                    .push((t.rank, t.tid, ws));
            }
        }
        plan
    }

    /// The size of each copy of unknown size in window `j` of thread (`rank`, `tid`) on
    /// barrier offset `bar`, with the reason; `Err`: why it cannot be inferred.
    pub fn share(
        &self,
        rank: u32,
        tid: u32,
        bar: u64,
        j: usize,
        cluster: u32,
    ) -> Result<(i64, String), String> {
        let issuers = self.by_bar.get(&bar).map(Vec::as_slice).unwrap_or(&[]);
        let me = issuers
            .iter()
            .find(|(r, t, _)| *r == rank && *t == tid)
            .and_then(|(_, _, ws)| ws.get(j))
            .ok_or("its thread issues no multicast copy there")?;
        let mask = match me.open.first() {
            Some(Some(m)) if me.open.iter().all(|o| *o == Some(*m)) => *m,
            _ => {
                return Err(
                    "the copies of unknown size paired with its expect_tx are not all \
                     multicast with one mask"
                        .into(),
                );
            }
        };
        if me.known_multicast {
            return Err("a multicast copy of known size lands on the same barrier".into());
        }
        if mask >> cluster != 0 {
            return Err(format!(
                "its mask {mask:#x} names blocks the cluster of {cluster} does not have"
            ));
        }
        if mask >> rank & 1 == 0 {
            return Err(format!(
                "its mask {mask:#x} leaves out the issuing block {rank} (its barrier counts \
                 only its peers' copies)"
            ));
        }
        let expected = me
            .expected
            .ok_or("no expect_tx of the same thread is paired with it")?;
        let members: Vec<u32> = (0..cluster).filter(|r| mask >> r & 1 == 1).collect();
        for &r in &members {
            let theirs: Vec<&Window> = issuers
                .iter()
                .filter(|(rr, _, _)| *rr == r)
                .filter_map(|(_, _, ws)| ws.get(j))
                .collect();
            match theirs.as_slice() {
                [w] if w.open == me.open && w.expected == me.expected && !w.known_multicast => {}
                [] => {
                    return Err(format!(
                        "block {r} of its mask issues no multicast copy on that barrier"
                    ));
                }
                [_] => {
                    return Err(format!(
                        "block {r} of its mask issues other copies or expects other bytes on \
                         that barrier"
                    ));
                }
                _ => {
                    return Err(format!(
                        "several threads of block {r} issue multicast copies on that barrier"
                    ));
                }
            }
        }
        let count = (me.open.len() * members.len()) as i64;
        let rest = expected - me.known;
        if rest <= 0 || rest % count != 0 {
            return Err(format!(
                "the {expected} expected bytes do not divide among the {count} copies that land \
                 on each block's barrier"
            ));
        }
        let blocks: Vec<String> = members.iter().map(u32::to_string).collect();
        Ok((
            rest / count,
            format!(
                "{count} multicast copies (mask {mask:#x}, from blocks {}) land on each block's \
                 barrier",
                blocks.join(", ")
            ),
        ))
    }
}

fn window(
    t: &Trace,
    exp: Option<usize>,
    copies: &[usize],
    params: &HashMap<(u32, u64), i64>,
) -> Window {
    let expected = exp.map(|e| match &t.events[e].ev {
        Ev::Arrive { tx: Some(n), .. } => *n,
        Ev::ExpectTx { bytes, .. } => *bytes,
        _ => 0,
    });
    let mut w = Window {
        expected,
        known: 0,
        known_multicast: false,
        open: Vec::new(),
    };
    for &c in copies {
        if let Ev::Copy {
            bytes, multicast, ..
        } = &t.events[c].ev
        {
            let known = match bytes {
                CopyBytes::Known(n) | CopyBytes::Share(n) => Some(*n),
                CopyBytes::TensorMap { param } => param.and_then(|p| params.get(&p).copied()),
            };
            match (known, multicast) {
                (Some(n), None) => w.known += n,
                (Some(_), Some(_)) => w.known_multicast = true,
                (None, m) => w.open.push(*m),
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::tensor_bytes::tx_windows;
    use crate::events::Event;

    const BAR: SAddr = SAddr { rank: None, off: 8 };

    /// A producer of block `rank`: expects `bytes` on the barrier, then issues one tensor copy
    /// of unknown size with multicast `mask`.
    fn producer(rank: u32, bytes: i64, mask: Option<u64>) -> Trace {
        let ev = |ev| Event { ev, instr: 0 };
        Trace {
            rank,
            tid: 0,
            events: vec![
                ev(Ev::ExpectTx { bar: BAR, bytes }),
                ev(Ev::Copy {
                    dst: SAddr {
                        rank: None,
                        off: 1024 + 4096 * rank as u64,
                    },
                    bytes: CopyBytes::TensorMap {
                        param: Some((0, 0)),
                    },
                    bar: BAR,
                    multicast: mask,
                    tensor: true,
                    dense: true,
                }),
            ],
        }
    }

    fn share(traces: &[Trace], rank: u32, cluster: u32) -> Result<(i64, String), String> {
        Plan::new(traces, tx_windows, &HashMap::new()).share(rank, 0, BAR.off, 0, cluster)
    }

    #[test]
    fn each_block_issuing_its_part_to_all_shares_the_whole_expect() {
        let t = [producer(0, 8192, Some(3)), producer(1, 8192, Some(3))];
        assert_eq!(share(&t, 0, 2).unwrap().0, 4096);
        assert_eq!(share(&t, 1, 2).unwrap().0, 4096);
        let t: Vec<Trace> = (0..4).map(|r| producer(r, 4 * 2048, Some(0xf))).collect();
        assert_eq!(share(&t, 2, 4).unwrap().0, 2048);
    }

    #[test]
    fn anything_else_is_refused_with_the_reason() {
        let e = share(&[producer(0, 8192, Some(3))], 0, 2).unwrap_err();
        assert!(
            e.contains("block 1 of its mask issues no multicast copy"),
            "{e}"
        );
        let t = [producer(0, 8192, Some(3)), producer(1, 8192, Some(2))];
        assert!(
            share(&t, 0, 2)
                .unwrap_err()
                .contains("block 1 of its mask issues other copies")
        );
        let t = [producer(0, 8192, Some(3)), producer(1, 4096, Some(3))];
        assert!(share(&t, 0, 2).unwrap_err().contains("expects other bytes"));
        let t = [producer(0, 8192, Some(5)), producer(1, 8192, Some(5))];
        assert!(
            share(&t, 0, 2)
                .unwrap_err()
                .contains("names blocks the cluster of 2")
        );
        let t = [producer(0, 8192, Some(2)), producer(1, 8192, Some(2))];
        assert!(
            share(&t, 0, 2)
                .unwrap_err()
                .contains("leaves out the issuing block 0")
        );
        let t = [producer(0, 8191, Some(3)), producer(1, 8191, Some(3))];
        assert!(share(&t, 0, 2).unwrap_err().contains("do not divide"));
    }
}
