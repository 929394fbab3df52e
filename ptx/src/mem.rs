//! Values in shared memory that a thread can know: a value another thread stored before a
//! barrier that the whole block passed (`__syncthreads`, `barrier.sync N` without a count).
//!
//! Threads run in *epochs*: every thread of a block runs until it exits or reaches its next
//! block-wide barrier, then all of them pass it (`exec.rs`). A store of a known value (or an
//! `atom.add`/`red.add` of a known amount) is recorded with its epoch; a load in a later epoch
//! reads the value when it is unambiguous: the writes it sees were made in earlier epochs (or
//! by the thread itself, before, in its own epoch), the writes of one epoch by different threads
//! agree (the same stores, or only additions, which commute), and nothing else may write the
//! bytes meanwhile: no other thread in the load's epoch, no asynchronous copy ever (its bytes
//! land at a time the executor does not know), no peer block. Everything else is unknown, as
//! before. Because a thread that runs early in an epoch cannot see the writes of threads that
//! run after it, every value read this way is checked again once the whole cluster has run; a
//! load whose value does not hold is made unknown and the cluster is run again.

use std::collections::{HashMap, HashSet};

const GRANULE: u64 = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A store: the bytes (None: not known).
    Bytes(Vec<Option<u8>>),
    /// `atom.add` / `red.add` of this amount on a little-endian integer of the entry's length.
    Add(u64),
    /// A write whose time or value the executor does not know: an asynchronous copy, a peer
    /// block's write. A load that overlaps one is unknown.
    Async,
}

#[derive(Clone, Debug)]
struct Entry {
    epoch: u32,
    tid: u32,
    off: u64,
    len: u64,
    op: Op,
}

/// A load whose value was read from recorded writes (checked again at the end).
#[derive(Clone, Debug)]
pub struct Resolved {
    pub rank: u32,
    pub tid: u32,
    pub epoch: u32,
    pub off: u64,
    pub len: u64,
    /// Entries of this block recorded before the load.
    pub seen: usize,
    pub line: u32,
    pub value: u64,
}

#[derive(Default)]
pub struct Mem {
    /// Per block (rank): the writes, in the order they were made.
    entries: HashMap<u32, Vec<Entry>>,
    index: HashMap<(u32, u64), Vec<usize>>,
    /// Asynchronous writes per block (few; checked linearly).
    asyncs: HashMap<u32, Vec<(u64, u64)>>,
    pub resolved: Vec<Resolved>,
    /// PTX lines whose shared loads stay unknown (a value read there did not hold).
    pub poisoned: HashSet<u32>,
}

impl Mem {
    /// Forget the writes and reads of a run (the poisoned lines stay).
    pub fn reset(&mut self) {
        self.entries.clear();
        self.index.clear();
        self.asyncs.clear();
        self.resolved.clear();
    }

    pub fn write(&mut self, rank: u32, epoch: u32, tid: u32, off: u64, len: u64, op: Op) {
        if op == Op::Async {
            self.asyncs.entry(rank).or_default().push((off, len));
            return;
        }
        let list = self.entries.entry(rank).or_default();
        let i = list.len();
        list.push(Entry {
            epoch,
            tid,
            off,
            len,
            op,
        });
        for g in off / GRANULE..=(off + len.max(1) - 1) / GRANULE {
            self.index.entry((rank, g)).or_default().push(i);
        }
    }

    /// Replace the operation of the last write recorded in block `rank` (a store or an atomic
    /// whose event recorded it as unknown bytes).
    pub fn set_last(&mut self, rank: u32, op: Op) {
        if let Some(e) = self.entries.get_mut(&rank).and_then(|l| l.last_mut()) {
            e.op = op;
        }
    }

    /// The number of writes recorded in block `rank` so far.
    pub fn seen(&self, rank: u32) -> usize {
        self.entries.get(&rank).map_or(0, Vec::len)
    }

