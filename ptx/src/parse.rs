//! A parser for the subset of PTX that `nvcc -ptx` (and inline assembly in CUDA) produces:
//! module directives, globals, `.entry`/`.func` headers with parameters and performance
//! directives, register declarations (scoped: inline assembly opens `{ .reg .pred p; ... }`
//! blocks), `.shared`/`.local` symbols, labels, predicated instructions with their operands,
//! and `.loc`/`.file` line information (with `inlined_at` chains).
//!
//! Instructions are kept close to the text (opcode split at the dots, operands parsed); what
//! they mean is the executor's business (`exec.rs`).

use std::collections::HashMap;

mod decl;
mod loc;
mod operand;
mod scan;
#[cfg(test)]
mod tests;

use decl::*;
use loc::*;
use operand::*;
use scan::*;

/// Index of a register in its function's register table.
pub type RegId = u32;

#[derive(Clone, Debug)]
pub struct Module {
    pub functions: Vec<Function>,
    /// Module-level `.global`/`.const`/`.shared` symbols.
    pub symbols: Vec<Symbol>,
    /// `.file N "path"`.
    pub files: HashMap<u32, String>,
    /// Inline stacks of the `.loc`s ([`SrcLoc::stack`]), outermost frame first.
    pub stacks: Vec<Vec<Frame>>,
    /// `.debug_str` labels -> the (mangled) function names they hold.
    pub func_names: HashMap<String, String>,
    /// The stacks an ambiguous `.loc` may have ([`SrcLoc::candidates`]).
    pub candidates: Vec<Vec<u32>>,
}

impl Module {
    /// The source location of an instruction whose inline stack is `stack`.
    pub fn loc_of_stack(&self, stack: u32, candidates: u32) -> SrcLoc {
        let frames = &self.stacks[stack as usize];
        let at = |i: usize| frames[i].pos;
        let outer = (frames.len() > 1).then(|| at(0));
        let u = user_frame(frames, 0, &self.func_names, &self.files);
        let u_in = user_frame(
            frames,
            1.min(frames.len() - 1),
            &self.func_names,
            &self.files,
        );
        SrcLoc {
            inner: at(frames.len() - 1),
            outer,
            second: outer.map(|_| at(1)),
            user: (u > 0).then(|| at(u)),
            user_in: (u_in > 1).then(|| at(u_in)),
            stack,
            candidates,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Shared,
    Global,
    Const,
    Local,
}

#[derive(Clone, Debug)]
pub struct Symbol {
    pub name: String,
    pub space: Space,
    /// Bytes; `None` for `.extern .shared .b8 smem[]` (dynamic shared memory).
    pub size: Option<u64>,
    pub align: u64,
    pub line: u32,
}

#[derive(Clone, Debug)]
pub struct ParamDecl {
    pub name: String,
    /// Bytes.
    pub size: u64,
    pub align: u64,
    /// `.u32`, `.b8` (an aggregate), ...
    pub ty: String,
}

/// A source position from `.loc FILE LINE COL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pos {
    pub file: u32,
    pub line: u32,
    pub col: u32,
}

/// Where an instruction came from in the CUDA source: the `.loc` in force (`inner`, maybe in
/// an inlined helper) and the outermost call site it was inlined into (`outer`, in the kernel's
/// own body), when the `.loc` says `inlined_at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SrcLoc {
    pub inner: Pos,
    pub outer: Option<Pos>,
    /// The frame just inside the outermost call (the position in the function called at
    /// `outer`); `inner` when there is one level of inlining.
    pub second: Option<Pos>,
    /// The user's frame: the outermost position, or, when the call there is to a lambda or
    /// into a CUTLASS collective, the position inside it (and so on inwards, `user_frame`).
    /// `None` when that is `outer` itself.
    pub user: Option<Pos>,
    /// The same, starting from the frame just inside the outermost call (`second`): used
    /// when the outermost call is a trampoline.
    pub user_in: Option<Pos>,
    /// The whole inline stack, outermost first: an index into [`Module::stacks`].
    pub stack: u32,
    /// When the `.loc` does not tell which call it is in (`inlined_at` a position that calls
    /// at several places have reached): an index into [`Module::candidates`], the stacks it
    /// may have; else [`NO_CANDIDATES`].
    pub candidates: u32,
}

