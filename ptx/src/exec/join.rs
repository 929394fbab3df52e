//! Branches on a value the executor cannot know, around code that only computes registers.
//!
//! FlashInfer's online softmax takes `1 / sum` only when `sum > 0`
//! (flashinfer/attention/hopper/attention_updater.cuh:235 in `flashinfer-python` 0.7.2.post1),
//! which nvcc compiles to `setp.leu.f32 p, sum, 0; @p bra L; div.rn.f32 d, x, sum; L:`. The
//! executor does not compute floats, so the branch's condition is unknown; but whichever way
//! the thread goes, it makes the same events: the skipped instructions touch no memory, no
//! barrier, no other lane and no control flow. So such a branch is followed without an
//! assumption: the thread goes on at the target, and every register those instructions write is
//! unknown there (it holds the value of one way or of the other; a later branch or address that
//! needs it is still an error, which names the instruction that wrote it).
//!
//! This is exact for the events (they are the same on both ways) and loses only register values,
//! which an unknown never claims to know.

use super::{Exec, Flow, Th};
use crate::parse::{Instr, Operand};

/// Opcodes that compute registers from registers and immediates only (no memory operand, no
/// other lane, no control flow, no special effect).
const REGISTER_ONLY: &[&str] = &[
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min", "max",
    "popc", "clz", "bfind", "brev", "bfe", "bfi", "prmt", "and", "or", "xor", "not", "cnot",
    "lop3", "shf", "shl", "shr", "mov", "cvt", "selp", "setp", "set", "slct", "testp", "copysign",
    "fma", "rcp", "sqrt", "rsqrt", "sin", "cos", "lg2", "ex2", "tanh", "dp4a", "dp2a",
];

/// Does `ins` only compute registers?
fn register_only(ins: &Instr) -> bool {
    REGISTER_ONLY.contains(&ins.base())
        && ins.target.is_none()
        // `.sync`/`.aligned` forms involve the warp; none of the opcodes above has one, but a
        // new PTX spelling must not slip through.
        && !ins.parts[1..].iter().any(|p| p == "sync" || p == "aligned")
        && ins.operands.iter().all(|o| {
            matches!(
                o,
                Operand::Reg(_)
                    | Operand::Imm(_)
                    | Operand::Float
                    | Operand::Special(_)
                    | Operand::Sink
                    | Operand::Pair(..)
                    | Operand::Not(_)
            ) || matches!(o, Operand::Vector(v) if v.iter().all(|x| matches!(x, Operand::Reg(_))))
        })
}

/// The registers an instruction writes: its first operand (both halves of `d|p`, every
/// element of a vector).
fn destinations(ins: &Instr) -> Vec<Operand> {
    match ins.operands.first() {
        Some(Operand::Pair(a, b)) => vec![(**a).clone(), (**b).clone()],
        Some(Operand::Vector(v)) => v.clone(),
        Some(d) => vec![d.clone()],
        None => Vec::new(),
    }
}

impl Exec<'_> {
    /// A forward `bra` at `th.pc` whose condition is unknown and whose skipped instructions
    /// only compute registers: go to the target with what they write unknown. `None` when the
    /// branch is not of that kind.
    pub(super) fn join_register_only_arm(&mut self, th: &mut Th, ins: &Instr) -> Option<Flow> {
        if ins.base() != "bra" {
            return None;
        }
        let target = ins.target?;
        if target <= th.pc {
            return None;
        }
        let arm: Vec<usize> = (th.pc + 1..target).collect();
        if !arm.iter().all(|&i| register_only(self.instr(i))) {
            return None;
        }
        for i in arm {
            let arm_ins = self.instr(i);
            let line = arm_ins.line;
            for d in destinations(arm_ins) {
                if let Operand::Reg(r) = d {
                    let branch = ins.line;
                    let u = self.why(arm_ins, super::WHY_JOIN, || {
                        format!(
                            "a register that PTX line {line} writes on one way only of the \
                             branch at PTX line {branch}, whose condition phasecheck cannot know"
                        )
                    });
                    // (`--assume LINE=VALUE` for that line gives it a known value.)
                    th.regs[r as usize] = u;
                }
            }
        }
        Some(Flow::Jump(target))
    }
}
