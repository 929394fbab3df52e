//! Unknown values and where they came from. An unknown is harmless until a branch, a guard or an
//! address needs it; then the error must name the instruction that made it unknown (a global load,
//! a float, a parameter not given with `--arg`), so each unknown carries the reason it was made.

use super::*;

pub(super) const WHY_GLOBAL: u8 = 0;
pub(super) const WHY_SHARED: u8 = 1;
pub(super) const WHY_OP: u8 = 2;
pub(super) const WHY_FLOAT: u8 = 3;
pub(super) const WHY_SPECIAL: u8 = 4;
pub(super) const WHY_PARAM: u8 = 5;
pub(super) const WHY_COLL: u8 = 6;
/// A register written on one way only of a branch whose condition is unknown (`join.rs`).
pub(super) const WHY_JOIN: u8 = 7;

impl<'a> Exec<'a> {
    /// An unknown produced by instruction `ins` (interned per line and kind).
    pub(super) fn why(&mut self, ins: &Instr, kind: u8, what: impl FnOnce() -> String) -> Val {
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

    pub(super) fn param_why(&mut self, ins: &Instr, index: u32, off: u64) -> Val {
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
    pub(super) fn unknown(&self, ins: &Instr, role: &str, v: Val) -> Error {
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
}

/// A parameter's name for messages: mangled C++ kernels have names of hundreds of characters.
pub(crate) fn short_param(name: &str) -> String {
    if name.len() <= 48 {
        return name.to_string();
    }
    match name.rfind("_param_") {
        Some(i) => format!("{}..._param_{}", &name[..12], &name[i + 7..]),
        None => format!("{}...", &name[..40]),
    }
}
