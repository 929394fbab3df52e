//! Race detection without vector clocks (docs/design.md, "Races").
//!
//! 1. Co-enabled accesses: two conflicting accesses to one buffer instance that are both
//!    enabled in one reachable state (an in-flight async copy counts as an enabled access)
//!    are unordered by happens-before: a data race.
//! 2. Flags for what co-enabledness cannot see, because the later access is enabled by an
//!    event that carries no happens-before (a TMA completion does not publish its issuer's
//!    writes, a `.cta` arrive into a peer block publishes nothing, cp.async writes are visible
//!    to their thread only, a gpu-scope release does not reach another domain): every thread
//!    keeps its accesses until every other possible accessor happens after them through
//!    morally strong release → acquire links ([`Access::seen`]), and generic accesses to
//!    buffers that the async proxy also touches until a `fence_proxy_async`. A flag's own
//!    `store_release` / `load_acquire` are accesses too, which race only when they are not
//!    morally strong ([`Access::strong`]).

use super::bytes;
use super::code::Instr;
use super::exec::peek_bar;
use super::state::*;
use super::{MFinding, PhaseModel};
use crate::rules;
use protocols::Span;
use protocols::ir::Op;

/// Who performs an enabled access: a thread, or the async operations of a thread, or one
/// in-flight TMA copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agent {
    Thread(u32),
    AsyncOf(u32),
    Tma(usize),
}

#[derive(Clone, Debug)]
struct Enabled {
    agent: Agent,
    /// The thread whose ordering counts (the issuer for async operations).
    thread: u32,
    buf: u32,
    kind: AccessKind,
    span: Span,
    /// Statement keyword (thread accesses).
    kw: &'static str,
    /// The value a `write X value N` stores.
    value: Option<i64>,
    /// A flag's `store_release` / `load_acquire`: its scope ([`LVL_NONE`]: weak).
    strong: Level,
    /// The bytes it touches (`bytes.rs`); `None`: the whole instance.
    bytes: Option<bytes::Side>,
}

/// Two accesses of threads `u` and `v` with these strengths are morally strong: both strong,
/// each with a scope that includes the other thread (PTX "Morally strong operations").
fn morally_strong(m: &PhaseModel, u: u32, su: Level, v: u32, sv: Level) -> bool {
    let d = required_level(m, u, v);
    su != LVL_NONE && sv != LVL_NONE && d <= su && d <= sv
}

impl Enabled {
    /// Described only when a finding is made (this runs in every state).
    fn what(&self, m: &PhaseModel) -> String {
        let name = &super::trace::thread_label(m, self.thread);
        let buf = &m.buf_names[self.buf as usize];
        match self.agent {
            Agent::Thread(_) => format!("{name} `{} {buf}`", self.kw),
            Agent::AsyncOf(_) if self.kind == AccessKind::Write => {
                format!("the in-flight cp.async of {name} into `{buf}`")
            }
            Agent::AsyncOf(_) => format!("the in-flight TMA store of {name} reading `{buf}`"),
            Agent::Tma(_) => format!("the in-flight TMA copy of {name} into `{buf}`"),
        }
    }
}

/// Release scope needed to order an access of `u` before one of `v`.
pub fn required_level(m: &PhaseModel, u: u32, v: u32) -> Level {
    if u == v {
        return LVL_NONE;
    }
    m.block_distance(m.block_of(u), m.block_of(v))
}

fn kind_word(k: AccessKind) -> &'static str {
    match k {
        AccessKind::Read => "read",
        AccessKind::Write => "write",
        AccessKind::AsyncRead => "async-proxy read",
        AccessKind::AsyncWrite => "async-proxy write",
        AccessKind::PartWrite => "part write",
    }
}

fn enabled_accesses(m: &PhaseModel, s: &State) -> Vec<Enabled> {
    let mut v = Vec::new();
    for t in 0..m.nthreads() {
        thread_accesses(m, s, t, &mut v);
    }
    event_accesses(m, s, &mut v);
    v
}

