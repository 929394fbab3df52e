//! A parser for the subset of PTX that `nvcc -ptx` (and inline assembly in CUDA) produces:
//! module directives, globals, `.entry`/`.func` headers with parameters and performance
//! directives, register declarations (scoped: inline assembly opens `{ .reg .pred p; ... }`
//! blocks), `.shared`/`.local` symbols, labels, predicated instructions with their operands,
//! and `.loc`/`.file` line information (with `inlined_at` chains).
//!
//! Instructions are kept close to the text (opcode split at the dots, operands parsed); what
//! they mean is the executor's business (`exec.rs`).

use std::collections::HashMap;

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
// Scanner: text -> items.

#[derive(Debug)]
enum Item {
    Stmt {
        text: String,
        line: u32,
    },
    Open {
        line: u32,
    },
    Close {
        line: u32,
    },
    Label {
        name: String,
        line: u32,
    },
    /// A directive that ends at the end of its line (`.loc`, `.file`, `.version`, ...).
    LineDir {
        text: String,
        line: u32,
    },
}

const LINE_DIRECTIVES: [&str; 5] = [".version", ".target", ".address_size", ".loc", ".file"];
const HEADER_WORDS: [&str; 5] = [".visible", ".entry", ".func", ".weak", ".extern"];

fn scan(text: &str) -> Result<Vec<Item>, ParseError> {
    let b = text.as_bytes();
    let mut items = Vec::new();
    let mut i = 0usize;
    let mut line = 1u32;
    let mut cur = String::new();
    let mut cur_line = 1u32;
    // Nesting of `[ ( {` inside the current statement.
    let mut depth = 0i32;
    while i < b.len() {
        let c = b[i];
        // Comments.
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        if c == b'"' {
            // A string (in `.file` or `.pragma`): copy as is.
            if cur.trim().is_empty() {
                cur_line = line;
            }
            cur.push('"');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\n' {
                    line += 1;
                }
                cur.push(b[i] as char);
                i += 1;
            }
            cur.push('"');
            i += 1;
            continue;
        }
        if c == b'\n' {
            line += 1;
            if !cur.is_empty() {
                cur.push(' ');
            }
            i += 1;
            continue;
        }
        let empty = cur.trim().is_empty();
        if empty {
            cur.clear();
            if c.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            cur_line = line;
            // Directives that end with their line.
            if c == b'.' {
                let rest = &text[i..];
                if let Some(d) = LINE_DIRECTIVES.iter().find(|d| {
                    rest.starts_with(**d)
                        && rest[d.len()..]
                            .chars()
                            .next()
                            .is_none_or(|ch| ch.is_whitespace())
                }) {
                    let _ = d;
                    let end = rest.find('\n').unwrap_or(rest.len());
                    let mut t = rest[..end].to_string();
                    if let Some(p) = t.find("//") {
                        t.truncate(p);
                    }
                    let t = t.trim().trim_end_matches(';').trim().to_string();
                    items.push(Item::LineDir { text: t, line });
                    i += end;
                    continue;
                }
                if rest.starts_with(".section") {
                    // Skip the section and its `{ ... }` block.
                    let open = rest.find('{');
                    let semi = rest.find(';');
                    match (open, semi) {
                        (Some(o), s) if s.is_none_or(|s| o < s) => {
                            let mut j = i + o + 1;
                            let mut d = 1;
                            while j < b.len() && d > 0 {
                                match b[j] {
                                    b'{' => d += 1,
                                    b'}' => d -= 1,
                                    b'\n' => line += 1,
                                    _ => {}
                                }
                                j += 1;
                            }
                            // Count the newlines between i and the brace.
                            line += text[i..i + o].matches('\n').count() as u32;
                            i = j;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            if c == b'{' {
                items.push(Item::Open { line });
                i += 1;
                continue;
            }
            if c == b'}' {
                items.push(Item::Close { line });
                i += 1;
                continue;
            }
        }
        match c {
            b'{' if depth == 0 && is_header(&cur) => {
                items.push(Item::Stmt {
                    text: cur.trim().to_string(),
                    line: cur_line,
                });
                cur.clear();
                items.push(Item::Open { line });
                i += 1;
            }
            b'[' | b'(' | b'{' => {
                depth += 1;
                cur.push(c as char);
                i += 1;
            }
            b']' | b')' | b'}' => {
                depth -= 1;
                cur.push(c as char);
                i += 1;
            }
            b';' if depth <= 0 => {
                depth = 0;
                items.push(Item::Stmt {
                    text: cur.trim().to_string(),
                    line: cur_line,
                });
                cur.clear();
                i += 1;
            }
            b':' if depth == 0
                && b.get(i + 1) != Some(&b':')
                && !cur.ends_with(':')
                && is_label_name(cur.trim()) =>
            {
                items.push(Item::Label {
                    name: cur.trim().to_string(),
                    line: cur_line,
                });
                cur.clear();
                i += 1;
            }
            _ => {
                cur.push(c as char);
                i += 1;
            }
        }
    }
    if !cur.trim().is_empty() {
        return Err(ParseError {
            line: cur_line,
            message: format!("unterminated statement `{}`", cur.trim()),
        });
    }
    Ok(items)
}

fn is_header(cur: &str) -> bool {
    let t = cur.trim_start();
    HEADER_WORDS.iter().any(|w| t.starts_with(w)) && (t.contains(".entry") || t.contains(".func"))
}

fn is_label_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$' || c == '%')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
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

/// The inline stacks met so far.
#[derive(Default)]
struct Stacks {
    list: Vec<Vec<Frame>>,
    ids: HashMap<Vec<Frame>, u32>,
    /// A position -> the stack of the last `.loc` at it (whose innermost frame it is).
    last_at: HashMap<Pos, u32>,
    /// A position -> every stack a `.loc` at it has had, in order.
    all_at: HashMap<Pos, Vec<u32>>,
    candidates: Vec<Vec<u32>>,
    /// The `.loc` just before, when no instruction came after it: a `.loc` inlined at its
    /// position is the next link of the chain nvcc writes for one call, not ambiguous.
    chain: Option<(Pos, u32)>,
}

impl Stacks {
    fn intern(&mut self, frames: Vec<Frame>) -> u32 {
        if let Some(&id) = self.ids.get(&frames) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(frames.clone());
        self.ids.insert(frames, id);
        id
    }
}

/// `.section .debug_str { $L__info_string0: .b8 95,90,...,0 ... }`: label -> string.
fn debug_strings(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let Some(start) = text.find(".debug_str") else {
        return out;
    };
    let body = &text[start..];
    let body = &body[..body.find('}').unwrap_or(body.len())];
    let mut label: Option<String> = None;
    let mut bytes: Vec<u8> = Vec::new();
    let mut flush = |label: &mut Option<String>, bytes: &mut Vec<u8>| {
        if let Some(l) = label.take() {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            out.insert(l, String::from_utf8_lossy(&bytes[..end]).into_owned());
        }
        bytes.clear();
    };
    for line in body.lines() {
        let line = line.trim();
        if let Some(l) = line.strip_suffix(':') {
            flush(&mut label, &mut bytes);
            label = Some(l.trim().to_string());
        } else if let Some(list) = line.strip_prefix(".b8") {
            bytes.extend(list.split(',').filter_map(|b| b.trim().parse::<u8>().ok()));
        }
    }
    flush(&mut label, &mut bytes);
    out
}

/// `.loc 1 4 3, function_name $L__info_string0, inlined_at 1 27 5`: position 1:4:3 is in the
/// function named by the label, inlined at 1:27:5. The stack of the call site is that of the
/// last `.loc` at 1:27:5 (nvcc writes the chain of call sites before the first instruction of
/// an inlined call; a later `.loc` names only the innermost call site).
fn parse_loc(text: &str, stacks: &mut Stacks) -> Option<SrcLoc> {
    let mut parts = text.split(',');
    let head: Vec<u32> = parts
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    if head.len() < 2 {
        return None;
    }
    let inner = Pos {
        file: head[0],
        line: head[1],
        col: head.get(2).copied().unwrap_or(0),
    };
    let mut at = None;
    let mut func = None;
    for p in parts {
        let p = p.trim();
        if let Some(rest) = p.strip_prefix("inlined_at") {
            let v: Vec<u32> = rest
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            if v.len() >= 2 {
                at = Some(Pos {
                    file: v[0],
                    line: v[1],
                    col: v.get(2).copied().unwrap_or(0),
                });
            }
        } else if let Some(rest) = p.strip_prefix("function_name") {
            func = rest.split_whitespace().next().map(str::to_string);
        }
    }
    if inner.line == 0 {
        return None;
    }
    let this = Frame { pos: inner, func };
    let extend = |stacks: &mut Stacks, caller: Option<u32>| {
        let mut frames = match (caller, at) {
            (Some(id), _) => stacks.list[id as usize].clone(),
            // A call site no `.loc` has named: a position of the kernel's own body.
            (None, Some(o)) => vec![Frame { pos: o, func: None }],
            (None, None) => Vec::new(),
        };
        // A recursive helper inlined at itself would grow the stack without end.
        frames.truncate(63);
        frames.push(this.clone());
        stacks.intern(frames)
    };
    let callers: Vec<u32> = at
        .and_then(|o| stacks.all_at.get(&o))
        .cloned()
        .unwrap_or_default();
    let last = at.and_then(|o| stacks.last_at.get(&o)).copied();
    let id = extend(stacks, last);
    // Calls at several places reach the call site (two calls of one helper, each inlining
    // the same inner helper): the `.loc` names the call site's position only, and nvcc
    // writes the chain of a call once, so this may be any of them. The executor's events
    // decide later (`inline::resolve`); the last one is kept meanwhile.
    let mut candidates = NO_CANDIDATES;
    let mut ids = vec![id];
    let chained =
        matches!((stacks.chain, at), (Some((p, c)), Some(o)) if p == o && Some(c) == last);
    if callers.len() > 1 && !chained {
        ids = callers.iter().map(|&c| extend(stacks, Some(c))).collect();
        candidates = stacks.candidates.len() as u32;
        stacks.candidates.push(ids.clone());
    }
    stacks.last_at.insert(inner, id);
    stacks.chain = Some((inner, id));
    let seen = stacks.all_at.entry(inner).or_default();
    for i in ids {
        if !seen.contains(&i) {
            seen.push(i);
        }
    }
    Some(SrcLoc {
        inner,
        outer: None,
        second: None,
        user: None,
        user_in: None,
        stack: id,
        candidates,
    })
}

fn type_size(ty: &str) -> u64 {
    match ty.trim_start_matches('.') {
        "b8" | "u8" | "s8" | "pred" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 2,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 4,
        "b64" | "u64" | "s64" | "f64" => 8,
        "b128" => 16,
        _ => 0,
    }
}

/// `.visible .entry name( .param .u64 name_param_0, ... ) .maxntid 160, 1, 1`
fn parse_header(text: &str, line: u32) -> Result<Function, ParseError> {
    let entry = text.contains(".entry");
    // Return parameters of a `.func`: `.func (.param .b32 retval) name (...)`.
    let kw = if entry { ".entry" } else { ".func" };
    let after = &text[text.find(kw).expect("checked") + kw.len()..];
    let mut rest = after.trim_start();
    if rest.starts_with('(') {
        // Skip the return parameter list.
        let close = rest.find(')').ok_or_else(|| ParseError {
            line,
            message: "unclosed return parameter list".into(),
        })?;
        rest = rest[close + 1..].trim_start();
    }
    let name_end = rest
        .find(|c: char| c == '(' || c.is_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..name_end].to_string();
    rest = rest[name_end..].trim_start();
    let mut params = Vec::new();
    if rest.starts_with('(') {
        let close = rest.find(')').ok_or_else(|| ParseError {
            line,
            message: format!("unclosed parameter list of `{name}`"),
        })?;
        for p in rest[1..close].split(',') {
            let p = p.trim();
            if p.is_empty() {
                continue;
            }
            params.push(parse_param_decl(p));
        }
        rest = &rest[close + 1..];
    }
    let dims = |key: &str| -> Option<[u32; 3]> {
        let pos = rest.find(key)?;
        let tail = &rest[pos + key.len()..];
        let mut v = [1u32; 3];
        let mut n = 0;
        for w in tail.split(',') {
            let w = w.trim();
            let num: String = w.chars().take_while(|c| c.is_ascii_digit()).collect();
            if num.is_empty() || n == 3 {
                break;
            }
            v[n] = num.parse().ok()?;
            n += 1;
            if num.len() != w.len() {
                break;
            }
        }
        (n > 0).then_some(v)
    };
    Ok(Function {
        name,
        entry,
        params,
        symbols: Vec::new(),
        instrs: Vec::new(),
        labels: HashMap::new(),
        regs: Vec::new(),
        reqntid: dims(".reqntid"),
        maxntid: dims(".maxntid"),
        reqnctapercluster: dims(".reqnctapercluster"),
        line,
    })
}

/// `.param .u64 name` / `.param .align 64 .b8 name[128]` / `.param .u64 .ptr .global .align 1 name`
fn parse_param_decl(p: &str) -> ParamDecl {
    let words: Vec<&str> = p.split_whitespace().collect();
    let mut align = 0;
    let mut ty = String::new();
    let mut name = String::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w == ".align" {
            align = words.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(0);
            i += 2;
            continue;
        }
        if w.starts_with('.') {
            if type_size(w) > 0 {
                ty = w.to_string();
            }
        } else {
            name = w.to_string();
        }
        i += 1;
    }
    let mut size = type_size(&ty);
    if let Some(open) = name.find('[') {
        let n: u64 = name[open + 1..].trim_end_matches(']').parse().unwrap_or(0);
        size *= n;
        name.truncate(open);
    }
    if align == 0 {
        align = type_size(&ty).max(1);
    }
    ParamDecl {
        name,
        size,
        align,
        ty,
    }
}

/// `.shared .align 8 .b8 name[16]` (also `.global`, `.const`, `.local`, `.extern .shared`).
fn parse_symbol(text: &str, line: u32) -> Result<Option<Symbol>, ParseError> {
    let decl = text.split('=').next().unwrap_or(text);
    let words: Vec<&str> = decl.split_whitespace().collect();
    let space = if words.contains(&".shared") {
        Space::Shared
    } else if words.contains(&".global") {
        Space::Global
    } else if words.contains(&".const") {
        Space::Const
    } else if words.contains(&".local") {
        Space::Local
    } else {
        return Ok(None);
    };
    let mut align = 1;
    let mut elem = 0;
    let mut name = String::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if w == ".align" {
            align = words.get(i + 1).and_then(|a| a.parse().ok()).unwrap_or(1);
            i += 2;
            continue;
        }
        if w.starts_with('.') {
            if type_size(w) > 0 {
                elem = type_size(w);
            }
        } else {
            name = w.to_string();
        }
        i += 1;
    }
    if name.is_empty() {
        return Err(ParseError {
            line,
            message: format!("cannot read the declaration `{text}`"),
        });
    }
    let mut size = Some(elem.max(1));
    // Names may carry several dimensions: `x[2][16]`.
    if let Some(open) = name.find('[') {
        let dims = name[open..].to_string();
        name.truncate(open);
        let mut total = elem.max(1);
        for d in dims.split('[').skip(1) {
            let d = d.trim_end_matches(']').trim();
            if d.is_empty() {
                size = None;
                break;
            }
            total *= d.parse::<u64>().unwrap_or(1);
        }
        if size.is_some() {
            size = Some(total);
        }
    }
    Ok(Some(Symbol {
        name,
        space,
        size,
        align,
        line,
    }))
}

