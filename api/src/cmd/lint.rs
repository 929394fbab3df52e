//! `phasecheck lint [PATHS...]`: every `.phase` file under the paths (honouring `.gitignore`),
//! checked in parallel (`--jobs` at once, sharing `--max-memory`: `crate::budget`), rendered as
//! one result in the chosen format.
//!
//! Per file: nearest `phasecheck.toml` -> parameter values -> load -> check (with the config's
//! limits) -> inline suppressions -> levels (config, then `-A`, `-W`, `-D`; the last match
//! wins) -> verdict. Exit: 2 bad input or configuration, else 1 errors (or warnings with
//! `-D warnings`), else 3 inconclusive, else 0.

use crate::args::{Exit, LintArgs, LintFormat};
use crate::budget::Budget;
use crate::config::{self, Config, Level, Limits, Target};
use crate::report::files::{self, FileResult, Outcome, Summary};
use crate::status::Status;
use checker::{Finding, Severity};
use protocols::SourceFile;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Levels and switches given on the command line.
struct CliLevels {
    levels: Vec<(Target, Level)>,
    deny_warnings: bool,
}

fn cli_levels(args: &LintArgs) -> Result<CliLevels, String> {
    let mut levels = Vec::new();
    let mut deny_warnings = false;
    for (names, level) in [
        (&args.allow, Level::Allow),
        (&args.warn, Level::Warn),
        (&args.deny, Level::Deny),
    ] {
        for name in names.iter().flat_map(|n| n.split(',')).map(str::trim) {
            if name == "warnings" {
                if level == Level::Deny {
                    deny_warnings = true;
                    continue;
                }
                return Err("`warnings` goes with `-D`/`--deny` only".into());
            }
            let target = Target::parse(name).ok_or_else(|| config::unknown_rule(name))?;
            levels.push((target, level));
        }
    }
    Ok(CliLevels {
        levels,
        deny_warnings,
    })
}