/// The enabled accesses of thread `t`: its statement's, then its copies in flight. They depend
/// on the thread's own state, and (a flag's acquire) on `State::released`.
fn thread_accesses(m: &PhaseModel, s: &State, t: u32, v: &mut Vec<Enabled>) {
    let th = &s.threads[t as usize];
    if th.mode == Mode::Ready
        && let Instr::Op { op, span } = &m.code_of(t).instrs[th.pc as usize]
    {
        let strong = match op {
            Op::StoreRelease { scope, .. } | Op::LoadAcquire { scope, .. } => {
                super::exec::scope_level(*scope)
            }
            _ => LVL_NONE,
        };
        let acc = match op {
            Op::Read { buf } | Op::Load { global: buf } => Some((buf, AccessKind::Read)),
            // A flag's own accesses, where they can race (`PhaseModel::flag_strong`); an
            // acquire only once a release is there to read (it spins until then).
            Op::StoreRelease { global, .. } => Some((global, AccessKind::Write)),
            Op::LoadAcquire { global, .. } => Some((global, AccessKind::Read)),
            Op::Write { buf, part, .. } => Some((
                buf,
                if *part {
                    AccessKind::PartWrite
                } else {
                    AccessKind::Write
                },
            )),
            Op::Store { global: buf } => Some((buf, AccessKind::Write)),
            Op::Mma { buf } => Some((buf, AccessKind::AsyncRead)),
            _ => None,
        };
        if let Some((r, kind)) = acc
            && let Some(x) = peek_bar(m, s, t, r)
            && (strong == LVL_NONE
                || (!m.flag_strong[x as usize]
                    && (kind == AccessKind::Write || s.released[x as usize])))
        {
            v.push(Enabled {
                agent: Agent::Thread(t),
                thread: t,
                buf: x,
                kind,
                span: *span,
                kw: op.keyword(),
                value: match op {
                    Op::Write { value, .. } => *value,
                    _ => None,
                },
                strong,
                bytes: bytes::enabled_side(m, t, th.pc, &th.locals),
            });
        }
    }
    for c in &th.cp {
        v.push(Enabled {
            agent: Agent::AsyncOf(t),
            thread: t,
            buf: c.buf,
            kind: AccessKind::Write,
            span: m.code_of(t).instrs[c.pc as usize].span(),
            kw: "cp_async",
            value: None,
            strong: LVL_NONE,
            bytes: None,
        });
    }
    for &(x, _, pc) in &th.bulk {
        v.push(Enabled {
            agent: Agent::AsyncOf(t),
            thread: t,
            buf: x,
            kind: AccessKind::AsyncRead,
            span: m.code_of(t).instrs[pc as usize].span(),
            kw: "tma_store",
            value: None,
            strong: LVL_NONE,
            bytes: None,
        });
    }
}

/// The accesses of the in-flight TMA copies.
fn event_accesses(m: &PhaseModel, s: &State, v: &mut Vec<Enabled>) {
    for (i, e) in s.events.iter().enumerate() {
        if let Event::Tma {
            buf,
            issuer,
            pc,
            key,
            ..
        } = *e
        {
            v.push(Enabled {
                agent: Agent::Tma(i),
                thread: issuer,
                buf,
                kind: AccessKind::AsyncWrite,
                span: m.code_of(issuer).instrs[pc as usize].span(),
                kw: "tma",
                value: None,
                strong: LVL_NONE,
                bytes: key.and_then(|k| bytes::kept_side_at(m, issuer, pc, k)),
            });
        }
    }
}

/// Is thread `u`'s kept generic access `e` fenced for the async access `a`? The thread's own
/// async accesses (its `mma`, its copies issued later) follow its fence in program order;
/// another thread's need a release of `u` after the fence.
fn fenced_for(e: &Access, a: &Enabled, u: u32) -> bool {
    if a.thread == u {
        e.fence >= FENCE_OWN
    } else {
        e.fence >= FENCE_RELEASED
    }
}

