//! The intermediate representation that both back ends (checker, GPU lowering) consume.
//!
//! The IR is plain data: every name is resolved to an index, every object is sized, every
//! parameter has its value, and every node carries the [`Span`] of the source it came from.
//! Nothing here refers back to the AST. Thread builtins (`tid`, `lane`, ...) stay symbolic
//! ([`Builtin`]) so that a back end can evaluate them per thread; parameters stay symbolic too
//! ([`ExprKind::Param`]) so that generated code can print them by name, but their values are
//! fixed ([`Param::value`]).
//!
//! Control flow is structured (`if`, `for`, `while`, `role`, `elect` keep their bodies): the
//! GPU lowering prints loops as loops, and the checker compiles the tree into its own flat code.

use crate::span::Span;
use serde::Serialize;

/// Index into [`Program::params`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ParamId(pub u32);
/// Index into [`Program::objects`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ObjectId(pub u32);
/// Index into [`Program::locals`]. Every `let`, `for` variable and token gets its own slot,
/// so shadowing never reuses a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct LocalId(pub u32);
/// Index into [`Program::roles`]. Two `role` statements with the same name share one id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RoleId(pub u32);

/// A loaded protocol: one `.phase` file with its parameters fixed.
#[derive(Clone, Debug, Serialize)]
pub struct Program {
    /// `protocol NAME`.
    pub name: String,
    pub name_span: Span,
    /// Every `param`, in declaration order, with its final value (after `--param` overrides).
    pub params: Vec<Param>,
    /// Every declared object (barriers, pipelines, buffers, globals), in declaration order.
    pub objects: Vec<Object>,
    pub roles: Vec<Role>,
    pub locals: Vec<Local>,
    /// At least one. A file without `kernel` blocks is one implicit kernel (named after the
    /// protocol, domain `default`) whose block/cluster come from the `block`/`cluster`
    /// declarations and whose body is the file's top-level statements.
    pub kernels: Vec<Kernel>,
    /// `expect` lines (language.md §7), in source order.
    pub expects: Vec<Expect>,
    /// `# phasecheck: allow(rule, ...) reason` comments.
    pub suppressions: Vec<Suppression>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Param {
    pub name: String,
    pub value: i64,
    /// The declaration's span (the whole `param NAME = EXPR`).
    pub span: Span,
    /// True when `--param` (or an `expect ... with`) replaced the declared value.
    pub overridden: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Object {
    pub name: String,
    pub kind: ObjectKind,
    /// `Some(n)` for an array `NAME[n]`, `None` for a scalar.
    pub len: Option<u32>,
    pub span: Span,
}

impl Object {
    /// Number of instances (1 for a scalar).
    pub fn count(&self) -> u32 {
        self.len.unwrap_or(1)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum ObjectKind {
    /// A PTX `mbarrier` (semantics.md §1-§2).
    MBarrier,
    /// `cuda::barrier<thread_scope_block>`; `completion` = declared `with completion` (a
    /// software barrier, B9).
    Barrier {
        completion: bool,
    },
    Pipeline(PipelineKind),
    /// A shared-memory region, the unit of race checking.
    Buffer,
    /// A global-memory location (kernels of language.md §6).
    Global,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum PipelineKind {
    /// `pipeline NAME thread`: `cuda::pipeline<thread_scope_thread>`, one per thread (§4.1).
    Thread,
    /// `pipeline NAME stages S producers P consumers C` (§4.2). `producers == consumers ==
    /// block size` means a unified pipeline.
    Block {
        stages: u32,
        producers: u32,
        consumers: u32,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct Role {
    pub name: String,
    /// Span of the first `role NAME` that introduced the name.
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum LocalKind {
    Int,
    /// Holds a phase token from `let T = arrive B`; bound to that barrier.
    Token,
}

#[derive(Clone, Debug, Serialize)]
pub struct Local {
    pub name: String,
    pub kind: LocalKind,
    /// The span of the name where it was introduced.
    pub span: Span,
}

/// One kernel: with `kernel` blocks (language.md §6) a file has several, running at once.
#[derive(Clone, Debug, Serialize)]
pub struct Kernel {
    pub name: String,
    /// Memory synchronization domain (`default` unless given).
    pub domain: String,
    /// Threads per block, 1..=1024.
    pub block: u32,
    /// Blocks per cluster, 1..=16.
    pub cluster: u32,
    pub body: Vec<Stmt>,
    pub span: Span,
    /// True for the implicit kernel of a file without `kernel` blocks.
    pub implicit: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize)]
pub enum StmtKind {
    Let {
        local: LocalId,
        value: Expr,
    },
    Assign {
        local: LocalId,
        value: Expr,
    },
    /// `else if` chains nest in `else_body`.
    If {
        cond: Expr,
        then_body: Vec<Stmt>,
        else_body: Vec<Stmt>,
    },
    /// Half-open `start..end`, bounds evaluated once on entry.
    For {
        var: LocalId,
        start: Expr,
        end: Expr,
        body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    Role {
        role: RoleId,
        cond: Expr,
        body: Vec<Stmt>,
    },
    /// `elect { ... }`: waits for the warp's non-exited lanes, then one lane runs the body.
    Elect {
        body: Vec<Stmt>,
    },
    Exit,
    /// A synchronization or memory operation: one step of the model.
    Op(Op),
}

/// A reference to one instance of an object: `NAME`, `NAME[i]`, `NAME @ r`, `NAME[i] @ r`.
#[derive(Clone, Debug, Serialize)]
pub struct ObjRef {
    pub object: ObjectId,
    /// Array index (`None` for a scalar object).
    pub index: Option<Expr>,
    /// Cluster rank of the block whose instance is meant (`@ r`); `None` = own block.
    pub cta: Option<Expr>,
    /// `bytes OFF .. +LEN` (buffer accesses only): the bytes of the instance the access
    /// touches; `None` = all of them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<Box<ByteRange>>,
    pub span: Span,
}

/// The bytes `OFF .. OFF + LEN` of a buffer instance that one access touches (language.md,
/// "Byte ranges"). `LEN` is a constant; `OFF` is evaluated by the accessing thread.
#[derive(Clone, Debug, Serialize)]
pub struct ByteRange {
    pub off: Expr,
    pub len: i64,
}

/// Memory scope of a release/acquire or fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum MemScope {
    Cta,
    Cluster,
    Gpu,
    Sys,
}

/// The operations of language.md §3.3 and §6. Each is one atomic step unless it blocks.
#[derive(Clone, Debug, Serialize)]
pub enum Op {
    // --- mbarrier / cuda::barrier (semantics.md §2, §3) ---
    Init {
        bar: ObjRef,
        count: Expr,
    },
    Inval {
        bar: ObjRef,
    },
    /// `arrive B[, n]` or `let T = arrive B[, n]`. `scope` is the `.release` scope (extension:
    /// `arrive B scope cluster`; default `.cta`).
    Arrive {
        bar: ObjRef,
        count: Option<Expr>,
        token: Option<LocalId>,
        scope: MemScope,
    },
    ArriveDrop {
        bar: ObjRef,
        scope: MemScope,
    },
    ArriveExpectTx {
        bar: ObjRef,
        bytes: Expr,
        scope: MemScope,
    },
    ExpectTx {
        bar: ObjRef,
        bytes: Expr,
    },
    CompleteTx {
        bar: ObjRef,
        bytes: Expr,
    },
    /// `wait B parity EXPR` (only the low bit counts).
    WaitParity {
        bar: ObjRef,
        parity: Expr,
        scope: MemScope,
    },
    /// `wait B token T`.
    WaitToken {
        bar: ObjRef,
        token: LocalId,
        scope: MemScope,
    },
    ArriveAndWait {
        bar: ObjRef,
    },
    /// `let X = test_wait B parity EXPR`: X becomes 0 or 1, never blocks.
    TestWait {
        bar: ObjRef,
        parity: Expr,
        result: LocalId,
    },

    // --- CTA / warp / cluster barriers ---
    SyncThreads,
    /// `bar_sync id, count` (count in threads; `None` = whole block). `unaligned`: the
    /// `barrier.sync` form without `.aligned` (`bar_sync id, count unaligned`): the threads of
    /// one use may reach it at different statements, and the lanes of a warp need not run one
    /// statement together.
    BarSync {
        id: Expr,
        count: Option<Expr>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        unaligned: bool,
    },
    BarArrive {
        id: Expr,
        count: Option<Expr>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        unaligned: bool,
    },
    SyncWarp,
    ClusterSync,
    ClusterArrive,
    ClusterWait,
    FenceMbarrierInit,

    // --- memory (semantics.md §6) ---
    Read {
        buf: ObjRef,
    },
    /// `write X`, or with `part` `write part X`: this thread writes its own part of X
    /// (cooperative tiles): part writes of one instance by different threads do not conflict
    /// with each other, and conflict with everything else a write conflicts with.
    /// `write X value N` (never with `part`): the write stores the value `N`, a constant that
    /// stands for the bytes it stores; two unordered writes of one instance with the same value
    /// leave those bytes whichever lands last (`same-value-store`, not `data-race`).
    Write {
        buf: ObjRef,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        part: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<i64>,
    },
    /// Async-proxy read by this thread (wgmma operand), complete when the statement ends.
    Mma {
        buf: ObjRef,
    },
    FenceProxyAsync,

    // --- TMA and bulk groups (§2.11, §5.4) ---
    /// `tma X -> B, bytes [multicast mask]`.
    Tma {
        dst: ObjRef,
        bar: ObjRef,
        bytes: Expr,
        multicast: Option<Expr>,
    },
    TmaStore {
        src: ObjRef,
    },
    BulkCommit,
    BulkWaitRead {
        n: Expr,
    },

    // --- Ampere cp.async (§4.1, §2.10) ---
    CpAsync {
        dst: ObjRef,
    },
    CommitGroup,
    WaitGroup {
        n: Expr,
    },
    CpAsyncArrive {
        bar: ObjRef,
        noinc: bool,
    },

    // --- cuda::pipeline (§4) ---
    ProducerAcquire {
        pipe: ObjRef,
    },
    ProducerCommit {
        pipe: ObjRef,
    },
    ConsumerWait {
        pipe: ObjRef,
    },
    ConsumerRelease {
        pipe: ObjRef,
    },
    ConsumerWaitPrior {
        pipe: ObjRef,
        n: Expr,
    },
    MemcpyAsync {
        dst: ObjRef,
        pipe: ObjRef,
    },
    Quit {
        pipe: ObjRef,
    },

    Compute,

    // --- kernels and domains (language.md §6) ---
    Store {
        global: ObjRef,
    },
    Load {
        global: ObjRef,
    },
    StoreRelease {
        global: ObjRef,
        scope: MemScope,
    },
    LoadAcquire {
        global: ObjRef,
        scope: MemScope,
    },
    Fence {
        scope: MemScope,
    },
}

impl Op {
    /// Every object the operation names, in source order (a `tma`'s destination, then its
    /// barrier; a `memcpy_async`'s destination, then its pipeline).
    pub fn object_refs(&self) -> Vec<&ObjRef> {
        match self {
            Op::Init { bar, .. }
            | Op::Inval { bar }
            | Op::Arrive { bar, .. }
            | Op::ArriveDrop { bar, .. }
            | Op::ArriveExpectTx { bar, .. }
            | Op::ExpectTx { bar, .. }
            | Op::CompleteTx { bar, .. }
            | Op::WaitParity { bar, .. }
            | Op::WaitToken { bar, .. }
            | Op::ArriveAndWait { bar }
            | Op::TestWait { bar, .. }
            | Op::CpAsyncArrive { bar, .. } => vec![bar],
            Op::Read { buf }
            | Op::Write { buf, .. }
            | Op::Mma { buf }
            | Op::TmaStore { src: buf } => vec![buf],
            Op::CpAsync { dst } => vec![dst],
            Op::Tma { dst, bar, .. } => vec![dst, bar],
            Op::ProducerAcquire { pipe }
            | Op::ProducerCommit { pipe }
            | Op::ConsumerWait { pipe }
            | Op::ConsumerRelease { pipe }
            | Op::ConsumerWaitPrior { pipe, .. }
            | Op::Quit { pipe } => vec![pipe],
            Op::MemcpyAsync { dst, pipe } => vec![dst, pipe],
            Op::Store { global }
            | Op::Load { global }
            | Op::StoreRelease { global, .. }
            | Op::LoadAcquire { global, .. } => vec![global],
            _ => Vec::new(),
        }
    }

    /// The statement keyword as written in `.phase` (for traces and messages); `write part`
    /// for a part write.
    pub fn keyword(&self) -> &'static str {
        match self {
            Op::Init { .. } => "init",
            Op::Inval { .. } => "inval",
            Op::Arrive { .. } => "arrive",
            Op::ArriveDrop { .. } => "arrive_drop",
            Op::ArriveExpectTx { .. } => "arrive_expect_tx",
            Op::ExpectTx { .. } => "expect_tx",
            Op::CompleteTx { .. } => "complete_tx",
            Op::WaitParity { .. } | Op::WaitToken { .. } => "wait",
            Op::ArriveAndWait { .. } => "arrive_and_wait",
            Op::TestWait { .. } => "test_wait",
            Op::SyncThreads => "syncthreads",
            Op::BarSync { .. } => "bar_sync",
            Op::BarArrive { .. } => "bar_arrive",
            Op::SyncWarp => "syncwarp",
            Op::ClusterSync => "cluster_sync",
            Op::ClusterArrive => "cluster_arrive",
            Op::ClusterWait => "cluster_wait",
            Op::FenceMbarrierInit => "fence_mbarrier_init",
            Op::Read { .. } => "read",
            Op::Write { part: false, .. } => "write",
            Op::Write { part: true, .. } => "write part",
            Op::Mma { .. } => "mma",
            Op::FenceProxyAsync => "fence_proxy_async",
            Op::Tma { .. } => "tma",
            Op::TmaStore { .. } => "tma_store",
            Op::BulkCommit => "bulk_commit",
            Op::BulkWaitRead { .. } => "bulk_wait_read",
            Op::CpAsync { .. } => "cp_async",
            Op::CommitGroup => "commit_group",
            Op::WaitGroup { .. } => "wait_group",
            Op::CpAsyncArrive { .. } => "cp_async_arrive",
            Op::ProducerAcquire { .. } => "producer_acquire",
            Op::ProducerCommit { .. } => "producer_commit",
            Op::ConsumerWait { .. } => "consumer_wait",
            Op::ConsumerRelease { .. } => "consumer_release",
            Op::ConsumerWaitPrior { .. } => "consumer_wait_prior",
            Op::MemcpyAsync { .. } => "memcpy_async",
            Op::Quit { .. } => "quit",
            Op::Compute => "compute",
            Op::Store { .. } => "store",
            Op::Load { .. } => "load",
            Op::StoreRelease { .. } => "store_release",
            Op::LoadAcquire { .. } => "load_acquire",
            Op::Fence { .. } => "fence",
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize)]
pub enum ExprKind {
    Int(i64),
    /// A parameter; its value is `Program::params[id].value`.
    Param(ParamId),
    Local(LocalId),
    Builtin(Builtin),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
}

/// Thread builtins of language.md §3.2, evaluated per thread by the back ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Builtin {
    /// Thread index in its block.
    Tid,
    /// `tid % 32`.
    Lane,
    /// `tid / 32`.
    Warp,
    /// Rank of the block in its cluster.
    Cta,
    /// Block size.
    NThreads,
    /// Cluster size.
    NCta,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::BitAnd => "&",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
        }
    }
}

/// An `expect` line (language.md §7).
#[derive(Clone, Debug, Serialize)]
pub struct Expect {
    pub verdict: ExpectVerdict,
    /// The rule name, if one was given (checked against the rule registry by the test runner).
    pub rule: Option<String>,
    /// `with NAME = INT, ...`, in source order.
    pub overrides: Vec<(String, i64)>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ExpectVerdict {
    /// No error-level finding.
    Ok,
    Deadlock,
    Ub,
    Race,
    /// `expect warning RULE`: a warning-level finding of that rule.
    Warning,
}

/// `# phasecheck: allow(rule-a, rule-b) reason`: silences those rules on one statement.
#[derive(Clone, Debug, Serialize)]
pub struct Suppression {
    pub rules: Vec<String>,
    /// The text after the closing parenthesis, trimmed (empty when none was given).
    pub reason: String,
    /// The comment itself.
    pub span: Span,
    /// The 1-based line of the statement it applies to: its own line for a trailing comment,
    /// the next line holding a statement for a comment on a line of its own.
    pub target_line: u32,
}

impl Program {
    pub fn param(&self, id: ParamId) -> &Param {
        &self.params[id.0 as usize]
    }
    pub fn object(&self, id: ObjectId) -> &Object {
        &self.objects[id.0 as usize]
    }
    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }
    pub fn role(&self, id: RoleId) -> &Role {
        &self.roles[id.0 as usize]
    }
    /// The value of a parameter by name.
    pub fn param_value(&self, name: &str) -> Option<i64> {
        self.params.iter().find(|p| p.name == name).map(|p| p.value)
    }
}