/// [`SrcLoc::candidates`] of a position whose stack is known.
pub const NO_CANDIDATES: u32 = u32::MAX;

impl SrcLoc {
    /// The position in the user's code: the kernel's own body (the outermost call site), or
    /// inside the lambda or CUTLASS collective called there.
    pub fn user(&self) -> Pos {
        self.user.or(self.outer).unwrap_or(self.inner)
    }

    /// The position to show: the user's position, or, when the outermost call is
    /// `trampoline` (a line every instruction is inlined into, as CUTLASS's `device_kernel`
    /// calls the kernel's `operator()`), the user's position from the frame just inside it.
    pub fn shown(&self, trampoline: Option<Pos>) -> Pos {
        match (self.outer, trampoline) {
            (Some(o), Some(t)) if o == t => self.user_in.or(self.second).unwrap_or(self.inner),
            _ => self.user(),
        }
    }
}

/// One frame of an inline stack: a position and the function it is in (the label of its
/// name in `.debug_str`; `None` for the kernel's own body).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub pos: Pos,
    pub func: Option<String>,
}

/// Whether a mangled function name is a lambda's `operator()` (Itanium ABI: the closure
/// type is `Ul<params>E<n>_`, its call operator `cl`).
pub fn is_lambda(mangled: &str) -> bool {
    mangled.contains("Ul") && mangled.contains("clE")
}

/// The frame to show among `frames` (outermost first), starting at `from`: a call to a
/// lambda is the user's code going on (DeepGEMM's `launch_k_iterations`), and so is a call
/// into a CUTLASS collective (`.../collective/...`, the mainloop's and the epilogue's own
/// code, which the kernel's `operator()` only calls); a call to any other helper is where the
/// user's code is.
fn user_frame(
    frames: &[Frame],
    from: usize,
    names: &HashMap<String, String>,
    files: &HashMap<u32, String>,
) -> usize {
    let mut i = from;
    while let Some(next) = frames.get(i + 1) {
        let lambda = next
            .func
            .as_ref()
            .and_then(|l| names.get(l))
            .is_some_and(|n| is_lambda(n));
        let collective = files
            .get(&next.pos.file)
            .is_some_and(|f| f.contains("/collective/"));
        if !(lambda || collective) {
            break;
        }
        i += 1;
    }
    i
}

#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub entry: bool,
    pub params: Vec<ParamDecl>,
    /// Symbols declared in the body (`.shared`, `.local`).
    pub symbols: Vec<Symbol>,
    pub instrs: Vec<Instr>,
    pub labels: HashMap<String, usize>,
    /// Register names, indexed by [`RegId`].
    pub regs: Vec<String>,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    pub reqnctapercluster: Option<[u32; 3]>,
    /// PTX line of the header.
    pub line: u32,
}

#[derive(Clone, Debug)]
pub struct Instr {
    /// 1-based PTX line.
    pub line: u32,
    pub src: Option<SrcLoc>,
    /// `@%p` / `@!%p`.
    pub guard: Option<(RegId, bool)>,
    /// The opcode split at dots: `["mbarrier", "try_wait", "parity", "shared::cta", "b64"]`.
    pub parts: Vec<String>,
    pub operands: Vec<Operand>,
    /// The instruction as written (for messages), without the trailing `;`.
    pub text: String,
    /// A branch's target instruction (labels are scoped to their `{ }` block, as inline
    /// assembly reuses names like `DONE` in every block).
    pub target: Option<usize>,
}

impl Instr {
    pub fn base(&self) -> &str {
        &self.parts[0]
    }
    pub fn has(&self, part: &str) -> bool {
        self.parts[1..].iter().any(|p| p == part)
    }
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.parts[1..].iter().any(|p| p.starts_with(prefix))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Reg(RegId),
    /// `%tid.x`, `%clock64`, ... (any `%name` that no `.reg` declares).
    Special(String),
    Imm(i64),
    /// `0f3F800000`, `0d...`, `1.0`: a floating-point literal (its value is not needed).
    Float,
    /// A symbol or label name.
    Sym(String),
    /// `[base+offset]`; `base` is a register, a symbol or `None` for an absolute address.
    Addr {
        base: Option<Box<Operand>>,
        offset: i64,
    },
    /// `[tmap, {c0, c1, ...}]` (tensor copies).
    TensorAddr {
        map: Box<Operand>,
        coords: Vec<Operand>,
    },
    /// `{a, b, ...}` or `(a, b)` in `call`.
    Vector(Vec<Operand>),
    /// `_`.
    Sink,
    /// `d|p` (two destinations).
    Pair(Box<Operand>, Box<Operand>),
    /// `!%p`.
    Not(Box<Operand>),
}

