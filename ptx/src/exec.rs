//! The concrete per-thread executor.
//!
//! Every thread of the cluster runs the kernel's PTX on its own with concrete integer and
//! predicate values: its special registers (`%tid`, `%ctaid`, `%cluster_ctarank`, ...), the
//! kernel parameters given with `--arg`, and the addresses of the shared symbols. Everything
//! else (global memory, clocks, floating point) is unknown; a branch, a guard or an address that
//! depends on an unknown value is an error naming where the value came from. The thread keeps
//! only its synchronization and shared-memory events ([`Trace`]).
//!
//! Threads never wait for each other here: a barrier wait is taken as passed. That is sound
//! for the extraction because a wait that passes changes nothing a thread can compute (its
//! result is only "passed"). A `try_wait`/`test_wait` is accepted as a blocking wait only when
//! every way the thread can go on from its *false* result leads back to a wait on the same
//! barrier and phase without doing anything else (the wait loop), or when it starts a poll of
//! several barriers that ends only once all of them are seen complete (`poll.rs`, with both
//! outcomes of the poll's first tests in the protocol); any other use is an error.
//!
//! Warp collectives (`shfl.sync`, `vote.sync`, `elect.sync`, `match.sync`, `redux.sync`,
//! `activemask`, `bar.warp.sync`) need the other lanes' values: the lanes of a warp run until
//! each has finished or stopped at a collective, then the collectives whose lanes are all there
//! are computed together.

use crate::Error;
use crate::events::{CopyBytes, Ev, Event, Range, SAddr, Trace};
use crate::mem::{Mem, Op, Resolved};
use crate::parse::{Function, Instr, Module, Operand, Space};
use crate::value::*;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

mod alu;
mod collective;
mod join;
mod memory;
mod poll;
mod sync;

pub struct Config {
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
    pub cluster: u32,
    /// Kernel parameter values: (parameter index, byte offset) -> value.
    pub params: HashMap<(u32, u64), i64>,
    /// A captured launch's bytes of every parameter (`--launch`), read where `params` has no
    /// value.
    pub param_bytes: HashMap<u32, Vec<u8>>,
    /// Bytes one copy through the tensor map at (parameter index, byte offset) moves: the
    /// `--arg`s (`params`) over the captured launch's decoded maps.
    pub map_bytes: HashMap<(u32, u64), i64>,
    /// `--assume LINE=VALUE`: the value every unknown produced at that PTX line takes.
    pub assume: HashMap<u32, i64>,
    /// Instructions one thread may run before the run counts as endless.
    pub max_steps: u64,
}

impl Config {
    /// The `bits`-wide little-endian value at byte `at` of parameter `index` in the captured
    /// launch's bytes, if they cover it.
    fn param_value(&self, index: u32, at: u64, bits: u32) -> Option<u64> {
        let bytes = self.param_bytes.get(&index)?;
        let n = (bits / 8).clamp(1, 8) as usize;
        let at = usize::try_from(at).ok()?;
        let b = bytes.get(at..at.checked_add(n)?)?;
        Some(b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64))
    }
}

/// Where a shared or local symbol lies in its window.
#[derive(Clone, Debug)]
pub struct Placed {
    pub name: String,
    pub base: u64,
    /// Bytes (dynamic shared memory: up to the end of the window).
    pub size: u64,
    pub line: u32,
}

pub struct Exec<'a> {
    f: &'a Function,
    cfg: &'a Config,
    pub whys: Vec<Why>,
    why_at: HashMap<(u32, u8), u32>,
    param_why_at: HashMap<(u32, u8, u64), u32>,
    pub shared: Vec<Placed>,
    shared_by_name: HashMap<String, u64>,
    local_by_name: HashMap<String, u64>,
    param_by_name: HashMap<String, u32>,
    global_by_name: HashMap<String, u64>,
    nthreads: u32,
    /// Shared-memory values ordered by block-wide barriers (`mem.rs`).
    mem: RefCell<Mem>,
    /// PTX lines of the `elect.sync`s that chose among several lanes: the extraction takes
    /// the lowest (`collective.rs`), and says so in a note (`lib.rs`).
    pub elected_lowest: std::collections::BTreeSet<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Run,
    Coll,
    /// Passed a block-wide barrier: waits until every thread of the block has (`mem.rs`).
    Bar,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum WaitOn {
    Parity(u64),
    Token(u64),
}

