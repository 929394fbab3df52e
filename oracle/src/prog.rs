//! What the oracle takes from a loaded [`Program`]: the one block's threads and a flat index
//! for every barrier and buffer instance, after checking that the program uses only what the
//! oracle implements ([`prepare`] says which feature it does not, so that tests can count
//! skips).

use protocols::ir::{Kernel, ObjRef, ObjectKind, Op, Program, Stmt, StmtKind};

/// The most threads a protocol may have: loom runs at most 5 threads, one of them the
/// asynchronous agent.
pub const MAX_THREADS: u32 = 4;

/// A program the oracle can run.
pub struct Prog {
    pub program: Program,
    /// Threads of the single block.
    pub threads: u32,
    /// Per object: the index of its first instance among the barriers (or buffers).
    pub base: Vec<u32>,
    pub nbars: u32,
    pub nbufs: u32,
    /// It issues TMA copies or cp.async arrive-ons: an asynchronous agent thread is needed.
    pub needs_agent: bool,
}

impl Prog {
    pub fn kernel(&self) -> &Kernel {
        &self.program.kernels[0]
    }
}

/// Check the program and index its objects, or say which feature the oracle lacks.
pub fn prepare(program: &Program) -> Result<Prog, String> {
    if program.kernels.len() != 1 {
        return Err("several kernels".into());
    }
    let k = &program.kernels[0];
    if k.cluster != 1 {
        return Err("clusters".into());
    }
    if k.block > MAX_THREADS {
        return Err(format!("more than {MAX_THREADS} threads"));
    }
    let (mut nbars, mut nbufs) = (0, 0);
    let mut base = Vec::new();
    for o in &program.objects {
        match o.kind {
            ObjectKind::MBarrier | ObjectKind::Barrier { .. } => {
                base.push(nbars);
                nbars += o.count();
            }
            ObjectKind::Buffer => {
                base.push(nbufs);
                nbufs += o.count();
            }
            ObjectKind::Pipeline(_) => return Err("cuda::pipeline".into()),
            ObjectKind::Global => return Err("globals".into()),
        }
    }
    let mut needs_agent = false;
    check_body(&k.body, &mut needs_agent)?;
    Ok(Prog {
        program: program.clone(),
        threads: k.block,
        base,
        nbars,
        nbufs,
        needs_agent,
    })
}

fn check_body(body: &[Stmt], agent: &mut bool) -> Result<(), String> {
    for s in body {
        match &s.kind {
            StmtKind::Let { .. } | StmtKind::Assign { .. } => {}
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                check_body(then_body, agent)?;
                check_body(else_body, agent)?;
            }
            StmtKind::For { body, .. } => check_body(body, agent)?,
            StmtKind::While { .. } => return Err("while loops".into()),
            StmtKind::Role { body, .. } => check_body(body, agent)?,
            StmtKind::Elect { body } => check_body(body, agent)?,
            StmtKind::Exit => {}
            StmtKind::Op(op) => check_op(op, agent)?,
        }
    }
    Ok(())
}

fn check_op(op: &Op, agent: &mut bool) -> Result<(), String> {
    for r in op.object_refs() {
        check_ref(r)?;
    }
    match op {
        Op::Init { .. }
        | Op::Arrive { .. }
        | Op::ArriveDrop { .. }
        | Op::ArriveExpectTx { .. }
        | Op::ExpectTx { .. }
        | Op::CompleteTx { .. }
        | Op::WaitParity { .. }
        | Op::WaitToken { .. }
        | Op::ArriveAndWait { .. }
        | Op::TestWait { .. }
        | Op::SyncThreads
        | Op::BarSync { .. }
        | Op::BarArrive { .. }
        | Op::SyncWarp
        | Op::FenceMbarrierInit
        | Op::Read { .. }
        | Op::Write { .. }
        | Op::Mma { .. }
        | Op::FenceProxyAsync
        | Op::TmaStore { .. }
        | Op::BulkCommit
        | Op::BulkWaitRead { .. }
        | Op::CpAsync { .. }
        | Op::CommitGroup
        | Op::WaitGroup { .. }
        | Op::Compute => Ok(()),
        Op::Tma { multicast, .. } => {
            if multicast.is_some() {
                return Err("multicast".into());
            }
            *agent = true;
            Ok(())
        }
        Op::CpAsyncArrive { .. } => {
            *agent = true;
            Ok(())
        }
        other => Err(format!("`{}`", other.keyword())),
    }
}

fn check_ref(r: &ObjRef) -> Result<(), String> {
    if r.cta.is_some() {
        return Err("remote (`@ r`) objects".into());
    }
    Ok(())
}
