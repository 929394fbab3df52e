//! The PTX front end: a kernel's PTX -> its synchronization skeleton as a `.phase` protocol.
//!
//! `extract` parses the PTX ([`parse`]), runs every thread of one cluster concretely
//! (`exec.rs`: special registers, `--arg` parameters and shared-symbol addresses are known,
//! global memory is not) keeping each thread's synchronization and shared-memory events, and
//! writes them as `.phase` text (`emit.rs`): objects from the shared symbols, one top-level
//! `syncthreads` per `__syncthreads`, roles for threads with the same events, loops for
//! repeated blocks. The text loads with `protocols::load` like any `.phase` file, so the
//! checker and everything downstream work unchanged; [`Extracted::lines`] maps each generated
//! line back to its PTX line and CUDA source line. docs/ptx.md has the details.

mod converged;
mod emit;
mod events;
mod exec;
mod fit;
mod given;
mod inline;
mod mem;
mod multicast;
pub mod parse;
mod value;

use parse::SrcLoc;
use std::collections::HashMap;
use std::fmt;

/// What `phasecheck extract` / `verify` take for a `.ptx` file.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The kernel (`.entry`) to extract; may be left out when the file has one.
    pub kernel: Option<String>,
    /// Threads per block in x, y, z (default: the kernel's `.reqntid`).
    pub block: Option<[u32; 3]>,
    /// Blocks per cluster (default: the kernel's `.reqnctapercluster`, else 1).
    pub cluster: Option<u32>,
    /// `--arg NAME=VALUE`: kernel parameter values (NAME: the PTX name, `param_N`, or `N`; with
    /// `+OFFSET` for a byte of an aggregate). For a tensor-map parameter, the bytes one copy
    /// through it moves.
    pub args: Vec<(String, i64)>,
    /// `--assume LINE=VALUE`: the value every unknown produced at that PTX line takes.
    pub assume: Vec<(String, i64)>,
    /// Instructions one thread may run (default 20 million).
    pub max_steps: Option<u64>,
    /// A captured launch (`--launch FILE#N`): the values of every parameter.
    pub launch: Option<Launch>,
    /// Shared-memory accesses as whole regions (`write part` where no other thread stores to
    /// the bytes, else whole-region accesses), never `bytes OFF .. +LEN`: for the GPU harness
    /// (`lower`, `fuzz`, `confirm`), which checks races per buffer instance and cannot lower
    /// byte ranges. Coarser, so it may report races between disjoint bytes; `verify` keeps the
    /// bytes.
    pub whole_buffers: bool,
}

/// What a captured launch (crate `capture`) gives the front end; `--arg` values win over it.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// `FILE#N`, for the header.
    pub name: String,
    /// Every parameter's bytes, by parameter index.
    pub param_bytes: HashMap<u32, Vec<u8>>,
    /// Bytes one copy through the tensor map at (parameter index, byte offset) moves.
    pub map_bytes: HashMap<(u32, u64), i64>,
    /// Told in the header (which launch; maps decoded heuristically).
    pub notes: Vec<String>,
}

/// Where a generated line came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// PTX lines (several for a loop written once for unrolled copies).
    pub ptx_lines: Vec<u32>,
    pub src: Option<SrcLoc>,
}