#[derive(Clone, Debug)]
enum Probe {
    /// Is this a wait loop: does every path from the wait's false result come back to a wait
    /// on `bar` and `on`?
    Loop { bar: SAddr, on: WaitOn },
    /// Following the paths of a poll of several barriers (`poll.rs`): every `try_wait` and
    /// `test_wait` stops the step with [`Flow::Test`], and the poll decides its result.
    Poll,
}

/// A thread's state at a wait of a wait loop: pc, registers, local memory, carry. A path of
/// the loop ends when it is at a wait in a state that some path was in before (the loop goes
/// round, or another path goes on from there); a wait it meets in a new state (a counter of
/// tries) is followed further, so that a loop that gives up after a number of tries is seen to
/// give up. Local memory is sorted by address.
type LoopState = (usize, Vec<Val>, Vec<(u64, (Val, u32))>, u64);

/// The state of `t` at `pc` (see [`LoopState`]).
fn loop_state(pc: usize, t: &Th) -> LoopState {
    let mut local: Vec<(u64, (Val, u32))> = t.local.iter().map(|(k, v)| (*k, *v)).collect();
    local.sort_unstable_by_key(|e| e.0);
    (pc, t.regs.clone(), local, t.carry)
}

#[derive(Clone)]
struct Th {
    rank: u32,
    tid: u32,
    regs: Vec<Val>,
    pc: usize,
    carry: u64,
    local: HashMap<u64, (Val, u32)>,
    events: Vec<Event>,
    st: St,
    steps: u64,
    probe: Option<Probe>,
    /// Block-wide barriers passed.
    epoch: u32,
}

enum Flow {
    Next,
    Jump(usize),
    Exit,
    /// Stopped at a warp collective (pc unchanged).
    Coll,
    /// Probe mode: reached a wait on the probed barrier and phase at this pc.
    ProbeHit(usize),
    /// Passed a block-wide barrier (`__syncthreads`, `barrier.sync N` without a count).
    Block,
    /// Probe mode of a poll: a `try_wait`/`test_wait` (pc unchanged, result not set).
    Test {
        bar: SAddr,
        on: WaitOn,
        cluster_scope: bool,
    },
}

/// Why a probe path fails (not an error of the kernel: the wait is not a wait loop).
struct ProbeFail(String);

enum StepErr {
    Err(Error),
    Probe(ProbeFail),
}

impl From<Error> for StepErr {
    fn from(e: Error) -> Self {
        StepErr::Err(e)
    }
}

type R<T> = Result<T, StepErr>;

const WHY_GLOBAL: u8 = 0;
const WHY_SHARED: u8 = 1;
const WHY_OP: u8 = 2;
const WHY_FLOAT: u8 = 3;
const WHY_SPECIAL: u8 = 4;
const WHY_PARAM: u8 = 5;
const WHY_COLL: u8 = 6;
/// A register written on one way only of a branch whose condition is unknown (`join.rs`).
const WHY_JOIN: u8 = 7;

/// Opcodes with no effect that matters here (and no destination, or one set to unknown).
const IGNORED: [&str; 11] = [
    "nanosleep",
    "prefetch",
    "prefetchu",
    "pmevent",
    "griddepcontrol",
    "setmaxnreg",
    "applypriority",
    "discard",
    "membar",
    "tensormap",
    "createpolicy",
];

/// Texture and surface instructions: their memory is global (not modelled), their `[tex,
/// {coords}]` operands are no shared addresses.
const TEXTURE: [&str; 8] = [
    "tex", "tld4", "txq", "suld", "sust", "sured", "suq", "istypep",
];

/// Whether an instruction that no handler of `step` models touches what the protocol is made
/// of: it names a shared state space, an mbarrier or the async proxy (`.async`, `.bulk`), or
/// it takes a memory address that is not in a space the executor leaves out (global, const,
/// local, param). Such an instruction is an error naming its line, never skipped: leaving
/// out a WGMMA that the front end did not recognise, say, would make every race with its
/// reads impossible to find. The reason, for the message.
fn unmodelled_touch(ins: &Instr) -> Option<&'static str> {
    let base = ins.base();
    if matches!(base, "cvta" | "isspacep" | "mapa" | "getctarank") {
        return None; // address arithmetic, the ALU's
    }
    let parts = &ins.parts[1..];
    if parts.iter().any(|p| p.starts_with("shared")) {
        return Some("names shared memory");
    }
    if parts.iter().any(|p| p.starts_with("mbarrier")) {
        return Some("acts on an mbarrier");
    }
    if parts
        .iter()
        .any(|p| p == "async" || p == "bulk" || p.starts_with("async::"))
    {
        return Some("runs in the async proxy");
    }
    let hint = matches!(
        base,
        "prefetch" | "prefetchu" | "applypriority" | "discard" | "createpolicy"
    );
    let elsewhere = parts.iter().any(|p| {
        matches!(
            p.split("::").next().unwrap_or(""),
            "global" | "const" | "local" | "param"
        )
    });
    let address = ins
        .operands
        .iter()
        .any(|o| matches!(o, Operand::Addr { .. } | Operand::TensorAddr { .. }));
    if address && !hint && !elsewhere && !TEXTURE.contains(&base) {
        return Some("takes a memory address that may be shared memory");
    }
    None
}