/// Two conflicting accesses that are writes of the same value (`write X value N` both): the
/// value, else `None` (semantics.md §6.1, "Same-value stores").
fn same_value(
    a: AccessKind,
    a_value: Option<i64>,
    b: AccessKind,
    b_value: Option<i64>,
) -> Option<i64> {
    match (a, a_value, b, b_value) {
        (AccessKind::Write, Some(x), AccessKind::Write, Some(y)) if x == y => Some(x),
        _ => None,
    }
}

/// The `same-value-store` warning at `span` (access `what`) against `other` (`other_what`).
fn same_value_store(span: Span, what: &str, other: Span, other_what: &str, value: i64) -> MFinding {
    MFinding::new(
        &rules::same_value_store::RULE,
        span,
        format!(
            "{what} and {other_what} store the same value ({value}) with nothing ordering them: a data race by PTX's definition, which PTX defines (the bytes are that value whichever store lands last); a read not ordered after both would still race"
        ),
    )
    .label(other, "the other store of the same value")
    .help("one store would do; or allow it where the code generator stores from every thread: `# phasecheck: allow(same-value-store) reason`")
}

/// The race findings of state `s`: every pair of accesses is weighed.
pub fn check(m: &PhaseModel, s: &State, found: &mut Vec<MFinding>) {
    let acc = enabled_accesses(m, s);
    let acc: Vec<&Enabled> = acc.iter().collect();
    check_accesses(m, s, &acc, None, found);
}

/// What changed since the previous state of a walk: per thread (its own state: its statement,
/// its copies in flight, its kept accesses), and per in-flight event of the current state.
pub struct Changed<'a> {
    pub threads: &'a [bool],
    pub events: &'a [bool],
}

/// The enabled accesses of a walk's state, per thread, refreshed for the threads that changed;
/// and which threads keep accesses of each buffer instance (`holders`), so that a changed
/// enabled access meets the kept accesses of those threads only, not of every thread.
#[derive(Default)]
pub struct WalkAccesses {
    per_thread: Vec<Vec<Enabled>>,
    holders: Holders,
}

/// Per buffer instance, the threads that keep an access of it, and those that keep a write of
/// it (what an enabled read can conflict with), as bits; kept up to date for the threads a
/// step changed (a thread's kept accesses are its own state).
#[derive(Default)]
struct Holders {
    any: std::collections::BTreeMap<u32, Vec<u64>>,
    writes: std::collections::BTreeMap<u32, Vec<u64>>,
    /// Per thread: the (instance, writes) it was entered under.
    of: Vec<Vec<(u32, bool)>>,
}

impl Holders {
    fn flip(
        map: &mut std::collections::BTreeMap<u32, Vec<u64>>,
        buf: u32,
        t: u32,
        n: usize,
        on: bool,
    ) {
        let bits = map.entry(buf).or_insert_with(|| vec![0; n.div_ceil(64)]);
        let bit = 1u64 << (t % 64);
        if on {
            bits[(t / 64) as usize] |= bit;
        } else {
            bits[(t / 64) as usize] &= !bit;
        }
    }

    /// Enter thread `t`'s kept accesses as they are in `s`.
    fn update(&mut self, s: &State, t: usize) {
        let n = s.threads.len();
        if self.of.len() != n {
            self.of = vec![Vec::new(); n];
        }
        let mut now: Vec<(u32, bool)> = Vec::new();
        for e in &s.threads[t].acc {
            match now.iter_mut().find(|(b, _)| *b == e.buf) {
                Some((_, w)) => *w |= e.kind.is_write(),
                None => now.push((e.buf, e.kind.is_write())),
            }
        }
        if now == self.of[t] {
            return;
        }
        for &(buf, w) in &self.of[t] {
            Self::flip(&mut self.any, buf, t as u32, n, false);
            if w {
                Self::flip(&mut self.writes, buf, t as u32, n, false);
            }
        }
        for &(buf, w) in &now {
            Self::flip(&mut self.any, buf, t as u32, n, true);
            if w {
                Self::flip(&mut self.writes, buf, t as u32, n, true);
            }
        }
        self.of[t] = now;
    }