fn body_directive(fb: &mut FnBuilder, text: &str, line: u32) -> Result<(), ParseError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    match words[0] {
        ".reg" => {
            // `.reg .b32 %r<124>;` or `.reg .pred p, q;` (maybe `.reg .v2 .b32 ...`).
            let names: String = words
                .iter()
                .skip(1)
                .filter(|w| !w.starts_with('.'))
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            for n in names.split(',') {
                let n = n.trim();
                if n.is_empty() {
                    continue;
                }
                if let Some(open) = n.find('<') {
                    let count: u32 =
                        n[open + 1..]
                            .trim_end_matches('>')
                            .trim()
                            .parse()
                            .map_err(|_| ParseError {
                                line,
                                message: format!("bad register range `{n}`"),
                            })?;
                    fb.declare_range(&n[..open], count);
                } else {
                    fb.declare(n);
                }
            }
        }
        ".shared" | ".local" | ".global" | ".const" | ".extern" => {
            if let Some(sym) = parse_symbol(text, line)? {
                fb.f.symbols.push(sym);
            }
        }
        // `.param` inside a call sequence declares a parameter buffer; others are hints.
        ".param" => {
            let p = parse_param_decl(text);
            fb.f.symbols.push(Symbol {
                name: p.name,
                space: Space::Local,
                size: Some(p.size.max(8)),
                align: p.align,
                line,
            });
        }
        _ => {}
    }
    Ok(())
}

