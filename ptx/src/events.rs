//! What the executor keeps of a thread's run: its synchronization and shared-memory events.

/// A shared-memory address: block `rank` (`None`: the thread's own block), byte `off` of the
/// shared window (see `value.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SAddr {
    pub rank: Option<u32>,
    pub off: u64,
}

/// A byte range of shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Range {
    pub at: SAddr,
    pub len: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyBytes {
    /// Given by the instruction (`cp.async.bulk ... size`).
    Known(i64),
    /// A tensor copy through the tensor map at (parameter, byte offset) `param`: the bytes come
    /// from `--arg` (or the launch's tensor map) or from the `expect_tx` it is paired with.
    TensorMap { param: Option<(u32, u64)> },
    /// A tensor copy whose byte count is its share of the `expect_tx` it is paired with (no
    /// `--arg`, no captured tensor map): right for the barrier's transaction count, but which
    /// bytes of shared memory it writes is a guess, so the copy keeps its whole buffer.
    Share(i64),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ev {
    Init {
        bar: SAddr,
        count: i64,
    },
    Inval {
        bar: SAddr,
    },
    /// `mbarrier.arrive` (with `tx`: `.expect_tx`), `arrive_drop` (`drop`).
    Arrive {
        bar: SAddr,
        count: i64,
        drop: bool,
        tx: Option<i64>,
        cluster_scope: bool,
    },
    ExpectTx {
        bar: SAddr,
        bytes: i64,
    },
    CompleteTx {
        bar: SAddr,
        bytes: i64,
    },
    WaitParity {
        bar: SAddr,
        parity: u64,
        cluster_scope: bool,
    },
    /// A poll of several barriers (`exec/poll.rs`): the first trip's tests, in order, as
    /// `(barrier, parity)`, and then, when one of them failed, a wait on each barrier for its
    /// phase (the later trips, which end only when all are complete).
    Poll {
        tests: Vec<(SAddr, u64)>,
    },
    /// A wait on the token of the arrive that is event `arrive` of the same thread.
    WaitToken {
        bar: SAddr,
        arrive: usize,
        cluster_scope: bool,
    },
    /// `bar.sync`/`barrier.sync` (`aligned`: `bar.sync` and `.aligned`, as `__syncthreads`).
    BarSync {
        id: i64,
        count: Option<i64>,
        aligned: bool,
    },
    /// `bar.arrive`/`barrier.arrive` (`aligned` as for `BarSync`).
    BarArrive {
        id: i64,
        count: Option<i64>,
        aligned: bool,
    },
    SyncWarp,
    /// A warp-converged instruction that this lane ran (a `.sync.aligned` one: `wgmma.*`,
    /// `ldmatrix`, `mma.sync`, ...; or a `.sync` warp collective whose member mask is every
    /// lane of the warp that has not exited). `converged.rs` makes it a `syncwarp` where every
    /// lane of the warp ran the same ones, and drops it otherwise; it never reaches `emit`.
    Converged,
    ClusterArrive,
    ClusterWait,
    FenceProxyAsync,
    FenceMbarrierInit,
    /// `cp.async.bulk` / `cp.async.bulk.tensor` into shared memory, completing on `bar`.
    Copy {
        dst: SAddr,
        bytes: CopyBytes,
        bar: SAddr,
        multicast: Option<u64>,
        tensor: bool,
        /// The copy writes `bytes` contiguous bytes at `dst`: a 1-D bulk copy, or a tensor copy
        /// in `.tile` mode (the box, dense). An `.im2col` or `.tile::gather4` copy writes what
        /// its mode says, which its byte count does not place, so it keeps its whole buffer.
        dense: bool,
    },
    /// A bulk copy from shared to global memory (`len` None: a tensor store whose box size
    /// comes from `--arg`).
    TmaStore {
        src: SAddr,
        len: Option<u64>,
        param: Option<(u32, u64)>,
    },
    BulkCommit,
    BulkWaitRead {
        n: i64,
    },
    CpAsync {
        dst: Range,
    },
    CommitGroup,
    WaitGroup {
        n: i64,
    },
    CpAsyncArrive {
        bar: SAddr,
        noinc: bool,
    },
    Read(Range),
    /// A store, with the bytes it stores when every one of them is known (a plain `st` of
    /// constants or of registers the executor computed; with the bytes of one element: a
    /// vector store is a store per element), else `None`.
    Write(Range, Option<(u32, Vec<u8>)>),
    /// An async-proxy read (a `wgmma` operand).
    Mma(Range),
}

impl Ev {
    /// The barriers an event acts on.
    pub fn barriers(&self) -> Vec<SAddr> {
        if let Ev::Poll { tests } = self {
            return tests.iter().map(|(b, _)| *b).collect();
        }
        let one = match self {
            Ev::Init { bar, .. }
            | Ev::Inval { bar }
            | Ev::Arrive { bar, .. }
            | Ev::ExpectTx { bar, .. }
            | Ev::CompleteTx { bar, .. }
            | Ev::WaitParity { bar, .. }
            | Ev::WaitToken { bar, .. }
            | Ev::Copy { bar, .. }
            | Ev::CpAsyncArrive { bar, .. } => Some(*bar),
            _ => None,
        };
        one.into_iter().collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    pub ev: Ev,
    /// Index of the instruction in the kernel function.
    pub instr: u32,
}

/// One thread's run.
#[derive(Clone, Debug)]
pub struct Trace {
    pub rank: u32,
    pub tid: u32,
    pub events: Vec<Event>,
}