/// Every `.phase` file under `paths` (files given by name are taken as they are), sorted.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_file() {
            out.push(p.clone());
            continue;
        }
        if !p.is_dir() {
            return Err(format!("{}: no such file or folder", p.display()));
        }
        let walk = ignore::WalkBuilder::new(p)
            // Honour .gitignore also outside a git checkout (a tarball, a CI cache).
            .require_git(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walk {
            let entry = entry.map_err(|e| format!("{}: {e}", p.display()))?;
            let is_file = entry.file_type().is_some_and(|t| t.is_file());
            if is_file && entry.path().extension().is_some_and(|e| e == "phase") {
                out.push(entry.into_path());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Whether the file declares `param NAME` (so that a value for NAME applies to it).
pub(crate) fn declares_param(text: &str, name: &str) -> bool {
    text.split(['\n', ';']).any(|stmt| {
        let mut words = stmt.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        let mut words = words.by_ref().filter(|w| !w.is_empty());
        let first_is_param = stmt.trim_start().starts_with("param");
        first_is_param && words.next() == Some("param") && words.next() == Some(name)
    })
}

/// The name a file is reported under: its path as found, without a leading `./`.
fn display_name(path: &Path) -> String {
    let s = path.display().to_string();
    match s.strip_prefix("./") {
        Some(rest) if !rest.is_empty() => rest.to_string(),
        _ => s,
    }
}

struct Job<'a> {
    path: PathBuf,
    config: Option<Arc<Config>>,
    cli: &'a CliLevels,
    cli_params: &'a [(String, i64)],
    cli_limits: Limits,
    budget: Budget,
    status: &'a Status,
    ptx: &'a crate::cmd::extract::PtxArgs,
}

/// The level of a rule: the config's, then the command line's; the last match wins.
fn level_for(rule: &checker::Rule, config: Option<&Config>, cli: &CliLevels) -> Option<Level> {
    config
        .map(|c| c.levels.as_slice())
        .unwrap_or(&[])
        .iter()
        .chain(&cli.levels)
        .filter(|(t, _)| t.matches(rule))
        .map(|(_, l)| *l)
        .next_back()
}

/// Apply levels: `allow` drops a finding, `warn`/`deny` set its severity.
pub fn apply_levels(
    findings: Vec<Finding>,
    mut level: impl FnMut(&checker::Rule) -> Option<Level>,
) -> Vec<Finding> {
    findings
        .into_iter()
        .filter_map(|mut f| {
            match level(f.rule) {
                Some(Level::Allow) => return None,
                Some(Level::Warn) => f.severity = Severity::Warning,
                Some(Level::Deny) => f.severity = Severity::Error,
                None => {}
            }
            Some(f)
        })
        .collect()
}

fn check_file(job: &Job<'_>) -> FileResult {
    let name = display_name(&job.path);
    let bytes = match std::fs::read(&job.path) {
        Ok(b) => b,
        Err(e) => {
            return FileResult {
                origin: None,
                file: SourceFile::new(name, ""),
                outcome: Outcome::Unreadable(format!("cannot read it: {e}")),
            };
        }
    };
    // Bytes that are not UTF-8 are a load error (E0004) like any other.
    let file = match SourceFile::from_bytes(name, bytes) {
        Ok(f) => f,
        Err(errors) => {
            return FileResult {
                origin: None,
                file: errors.file.clone(),
                outcome: Outcome::LoadFailed(errors),
            };
        }
    };
    // A `.ptx` file is checked as the protocol extracted from it (docs/ptx.md).
    let mut origin = None;
    let file = if crate::cmd::extract::is_ptx(&job.path) {
        match crate::cmd::extract::extract_text(&file.text, &file.name, job.ptx) {
            Ok(ex) => {
                let text = ex.text.clone();
                origin = Some(crate::report::origin::PtxOrigin::new(
                    ex,
                    &file.name,
                    job.ptx.to_args(),
                ));
                SourceFile::new(file.name.clone(), text)
            }
            Err(e) => {
                return FileResult {
                    origin: None,
                    file,
                    outcome: Outcome::Unreadable(format!("cannot extract its protocol: {e}")),
                };
            }
        }
    } else {
        file
    };
    let config = job.config.as_deref();
    let mut params: Vec<(String, i64)> = config
        .map(|c| c.params_for(&job.path))
        .unwrap_or_default()
        .into_iter()
        .filter(|(n, _)| declares_param(&file.text, n))
        .collect();
    for (n, v) in job.cli_params {
        if declares_param(&file.text, n) {
            params.retain(|(m, _)| m != n);
            params.push((n.clone(), *v));
        }
    }
    let program = match protocols::load(&file, &params) {
        Ok(p) => p,
        Err(errors) => {
            return FileResult {
                origin: None,
                file,
                outcome: Outcome::LoadFailed(errors),
            };
        }
    };
    let limits = job
        .cli_limits
        .over(config.map(|c| c.limits).unwrap_or_default());
    let mut options = limits.options();
    // `[limits] max-memory` bounds the file's search within its share of `--max-memory`.
    options.max_memory_bytes = job.budget.search_limit(limits.max_memory);
    // Findings that will be dropped or lowered to warnings (inline suppressions, `allow` and
    // `warn` levels) do not stop the search (`checker::goal`).
    let mut allowed = checker::lints::suppress::allowed(&program, &file);
    allowed.extend(
        checker::rules::ALL
            .iter()
            .copied()
            .filter(|r| {
                matches!(
                    level_for(r, config, job.cli),
                    Some(Level::Allow | Level::Warn)
                )
            })
            .map(|rule| checker::goal::Allowed { rule, within: None }),
    );
    options.goal = checker::goal::Goal {
        allowed,
        wanted: Vec::new(),
    };
    let search = job
        .status
        .search(file.name.clone(), options.max_memory_bytes);
    let mut report = checker::check_with_progress(&program, &options, Some(&|p| search.update(p)));
    drop(search);
    job.budget.explain(&mut report, options.max_memory_bytes);
    // `check` includes the static perf lints (`checker::lints::run`).
    let findings = std::mem::take(&mut report.findings);
    let findings =
        checker::lints::suppress::apply(&program, &file, findings, report.incomplete.is_none());
    report.findings = apply_levels(findings, |r| level_for(r, config, job.cli));
    report.verdict = report.verdict_of_findings();
    FileResult {
        origin,
        file,
        outcome: Outcome::Checked {
            program: Box::new(program),
            report,
        },
    }
}

/// Colour for human output: only on a terminal, never with `NO_COLOR` set (no-color.org).
pub fn use_color() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

fn bad(msg: impl std::fmt::Display) -> Exit {
    eprintln!("error: {msg}");
    Exit::BadInput
}

/// What `lint` found: every file's result (in the order of the files) and the exit code.
pub struct Linted {
    pub results: Vec<FileResult>,
    pub exit: Exit,
}

pub fn run(args: &LintArgs) -> Exit {
    let Linted { results, exit } = match check(args) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    let text = match args.format {
        LintFormat::Human => files::human(&results, exit, args.output.is_none() && use_color()),
        LintFormat::Json => pretty(&files::json(&results, exit)),
        LintFormat::Sarif => pretty(&crate::report::sarif::render(&results, exit as u8)),
        LintFormat::Github => crate::report::github::render(&results),
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                return bad(format!("cannot write {}: {e}", path.display()));
            }
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error of the lint.
            let _ = stdout.write_all(text.as_bytes());
        }
    }
    exit
}