fn parse_instr(fb: &FnBuilder, text: &str, line: u32) -> Result<Instr, ParseError> {
    let mut t = text.trim();
    let mut guard = None;
    if let Some(rest) = t.strip_prefix('@') {
        let end = rest.find(char::is_whitespace).ok_or_else(|| ParseError {
            line,
            message: format!("a guard without an instruction: `{text}`"),
        })?;
        let g = &rest[..end];
        let (neg, name) = match g.strip_prefix('!') {
            Some(n) => (true, n),
            None => (false, g),
        };
        let id = fb.resolve(name).ok_or_else(|| ParseError {
            line,
            message: format!("undeclared predicate `{name}` in `{text}`"),
        })?;
        guard = Some((id, neg));
        t = rest[end..].trim_start();
    }
    // The opcode is a run of identifier characters, dots and `::` (`shared::cta`); the
    // operands begin at the first other character, as ptxas reads it: inline assembly built
    // by string concatenation writes `wgmma...e4m3.e4m3{%f1, ...}` with no blank before `{`.
    let op_end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == ':'))
        .unwrap_or(t.len());
    let opcode = &t[..op_end];
    if opcode.is_empty() {
        return Err(ParseError {
            line,
            message: format!("an instruction without an opcode: `{text}`"),
        });
    }
    let parts: Vec<String> = opcode.split('.').map(str::to_string).collect();
    let ops_text = t[op_end..].trim();
    let mut operands = Vec::new();
    for o in split_top(ops_text, ',') {
        let o = o.trim();
        if o.is_empty() {
            continue;
        }
        operands.push(parse_operand(fb, o, line)?);
    }
    Ok(Instr {
        line,
        src: None,
        guard,
        parts,
        operands,
        text: t.to_string(),
        target: None,
    })
}