    /// The value of the `len`-byte little-endian integer at `off` that thread `tid` of block
    /// `rank` loads in `epoch`, having seen the block's first `seen` writes: None when it is
    /// not known or not unambiguous. A write of another thread in the same epoch makes it
    /// unknown whenever it was recorded (at the end, [`Mem::recheck`], all of them are).
    pub fn read(
        &self,
        rank: u32,
        tid: u32,
        epoch: u32,
        off: u64,
        len: u64,
        seen: usize,
    ) -> Option<u64> {
        if len == 0 || len > 8 {
            return None;
        }
        let end = off + len;
        if self
            .asyncs
            .get(&rank)
            .is_some_and(|v| v.iter().any(|&(o, l)| o < end && off < o + l))
        {
            return None;
        }
        let list = self.entries.get(&rank)?;
        let mut idx: Vec<usize> = (off / GRANULE..=(end - 1) / GRANULE)
            .filter_map(|g| self.index.get(&(rank, g)))
            .flatten()
            .copied()
            .filter(|&i| {
                let e = &list[i];
                e.off < end && off < e.off + e.len
            })
            .collect();
        idx.sort_unstable();
        idx.dedup();
        let mut visible = Vec::new();
        for &i in &idx {
            let e = &list[i];
            if e.epoch > epoch {
                continue;
            }
            if e.epoch == epoch {
                if e.tid != tid {
                    // Not ordered with the load.
                    return None;
                }
                if i >= seen {
                    continue;
                }
            }
            visible.push(i);
        }
        // The writes of one earlier epoch by different threads must agree.
        let mut by_epoch: HashMap<u32, Vec<usize>> = HashMap::new();
        for &i in &visible {
            by_epoch.entry(list[i].epoch).or_default().push(i);
        }
        for (&ep, is) in &by_epoch {
            if ep == epoch {
                continue;
            }
            let tids: HashSet<u32> = is.iter().map(|&i| list[i].tid).collect();
            if tids.len() < 2 {
                continue;
            }
            let all_adds = is.iter().all(|&i| matches!(list[i].op, Op::Add(_)));
            let first = &list[is[0]];
            let all_same = is.iter().all(|&i| {
                let e = &list[i];
                e.off == first.off && e.len == first.len && e.op == first.op
            });
            if !(all_adds || all_same) {
                return None;
            }
        }
        // Fold the visible writes, in order, over the bytes they touch.
        let lo = visible
            .iter()
            .map(|&i| list[i].off)
            .min()
            .unwrap_or(off)
            .min(off);
        let hi = visible
            .iter()
            .map(|&i| list[i].off + list[i].len)
            .max()
            .unwrap_or(end)
            .max(end);
        let mut bytes: Vec<Option<u8>> = vec![None; (hi - lo) as usize];
        for &i in &visible {
            let e = &list[i];
            let at = (e.off - lo) as usize;
            match &e.op {
                Op::Bytes(b) => {
                    for (k, v) in b.iter().enumerate() {
                        bytes[at + k] = *v;
                    }
                }
                Op::Add(d) => {
                    let n = e.len as usize;
                    let word: Option<Vec<u8>> = bytes[at..at + n].iter().copied().collect();
                    let new = word.map(|w| {
                        let mut x = 0u64;
                        for (k, b) in w.iter().enumerate() {
                            x |= (*b as u64) << (8 * k);
                        }
                        x.wrapping_add(*d)
                    });
                    for k in 0..n {
                        bytes[at + k] = new.map(|x| (x >> (8 * k)) as u8);
                    }
                }
                Op::Async => unreachable!("kept apart"),
            }
        }
        let at = (off - lo) as usize;
        let mut x = 0u64;
        for k in 0..len as usize {
            x |= (bytes[at + k]? as u64) << (8 * k);
        }
        Some(x)
    }

    /// Check every value read against all the writes: the lines whose value did not hold are
    /// poisoned. Returns whether any was.
    pub fn recheck(&mut self) -> bool {
        let mut bad = Vec::new();
        for r in &self.resolved {
            if self.poisoned.contains(&r.line) {
                continue;
            }
            // Writes of other threads of the same epoch recorded after the load now show.
            let now = self.read(r.rank, r.tid, r.epoch, r.off, r.len, r.seen);
            if now != Some(r.value) {
                bad.push(r.line);
            }
        }
        let any = !bad.is_empty();
        self.poisoned.extend(bad);
        any
    }
}