impl Operand {
    /// The registers of a vector operand (`ld.shared.v4.u32 {a, b, c, d}`), or the operand
    /// itself: the values a load writes or a store reads, one per element.
    pub fn elements(&self) -> &[Operand] {
        match self {
            Operand::Vector(items) => items,
            other => std::slice::from_ref(other),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ParseError {
    pub line: u32,
    pub message: String,
}

// ---------------------------------------------------------------------------------------------
// Parser: items -> module.

struct Scope {
    exact: HashMap<String, RegId>,
    /// `%r<124>`: prefix -> (first id, count).
    ranges: HashMap<String, (RegId, u32)>,
}

struct FnBuilder {
    f: Function,
    scopes: Vec<Scope>,
    depth: usize,
    /// Labels waiting for their instruction, with the scope they were defined in.
    pending_labels: Vec<(String, u32)>,
    /// Scope ids: the stack of open `{ }` blocks (0 is the body), and each scope's parent.
    scope_ids: Vec<u32>,
    parents: Vec<u32>,
    labels: HashMap<(String, u32), usize>,
    instr_scope: Vec<u32>,
}

impl FnBuilder {
    fn place_labels(&mut self, at: usize) {
        for (l, scope) in self.pending_labels.drain(..) {
            if scope == 0 {
                self.f.labels.insert(l.clone(), at);
            }
            self.labels.insert((l, scope), at);
        }
    }

    /// Resolve every branch target through the scope chain of its instruction.
    fn finish(mut self) -> Result<Function, ParseError> {
        let n = self.f.instrs.len();
        self.place_labels(n);
        for (i, ins) in self.f.instrs.iter_mut().enumerate() {
            if ins.parts[0] != "bra" {
                continue;
            }
            let Some(Operand::Sym(name)) = ins.operands.first() else {
                continue;
            };
            let mut scope = self.instr_scope[i];
            loop {
                if let Some(&t) = self.labels.get(&(name.clone(), scope)) {
                    ins.target = Some(t);
                    break;
                }
                if scope == 0 {
                    return Err(ParseError {
                        line: ins.line,
                        message: format!("the label `{name}` is not defined"),
                    });
                }
                scope = self.parents[scope as usize];
            }
        }
        Ok(self.f)
    }
}

impl FnBuilder {
    fn declare(&mut self, name: &str) -> RegId {
        let id = self.f.regs.len() as RegId;
        self.f.regs.push(name.to_string());
        self.scopes
            .last_mut()
            .expect("a scope")
            .exact
            .insert(name.to_string(), id);
        id
    }
    fn declare_range(&mut self, prefix: &str, count: u32) {
        let first = self.f.regs.len() as RegId;
        for k in 0..count {
            self.f.regs.push(format!("{prefix}{k}"));
        }
        self.scopes
            .last_mut()
            .expect("a scope")
            .ranges
            .insert(prefix.to_string(), (first, count));
    }
    fn resolve(&self, name: &str) -> Option<RegId> {
        for s in self.scopes.iter().rev() {
            if let Some(&id) = s.exact.get(name) {
                return Some(id);
            }
            let digits = name
                .bytes()
                .rev()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 && digits < name.len() {
                let (prefix, num) = name.split_at(name.len() - digits);
                if let (Some(&(first, count)), Ok(n)) = (s.ranges.get(prefix), num.parse::<u32>())
                    && n < count
                {
                    return Some(first + n);
                }
            }
        }
        None
    }
}

pub fn parse(text: &str) -> Result<Module, ParseError> {
    let items = scan(text)?;
    let mut module = Module {
        functions: Vec::new(),
        symbols: Vec::new(),
        files: HashMap::new(),
        stacks: Vec::new(),
        func_names: debug_strings(text),
        candidates: Vec::new(),
    };
    let mut func: Option<FnBuilder> = None;
    let mut stacks = Stacks::default();
    let mut loc: Option<SrcLoc> = None;
    for item in items {
        match item {
            Item::LineDir { text, line } => {
                let mut words = text.split_whitespace();
                let d = words.next().unwrap_or("");
                match d {
                    ".file" => {
                        let n = words.next().and_then(|w| w.parse::<u32>().ok());
                        let q1 = text.find('"');
                        let q2 = text.rfind('"');
                        if let (Some(n), Some(a), Some(b)) = (n, q1, q2)
                            && b > a
                        {
                            module.files.insert(n, text[a + 1..b].to_string());
                        }
                    }
                    ".loc" => {
                        loc = parse_loc(&text, &mut stacks);
                        let _ = line;
                    }
                    _ => {}
                }
            }
            Item::Open { line } => match &mut func {
                Some(fb) => {
                    fb.depth += 1;
                    if fb.depth > 1 {
                        fb.scopes.push(Scope {
                            exact: HashMap::new(),
                            ranges: HashMap::new(),
                        });
                        let id = fb.parents.len() as u32;
                        fb.parents
                            .push(*fb.scope_ids.last().expect("the body's scope"));
                        fb.scope_ids.push(id);
                    }
                }
                None => {
                    return Err(ParseError {
                        line,
                        message: "`{` outside a function".into(),
                    });
                }
            },
            Item::Close { line } => {
                let Some(fb) = &mut func else {
                    return Err(ParseError {
                        line,
                        message: "`}` outside a function".into(),
                    });
                };
                fb.depth -= 1;
                if fb.depth == 0 {
                    let fb = func.take().expect("a function");
                    // Labels at the very end point past the last instruction.
                    module.functions.push(fb.finish()?);
                } else {
                    fb.scopes.pop();
                    fb.scope_ids.pop();
                }
            }
            Item::Label { name, line } => match &mut func {
                Some(fb) => {
                    let scope = *fb.scope_ids.last().expect("the body's scope");
                    fb.pending_labels.push((name, scope));
                }
                None => {
                    return Err(ParseError {
                        line,
                        message: format!("label `{name}` outside a function"),
                    });
                }
            },
            Item::Stmt { text, line } => {
                if text.is_empty() {
                    continue;
                }
                if is_header(&text) {
                    if text.contains(".extern") && !text.contains(".entry") {
                        // A declaration of an external function: no body follows.
                        continue;
                    }
                    let f = parse_header(&text, line)?;
                    func = Some(FnBuilder {
                        f,
                        scopes: vec![Scope {
                            exact: HashMap::new(),
                            ranges: HashMap::new(),
                        }],
                        depth: 0,
                        pending_labels: Vec::new(),
                        scope_ids: vec![0],
                        parents: vec![0],
                        labels: HashMap::new(),
                        instr_scope: Vec::new(),
                    });
                    continue;
                }
                match &mut func {
                    None => {
                        if let Some(sym) = parse_symbol(&text, line)? {
                            module.symbols.push(sym);
                        }
                        // Other module-level statements (.extern .func declarations, ...) are
                        // not needed.
                    }
                    Some(fb) => {
                        if text.starts_with('.') {
                            body_directive(fb, &text, line)?;
                        } else {
                            let mut ins = parse_instr(fb, &text, line)?;
                            ins.src = loc;
                            stacks.chain = None;
                            let idx = fb.f.instrs.len();
                            fb.place_labels(idx);
                            fb.instr_scope
                                .push(*fb.scope_ids.last().expect("the body's scope"));
                            fb.f.instrs.push(ins);
                        }
                    }
                }
            }
        }
    }
    if func.is_some() {
        return Err(ParseError {
            line: text.lines().count() as u32,
            message: "the last function has no closing `}`".into(),
        });
    }
    // The user's frames need the function names, which `.debug_str` at the end of the file
    // holds.
    module.stacks = stacks.list;
    module.candidates = stacks.candidates;
    let mut functions = std::mem::take(&mut module.functions);
    for f in &mut functions {
        for ins in &mut f.instrs {
            if let Some(s) = &mut ins.src {
                *s = module.loc_of_stack(s.stack, s.candidates);
            }
        }
    }
    module.functions = functions;
    Ok(module)
}