impl<'a> Exec<'a> {
    pub fn new(m: &'a Module, f: &'a Function, cfg: &'a Config) -> Result<Self, Error> {
        let nthreads = cfg.block[0] * cfg.block[1] * cfg.block[2];
        let mut shared = Vec::new();
        let mut shared_by_name = HashMap::new();
        let mut next = SHARED_START;
        let mut dynamic = Vec::new();
        for s in m.symbols.iter().chain(f.symbols.iter()) {
            if s.space != Space::Shared {
                continue;
            }
            let Some(size) = s.size else {
                dynamic.push(s);
                continue;
            };
            let align = s.align.max(1024);
            next = next.div_ceil(align) * align;
            shared.push(Placed {
                name: s.name.clone(),
                base: next,
                size,
                line: s.line,
            });
            shared_by_name.insert(s.name.clone(), next);
            next += size.max(1);
        }
        // Dynamic shared memory starts after the static symbols (every `extern .shared` names
        // the same memory).
        let dyn_base = next.div_ceil(1024) * 1024;
        for s in dynamic {
            shared.push(Placed {
                name: s.name.clone(),
                base: dyn_base,
                size: OFF_MASK - dyn_base,
                line: s.line,
            });
            shared_by_name.insert(s.name.clone(), dyn_base);
        }
        let mut local_by_name = HashMap::new();
        let mut lnext = LOCAL_START;
        for s in f.symbols.iter().filter(|s| s.space == Space::Local) {
            let align = s.align.max(16);
            lnext = lnext.div_ceil(align) * align;
            local_by_name.insert(s.name.clone(), lnext);
            lnext += s.size.unwrap_or(8).max(8);
        }
        let param_by_name = f
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i as u32))
            .collect();
        let global_by_name = m
            .symbols
            .iter()
            .chain(f.symbols.iter())
            .filter(|s| matches!(s.space, Space::Global | Space::Const))
            .enumerate()
            .map(|(i, s)| (s.name.clone(), GEN_GLOBAL_SYM + ((i as u64) << 32)))
            .collect();
        Ok(Exec {
            f,
            cfg,
            whys: Vec::new(),
            why_at: HashMap::new(),
            param_why_at: HashMap::new(),
            shared,
            shared_by_name,
            local_by_name,
            param_by_name,
            global_by_name,
            nthreads,
            mem: RefCell::new(Mem::default()),
            elected_lowest: Default::default(),
        })
    }

    /// Run every thread of every block of the cluster. Again when a value read from shared
    /// memory did not hold (`mem.rs`): that load is unknown the next time.
    pub fn run_all(&mut self) -> Result<Vec<Trace>, Error> {
        loop {
            self.whys.clear();
            self.why_at.clear();
            self.param_why_at.clear();
            self.mem.get_mut().reset();
            let out = self.run_blocks()?;
            if !self.mem.get_mut().recheck() {
                return Ok(out);
            }
        }
    }

    /// The threads of a block run in epochs: each runs until it has finished or passed its
    /// next block-wide barrier, and when all have, those that wait there go on.
    fn run_blocks(&mut self) -> Result<Vec<Trace>, Error> {
        let mut out = Vec::new();
        let nwarps = self.nthreads.div_ceil(32);
        for rank in 0..self.cfg.cluster {
            let mut warps: Vec<Vec<Th>> = (0..nwarps)
                .map(|w| {
                    (w * 32..((w + 1) * 32).min(self.nthreads))
                        .map(|tid| Th {
                            rank,
                            tid,
                            regs: vec![Val::K(0); self.f.regs.len()],
                            pc: 0,
                            carry: 0,
                            local: HashMap::new(),
                            events: Vec::new(),
                            st: St::Run,
                            steps: 0,
                            probe: None,
                            epoch: 0,
                        })
                        .collect()
                })
                .collect();
            loop {
                for ths in warps.iter_mut() {
                    loop {
                        for th in ths.iter_mut() {
                            if th.st == St::Run {
                                self.run(th)?;
                            }
                        }
                        if ths.iter().all(|t| matches!(t.st, St::Done | St::Bar)) {
                            break;
                        }
                        self.resolve_collectives(ths)?;
                    }
                }
                let mut waiting = false;
                for th in warps.iter_mut().flatten().filter(|t| t.st == St::Bar) {
                    th.st = St::Run;
                    th.epoch += 1;
                    waiting = true;
                }
                if !waiting {
                    break;
                }
            }
            for th in warps.into_iter().flatten() {
                out.push(Trace {
                    rank: th.rank,
                    tid: th.tid,
                    events: th.events,
                });
            }
        }
        Ok(out)
    }

    fn instr(&self, pc: usize) -> &'a Instr {
        &self.f.instrs[pc]
    }

    fn err(&self, ins: &Instr, message: String, help: Option<String>) -> Error {
        Error {
            message,
            line: Some(ins.line),
            src: ins.src.map(Box::new),
            help,
        }
    }

    /// An unknown produced by instruction `ins` (interned per line and kind).
    fn why(&mut self, ins: &Instr, kind: u8, what: impl FnOnce() -> String) -> Val {
        if let Some(&v) = self.cfg.assume.get(&ins.line) {
            return Val::K(v as u64);
        }
        let key = (ins.line, kind);
        if let Some(&i) = self.why_at.get(&key) {
            return Val::U(i);
        }
        let i = self.whys.len() as u32;
        let fix = match kind {
            WHY_GLOBAL | WHY_SHARED | WHY_SPECIAL | WHY_OP | WHY_COLL | WHY_JOIN => {
                Some(format!("--assume {}=VALUE", ins.line))
            }
            // The register's bits: a float is given by its bit pattern.
            WHY_FLOAT => Some(format!("--assume {}=BITS", ins.line)),
            _ => None,
        };
        self.whys.push(Why {
            what: what(),
            line: ins.line,
            fix,
        });
        self.why_at.insert(key, i);
        Val::U(i)
    }

    fn param_why(&mut self, ins: &Instr, index: u32, off: u64) -> Val {
        let key = (ins.line, WHY_PARAM, off);
        if let Some(&i) = self.param_why_at.get(&key) {
            return Val::U(i);
        }
        let name = self
            .f
            .params
            .get(index as usize)
            .map(|p| short_param(&p.name))
            .unwrap_or_default();
        let at = if off == 0 {
            String::new()
        } else {
            format!(" at byte {off}")
        };
        let plus = if off == 0 {
            String::new()
        } else {
            format!("+{off}")
        };
        let i = self.whys.len() as u32;
        self.whys.push(Why {
            what: format!("kernel parameter {index} (`{name}`){at}, which no --arg gives"),
            line: ins.line,
            fix: Some(format!("--arg {index}{plus}=VALUE")),
        });
        self.param_why_at.insert(key, i);
        Val::U(i)
    }

    /// The error for an unknown value where a known one is needed.
    fn unknown(&self, ins: &Instr, role: &str, v: Val) -> Error {
        let Val::U(i) = v else {
            unreachable!("only unknowns")
        };
        let why = &self.whys[i as usize];
        let from = if why.line == ins.line {
            String::new()
        } else {
            format!(" (PTX line {})", why.line)
        };
        Error {
            message: format!(
                "{role} depends on a value phasecheck cannot know: {}{from}",
                why.what
            ),
            line: Some(ins.line),
            src: ins.src.map(Box::new),
            help: why.fix.as_ref().map(|f| {
                format!(
                    "give the value with `{f}` (phasecheck never guesses a value a branch or an \
                     address depends on){}",
                    if f.ends_with("=BITS") {
                        "; a float is given by its bit pattern as an integer (1 is the least \
                         positive float, 1065353216 is 1.0)"
                    } else {
                        ""
                    }
                )
            }),
        }
    }

    // ---- the run loop ----------------------------------------------------------------------

    fn run(&mut self, th: &mut Th) -> Result<(), Error> {
        loop {
            match self.step_guarded(th) {
                Ok(Flow::Next) => th.pc += 1,
                Ok(Flow::Jump(t)) => th.pc = t,
                Ok(Flow::Exit) => {
                    th.st = St::Done;
                    return Ok(());
                }
                Ok(Flow::Coll) => {
                    th.st = St::Coll;
                    return Ok(());
                }
                Ok(Flow::Block) => {
                    th.pc += 1;
                    th.st = St::Bar;
                    return Ok(());
                }
                Ok(Flow::ProbeHit(_) | Flow::Test { .. }) => unreachable!("not probing"),
                Err(StepErr::Err(e)) => return Err(e),
                Err(StepErr::Probe(_)) => unreachable!("not probing"),
            }
        }
    }

    fn step_guarded(&mut self, th: &mut Th) -> R<Flow> {
        let flow = self.step_unconverged(th)?;
        // A `.sync.aligned` instruction that is not a barrier of its own (`bar.sync`,
        // `barrier.cluster.*.aligned`) nor a collective computed with the other lanes
        // (`converged.rs` has the collectives' mark): the lane ran it together with its warp.
        if matches!(flow, Flow::Next) && th.probe.is_none() && th.pc < self.f.instrs.len() {
            let ins = self.instr(th.pc);
            if ins.has("sync")
                && ins.has("aligned")
                && !matches!(ins.base(), "bar" | "barrier")
                && ins
                    .guard
                    .is_none_or(|(p, neg)| th.regs[p as usize] == Val::K((!neg) as u64))
            {
                self.event(th, Ev::Converged)?;
            }
        }
        Ok(flow)
    }

    fn step_unconverged(&mut self, th: &mut Th) -> R<Flow> {
        if th.pc >= self.f.instrs.len() {
            return Ok(Flow::Exit);
        }
        th.steps += 1;
        let ins = self.instr(th.pc);
        if th.steps > self.cfg.max_steps && th.probe.is_none() {
            return Err(self
                .err(
                    ins,
                    format!(
                        "thread {} of block {} ran {} instructions without finishing (an endless \
                         loop?)",
                        th.tid, th.rank, self.cfg.max_steps
                    ),
                    Some("the loop it is in runs on a value the executor knows: check the --arg values".into()),
                )
                .into());
        }
        if let Some((p, neg)) = ins.guard {
            match th.regs[p as usize] {
                Val::K(v) => {
                    if (v != 0) == neg {
                        return Ok(Flow::Next);
                    }
                }
                u => {
                    if th.probe.is_none()
                        && let Some(flow) = self.join_register_only_arm(th, ins)
                    {
                        return Ok(flow);
                    }
                    let what = if ins.base() == "bra" {
                        "this branch"
                    } else {
                        "the guard of this instruction"
                    };
                    return Err(self.unknown(ins, what, u).into());
                }
            }
        }
        self.step(th, ins)
    }

    fn get(&mut self, th: &Th, ins: &Instr, op: &Operand, bits: u32) -> Val {
        match op {
            Operand::Reg(r) => match th.regs[*r as usize] {
                Val::K(v) => Val::K(v & mask(bits)),
                u => u,
            },
            Operand::Imm(v) => Val::K(*v as u64 & mask(bits)),
            Operand::Float => self.why(ins, WHY_FLOAT, || "a floating-point value".into()),
            Operand::Special(s) => self.special(th, ins, s),
            Operand::Sym(s) => self.sym_addr(ins, s),
            Operand::Not(inner) => match self.get(th, ins, inner, 1) {
                Val::K(v) => Val::K((v == 0) as u64),
                u => u,
            },
            Operand::Addr { base, offset } => {
                let b = match base {
                    Some(b) => self.get(th, ins, b, 64),
                    None => Val::K(0),
                };
                match b {
                    Val::K(v) => Val::K(v.wrapping_add(*offset as u64)),
                    u => u,
                }
            }
            _ => self.why(ins, WHY_OP, || format!("an operand of `{}`", ins.text)),
        }
    }

    fn sym_addr(&mut self, ins: &Instr, s: &str) -> Val {
        if let Some(&b) = self.shared_by_name.get(s) {
            return Val::K(b);
        }
        if let Some(&b) = self.local_by_name.get(s) {
            return Val::K(b);
        }
        if let Some(&i) = self.param_by_name.get(s) {
            return Val::K(GEN_PARAM + ((i as u64) << PARAM_SHIFT));
        }
        if let Some(&g) = self.global_by_name.get(s) {
            return Val::K(g);
        }
        self.why(ins, WHY_OP, || format!("the address of `{s}`"))
    }

    fn special(&mut self, th: &Th, ins: &Instr, s: &str) -> Val {
        let [bx, by, bz] = self.cfg.block;
        let t = th.tid;
        let lane = t % 32;
        let v = match s {
            "%tid.x" => t % bx,
            "%tid.y" => (t / bx) % by,
            "%tid.z" => t / (bx * by),
            "%ntid.x" => bx,
            "%ntid.y" => by,
            "%ntid.z" => bz,
            "%laneid" => lane,
            "%warpid" => t / 32,
            "%nwarpid" => self.nthreads.div_ceil(32),
            "%ctaid.x" | "%cluster_ctaid.x" | "%cluster_ctarank" => th.rank,
            "%ctaid.y" | "%ctaid.z" | "%cluster_ctaid.y" | "%cluster_ctaid.z" => 0,
            "%nctaid.x" | "%cluster_nctaid.x" | "%cluster_nctarank" => self.cfg.cluster,
            "%nctaid.y" | "%nctaid.z" | "%cluster_nctaid.y" | "%cluster_nctaid.z" => 1,
            "%clusterid.x" | "%clusterid.y" | "%clusterid.z" | "%is_explicit_cluster" => 0,
            "%nclusterid.x" | "%nclusterid.y" | "%nclusterid.z" => 1,
            "%lanemask_eq" => 1 << lane,
            "%lanemask_lt" => (1u32 << lane) - 1,
            "%lanemask_le" => ((1u64 << (lane + 1)) - 1) as u32,
            "%lanemask_gt" => !(((1u64 << (lane + 1)) - 1) as u32),
            "%lanemask_ge" => !((1u32 << lane) - 1),
            _ => {
                let name = s.to_string();
                return self.why(ins, WHY_SPECIAL, || {
                    format!("the special register `{name}` (not modelled)")
                });
            }
        };
        Val::K(v as u64)
    }

    fn set(&mut self, th: &mut Th, op: &Operand, v: Val, bits: u32) {
        match op {
            Operand::Reg(r) => {
                th.regs[*r as usize] = match v {
                    Val::K(x) => Val::K(x & mask(bits)),
                    u => u,
                }
            }
            Operand::Pair(a, b) => {
                // `d|p` for setp: handled by the instructions that have it.
                self.set(th, a, v, bits);
                let _ = b;
            }
            Operand::Vector(items) => {
                for it in items {
                    self.set(th, it, v, bits);
                }
            }
            _ => {}
        }
    }

    /// Every destination of an instruction the executor does not model becomes unknown.
    fn clobber(&mut self, th: &mut Th, ins: &Instr, kind: u8) {
        let Some(d) = ins.operands.first() else {
            return;
        };
        let text = ins.text.clone();
        let u = self.why(ins, kind, || match kind {
            WHY_FLOAT => "a floating-point value".into(),
            _ => format!("the result of `{text}` (not modelled)"),
        });
        match d {
            Operand::Pair(a, b) => {
                self.set(th, a, u, 64);
                self.set(th, b, u, 64);
            }
            d => self.set(th, d, u, 64),
        }
    }

    fn ty(ins: &Instr) -> Option<Ty> {
        ins.parts.iter().rev().find_map(|p| ty_of(p))
    }

    fn addr(&mut self, th: &Th, ins: &Instr, idx: usize) -> R<Val> {
        let op = ins
            .operands
            .get(idx)
            .ok_or_else(|| StepErr::Err(self.err(ins, format!("missing operand {idx}"), None)))?;
        Ok(self.get(th, ins, op, 64))
    }

    /// A shared address operand of a synchronization instruction (`.shared::cta`,
    /// `.shared::cluster` or generic).
    fn shared_addr(&mut self, th: &Th, ins: &Instr, idx: usize, what: &str) -> R<SAddr> {
        let v = self.addr(th, ins, idx)?;
        let Val::K(v) = v else {
            return Err(self
                .unknown(ins, &format!("the address of {what}"), v)
                .into());
        };
        let generic_form = !ins.parts.iter().any(|p| p.starts_with("shared"));
        let place = if generic_form {
            generic(v)
        } else {
            shared_window(v)
        };
        match place {
            Place::Shared { rank, off } => {
                if !(SHARED_START..OFF_MASK).contains(&off) {
                    return Err(self
                        .err(
                            ins,
                            format!("{what} is at {v:#x}, which is not in shared memory"),
                            None,
                        )
                        .into());
                }
                let rank = rank.filter(|&r| r != th.rank);
                if let Some(r) = rank
                    && r >= self.cfg.cluster
                {
                    return Err(self
                        .err(
                            ins,
                            format!(
                                "{what} is in block {r} of the cluster, which has {} blocks",
                                self.cfg.cluster
                            ),
                            Some("give the cluster size with --cluster N".into()),
                        )
                        .into());
                }
                Ok(SAddr { rank, off })
            }
            _ => Err(self
                .err(
                    ins,
                    format!("{what} is at {v:#x}, which is not in shared memory"),
                    None,
                )
                .into()),
        }
    }

    fn int(&mut self, th: &Th, ins: &Instr, idx: usize, what: &str) -> R<i64> {
        let op =
            ins.operands.get(idx).cloned().ok_or_else(|| {
                StepErr::Err(self.err(ins, format!("missing operand {idx}"), None))
            })?;
        match self.get(th, ins, &op, 64) {
            // Counts, ids, byte counts and masks: the low 32 bits, unsigned.
            Val::K(v) => Ok((v & 0xffff_ffff) as i64),
            u => Err(self.unknown(ins, what, u).into()),
        }
    }

    fn event(&self, th: &mut Th, ev: Ev) -> R<()> {
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

    // ---- one instruction --------------------------------------------------------------------

    fn step(&mut self, th: &mut Th, ins: &'a Instr) -> R<Flow> {
        let base = ins.base();
        let ops = &ins.operands;
        match base {
            "bra" | "brx" => {
                if base == "brx" {
                    return Err(self
                        .err(
                            ins,
                            "indirect branches (brx.idx) are not supported".into(),
                            None,
                        )
                        .into());
                }
                return match ins.target {
                    Some(t) => Ok(Flow::Jump(t)),
                    None => Err(self
                        .err(ins, "a branch without a label".into(), None)
                        .into()),
                };
            }
            "exit" | "ret" => return Ok(Flow::Exit),
            "trap" => {
                return Err(self
                    .err(
                        ins,
                        format!(
                            "thread {} of block {} reaches `trap` (the kernel would abort here)",
                            th.tid, th.rank
                        ),
                        Some("check the --arg values and the block size".into()),
                    )
                    .into());
            }
            "call" => {
                return Err(self
                    .err(
                        ins,
                        "calls to non-inlined functions are not supported yet".into(),
                        Some("compile with the helper functions inlined (__forceinline__)".into()),
                    )
                    .into());
            }
            "mbarrier" => return self.mbarrier(th, ins),
            "cp" => return self.cp(th, ins),
            "bar" | "barrier" => return self.barrier(th, ins),
            "fence" => {
                if ins.has("proxy") && ins.has("async") || ins.has_prefix("async") {
                    if !ins.has("global") {
                        self.event(th, Ev::FenceProxyAsync)?;
                    }
                } else if ins.has("mbarrier_init") {
                    self.event(th, Ev::FenceMbarrierInit)?;
                }
                return Ok(Flow::Next);
            }
            "shfl" | "vote" | "match" | "redux" | "elect" | "activemask" => {
                if th.probe.is_some() {
                    return Err(StepErr::Probe(ProbeFail(format!(
                        "the warp collective `{}` at PTX line {}",
                        ins.text, ins.line
                    ))));
                }
                return Ok(Flow::Coll);
            }
            "st" | "red" if ins.has("async") => {
                return Err(self
                    .err(
                        ins,
                        format!(
                            "`{}` (a store into a peer's shared memory that completes bytes on \
                             its mbarrier) is not supported yet",
                            ins.text
                        ),
                        None,
                    )
                    .into());
            }
            "ld" | "ldu" => return self.load(th, ins),
            "st" => return self.store(th, ins),
            "atom" | "red" => return self.atomic(th, ins),
            "ldmatrix" | "stmatrix" => {
                let matrices = ins
                    .parts
                    .iter()
                    .find_map(|p| p.strip_prefix('x').and_then(|n| n.parse::<u64>().ok()))
                    .unwrap_or(1);
                // `.m8n8` (8 x 16-bit per row): the lanes of the warp give one row address each,
                // lanes 0-7 the rows of the first matrix, 8-15 of the second, ... (only the
                // first 8 x N lanes' addresses are used), and the instruction moves 16 bytes at
                // each. So each lane accesses its own row (and the rows of a warp's `stmatrix`
                // are its part writes, not writes that overlap); a lane past the matrices gives
                // no address. Other shapes: 16 bytes per matrix from each lane's address.
                let m8n8 = ins.has("m8n8");
                let lane = u64::from(th.tid % 32);
                if m8n8 && lane >= 8 * matrices {
                    if base == "ldmatrix" {
                        self.clobber(th, ins, WHY_SHARED);
                    }
                    return Ok(Flow::Next);
                }
                let shared =
                    self.shared_addr(th, ins, 1 - (base == "stmatrix") as usize, "the matrix")?;
                let len = if m8n8 { 16 } else { 16 * matrices };
                let r = Range { at: shared, len };
                if base == "ldmatrix" {
                    self.event(th, Ev::Read(r))?;
                    self.clobber(th, ins, WHY_SHARED);
                } else {
                    self.event(th, Ev::Write(r, None))?;
                }
                return Ok(Flow::Next);
            }
            "wgmma" => {
                if ins.has("mma_async") {
                    self.wgmma(th, ins)?;
                    // The accumulators become unknown (floating point).
                    self.clobber(th, ins, WHY_FLOAT);
                }
                return Ok(Flow::Next);
            }
            "tcgen05" => {
                return Err(self
                    .err(
                        ins,
                        format!("`{}` is not supported by the PTX front end yet", ins.text),
                        None,
                    )
                    .into());
            }
            _ => {}
        }
        if let Some(why) = unmodelled_touch(ins) {
            return Err(self
                .err(
                    ins,
                    format!(
                        "`{}` is not modelled by the PTX front end, and it {why}: leaving it out \
                         could hide a race or a deadlock",
                        ins.text
                    ),
                    None,
                )
                .into());
        }
        if IGNORED.contains(&base) {
            if !ops.is_empty() && base != "prefetch" && base != "nanosleep" {
                self.clobber(th, ins, WHY_OP);
            }
            return Ok(Flow::Next);
        }
        self.alu(th, ins)?;
        Ok(Flow::Next)
    }
}

