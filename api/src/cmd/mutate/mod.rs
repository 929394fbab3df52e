//! `phasecheck mutate PATH...`: systematic mutants of each protocol ([`operators`]: a flipped
//! parity, a count off by one, `arrive` <-> `arrive_drop`, a removed wait or fence, a swapped
//! stage index, other transaction bytes, an early exit without a drop, one role's trip count
//! off by one, an arrive moved before the access it publishes), each checked with bounded
//! options; per file a table of the mutants with the checker's verdict and rules, and the
//! mutation score (the share of mutants the checker flags as a hazard).
//!
//! With `--gpu`, each mutant is also fuzzed and its findings replayed on the GPU ([`gpu`], one
//! child process per mutant), and the checker's verdicts are set against what the GPU showed:
//! a mutant the GPU shows a hazard in while the checker calls it ok is a checker bug (exit 1).
//!
//! Parameters (docs/ci.md): those of the file's first `expect ok ... with` line, else the
//! nearest phasecheck.toml's `[[params]]` for the file, else the first `expect ... with` line,
//! else the declared values (`--declared` forces those); `-p` overrides on top.

pub(crate) mod gpu;
pub use campaign::mutate::operators;
mod report;

use crate::args::{Exit, Format, MutateArgs, TimeLimit};
use crate::budget::Budget;
use crate::config;
use crate::expectations;
use crate::status::Status;
pub(crate) use campaign::mutate::{Loaded, Skipped};
use checker::{CheckOptions, Severity, Verdict};
use operators::Change;
pub(crate) use operators::Operator;
use protocols::SourceFile;
use protocols::ir::{ExpectVerdict, Program};
use std::path::{Path, PathBuf};

/// Where a file's parameters come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParamsFrom {
    /// The declared values (`--declared`, or nothing smaller was found).
    Declared,
    /// The file's first `expect ok ... with` line (its 1-based line).
    ExpectOk(u32),
    /// The nearest phasecheck.toml's `[[params]]`.
    Config(PathBuf),
    /// The file's first `expect ... with` line, of another verdict.
    Expect(u32),
}

impl ParamsFrom {
    fn key(&self) -> &'static str {
        match self {
            ParamsFrom::Declared => "declared",
            ParamsFrom::ExpectOk(_) => "expect-ok-line",
            ParamsFrom::Config(_) => "config",
            ParamsFrom::Expect(_) => "expect-line",
        }
    }

    fn describe(&self) -> String {
        match self {
            ParamsFrom::Declared => "the declared values".into(),
            ParamsFrom::ExpectOk(l) => format!("the file's first `expect ok ... with` line, {l}"),
            ParamsFrom::Config(p) => {
                // The finder's path is canonical: show it from the current folder when below.
                let cwd = std::env::current_dir()
                    .and_then(std::fs::canonicalize)
                    .unwrap_or_default();
                let shown = p.strip_prefix(&cwd).unwrap_or(p);
                format!("[[params]] of {}", shown.display())
            }
            ParamsFrom::Expect(l) => format!("the file's first `expect ... with` line, {l}"),
        }
    }
}

/// The checker's answer for one program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict4 {
    Ok,
    Hazard,
    Inconclusive,
    /// The checker panicked (a checker bug).
    Error,
}

impl Verdict4 {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Verdict4::Ok => "ok",
            Verdict4::Hazard => "hazard",
            Verdict4::Inconclusive => "inconclusive",
            Verdict4::Error => "error",
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) verdict: Verdict4,
    /// Rules of the error-level findings, in report order, each once.
    pub(crate) rules: Vec<&'static str>,
    /// Why the search stopped early, or the checker's panic.
    pub(crate) note: Option<String>,
    pub(crate) states: u64,
    pub(crate) elapsed_ms: u64,
}

pub(crate) struct MutantResult {
    /// 1-based, over the mutants of the file that load.
    pub(crate) id: usize,
    pub(crate) operator: Operator,
    pub(crate) change: Change,
    pub(crate) checked: Checked,
    pub(crate) gpu: Option<gpu::GpuOutcome>,
}

pub(crate) struct FileRun {
    pub(crate) name: String,
    pub(crate) protocol: String,
    /// The values every parameter has (overridden or declared).
    pub(crate) params: Vec<(String, i64)>,
    pub(crate) params_from: ParamsFrom,
    /// The parameters `--param` set (on top of `params_from`).
    pub(crate) from_cli: Vec<String>,
    pub(crate) original: Checked,
    pub(crate) mutants: Vec<MutantResult>,
    pub(crate) skipped: Vec<Skipped>,
    /// Proposals whose text equals an earlier mutant's.
    pub(crate) duplicates: usize,
}

