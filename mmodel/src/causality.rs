//! Base causality order of one candidate execution, proxy-preserved causality, moral strength
//! and the data-race definition (PTX "Morally strong operations", "Conflict and Data-races",
//! "Causality Order").
//!
//! The events of an execution are nodes; the edges are program order (each thread's events in
//! order) and the *synchronizes* edges the exploration derived. Base causality order is the
//! transitive closure of both ("which is a transitive order": whatever the scope of each
//! link). Nothing else is an edge: in particular a bulk copy's landing has no incoming edge,
//! because "the implicit mbarrier complete-tx operation ... does not transitively establish
//! ordering with respect to prior instructions from the issuing thread"; what precedes the
//! copy is judged against its issue instead ([`Access::issue`]).

use crate::fragment::{Loc, Proxy};
use protocols::ir::MemScope;

/// A bitset per node: the nodes it precedes in base causality order.
pub struct Closure {
    words: usize,
    bits: Vec<u64>,
}

impl Closure {
    /// `succ[x]`: the direct successors of `x` (program order and synchronizes edges). The
    /// graph is acyclic: every edge goes from an earlier to a later event of the execution.
    pub fn new(succ: &[Vec<u32>]) -> Closure {
        let n = succ.len();
        let words = n.div_ceil(64).max(1);
        let mut c = Closure {
            words,
            bits: vec![0; n * words],
        };
        let mut done = vec![false; n];
        for x in 0..n {
            c.visit(x, succ, &mut done);
        }
        c
    }

    fn visit(&mut self, x: usize, succ: &[Vec<u32>], done: &mut [bool]) {
        if done[x] {
            return;
        }
        done[x] = true;
        for &y in &succ[x] {
            let y = y as usize;
            self.visit(y, succ, done);
            self.bits[x * self.words + y / 64] |= 1 << (y % 64);
            for w in 0..self.words {
                let b = self.bits[y * self.words + w];
                self.bits[x * self.words + w] |= b;
            }
        }
    }

    /// `x` precedes `y` in base causality order.
    pub fn precedes(&self, x: u32, y: u32) -> bool {
        let (x, y) = (x as usize, y as usize);
        self.bits[x * self.words + y / 64] >> (y % 64) & 1 == 1
    }
}

/// Where a thread runs, for scope inclusion (PTX "Scope").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    pub kernel: u32,
    pub cta: u32,
    pub domain: u32,
}

/// Whether `scope`, specified by a thread at `own`, includes a thread at `other`. `.cta`: the
/// same CTA; `.cluster`: the same cluster (a kernel of the language is one cluster); `.gpu`:
/// the same memory synchronization domain (docs/semantics.md §6.5: kernels in different
/// domains are "system-scope distanced"); `.sys`: everyone.
pub fn includes(scope: MemScope, own: Place, other: Place) -> bool {
    match scope {
        MemScope::Cta => own.kernel == other.kernel && own.cta == other.cta,
        MemScope::Cluster => own.kernel == other.kernel,
        MemScope::Gpu => own.domain == other.domain,
        MemScope::Sys => true,
    }
}

/// A strong operation: its thread's place and its scope.
pub type Strong = (Place, MemScope);

/// PTX "Morally strong operations", for two operations of different threads (operations of
/// one thread are related in program order): both strong, each one's scope including the
/// other's thread. (Same proxy and complete overlap are the callers' business.)
pub fn morally_strong(a: Option<Strong>, b: Option<Strong>) -> bool {
    match (a, b) {
        (Some((pa, sa)), Some((pb, sb))) => includes(sa, pa, pb) && includes(sb, pb, pa),
        _ => false,
    }
}

/// A memory access of the execution.
#[derive(Clone, Debug)]
pub struct Access {
    pub node: u32,
    /// The issuing thread; `None` for a bulk copy's landing (performed by the async unit).
    pub thread: Option<u32>,
    pub loc: Loc,
    pub write: bool,
    pub proxy: Proxy,
    /// `Some` for `store_release` / `load_acquire`.
    pub strong: Option<Strong>,
    /// For a bulk copy's landing: the `tma` that issued it. PTX "Asynchronous Operations":
    /// the copy is "ordered after prior instructions in the same thread", so an access that
    /// precedes the issue precedes the copy.
    pub issue: Option<u32>,
}

/// Does `x` precede `y` in causality order? Base causality (to `y`, or to the issue of a
/// copy), plus the proxy condition of "proxy-preserved base causality order": the same
/// proxy (async with async only within one CTA, which the fragment guarantees: copies and
/// `mma` touch their own CTA's buffers), or a proxy fence on the path. An async access is
/// followed by an implicit generic-async proxy fence when it completes (cp.async.bulk and
/// wgmma: "The completion of a cp{.reduce}.async.bulk operation is followed by an implicit
/// generic-async proxy fence"), so a path that starts at one has its fence; a generic access
/// before an async one needs a `fence.proxy.async` node F with x → F → y.
pub fn ordered(c: &Closure, fences: &[u32], x: &Access, y: &Access) -> bool {
    let target = y.issue.unwrap_or(y.node);
    if !c.precedes(x.node, target) {
        return false;
    }
    if x.proxy == y.proxy || x.proxy == Proxy::Async {
        return true;
    }
    fences
        .iter()
        .any(|&f| c.precedes(x.node, f) && (f == target || c.precedes(f, target)))
}

/// PTX "Conflict and Data-races": overlapping, at least one a write, not morally strong, not
/// related in causality order. Two accesses of one thread through one proxy are in program
/// order (and morally strong); through different proxies they still need the proxy fence.
pub fn is_race(c: &Closure, fences: &[u32], x: &Access, y: &Access) -> bool {
    if x.loc != y.loc || !(x.write || y.write) || x.node == y.node {
        return false;
    }
    if x.thread.is_some() && x.thread == y.thread && x.proxy == y.proxy {
        return false;
    }
    if morally_strong(x.strong, y.strong) {
        return false;
    }
    !ordered(c, fences, x, y) && !ordered(c, fences, y, x)
}
