//! `phasecheck extract KERNEL.ptx --block X[,Y,Z] ...`: a kernel's PTX as a `.phase` protocol
//! (crate `ptx`, docs/ptx.md), and the `.ptx` handling of `verify` (the same options).

use crate::args::{Exit, parse_param};
use checker::Report;
use clap::Args;
use protocols::SourceFile;
use std::path::{Path, PathBuf};

/// Options for `.ptx` inputs (of `extract`, and of `verify`, `lint` and `confirm` when a file
/// ends in `.ptx`).
#[derive(Args, Debug, Clone, Default)]
pub struct PtxArgs {
    /// For .ptx files: the kernel (.entry) to extract; may be left out when there is one.
    #[arg(long, value_name = "NAME")]
    pub kernel: Option<String>,
    /// For .ptx files: threads per block, `X` or `X,Y,Z` (default: the kernel's .reqntid).
    #[arg(long, value_name = "X[,Y,Z]", value_parser = parse_block)]
    pub block: Option<[u32; 3]>,
    /// For .ptx files: blocks per cluster (default: the kernel's .reqnctapercluster, else 1).
    #[arg(long, value_name = "N")]
    pub cluster: Option<u32>,
    /// For .ptx files: a kernel parameter's value, `NAME=VALUE` (NAME: its index, `param_N` or
    /// its PTX name; `N+OFFSET` for a field of a struct parameter; for a tensor map, the bytes
    /// one copy through it moves). Repeatable.
    #[arg(long = "arg", value_name = "NAME=VALUE", value_parser = parse_param)]
    pub args: Vec<(String, i64)>,
    /// For .ptx files: the value every unknown produced at PTX line LINE takes (a load from
    /// global memory, a clock), `LINE=VALUE`; the error that needs it names the line.
    #[arg(long = "assume", value_name = "LINE=VALUE", value_parser = parse_param)]
    pub assume: Vec<(String, i64)>,
    /// For .ptx files: a launch recorded by `phasecheck capture`, `FILE` or `FILE#N`: its
    /// block, cluster and parameter bytes (--block, --cluster and --arg win over it).
    #[arg(long, value_name = "FILE[#N]")]
    pub launch: Option<String>,
    /// Shared memory as whole regions, no `bytes OFF .. +LEN` ranges: what `lower`, `fuzz` and
    /// `confirm` extract (the GPU harness checks whole buffer instances). Coarser: it may
    /// report races between disjoint bytes.
    #[arg(long)]
    pub whole_buffers: bool,
}

