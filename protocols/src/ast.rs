//! The syntax tree: what the parser produces and the loader resolves into the IR.
//!
//! Names are still strings here; every node has its span.

use crate::ir::{BinaryOp, MemScope, UnaryOp};
use crate::span::Span;

#[derive(Clone, Debug)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct File {
    pub items: Vec<Item>,
}

#[derive(Clone, Debug)]
pub enum Item {
    Protocol(Name, Span),
    Param {
        name: Name,
        value: Expr,
        span: Span,
    },
    Block(Expr, Span),
    Cluster(Expr, Span),
    Object {
        name: Name,
        kind: ObjectDecl,
        len: Option<Expr>,
        span: Span,
    },
    Kernel(KernelDecl),
    Expect(ExpectDecl),
    Stmt(Stmt),
}

impl Item {
    pub fn is_declaration(&self) -> bool {
        matches!(
            self,
            Item::Param { .. } | Item::Block(..) | Item::Cluster(..) | Item::Object { .. }
        )
    }
}

#[derive(Clone, Debug)]
pub enum ObjectDecl {
    MBarrier,
    Barrier {
        completion: bool,
    },
    PipelineThread,
    PipelineBlock {
        stages: Expr,
        producers: Expr,
        consumers: Expr,
    },
    Buffer,
    Global,
}

#[derive(Clone, Debug)]
pub struct KernelDecl {
    pub name: Name,
    pub domain: Option<Name>,
    pub block: Option<Expr>,
    pub cluster: Option<Expr>,
    pub body: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct ExpectDecl {
    pub verdict: Name,
    pub rule: Option<Name>,
    pub overrides: Vec<(Name, i64)>,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum StmtKind {
    Let {
        name: Name,
        value: LetValue,
    },
    Assign {
        name: Name,
        value: Expr,
    },
    If {
        cond: Expr,
        then_body: Vec<Stmt>,
        else_body: Vec<Stmt>,
    },
    For {
        var: Name,
        start: Expr,
        end: Expr,
        body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    Role {
        name: Name,
        cond: Expr,
        body: Vec<Stmt>,
    },
    Elect {
        body: Vec<Stmt>,
    },
    Exit,
    Op(OpAst),
}

#[derive(Clone, Debug)]
pub enum LetValue {
    Expr(Expr),
    /// `let T = arrive B[, n] [scope S]` (a token).
    Arrive {
        bar: ObjRefAst,
        count: Option<Expr>,
        scope: Option<(MemScope, Span)>,
    },
    /// `let X = test_wait B parity E`.
    TestWait {
        bar: ObjRefAst,
        parity: Expr,
    },
}

/// `NAME`, `NAME[EXPR]`, `NAME @ EXPR`, `NAME[EXPR] @ EXPR`, each optionally followed by
/// `bytes OFF .. +LEN` (the bytes of the buffer instance an access touches).
#[derive(Clone, Debug)]
pub struct ObjRefAst {
    pub name: Name,
    pub index: Option<Expr>,
    pub cta: Option<Expr>,
    /// `bytes OFF .. +LEN`: (OFF, LEN, the span of the clause).
    pub bytes: Option<Box<(Expr, Expr, Span)>>,
    pub span: Span,
}

/// Operations on one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufOp {
    Read,
    Write,
    /// `write part X`: this thread's part of a cooperatively written element.
    WritePart,
    Mma,
    TmaStore,
    CpAsync,
}

/// Operations on one pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeOp {
    ProducerAcquire,
    ProducerCommit,
    ConsumerWait,
    ConsumerRelease,
    Quit,
}

/// Operations on one global.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobalOp {
    Store,
    Load,
    StoreRelease,
    LoadAcquire,
}

/// Operations with no operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BareOp {
    SyncThreads,
    SyncWarp,
    ClusterSync,
    ClusterArrive,
    ClusterWait,
    FenceMbarrierInit,
    FenceProxyAsync,
    BulkCommit,
    CommitGroup,
    Compute,
}

pub type Scope = Option<(MemScope, Span)>;

#[derive(Clone, Debug)]
pub enum OpAst {
    Init {
        bar: ObjRefAst,
        count: Expr,
    },
    Inval {
        bar: ObjRefAst,
    },
    Arrive {
        bar: ObjRefAst,
        count: Option<Expr>,
        scope: Scope,
    },
    ArriveDrop {
        bar: ObjRefAst,
        scope: Scope,
    },
    ArriveExpectTx {
        bar: ObjRefAst,
        bytes: Expr,
        scope: Scope,
    },
    ExpectTx {
        bar: ObjRefAst,
        bytes: Expr,
    },
    CompleteTx {
        bar: ObjRefAst,
        bytes: Expr,
    },
    WaitParity {
        bar: ObjRefAst,
        parity: Expr,
        scope: Scope,
    },
    WaitToken {
        bar: ObjRefAst,
        token: Name,
        scope: Scope,
    },
    ArriveAndWait {
        bar: ObjRefAst,
    },
    Bare(BareOp),
    BarSync {
        id: Expr,
        count: Option<Expr>,
        /// `... unaligned`: `barrier.sync` without `.aligned`.
        unaligned: bool,
    },
    BarArrive {
        id: Expr,
        count: Option<Expr>,
        unaligned: bool,
    },
    Buf(BufOp, ObjRefAst),
    /// `write X value EXPR`: a whole write that stores the value `EXPR` (a constant).
    WriteValue {
        buf: ObjRefAst,
        value: Expr,
    },
    Tma {
        dst: ObjRefAst,
        bar: ObjRefAst,
        bytes: Expr,
        multicast: Option<Expr>,
    },
    BulkWaitRead(Expr),
    WaitGroup(Expr),
    CpAsyncArrive {
        bar: ObjRefAst,
        noinc: bool,
    },
    Pipe(PipeOp, ObjRefAst),
    ConsumerWaitPrior {
        pipe: ObjRefAst,
        n: Expr,
    },
    MemcpyAsync {
        dst: ObjRefAst,
        pipe: ObjRefAst,
    },
    Global(GlobalOp, ObjRefAst, Scope),
    Fence(MemScope),
}

#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug)]
pub enum ExprKind {
    Int(i64),
    Name(String),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
}