    /// The threads whose kept accesses of `buf` may conflict with an enabled access of kind
    /// `kind` (a read meets writes only), as bits (`None`: no thread).
    fn meeting_bits(&self, buf: u32, kind: AccessKind) -> Option<&[u64]> {
        let map = if kind.is_write() {
            &self.any
        } else {
            &self.writes
        };
        map.get(&buf).map(Vec::as_slice)
    }
}

/// [`check`] of a walk's state, given what changed since its previous state (`None`: the first
/// state, or everything): only pairs with a changed side are weighed (each pair's outcome is a
/// function of its two sides, and `changed` names every side a step can alter), so a finding
/// comes at the first state of the walk that has it, as with [`check`], and not again while it
/// lasts. `State::released` (a flag's acquire) is not a thread's: the caller passes `None` when
/// it changed.
pub fn check_changed(
    m: &PhaseModel,
    s: &State,
    cache: &mut WalkAccesses,
    changed: Option<&Changed>,
    found: &mut Vec<MFinding>,
) {
    let n = m.nthreads() as usize;
    if cache.per_thread.len() != n {
        cache.per_thread = vec![Vec::new(); n];
    }
    for t in 0..n {
        if changed.is_none_or(|c| c.threads[t]) {
            cache.per_thread[t].clear();
            thread_accesses(m, s, t as u32, &mut cache.per_thread[t]);
            cache.holders.update(s, t);
        }
    }
    // By reference: a step changes few threads, and a copy of every enabled access was most of
    // a walk step's race check at 1 536 threads.
    let mut events = Vec::new();
    event_accesses(m, s, &mut events);
    let acc: Vec<&Enabled> = cache.per_thread.iter().flatten().chain(&events).collect();
    let from_threads = acc.len() - events.len();
    let Some(c) = changed else {
        return check_accesses(m, s, &acc, None, found);
    };
    let accesses: Vec<bool> = acc
        .iter()
        .enumerate()
        .map(|(i, a)| match a.agent {
            Agent::Tma(e) => i >= from_threads && c.events[e],
            Agent::Thread(t) | Agent::AsyncOf(t) => c.threads[t as usize],
        })
        .collect();
    let dirty = Dirty {
        accesses: &accesses,
        threads: c.threads,
        holders: &cache.holders,
    };
    check_accesses(m, s, &acc, Some(dirty), found);
}

/// Which sides of the pairs changed: per enabled access, and per thread (its kept accesses).
#[derive(Clone, Copy)]
struct Dirty<'a> {
    accesses: &'a [bool],
    threads: &'a [bool],
    holders: &'a Holders,
}