/// A file that could not be mutated (read, configuration or load failure).
pub(crate) struct BadFile {
    pub(crate) name: String,
    pub(crate) error: String,
}

/// What `--gpu` could do on this machine.
pub(crate) enum GpuState {
    /// No `--gpu`.
    Off,
    /// `--gpu`, but the GPU cannot be used: the reason (`no-gpu`, `driver-error`) and message.
    Skipped { reason: String, error: String },
    /// The device the children run on.
    On { device: String },
}

/// A file ready to mutate: its text, the parameters chosen and the program they load.
pub(crate) struct Prepared {
    pub(crate) path: PathBuf,
    pub(crate) file: SourceFile,
    pub(crate) overrides: Vec<(String, i64)>,
    pub(crate) params_from: ParamsFrom,
    pub(crate) program: Program,
}

/// The options every mutant is checked with.
pub(crate) fn check_options(args: &MutateArgs) -> CheckOptions {
    CheckOptions {
        max_states: args.max_states,
        max_memory_bytes: Budget::new(args.max_memory, 1).search_limit(None),
        max_loop_trips: args.max_loop_trips,
        max_time: args.max_time.0,
        ..CheckOptions::default()
    }
}

/// `--operator` values (repeatable, comma-separated).
fn parse_operators(names: &[String]) -> Result<Vec<Operator>, String> {
    let mut out = Vec::new();
    for n in names.iter().flat_map(|n| n.split(',')).map(str::trim) {
        if n.is_empty() {
            continue;
        }
        match Operator::parse(n) {
            Some(op) => out.push(op),
            None => {
                let all: Vec<&str> = Operator::ALL.iter().map(|o| o.name()).collect();
                return Err(format!(
                    "`{n}` is not a mutation operator (operators: {})",
                    all.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

/// The parameter values to mutate `file` at (see the module comment) and where they come from.
fn choose_params(
    args: &MutateArgs,
    path: &Path,
    file: &SourceFile,
    declared: &Program,
    finder: &mut config::Finder,
) -> Result<(Vec<(String, i64)>, ParamsFrom), String> {
    let with_line = |ok: bool| {
        declared
            .expects
            .iter()
            .find(|e| !e.overrides.is_empty() && (!ok || e.verdict == ExpectVerdict::Ok))
            .map(|e| (e.overrides.clone(), file.line_of(e.span)))
    };
    let (mut params, from) = if args.declared {
        (Vec::new(), ParamsFrom::Declared)
    } else if let Some((p, line)) = with_line(true) {
        (p, ParamsFrom::ExpectOk(line))
    } else {
        let config = if args.no_config {
            None
        } else {
            finder.for_file(path).map_err(|e| e.to_string())?
        };
        let from_config: Vec<(String, i64)> = config
            .as_ref()
            .map(|c| {
                c.params_for(path)
                    .into_iter()
                    .filter(|(n, _)| crate::cmd::lint::declares_param(&file.text, n))
                    .collect()
            })
            .unwrap_or_default();
        match (config, with_line(false)) {
            (Some(c), _) if !from_config.is_empty() => {
                (from_config, ParamsFrom::Config(c.path.clone()))
            }
            (_, Some((p, line))) => (p, ParamsFrom::Expect(line)),
            _ => (Vec::new(), ParamsFrom::Declared),
        }
    };
    for (n, v) in &args.params {
        if crate::cmd::lint::declares_param(&file.text, n) {
            params.retain(|(m, _)| m != n);
            params.push((n.clone(), *v));
        }
    }
    Ok((params, from))
}

/// Read a file, choose its parameters and load it with them.
pub(crate) fn prepare(
    args: &MutateArgs,
    path: &Path,
    finder: &mut config::Finder,
) -> Result<Prepared, BadFile> {
    let name = path.display().to_string();
    let bad = |error: String| BadFile {
        name: name.clone(),
        error,
    };
    let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let file = SourceFile::from_bytes(name.clone(), bytes).map_err(|errors| {
        eprint!("{}", crate::report::load_errors::human(&errors));
        bad("it is not UTF-8 text (E0004)".into())
    })?;
    let load_failed = |errors: protocols::LoadErrors| {
        eprint!("{}", crate::report::load_errors::human(&errors));
        bad(format!(
            "it does not load ({}; `phasecheck verify` shows them)",
            crate::report::count(errors.errors.len(), "load error")
        ))
    };
    let declared = protocols::load(&file, &[]).map_err(load_failed)?;
    let (overrides, params_from) =
        choose_params(args, path, &file, &declared, finder).map_err(bad)?;
    let program = protocols::load(&file, &overrides).map_err(load_failed)?;
    Ok(Prepared {
        path: path.to_path_buf(),
        file,
        overrides,
        params_from,
        program,
    })
}

/// Check one program with the mutate options; a checker panic is verdict `error`.
pub(crate) fn check(
    file: &SourceFile,
    program: &Program,
    options: &CheckOptions,
    status: &Status,
    what: String,
) -> Checked {
    let search = status.search(what, options.max_memory_bytes);
    let result =
        expectations::check_caught_with(file, program, options, Some(&|p| search.update(p)));
    drop(search);
    match result {
        Err(msg) => Checked {
            verdict: Verdict4::Error,
            rules: Vec::new(),
            note: Some(msg),
            states: 0,
            elapsed_ms: 0,
        },
        Ok(report) => {
            let mut rules: Vec<&'static str> = Vec::new();
            for f in report
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
            {
                if !rules.contains(&f.rule.name) {
                    rules.push(f.rule.name);
                }
            }
            let verdict = match report.verdict {
                Verdict::Ok => Verdict4::Ok,
                Verdict::Hazard => Verdict4::Hazard,
                Verdict::Inconclusive => Verdict4::Inconclusive,
            };
            Checked {
                verdict,
                rules,
                note: report.incomplete.map(|i| i.reason),
                states: report.stats.states,
                elapsed_ms: report.stats.elapsed_ms,
            }
        }
    }
}

/// The mutants of a prepared file that load ([`campaign::mutate::loaded_mutants`]).
pub(crate) fn loaded_mutants(
    prepared: &Prepared,
    only: &[Operator],
) -> (Vec<Loaded>, Vec<Skipped>, usize) {
    campaign::mutate::loaded_mutants(&prepared.file, &prepared.program, &prepared.overrides, only)
}

/// Every parameter's value, in declaration order.
fn param_values(program: &Program) -> Vec<(String, i64)> {
    program
        .params
        .iter()
        .map(|p| (p.name.clone(), p.value))
        .collect()
}

/// `90s` for a time limit, as `--max-time` reads it back.
pub(crate) fn time_arg(t: TimeLimit) -> String {
    match t.0 {
        Some(d) => format!("{}ms", d.as_millis()),
        None => "none".into(),
    }
}

pub fn run(args: &MutateArgs) -> Exit {
    let only = match parse_operators(&args.operators) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: --operator: {e}");
            return Exit::BadInput;
        }
    };
    for (name, v) in [
        ("--gpu-seconds", args.gpu_seconds),
        ("--confirm-seconds", args.confirm_seconds),
        ("--aim-seconds", args.aim_seconds),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            eprintln!("error: {name} must be a number of seconds, 0 or more");
            return Exit::BadInput;
        }
    }
    if args.max_states == 0 {
        eprintln!("error: --max-states must be at least 1");
        return Exit::BadInput;
    }
    if let Some(id) = args.gpu_child {
        return gpu::child(args, &only, id);
    }
    let paths = match crate::cmd::verify::expand(&args.files) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::BadInput;
        }
    };
    let mode = match crate::status::Mode::from_env() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::BadInput;
        }
    };
    let gpu_state = if args.gpu {
        gpu::probe(args)
    } else {
        GpuState::Off
    };
    if let GpuState::Skipped { error, .. } = &gpu_state {
        eprintln!("note: --gpu: no GPU can be used here, so the GPU part is skipped: {error}");
    }
    let options = check_options(args);
    let status = Status::new("mutate", mode, 0);
    let mut finder = config::Finder::default();
    let mut runs: Vec<FileRun> = Vec::new();
    let mut bad: Vec<BadFile> = Vec::new();
    for path in &paths {
        let prepared = match prepare(args, path, &mut finder) {
            Ok(p) => p,
            Err(b) => {
                eprintln!("error: {}: {}", b.name, b.error);
                bad.push(b);
                continue;
            }
        };
        let file = &prepared.file;
        let original = check(
            file,
            &prepared.program,
            &options,
            &status,
            format!("{} (original)", file.name),
        );
        let (loaded, skipped, duplicates) = loaded_mutants(&prepared, &only);
        let total = loaded.len();
        let mut mutants = Vec::new();
        for (i, m) in loaded.into_iter().enumerate() {
            let id = i + 1;
            // The mutant's own text: suppressions are matched by its spans.
            let checked = check(
                &m.file,
                &m.program,
                &options,
                &status,
                format!("{} (mutant {id} of {total})", file.name),
            );
            mutants.push(MutantResult {
                id,
                operator: m.operator,
                change: m.change,
                checked,
                gpu: None,
            });
        }
        if let GpuState::On { .. } = &gpu_state {
            let sampled = gpu_sample(&mutants, args.gpu_hazards);
            for (m, run_it) in mutants.iter_mut().zip(sampled) {
                if !run_it {
                    m.gpu = Some(gpu::GpuOutcome::sampled_out(args.gpu_hazards.unwrap_or(0)));
                    continue;
                }
                // Shown like a long search (on a terminal, or a line every 5 s in a log).
                let shown = status.search(
                    format!("{} (mutant {} of {total} on the GPU)", file.name, m.id),
                    0,
                );
                m.gpu = Some(crate::children::mutant_in_child(args, &prepared, &only, m));
                drop(shown);
            }
        }
        let run = FileRun {
            name: file.name.clone(),
            protocol: prepared.program.name.clone(),
            params: param_values(&prepared.program),
            params_from: prepared.params_from.clone(),
            from_cli: args
                .params
                .iter()
                .filter(|(n, _)| crate::cmd::lint::declares_param(&file.text, n))
                .map(|(n, _)| n.clone())
                .collect(),
            original,
            mutants,
            skipped,
            duplicates,
        };
        if args.format == Format::Human {
            status.suspend(|| print!("{}", report::human_file(&run, &gpu_state)));
        }
        runs.push(run);
    }
    drop(status);
    let disagreements = report::disagreements(&runs);
    let panics = runs
        .iter()
        .flat_map(|r| &r.mutants)
        .filter(|m| m.checked.verdict == Verdict4::Error)
        .count();
    let exit = if !bad.is_empty() {
        Exit::BadInput
    } else if !disagreements.is_empty() || panics > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    };
    match args.format {
        Format::Human => print!("{}", report::human_totals(&runs, &bad, &gpu_state)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&report::json(args, &runs, &bad, &gpu_state, exit))
                .expect("JSON values serialize")
        ),
    }
    if !disagreements.is_empty() {
        eprintln!(
            "error: CHECKER BUG: the GPU showed a hazard in {} the checker calls ok: {}",
            crate::report::count(disagreements.len(), "mutant"),
            disagreements.join(", ")
        );
    }
    if panics > 0 {
        eprintln!(
            "error: CHECKER BUG: the checker panicked on {} (verdict `error` above)",
            crate::report::count(panics, "mutant")
        );
    }
    exit
}