/// An error of the extraction, with its place in the PTX and the CUDA source.
#[derive(Clone, Debug)]
pub struct PtxError {
    pub message: String,
    pub ptx_line: Option<u32>,
    /// `file.cu:45` (and `via` an inlined helper's line).
    pub source: Option<String>,
    pub help: Option<String>,
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.ptx_line, &self.source) {
            (Some(l), Some(s)) => write!(f, "PTX line {l} ({s}): ")?,
            (Some(l), None) => write!(f, "PTX line {l}: ")?,
            _ => {}
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PtxError {}

/// Internal error: the source position is rendered with the file table at the boundary.
#[derive(Clone, Debug)]
pub(crate) struct Error {
    pub message: String,
    pub line: Option<u32>,
    /// Boxed: a `SrcLoc` holds several positions, and this error travels in every `Result`.
    pub src: Option<Box<SrcLoc>>,
    pub help: Option<String>,
}

/// The extracted protocol.
#[derive(Clone, Debug)]
pub struct Extracted {
    /// The `.phase` text.
    pub text: String,
    /// Per line of `text` (0-based), where it came from.
    pub lines: Vec<Option<Origin>>,
    /// Assumptions and limits worth telling the user (also in the text's header).
    pub notes: Vec<String>,
    /// Given values (`--arg`, `--launch`) that look wrong: the kernel does no work, a copy
    /// runs past its buffer (also in the header).
    pub warnings: Vec<String>,
    /// The kernel's name as in the PTX.
    pub kernel: String,
    /// `.file` table of the PTX.
    pub files: HashMap<u32, String>,
    /// The line every instruction is inlined into, if there is one (see [`SrcLoc::shown`]).
    pub trampoline: Option<parse::Pos>,
    /// The inline stacks of the PTX's `.loc`s (outermost frame first), for
    /// [`SrcLoc::stack`].
    pub stacks: Vec<Vec<parse::Frame>>,
    /// PTX lines whose inlined call the `.loc`s and the events leave open, with the CUDA
    /// lines of the calls they may be in (`inline::resolve`).
    pub ambiguous: HashMap<u32, Vec<u32>>,
}

impl Extracted {
    /// Where the 1-based line `line` of the text came from: `db.cu:43 (PTX line 254)`.
    pub fn describe_line(&self, line: u32) -> Option<String> {
        let o = self.lines.get(line.checked_sub(1)? as usize)?.as_ref()?;
        let ptx = match o.ptx_lines.as_slice() {
            [one] => format!("PTX line {one}"),
            many => format!(
                "PTX lines {}",
                many.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Some(match &o.src {
            Some(s) => format!(
                "{}{}{} ({ptx})",
                source_text(s, &self.files, self.trampoline),
                self.callers(s),
                self.alternatives(&o.ptx_lines, s)
            ),
            None => ptx,
        })
    }

    /// `, called at sm90_gemm_tma_warpspecialized.hpp:435, device_kernel.h:123`: the call
    /// sites outside the shown frame, innermost first, when the shown frame is not the
    /// outermost one (a lambda's body, a CUTLASS collective, the frame inside a trampoline).
    fn callers(&self, s: &SrcLoc) -> String {
        let shown = s.shown(self.trampoline);
        let Some(frames) = self.stacks.get(s.stack as usize) else {
            return String::new();
        };
        let Some(at) = frames.iter().rposition(|f| f.pos == shown) else {
            return String::new();
        };
        if at == 0 {
            return String::new();
        }
        let sites: Vec<String> = frames[..at]
            .iter()
            .rev()
            .map(|f| format!("{}:{}", file_name(&self.files, f.pos.file), f.pos.line))
            .collect();
        format!(", called at {}", sites.join(", "))
    }

    /// ` (or line 118: the PTX does not say which call)` when the instructions' inlined call
    /// is left open.
    fn alternatives(&self, ptx_lines: &[u32], s: &SrcLoc) -> String {
        let shown = s.shown(self.trampoline).line;
        let mut other: Vec<u32> = ptx_lines
            .iter()
            .filter_map(|l| self.ambiguous.get(l))
            .flatten()
            .copied()
            .filter(|&l| l != shown)
            .collect();
        other.sort_unstable();
        other.dedup();
        if other.is_empty() {
            return String::new();
        }
        let list: Vec<String> = other.iter().map(u32::to_string).collect();
        format!(
            " (or line {}: the PTX does not say which call)",
            list.join(" or ")
        )
    }

    /// The CUDA source position (file path as in `.file`, line) of a generated line.
    pub fn source_of_line(&self, line: u32) -> Option<(String, u32)> {
        let o = self.lines.get(line.checked_sub(1)? as usize)?.as_ref()?;
        let u = o.src?.shown(self.trampoline);
        Some((self.files.get(&u.file)?.clone(), u.line))
    }
}

/// `db.cu:43`, or `db.cu:43 (via line 13)` / `db.cu:43 (via helper.h:13)` for a position
/// inside an inlined helper (`trampoline`: see [`SrcLoc::shown`]).
pub fn source_text(
    s: &SrcLoc,
    files: &HashMap<u32, String>,
    trampoline: Option<parse::Pos>,
) -> String {
    let name = |f: u32| file_name(files, f);
    let u = s.shown(trampoline);
    if s.outer.is_some() && s.inner != u {
        let inner = if s.inner.file == u.file {
            format!("line {}", s.inner.line)
        } else {
            format!("{}:{}", name(s.inner.file), s.inner.line)
        };
        format!("{}:{} (via {inner})", name(u.file), u.line)
    } else {
        format!("{}:{}", name(u.file), u.line)
    }
}

/// The file name of `.file` entry `f` (without its folders).
fn file_name(files: &HashMap<u32, String>, f: u32) -> String {
    files
        .get(&f)
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .unwrap_or_else(|| format!("file{f}"))
}

fn to_public(e: Error, files: &HashMap<u32, String>) -> PtxError {
    PtxError {
        message: e.message,
        ptx_line: e.line,
        source: e.src.map(|s| source_text(&s, files, None)),
        help: e.help,
    }
}

fn plain(message: String, help: Option<String>) -> PtxError {
    PtxError {
        message,
        ptx_line: None,
        source: None,
        help,
    }
}

/// Which parameter `key` names: `3`, `param_3`, the full PTX name; with `+OFFSET`.
fn resolve_param(f: &parse::Function, key: &str) -> Result<(u32, u64), PtxError> {
    let (name, off) = match key.rsplit_once('+') {
        Some((n, o)) if o.trim().parse::<u64>().is_ok() => {
            (n.trim(), o.trim().parse().unwrap_or(0))
        }
        _ => (key.trim(), 0),
    };
    let idx = if let Ok(i) = name.parse::<u32>() {
        ((i as usize) < f.params.len()).then_some(i)
    } else {
        f.params
            .iter()
            .position(|p| p.name == name)
            .or_else(|| {
                f.params
                    .iter()
                    .position(|p| p.name.ends_with(&format!("_{name}")))
            })
            .map(|i| i as u32)
    };
    idx.map(|i| (i, off)).ok_or_else(|| {
        let list: Vec<String> = f
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{i}: {} ({}, {} bytes)", p.name, p.ty, p.size))
            .collect();
        plain(
            format!("--arg {key}: kernel `{}` has no such parameter", f.name),
            Some(format!(
                "its parameters are {} (name one by index, by `param_N` or by its PTX name)",
                if list.is_empty() {
                    "none".into()
                } else {
                    list.join("; ")
                }
            )),
        )
    })
}

/// The kernels (`.entry` names) of a PTX text, for `--launch` to pick a launch of one.
pub fn kernel_names(ptx: &str) -> Result<Vec<String>, String> {
    let module = parse::parse(ptx)
        .map_err(|e| format!("cannot parse the PTX: line {}: {}", e.line, e.message))?;
    Ok(module
        .functions
        .iter()
        .filter(|f| f.entry)
        .map(|f| f.name.clone())
        .collect())
}

/// Extract kernel `opts.kernel` of the PTX text as a `.phase` protocol.
pub fn extract(ptx: &str, ptx_name: &str, opts: &Options) -> Result<Extracted, PtxError> {
    let module = parse::parse(ptx).map_err(|e| PtxError {
        message: format!("cannot parse the PTX: {}", e.message),
        ptx_line: Some(e.line),
        source: None,
        help: None,
    })?;
    let entries: Vec<&parse::Function> = module.functions.iter().filter(|f| f.entry).collect();
    let names = || {
        entries
            .iter()
            .map(|f| format!("{} ({})", f.name, emit::demangle_local(&f.name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let func = match &opts.kernel {
        Some(k) => entries
            .iter()
            .find(|f| f.name == *k)
            .or_else(|| entries.iter().find(|f| emit::demangle_local(&f.name) == *k))
            .copied()
            .ok_or_else(|| {
                plain(
                    format!("{ptx_name} has no kernel `{k}`"),
                    Some(format!("its kernels are {}", names())),
                )
            })?,
        None => match entries.as_slice() {
            [one] => *one,
            [] => return Err(plain(format!("{ptx_name} has no kernel (.entry)"), None)),
            _ => {
                return Err(plain(
                    format!(
                        "{ptx_name} has {} kernels: say which with --kernel",
                        entries.len()
                    ),
                    Some(format!("its kernels are {}", names())),
                ));
            }
        },
    };
    let block = opts.block.or(func.reqntid).ok_or_else(|| {
        plain(
            format!(
                "the block size of kernel `{}` is not in the PTX: give it with --block X[,Y,Z]",
                func.name
            ),
            func.maxntid.map(|m| {
                format!(
                    "its __launch_bounds__ allow at most {} threads",
                    m[0] * m[1] * m[2]
                )
            }),
        )
    })?;
    let nthreads = block[0] as u64 * block[1] as u64 * block[2] as u64;
    if nthreads == 0 || nthreads > 1024 {
        return Err(plain(
            format!("a block of {nthreads} threads (1 to 1024 allowed)"),
            None,
        ));
    }
    if let Some(m) = func.maxntid
        && nthreads > m[0] as u64 * m[1] as u64 * m[2] as u64
    {
        return Err(plain(
            format!(
                "kernel `{}` allows at most {} threads per block (.maxntid), not {nthreads}",
                func.name,
                m[0] * m[1] * m[2]
            ),
            None,
        ));
    }
    // A block smaller than the kernel's `.maxntid` is legal, but a kernel written for its
    // maximum (ThunderKittens' attention kernel: three consumer warp groups and a producer
    // one in 512 threads) may wait for threads that do not exist: say which ones are left out.
    let mut size_note = None;
    if let Some(m) = func.maxntid
        && func.reqntid.is_none()
    {
        let max = m[0] as u64 * m[1] as u64 * m[2] as u64;
        if nthreads < max {
            let (w1, w2) = (nthreads.div_ceil(32), (max - 1) / 32);
            let warps = if !nthreads.is_multiple_of(32) {
                format!(
                    "threads {nthreads}..{} (lanes {}..31 of warp {}{})",
                    max - 1,
                    nthreads % 32,
                    nthreads / 32,
                    if w1 <= w2 {
                        format!(" and warps {w1}..{w2}")
                    } else {
                        String::new()
                    }
                )
            } else if w1 == w2 {
                format!("warp {w1} (threads {nthreads}..{})", max - 1)
            } else {
                format!("warps {w1}..{w2} (threads {nthreads}..{})", max - 1)
            };
            size_note = Some(format!(
                "kernel `{}` is compiled for up to {max} threads per block (.maxntid) and runs \
                 here with {nthreads}: {warps} are left out; if the kernel gives them a role \
                 (a producer warp group, say), the threads that wait for them wait forever, \
                 and the protocol has no statement of theirs",
                func.name
            ));
        }
    }
    let cluster = opts
        .cluster
        .or(func.reqnctapercluster.map(|c| c[0] * c[1] * c[2]))
        .unwrap_or(1);
    if !(1..=16).contains(&cluster) {
        return Err(plain(
            format!("a cluster of {cluster} blocks (1 to 16 allowed)"),
            None,
        ));
    }
    let mut params = HashMap::new();
    for (k, v) in &opts.args {
        params.insert(resolve_param(func, k)?, *v);
    }
    let mut assume = HashMap::new();
    for (k, v) in &opts.assume {
        let line: u32 = k
            .trim()
            .trim_start_matches("line")
            .trim()
            .parse()
            .map_err(|_| {
                plain(
                    format!("--assume {k}={v}: the name must be a PTX line number"),
                    Some(
                        "the error that asks for a value names the line: `--assume 120=VALUE`"
                            .into(),
                    ),
                )
            })?;
        assume.insert(line, *v);
    }
    let (param_bytes, mut map_bytes) = match &opts.launch {
        Some(l) => (l.param_bytes.clone(), l.map_bytes.clone()),
        None => Default::default(),
    };
    map_bytes.extend(params.iter().map(|(k, v)| (*k, *v)));
    let cfg = exec::Config {
        block,
        cluster,
        params,
        param_bytes,
        map_bytes,
        assume,
        max_steps: opts.max_steps.unwrap_or(20_000_000),
    };
    let files = module.files.clone();
    let mut ex = exec::Exec::new(&module, func, &cfg).map_err(|e| to_public(e, &files))?;
    let mut traces = ex.run_all().map_err(|e| to_public(e, &files))?;
    let warnings = if opts.args.is_empty() && opts.launch.is_none() {
        Vec::new()
    } else {
        given::warnings(&traces, &ex.shared, func, &cfg.map_bytes)
    };
    let wgmma_kind = |i: u32| {
        let ins = &func.instrs[i as usize];
        match (ins.base(), ins.parts.get(1).map(String::as_str)) {
            ("wgmma", Some("mma_async")) => converged::Wgmma::MmaAsync,
            ("wgmma", Some("commit_group")) => converged::Wgmma::Commit,
            _ => converged::Wgmma::Other,
        }
    };
    let converged_note = converged::lower(&mut traces, &wgmma_kind);
    let strong_note = drop_strong_only(&mut traces, func);
    let (resolved, ambiguous) = inline::resolve(&module, func, &traces, &ex.shared);
    let func = &resolved;
    let ambiguous_note = (!ambiguous.is_empty()).then(|| {
        let list: Vec<String> = ambiguous
            .iter()
            .map(|(l, cands)| {
                let c: Vec<String> = cands.iter().map(u32::to_string).collect();
                format!("PTX line {l} (CUDA lines {})", c.join(" or "))
            })
            .collect();
        format!(
            "the PTX's `.loc` does not say which of several inlined calls these instructions \
             are in, and their events do not tell either; each is shown at the last call \
             written: {}",
            list.join(", ")
        )
    });
    let mut out = emit::build(emit::Input {
        module: &module,
        func,
        traces,
        shared: &ex.shared,
        nthreads: nthreads as u32,
        cluster,
        params: &cfg.map_bytes,
        whole_buffers: opts.whole_buffers,
    })
    .map_err(|e| to_public(e, &files))?;
    out.notes.extend(converged_note);
    out.notes.extend(strong_note);
    out.notes.extend(size_note);
    out.notes.extend(ambiguous_note);
    out.notes.extend(elect_note(&ex.elected_lowest));

    let mut header = vec![
        format!(
            "Extracted by `phasecheck extract` from {ptx_name}, kernel `{}`.",
            func.name
        ),
        if block[1] == 1 && block[2] == 1 {
            format!("Block {nthreads} threads, cluster {cluster}.")
        } else {
            format!(
                "Block {} x {} x {} = {nthreads} threads (tid = x + {} * y + {} * z), cluster \
                 {cluster}.",
                block[0],
                block[1],
                block[2],
                block[0],
                block[0] * block[1]
            )
        },
    ];
    if !opts.args.is_empty() || !opts.assume.is_empty() || opts.launch.is_some() {
        let mut given: Vec<String> = opts
            .launch
            .iter()
            .map(|l| format!("--launch {}", l.name))
            .collect();
        given.extend(opts.args.iter().map(|(k, v)| format!("--arg {k}={v}")));
        given.extend(opts.assume.iter().map(|(k, v)| format!("--assume {k}={v}")));
        header.push(format!("Given: {}.", given.join(" ")));
    }
    header.push(
        "Each statement's comment names its CUDA source line (`via` the line inside an inlined \
         helper) and its PTX line."
            .into(),
    );
    if let Some(l) = &opts.launch {
        out.notes.splice(0..0, l.notes.iter().cloned());
    }
    for n in &out.notes {
        header.push(format!("Note: {n}."));
    }
    for w in &warnings {
        header.push(format!("Warning: {w}."));
    }
    let mut text = String::new();
    let mut lines = Vec::new();
    for h in &header {
        text.push_str(&format!("# {h}\n"));
        lines.push(None);
    }
    text.push_str(&out.text);
    lines.extend(out.lines);
    Ok(Extracted {
        text,
        lines,
        notes: out.notes,
        warnings,
        kernel: func.name.clone(),
        files,
        trampoline: out.trampoline,
        stacks: module.stacks.clone(),
        ambiguous: ambiguous.into_iter().collect(),
    })
}

/// The note on the `elect.sync`s at `lines` (PTX lines) that chose among several lanes: the
/// extraction computed each as the lowest lane of its mask, and what the elected lane does
/// is written for that lane. The ISA does not promise it ("elects one predicated active
/// leader thread from among a set of threads specified by membermask", "the same leader
/// thread ... for the same membermask every time", PTX ISA 9.0 `elect.sync`); an H200 elects
/// the lowest lane (docs/gpu.md, "Which lane elect.sync elects"). The language's `elect { }`
/// would let the checker try every leader; the extraction does not write it yet.
fn elect_note(lines: &std::collections::BTreeSet<u32>) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    let list: Vec<String> = lines.iter().map(u32::to_string).collect();
    Some(format!(
        "`elect.sync` at PTX line{} {} is taken to elect the lowest lane of its mask, as an \
         H200 does (docs/gpu.md, \"Which lane elect.sync elects\"), and what the elected lane \
         does is written for that lane; the PTX ISA promises only some lane, the same one for \
         the same mask, so a kernel that is correct only when the lowest lane leads is not \
         caught from this extraction (the language's `elect {{ }}` checks every leader)",
        if lines.len() == 1 { "" } else { "s" },
        list.join(", ")
    ))
}

/// Whether an instruction's memory access is *strong* (PTX memory model: an atomic, or a load
/// or store that is `.relaxed`, `.acquire` or `.release`, as `cuda::atomic_ref` writes them).
/// Two strong accesses of the same scope never race. `.volatile` is not counted: it is how
/// CUDA C++ `volatile` accesses come out, which are data races in C++ (and in the model).
fn is_strong(ins: &parse::Instr) -> bool {
    match ins.base() {
        "atom" | "red" => true,
        "ld" | "st" => ["relaxed", "acquire", "release"].iter().any(|q| ins.has(q)),
        _ => false,
    }
}

/// Leave out the shared-memory accesses of bytes that only strong accesses touch (a
/// reference count that libcu++ updates with atomics, say): they never race, and the
/// language has no atomic access to write them with. Bytes that plain accesses also touch keep
/// every access, as writes and reads. Returns a note when any was left out.
fn drop_strong_only(traces: &mut [events::Trace], func: &parse::Function) -> Option<String> {
    use events::Ev;
    // Every own-block access range, with whether it is strong.
    let mut spans: Vec<(u64, u64, bool)> = Vec::new();
    let mut remote = false;
    for t in traces.iter() {
        for e in &t.events {
            let strong = is_strong(&func.instrs[e.instr as usize]);
            let r = match &e.ev {
                Ev::Read(r) | Ev::Write(r, _) => (r.at, r.len, strong),
                Ev::Mma(r) => (r.at, r.len, false),
                Ev::CpAsync { dst } => (dst.at, dst.len, false),
                Ev::Copy { dst, bytes, .. } => (
                    *dst,
                    match bytes {
                        events::CopyBytes::Known(n) => (*n).max(1) as u64,
                        _ => 1 << 20,
                    },
                    false,
                ),
                Ev::TmaStore { src, len, .. } => (*src, len.unwrap_or(1 << 20), false),
                _ => continue,
            };
            if r.0.rank.is_some_and(|k| k != t.rank) {
                remote = true;
                continue;
            }
            spans.push((r.0.off, r.0.off + r.1.max(1), r.2));
        }
    }
    if remote || !spans.iter().any(|s| s.2) {
        return None;
    }
    // Clusters of overlapping ranges; keep those whose accesses are all strong.
    spans.sort_unstable();
    let mut strong_only: Vec<(u64, u64)> = Vec::new();
    let mut cur: Option<(u64, u64, bool)> = None;
    for (lo, hi, strong) in spans {
        cur = match cur {
            Some((a, b, s)) if lo < b => Some((a, b.max(hi), s && strong)),
            Some((a, b, s)) => {
                if s {
                    strong_only.push((a, b));
                }
                Some((lo, hi, strong))
            }
            None => Some((lo, hi, strong)),
        };
    }
    if let Some((a, b, true)) = cur {
        strong_only.push((a, b));
    }
    if strong_only.is_empty() {
        return None;
    }
    let inside = |off: u64| strong_only.iter().any(|&(a, b)| a <= off && off < b);
    let mut lines = std::collections::BTreeSet::new();
    for t in traces.iter_mut() {
        t.events.retain(|e| match &e.ev {
            Ev::Read(r) | Ev::Write(r, _)
                if r.at.rank.is_none_or(|k| k == t.rank) && inside(r.at.off) =>
            {
                lines.insert(func.instrs[e.instr as usize].line);
                false
            }
            _ => true,
        });
    }
    let lines: Vec<String> = lines.iter().map(u32::to_string).collect();
    Some(format!(
        "shared memory that only atomic or .relaxed/.acquire/.release accesses touch is left out \
         (they never race with each other): PTX lines {}",
        lines.join(", ")
    ))
}