/// Split at `sep` outside brackets, braces and parentheses.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let s = s.trim_end_matches(['U', 'u']);
    let v: i64 = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()? as i64
    } else if s.len() > 1 && s.starts_with('0') && s.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        u64::from_str_radix(&s[1..], 8).ok()? as i64
    } else {
        s.parse::<u64>().ok()? as i64
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

fn parse_operand(fb: &FnBuilder, o: &str, line: u32) -> Result<Operand, ParseError> {
    let o = o.trim();
    if o == "_" {
        return Ok(Operand::Sink);
    }
    if let Some(inner) = o.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        let parts = split_top(inner, ',');
        if parts.len() >= 2 {
            let map = parse_operand(fb, parts[0], line)?;
            let coords = match parse_operand(fb, parts[1], line)? {
                Operand::Vector(v) => v,
                other => vec![other],
            };
            return Ok(Operand::TensorAddr {
                map: Box::new(map),
                coords,
            });
        }
        return parse_address(fb, inner.trim(), line);
    }
    if let Some(inner) = o
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .or_else(|| o.strip_prefix('(').and_then(|r| r.strip_suffix(')')))
    {
        let mut v = Vec::new();
        for p in split_top(inner, ',') {
            if !p.trim().is_empty() {
                v.push(parse_operand(fb, p, line)?);
            }
        }
        return Ok(Operand::Vector(v));
    }
    if let Some((a, b)) = o.split_once('|') {
        return Ok(Operand::Pair(
            Box::new(parse_operand(fb, a, line)?),
            Box::new(parse_operand(fb, b, line)?),
        ));
    }
    if let Some(r) = o.strip_prefix('!') {
        return Ok(Operand::Not(Box::new(parse_operand(fb, r, line)?)));
    }
    if let Some(v) = parse_int(o) {
        return Ok(Operand::Imm(v));
    }
    let lower = o.to_ascii_lowercase();
    // `0f3F800000` (f32 bits), `0d3FF0000000000000` (f64 bits): the bits are the value.
    if (lower.starts_with("0f") && o.len() == 10 || lower.starts_with("0d") && o.len() == 18)
        && o[2..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Ok(Operand::Imm(
            u64::from_str_radix(&o[2..], 16).unwrap_or(0) as i64
        ));
    }
    if o.parse::<f64>().is_ok() {
        return Ok(Operand::Float);
    }
    if let Some(id) = fb.resolve(o) {
        return Ok(Operand::Reg(id));
    }
    if o.starts_with('%') {
        return Ok(Operand::Special(o.to_string()));
    }
    Ok(Operand::Sym(o.to_string()))
}