/// Findings of the accesses `acc` of state `s`: every pair, or (`dirty`: a walk,
/// `crate::model::walk`) only the pairs with a side that changed since the walk's previous
/// state; a pair whose sides both stayed as they were gave the same findings there.
fn check_accesses(
    m: &PhaseModel,
    s: &State,
    acc: &[&Enabled],
    dirty: Option<Dirty>,
    found: &mut Vec<MFinding>,
) {
    if acc.is_empty() {
        return;
    }
    // The search keeps the first finding of each (rule, statement) (`Search::key`): a state
    // with 128 threads at one racing statement has 8 128 racing pairs, so each pair is first
    // looked up here, and only a new key is described (the formatting was most of a step).
    let mut seen: Vec<(&'static str, Span)> = Vec::new();
    let mut fresh = |rule: &rules::Rule, span: Span| {
        let key = (rule.code, span);
        !seen.contains(&key) && {
            seen.push(key);
            true
        }
    };
    // 1. Co-enabled conflicting accesses (each pair once, the lower index first).
    let owned: Vec<_> = acc.iter().map(|a| bytes::owned_class(m, a.bytes)).collect();
    let is_dirty = |i: usize| dirty.is_none_or(|d| d.accesses[i]);
    let dirty_acc: Vec<usize> = (0..acc.len()).filter(|&i| is_dirty(i)).collect();
    let mut pair = |i: usize, j: usize| {
        let (a, b) = (acc[i], acc[j]);
        if a.buf != b.buf
            || a.agent == b.agent
            || owned[i].is_some() && owned[i] == owned[j]
            || !a.kind.conflicts(b.kind)
            || morally_strong(m, a.thread, a.strong, b.thread, b.strong)
            || !bytes::overlap(m, a.bytes, b.bytes)
        {
            return;
        }
        let (first, second) = if a.span <= b.span { (a, b) } else { (b, a) };
        if let Some(v) = same_value(a.kind, a.value, b.kind, b.value) {
            if !fresh(&rules::same_value_store::RULE, second.span) {
                return;
            }
            found.push(same_value_store(
                second.span,
                &second.what(m),
                first.span,
                &first.what(m),
                v,
            ));
            return;
        }
        if !fresh(&rules::data_race::RULE, second.span) {
            return;
        }
        found.push(
            MFinding::new(
                &rules::data_race::RULE,
                second.span,
                format!(
                    "{} and {} can happen at the same time: neither happens before the other",
                    second.what(m),
                    first.what(m)
                ),
            )
            .label(first.span, "the other access")
            .help(
                "order the two accesses through a barrier phase (arrive → wait) or a syncthreads",
            ),
        );
    };
    if dirty.is_some() && dirty_acc.len() > 16 {
        // Many changed accesses (a barrier's completion moves hundreds of threads): each
        // meets only the accesses of its own buffer instance, in the same order (`pair`
        // passes over every other one first).
        let mut order: Vec<(u32, usize)> =
            acc.iter().enumerate().map(|(i, a)| (a.buf, i)).collect();
        order.sort_unstable();
        let dirty_order: Vec<(u32, usize)> = order
            .iter()
            .copied()
            .filter(|&(_, i)| is_dirty(i))
            .collect();
        for (i, a) in acc.iter().enumerate() {
            let list = if is_dirty(i) { &order } else { &dirty_order };
            let key = (a.buf, i);
            let from = list.partition_point(|&k| k <= key);
            for &(buf, j) in &list[from..] {
                if buf != key.0 {
                    break;
                }
                pair(i, j);
            }
        }
    } else {
        for i in 0..acc.len() {
            if is_dirty(i) {
                for j in i + 1..acc.len() {
                    pair(i, j);
                }
            } else {
                let from = dirty_acc.partition_point(|&j| j <= i);
                for &j in &dirty_acc[from..] {
                    pair(i, j);
                }
            }
        }
    }
    // 2. Enabled accesses against the unreleased / unfenced past accesses of every thread,
    // each pair visited in thread order, then each thread's order.
    let mut visit = |i: usize, u: u32, e: &Access| {
        let a = acc[i];
        if !e.kind.conflicts(a.kind)
            || owned[i].is_some()
                && a.thread != u
                && owned[i] == bytes::owned_class(m, bytes::kept_side(m, u, e))
        {
            return;
        }
        // Program order covers a thread's own later accesses (the proxy rule still
        // applies to them). In the block, the access must happen after it (`seen`);
        // farther away, it must have been released at a wide enough scope.
        let need = if a.agent == Agent::Thread(u) {
            LVL_NONE
        } else {
            required_level(m, u, a.thread)
        };
        let unordered = need != LVL_NONE
            && !e.ordered_before(a.thread)
            && !morally_strong(m, u, e.strong, a.thread, a.strong);
        // Nothing to report unless unordered, or an async access after an unfenced generic
        // one; and then only where the bytes meet (asked last: it is the dearest test).
        let proxy = a.kind.is_async() && !e.kind.is_async() && !fenced_for(e, a, u);
        if !(unordered && !(e.kind.is_async() && a.kind.is_async())) && !proxy
            || !bytes::overlap(m, bytes::kept_side(m, u, e), a.bytes)
        {
            return;
        }
        let e_span = m.code_of(u).instrs[e.pc as usize].span();
        let e_what = || {
            format!(
                "the earlier {} of `{}` by {}",
                kind_word(e.kind),
                m.buf_names[e.buf as usize],
                m.threads[u as usize].name
            )
        };
        if unordered && !(e.kind.is_async() && a.kind.is_async()) {
            let e_value = m.write_value(u, e.pc);
            if let Some(v) = same_value(a.kind, a.value, e.kind, e_value) {
                // At the later statement of the two, as the co-enabled check does: the
                // finding does not depend on which write came first (partial-order
                // reduction lets writes of one value commute).
                let at = a.span.max(e_span);
                if fresh(&rules::same_value_store::RULE, at) {
                    found.push(if at == a.span {
                        same_value_store(a.span, &a.what(m), e_span, &e_what(), v)
                    } else {
                        same_value_store(e_span, &e_what(), a.span, &a.what(m), v)
                    });
                }
                return;
            }
            // At the later statement of the two, as the co-enabled check does: the other
            // order of the same two accesses (the later-enabled one kept, this one enabled)
            // is the same race, and which of the orders the partial-order reduction keeps
            // must not decide where it is reported.
            let at = a.span.max(e_span);
            if !fresh(&rules::data_race::RULE, at) {
                return;
            }
            let why = if need == LVL_CTA {
                format!(
                    "no release made after it reaches {}: neither {} nor a thread ordered after it released into a barrier phase or barrier use that {} then acquired",
                    m.threads[a.thread as usize].name,
                    m.threads[u as usize].name,
                    m.threads[a.thread as usize].name
                )
            } else if e.pubs.is_empty() {
                "that thread has not released it since (no arrive, syncthreads or release after it), so nothing orders it before this access".to_string()
            } else {
                format!(
                    "no chain of morally strong release → acquire links reaches {} from it: {} acquired no release that published it, or a release or acquire on the way has a scope too narrow to include the other thread (cta vs cluster, cluster vs gpu, gpu across memory domains)",
                    m.threads[a.thread as usize].name, m.threads[a.thread as usize].name
                )
            };
            let finding = MFinding::new(
                &rules::data_race::RULE,
                at,
                format!("{} is not ordered after {}: {why}", a.what(m), e_what()),
            );
            let finding = if at == a.span {
                finding.label(e_span, "the unordered access")
            } else {
                finding.label(a.span, "the access not ordered after it")
            };
            found.push(finding.help(
                "publish the access with a release that the accessor acquires at a wide enough scope",
            ));
        } else if a.kind.is_async()
            && !e.kind.is_async()
            && !fenced_for(e, a, u)
            && e.fenced_by.contains(a.thread)
        {
            // The fence stands on the causality path, in the async side's thread after the
            // synchronization, not in the generic side's thread before it: the placement
            // the ISA leaves open (semantics.md §6.3, "Where the fence may stand").
            if fresh(&rules::proxy_fence_after_sync::RULE, a.span) {
                found.push(
                    MFinding::new(
                        &rules::proxy_fence_after_sync::RULE,
                        a.span,
                        format!(
                            "{} through the async proxy follows {} through the generic proxy; the only fence_proxy_async between them is {}'s, after the synchronization that ordered the generic access before it: PTX's proxy-preserved causality order names a fence along the causality path only for alias proxies, so this placement rests on the hardware (it held on an H200), not on the ISA's letter",
                            a.what(m),
                            e_what(),
                            m.threads[a.thread as usize].name
                        ),
                    )
                    .label(e_span, "generic-proxy access, not fenced by its own thread")
                    .help("fence in the generic-side thread, after its access and before the synchronization (CUTLASS's `fence_view_async_shared(); synchronize();`), which the ISA's rules order"),
                );
            }
        } else if a.kind.is_async()
            && !e.kind.is_async()
            && !fenced_for(e, a, u)
            && fresh(&rules::missing_proxy_fence::RULE, a.span)
        {
            found.push(
                    MFinding::new(
                        &rules::missing_proxy_fence::RULE,
                        a.span,
                        format!(
                            "{} through the async proxy follows {} through the generic proxy with no fence_proxy_async in between",
                            a.what(m),
                            e_what()
                        ),
                    )
                    .label(e_span, "generic-proxy access")
                    .help("run fence_proxy_async after the generic access, before the synchronization that hands the buffer over"),
                );
        }
    };
    let n = m.nthreads();
    match dirty {
        None => {
            // Kept accesses by buffer (stable: in thread order, then each thread's order): a
            // block of 384 threads keeps over a thousand, and an enabled access meets only
            // those of its buffer; a read only the writes among them (`visit` passes over
            // every other one first, so the order of the rest is the same).
            let mut kept: Vec<(u32, &Access)> = (0..n)
                .flat_map(|u| s.threads[u as usize].acc.iter().map(move |e| (u, e)))
                .collect();
            kept.sort_by_key(|&(_, e)| e.buf);
            let kept_writes: Vec<(u32, &Access)> = kept
                .iter()
                .copied()
                .filter(|&(_, e)| e.kind.is_write())
                .collect();
            for (i, a) in acc.iter().enumerate() {
                let list = if a.kind.is_write() {
                    &kept
                } else {
                    &kept_writes
                };
                let from = list.partition_point(|&(_, e)| e.buf < a.buf);
                let to = list.partition_point(|&(_, e)| e.buf <= a.buf);
                for &(u, e) in &list[from..to] {
                    visit(i, u, e);
                }
            }
        }
        Some(d) => {
            // A changed access meets the kept accesses of its instance of the threads that
            // keep one its kind conflicts with (`Holders`); an unchanged one only those of
            // the changed threads among them. Thread order, then each thread's order, as a
            // scan of every thread would visit them (`visit` passes over the others first,
            // so the first finding of each key is the same).
            let mut changed = vec![0u64; (n as usize).div_ceil(64)];
            for u in (0..n).filter(|&u| d.threads[u as usize]) {
                changed[(u / 64) as usize] |= 1 << (u % 64);
            }
            for (i, a) in acc.iter().enumerate() {
                let Some(holders) = d.holders.meeting_bits(a.buf, a.kind) else {
                    continue;
                };
                for (w, &word) in holders.iter().enumerate() {
                    let mut rest = if d.accesses[i] {
                        word
                    } else {
                        word & changed[w]
                    };
                    while rest != 0 {
                        let u = w as u32 * 64 + rest.trailing_zeros();
                        rest &= rest - 1;
                        for e in s.threads[u as usize].acc.iter().filter(|e| e.buf == a.buf) {
                            visit(i, u, e);
                        }
                    }
                }
            }
        }
    }
}

/// One side of a race, as the root-cause pass (`super::cause`) needs it.
#[derive(Clone, Debug)]
pub struct RaceSide {
    /// The accessing thread (the issuer of an asynchronous copy).
    pub thread: u32,
    pub reads: bool,
    pub writes: bool,
    /// For an in-flight TMA copy: the barrier it completes its bytes on.
    pub tma_bar: Option<u32>,
    /// The statement of the access (instruction index in the thread's kernel).
    pub pc: u32,
}

/// The accesses at `span` in state `s` (enabled ones, and kept past ones) that a race finding
/// at that statement can be about.
pub fn sides_at(m: &PhaseModel, s: &State, span: Span) -> Vec<RaceSide> {
    let side = |thread: u32, kind: AccessKind, tma_bar: Option<u32>, pc: u32| RaceSide {
        thread,
        reads: matches!(kind, AccessKind::Read | AccessKind::AsyncRead),
        writes: !matches!(kind, AccessKind::Read | AccessKind::AsyncRead),
        tma_bar,
        pc,
    };
    let mut out: Vec<RaceSide> = enabled_accesses(m, s)
        .into_iter()
        .filter(|a| a.span == span)
        .map(|a| match a.agent {
            Agent::Tma(i) => match s.events[i] {
                Event::Tma { bar, pc, .. } => side(a.thread, a.kind, Some(bar), pc),
                _ => side(a.thread, a.kind, None, s.threads[a.thread as usize].pc),
            },
            _ => side(a.thread, a.kind, None, s.threads[a.thread as usize].pc),
        })
        .collect();
    for u in 0..m.nthreads() {
        for e in &s.threads[u as usize].acc {
            if m.code_of(u).instrs[e.pc as usize].span() == span {
                out.push(side(u, e.kind, None, e.pc));
            }
        }
    }
    out
}