/// `X`, `X,Y` or `X,Y,Z` (also with `x`).
pub fn parse_block(s: &str) -> Result<[u32; 3], String> {
    let mut v = [1u32; 3];
    let parts: Vec<&str> = s.split([',', 'x', 'X']).map(str::trim).collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}` is not a block size (X, X,Y or X,Y,Z)"));
    }
    for (i, p) in parts.iter().enumerate() {
        v[i] = p
            .parse()
            .ok()
            .filter(|&n: &u32| n > 0)
            .ok_or_else(|| format!("`{s}` is not a block size (X, X,Y or X,Y,Z)"))?;
    }
    Ok(v)
}

#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// The .ptx file (e.g. from `nvcc -arch=sm_90a -ptx -lineinfo kernel.cu`).
    pub file: PathBuf,
    #[command(flatten)]
    pub ptx: PtxArgs,
    /// Write the protocol here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
}

pub fn is_ptx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ptx"))
}

pub fn options(a: &PtxArgs) -> ptx::Options {
    ptx::Options {
        kernel: a.kernel.clone(),
        block: a.block,
        cluster: a.cluster,
        args: a.args.clone(),
        assume: a.assume.clone(),
        max_steps: None,
        launch: None,
        whole_buffers: a.whole_buffers,
    }
}

/// `options` with `--launch` resolved against the kernels of the PTX `text` (crate `capture`).
fn options_for(a: &PtxArgs, text: &str) -> Result<ptx::Options, String> {
    let mut o = options(a);
    let Some(spec) = &a.launch else { return Ok(o) };
    let r = capture::load(spec, &ptx::kernel_names(text)?, a.kernel.as_deref())?;
    o.kernel = Some(r.kernel);
    o.block = o.block.or(Some(r.block));
    o.cluster = o.cluster.or(r.cluster);
    o.launch = Some(ptx::Launch {
        name: spec.clone(),
        param_bytes: r.param_bytes.into_iter().collect(),
        map_bytes: r.map_bytes.into_iter().collect(),
        notes: r.notes,
    });
    Ok(o)
}

/// Extract the PTX `text` of file `name` (`lint`); the error is the message to print.
pub fn extract_text(text: &str, name: &str, a: &PtxArgs) -> Result<ptx::Extracted, String> {
    let opts = options_for(a, text)?;
    ptx::extract(text, name, &opts).map_err(|e| e.to_string())
}

/// Extract `path`; the error is the message to print (after `error: `).
pub fn extract_path(path: &Path, a: &PtxArgs) -> Result<ptx::Extracted, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let opts = options_for(a, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    let ex = ptx::extract(&text, &path.display().to_string(), &opts)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    for w in &ex.warnings {
        eprintln!("warning: {}: {w}", path.display());
    }
    Ok(ex)
}

/// Extract `path`; errors are printed.
fn extract_file(path: &Path, a: &PtxArgs) -> Result<ptx::Extracted, ()> {
    extract_path(path, a).map_err(|e| eprintln!("error: {e}"))
}

impl PtxArgs {
    /// The options as command-line arguments (for a child `phasecheck` process).
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(k) = &self.kernel {
            out.extend(["--kernel".to_string(), k.clone()]);
        }
        if let Some([x, y, z]) = self.block {
            out.extend(["--block".to_string(), format!("{x},{y},{z}")]);
        }
        if let Some(c) = self.cluster {
            out.extend(["--cluster".to_string(), c.to_string()]);
        }
        for (k, v) in &self.args {
            out.extend(["--arg".to_string(), format!("{k}={v}")]);
        }
        for (k, v) in &self.assume {
            out.extend(["--assume".to_string(), format!("{k}={v}")]);
        }
        if let Some(l) = &self.launch {
            out.extend(["--launch".to_string(), l.clone()]);
        }
        if self.whole_buffers {
            out.push("--whole-buffers".to_string());
        }
        out
    }
}

pub fn run(args: &ExtractArgs) -> Exit {
    let Ok(ex) = extract_file(&args.file, &args.ptx) else {
        return Exit::BadInput;
    };
    // The protocol must load: anything else is a bug of the front end, not of the kernel.
    let file = SourceFile::new(args.file.display().to_string(), &ex.text);
    if let Err(errors) = protocols::load(&file, &[]) {
        eprint!("{}", crate::report::load_errors::human(&errors));
        eprintln!("error: the extracted protocol does not load (a bug of the PTX front end)");
        return Exit::BadInput;
    }
    match &args.output {
        Some(p) => {
            if let Err(e) = std::fs::write(p, &ex.text) {
                eprintln!("error: cannot write {}: {e}", p.display());
                return Exit::BadInput;
            }
        }
        None => print!("{}", ex.text),
    }
    Exit::Clean
}

/// For `verify`: a `.ptx` file becomes the text of its extracted protocol (reported under the
/// `.ptx` name); other files pass through. The error (printed on stderr) is its message.
pub(crate) fn for_verify(
    file: SourceFile,
    path: &Path,
    a: &PtxArgs,
) -> Result<(SourceFile, Option<ptx::Extracted>), String> {
    if !is_ptx(path) {
        return Ok((file, None));
    }
    let ex = extract_path(path, a).inspect_err(|e| eprintln!("error: {e}"))?;
    Ok((SourceFile::new(file.name.clone(), &ex.text), Some(ex)))
}

/// After a report on an extracted protocol: where each finding is in the CUDA source and PTX.
pub fn annotate(file: &SourceFile, ex: &ptx::Extracted, report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let line = file.line_of(f.span);
        if let Some(at) = ex.describe_line(line) {
            out.push_str(&format!(
                "  {} (line {line} of the extracted protocol) is at {at}\n",
                f.rule.name
            ));
        }
        for l in &f.labels {
            let ll = file.line_of(l.span);
            if ll != line
                && let Some(at) = ex.describe_line(ll)
            {
                out.push_str(&format!("    {}: line {ll} is at {at}\n", l.message));
            }
        }
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            &format!(
                "{}: findings in the source (`phasecheck extract {}` prints the protocol):\n",
                file.name, file.name
            ),
        );
    }
    for n in &ex.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

/// `lower::load` for a file that may be a `.ptx` file (`confirm`): then the protocol extracted
/// from it, under the `.ptx` name.
pub fn load_any(
    path: &Path,
    params: &[(String, i64)],
    a: &PtxArgs,
) -> Result<(SourceFile, protocols::ir::Program), (Exit, String)> {
    if !is_ptx(path) {
        return crate::cmd::lower::load(path, params);
    }
    // The harness checks whole buffer instances: no byte ranges (ptx::Options::whole_buffers).
    let a = &PtxArgs {
        whole_buffers: true,
        ..a.clone()
    };
    let ex = extract_path(path, a).map_err(|e| {
        eprintln!("error: {e}");
        (Exit::BadInput, e)
    })?;
    let file = SourceFile::new(path.display().to_string(), ex.text);
    match protocols::load(&file, params) {
        Ok(p) => Ok((file, p)),
        Err(errors) => {
            eprint!("{}", crate::report::load_errors::human(&errors));
            let msg = format!(
                "the protocol extracted from {} does not load (a bug of the PTX front end)",
                path.display()
            );
            eprintln!("error: {msg}");
            Err((Exit::BadInput, msg))
        }
    }
}