/// Which mutants of one file run on the GPU under `--gpu-hazards N`: every mutant the checker
/// does not flag (a GPU hazard there is a checker bug, so none is skipped), and of the flagged
/// ones `N`, picked at evenly spaced positions among them so that every operator's region of
/// the file is represented. `None`: all.
pub(crate) fn gpu_sample(mutants: &[MutantResult], hazards: Option<usize>) -> Vec<bool> {
    let flagged: Vec<usize> = mutants
        .iter()
        .enumerate()
        .filter(|(_, m)| m.checked.verdict == Verdict4::Hazard)
        .map(|(i, _)| i)
        .collect();
    let mut keep = vec![true; mutants.len()];
    let Some(n) = hazards else { return keep };
    for &i in &flagged {
        keep[i] = false;
    }
    let n = n.min(flagged.len());
    for k in 0..n {
        // Positions k * len / n: distinct for n <= len, first one always taken.
        keep[flagged[k * flagged.len() / n]] = true;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--operator`'s help names every operator.
    #[test]
    fn the_help_lists_every_operator() {
        use clap::Args;
        let mutate = crate::args::MutateArgs::augment_args(clap::Command::new("mutate"));
        let help = mutate
            .get_arguments()
            .find(|a| a.get_id() == "operators")
            .and_then(|a| a.get_help())
            .expect("--operator has help")
            .to_string();
        for op in Operator::ALL {
            assert!(help.contains(op.name()), "{}: {help}", op.name());
        }
    }
}