/// Inside `[...]`: `%r5`, `%r5+1024`, `sym`, `sym+8`, `%rd1+-4`, `1024`.
fn parse_address(fb: &FnBuilder, s: &str, line: u32) -> Result<Operand, ParseError> {
    if let Some(v) = parse_int(s) {
        return Ok(Operand::Addr {
            base: None,
            offset: v,
        });
    }
    // Split at the first + or - after the base name.
    let cut = s
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '+' || c == '-')
        .map(|(i, _)| i);
    let (base, off) = match cut {
        Some(i) => {
            let off_text = s[i..].trim();
            let off_text = off_text.strip_prefix('+').unwrap_or(off_text).trim();
            let off = parse_int(off_text).ok_or_else(|| ParseError {
                line,
                message: format!("cannot read the address `[{s}]`"),
            })?;
            (s[..i].trim(), off)
        }
        None => (s, 0),
    };
    let base = parse_operand(fb, base, line)?;
    Ok(Operand::Addr {
        base: Some(Box::new(base)),
        offset: off,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_inline_asm_on_one_line() {
        let m = parse(
            ".version 8.0\n.target sm_90a\n.visible .entry k(\n .param .u32 k_param_0\n)\n.maxntid 64, 1, 1\n{\n .reg .b32 %r<4>;\n .shared .align 8 .b8 bar[16];\n mov.u32 %r1, bar;\n { .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%r1+8], %r2; @!p bra W; }\n ret;\n}\n",
        )
        .unwrap();
        let f = &m.functions[0];
        assert_eq!(f.name, "k");
        assert_eq!(f.maxntid, Some([64, 1, 1]));
        assert_eq!(f.params[0].name, "k_param_0");
        assert_eq!(f.symbols[0].size, Some(16));
        assert_eq!(f.instrs.len(), 4);
        assert_eq!(f.instrs[2].target, Some(1));
        assert_eq!(f.instrs[2].guard.map(|g| g.1), Some(true));
        match &f.instrs[1].operands[1] {
            Operand::Addr { offset, .. } => assert_eq!(*offset, 8),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn labels_are_scoped_to_their_block() {
        let m = parse(
            ".visible .entry k()\n{\n .reg .pred %p<2>;\n { W: nanosleep.u32 1; @%p1 bra W; }\n { W: nanosleep.u32 2; @%p1 bra W; }\n bra W;\n W: ret;\n}\n",
        )
        .unwrap();
        let f = &m.functions[0];
        assert_eq!(f.instrs[1].target, Some(0));
        assert_eq!(f.instrs[3].target, Some(2));
        assert_eq!(f.instrs[4].target, Some(5));
    }

    #[test]
    fn loc_follows_inlined_at() {
        let mut map = Stacks::default();
        let a = parse_loc(
            ".loc 1 14 23, function_name $x, inlined_at 1 43 7",
            &mut map,
        )
        .unwrap();
        let b = parse_loc(
            ".loc 2 153 3, function_name $y, inlined_at 1 14 23",
            &mut map,
        )
        .unwrap();
        let lines = |m: &Stacks, id: u32| -> Vec<u32> {
            m.list[id as usize].iter().map(|f| f.pos.line).collect()
        };
        assert_eq!(lines(&map, a.stack), [43, 14]);
        assert_eq!(lines(&map, b.stack), [43, 14, 153]);
        assert_eq!(b.candidates, NO_CANDIDATES);
        // The same helper called at line 44 too: a later `.loc` inside it, naming only the
        // helper's position, may be in either call.
        parse_loc(
            ".loc 1 14 23, function_name $x, inlined_at 1 44 7",
            &mut map,
        )
        .unwrap();
        // (Right after it, the `.loc` would be the next link of its chain: not ambiguous.)
        map.chain = None;
        let c = parse_loc(
            ".loc 2 153 3, function_name $y, inlined_at 1 14 23",
            &mut map,
        )
        .unwrap();
        assert_eq!(lines(&map, c.stack), [44, 14, 153]);
        let cands: Vec<Vec<u32>> = map.candidates[c.candidates as usize]
            .iter()
            .map(|&s| lines(&map, s))
            .collect();
        assert_eq!(cands, [vec![43, 14, 153], vec![44, 14, 153]]);
        assert!(parse_loc(".loc 1 0 0", &mut map).is_none());
    }
}