/// A parameter's name for messages: mangled C++ kernels have names of hundreds of characters.
pub fn short_param(name: &str) -> String {
    if name.len() <= 48 {
        return name.to_string();
    }
    match name.rfind("_param_") {
        Some(i) => format!("{}..._param_{}", &name[..12], &name[i + 7..]),
        None => format!("{}...", &name[..40]),
    }
}

/// An ordered floating-point comparison of known bits (`setp.lt.f32`); `None` for the
/// unordered forms and NaNs.
fn compare_float(cmp: &str, x: u64, y: u64, bits: u32) -> Option<bool> {
    let (a, b) = if bits == 64 {
        (f64::from_bits(x), f64::from_bits(y))
    } else {
        (
            f32::from_bits(x as u32) as f64,
            f32::from_bits(y as u32) as f64,
        )
    };
    if a.is_nan() || b.is_nan() {
        return None;
    }
    Some(match cmp {
        "eq" | "equ" => a == b,
        "ne" | "neu" => a != b,
        "lt" | "ltu" => a < b,
        "le" | "leu" => a <= b,
        "gt" | "gtu" => a > b,
        "ge" | "geu" => a >= b,
        "num" => true,
        "nan" => false,
        _ => return None,
    })
}

fn compare(cmp: &str, x: u64, y: u64, bits: u32, signed: bool) -> bool {
    let (sx, sy) = (sext(x, bits), sext(y, bits));
    match cmp {
        "eq" => x == y,
        "ne" => x != y,
        "lt" => {
            if signed {
                sx < sy
            } else {
                x < y
            }
        }
        "le" => {
            if signed {
                sx <= sy
            } else {
                x <= y
            }
        }
        "gt" => {
            if signed {
                sx > sy
            } else {
                x > y
            }
        }
        "ge" => {
            if signed {
                sx >= sy
            } else {
                x >= y
            }
        }
        "lo" => x < y,
        "ls" => x <= y,
        "hi" => x > y,
        "hs" => x >= y,
        _ => false,
    }
}

fn parse_shape(s: &str) -> (u64, u64) {
    // m64n128k16
    let n = s
        .split('n')
        .nth(1)
        .and_then(|r| r.split('k').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or(8);
    let k = s
        .split('k')
        .nth(1)
        .and_then(|x| x.parse().ok())
        .unwrap_or(16);
    (n, k)
}

fn lanes_text(mask: u32) -> String {
    let v: Vec<String> = (0..32)
        .filter(|l| mask & (1 << l) != 0)
        .map(|l| l.to_string())
        .collect();
    v.join(", ")
}