/// Find the files, check them in parallel; the error is a usage or configuration error (the
/// message to print after `error: `). A file that does not load is a result, not an error.
pub fn check(args: &LintArgs) -> Result<Linted, String> {
    let cli = match cli_levels(args) {
        Ok(c) => c,
        Err(e) => return Err(e.to_string()),
    };
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let files = match collect_files(&paths) {
        Ok(f) => f,
        Err(e) => return Err(e.to_string()),
    };
    if files.is_empty() {
        let shown: Vec<_> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!("no .phase files under {}", shown.join(", ")));
    }
    // Configuration: one file for all (`--config`), or the nearest one per file.
    let forced = match &args.config {
        Some(p) => match Config::load(p) {
            Ok(c) => Some(Arc::new(c)),
            Err(e) => return Err(e.to_string()),
        },
        None => None,
    };
    let mode = match crate::status::Mode::from_env() {
        Ok(m) => m,
        Err(e) => return Err(e.to_string()),
    };
    let workers = args
        .jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .min(files.len())
        .max(1);
    let budget = Budget::new(args.max_memory, workers);
    let status = Status::new("lint", mode, files.len());
    let mut finder = config::Finder::default();
    let mut jobs = Vec::with_capacity(files.len());
    let cli_limits = Limits {
        max_states: args.max_states,
        max_memory: None,
        max_loop_trips: args.max_loop_trips,
        max_time: args.max_time.map(|t| t.0),
    };
    for path in files {
        let config = if args.no_config {
            None
        } else if let Some(c) = &forced {
            Some(c.clone())
        } else {
            match finder.for_file(&path) {
                Ok(c) => c,
                Err(e) => return Err(e.to_string()),
            }
        };
        jobs.push(Job {
            path,
            config,
            cli: &cli,
            cli_params: &args.params,
            cli_limits,
            budget,
            status: &status,
            ptx: &args.ptx,
        });
    }
    // A `--param` that no file declares is a typo, not a no-op.
    for (name, _) in &args.params {
        let used = jobs
            .iter()
            .any(|j| std::fs::read_to_string(&j.path).is_ok_and(|t| declares_param(&t, name)));
        if !used {
            return Err(format!(
                "--param {name}: no checked file declares `param {name}`"
            ));
        }
    }
    let results: Vec<FileResult> = parallel_map(&jobs, workers, check_file);
    drop(jobs);
    drop(status);
    let exit = Summary::of(&results).exit(cli.deny_warnings);
    Ok(Linted { results, exit })
}

/// `f` over `items` on `workers` threads of their own; results in the order of `items`.
///
/// Not on rayon's pool: the checker's random-schedule portfolio runs its walks there, and a
/// rayon thread that waits for them may take up another item meanwhile, so that more searches
/// than `workers` would be alive at once (each holding its memory) and the memory budget's
/// share per search would not hold.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<Option<R>>> =
        std::sync::Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was mapped"))
        .collect()
}

fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON values serialize");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declares_param_matches_whole_names_at_statement_start() {
        let t = "protocol p\nparam K = 8 # trips\nparam KK = 2; param S=1\nlet x = K\n";
        assert!(declares_param(t, "K"));
        assert!(declares_param(t, "KK"));
        assert!(declares_param(t, "S"));
        assert!(!declares_param(t, "x"));
        assert!(!declares_param(t, "STAGES"));
    }
}
