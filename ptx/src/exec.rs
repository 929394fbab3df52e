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
mod driver;
mod join;
mod memory;
mod operands;
mod poll;
mod record;
mod sync;
mod why;

pub(crate) use why::short_param;
use why::*;

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
