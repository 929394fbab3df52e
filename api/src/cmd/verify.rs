//! `phasecheck verify PATH...`: load, check, report (folders: every `.phase` file below).

use crate::args::{Exit, LintFormat, VerifyArgs};
use crate::budget::Budget;
use crate::report;
use crate::report::files::{self, FileResult, Outcome};
use crate::status::Status;
use checker::{CheckOptions, Schedule};
use protocols::SourceFile;
use protocols::ir::Program;
use std::io::IsTerminal;
use std::path::PathBuf;

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The files to check: files as given, folders as every `.phase` file below them (as `lint`
/// finds them: sorted, honouring `.gitignore`).
pub(crate) fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let found = crate::cmd::lint::collect_files(std::slice::from_ref(p))?;
            if found.is_empty() {
                return Err(format!("no .phase files under {}", p.display()));
            }
            out.extend(found);
        } else {
            // Checked (and reported if missing) when it is read.
            out.push(p.clone());
        }
    }
    Ok(out)
}

pub fn run(args: &VerifyArgs) -> Exit {
    if let Some(n) = args.threads {
        // The global pool serves both the search and the portfolio; it can be set only once
        // per process, and only `verify` sets it. It is made when work is first handed to
        // it: a search that stays narrow starts no worker thread.
        checker::explore::set_threads(usize::from(n));
    }
    let mut worst = Exit::Clean;
    let schedule: Option<Schedule> = match &args.replay {
        None => None,
        Some(s) => match s.parse() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("error: --replay: {e}");
                return Exit::BadInput;
            }
        },
    };
    if args.max_states == 0 {
        eprintln!("error: --max-states must be at least 1");
        return Exit::BadInput;
    }
    let files = match expand(&args.files) {
        Ok(f) => f,
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
    // One search at a time: it may have the whole budget.
    let budget = Budget::new(args.max_memory, 1);
    let options = CheckOptions {
        max_states: args.max_states,
        max_memory_bytes: budget.search_limit(None),
        max_loop_trips: args.max_loop_trips,
        max_time: args.max_time.0,
        symmetry: !args.no_symmetry,
        partial_order: !args.no_por,
        exhaustive: args.exhaustive,
        ..CheckOptions::default()
    };
    // `--format json`, `sarif`, `github`: every file's entry, rendered together at the end.
    let machine = args.format != LintFormat::Human;
    let mut results: Vec<FileResult> = Vec::new();
    let mut dot_written = false;
    let status = Status::new("verify", mode, files.len());
    for path in &files {
        let name = path.display().to_string();
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                worst = Exit::BadInput;
                if machine {
                    results.push(unreadable(name, format!("cannot read it: {e}")));
                } else {
                    eprintln!("error: cannot read {}: {e}", path.display());
                }
                continue;
            }
        };
        // Bytes that are not UTF-8 are a load error (E0004) like any other.
        let file = match SourceFile::from_bytes(name.clone(), bytes) {
            Ok(file) => file,
            Err(errors) => {
                worst = Exit::BadInput;
                if machine {
                    // As `lint` reports it: the load error with its line, column and byte.
                    results.push(FileResult {
                        origin: None,
                        file: errors.file.clone(),
                        outcome: Outcome::LoadFailed(errors),
                    });
                } else {
                    eprint!("{}", report::load_errors::human(&errors));
                }
                continue;
            }
        };
        // A `.ptx` file is checked as the protocol extracted from it (docs/ptx.md).
        let (file, ptx) = match crate::cmd::extract::for_verify(file, path, &args.ptx) {
            Ok(extracted) => extracted,
            Err(e) => {
                worst = Exit::BadInput;
                if machine {
                    // As `lint` reports it, so that the log says why the file has no result.
                    let why = e.strip_prefix(&format!("{name}: ")).unwrap_or(&e);
                    results.push(unreadable(
                        name.clone(),
                        format!("cannot extract its protocol: {why}"),
                    ));
                }
                continue;
            }
        };
        let program = match protocols::load(&file, &args.params) {
            Err(errors) => {
                worst = Exit::BadInput;
                if machine {
                    results.push(FileResult {
                        origin: None,
                        file,
                        outcome: Outcome::LoadFailed(errors),
                    });
                } else {
                    eprint!("{}", report::load_errors::human(&errors));
                }
                continue;
            }
            Ok(p) => p,
        };
        let result = if let Some(schedule) = &schedule {
            match checker::replay(&program, &options, schedule) {
                Err(e) => {
                    eprintln!("error: {}: {e}", file.name);
                    worst = Exit::BadInput;
                    continue;
                }
                Ok(r) => {
                    let mut rep = checker::Report {
                        verdict: checker::Verdict::Ok,
                        findings: r
                            .findings
                            .into_iter()
                            .map(|mut f| {
                                f.trace = r.trace.clone();
                                f
                            })
                            .collect(),
                        stats: checker::Stats::default(),
                        incomplete: None,
                    };
                    rep.verdict = rep.verdict_of_findings();
                    if !machine {
                        print!("{}", replay_text(&file, &r.trace));
                    }
                    rep
                }
            }
        } else {
            let search = status.search(file.name.clone(), options.max_memory_bytes);
            let result = check_program(
                &program,
                &file,
                &options,
                &budget,
                Some(&|p| search.update(p)),
            );
            drop(search);
            result
        };
        if let Some(dot) = &args.dot
            && !dot_written
            && let Some(f) = result.findings.iter().find(|f| !f.waits_for.is_empty())
        {
            if let Err(e) = std::fs::write(dot, checker::wait_for_dot(&f.waits_for)) {
                eprintln!("error: cannot write {}: {e}", dot.display());
                worst = Exit::BadInput;
            }
            dot_written = true;
        }
        worst = report::worse(worst, report::exit_code(&result));
        if machine {
            results.push(FileResult {
                origin: ptx
                    .map(|ex| report::origin::PtxOrigin::new(ex, &file.name, args.ptx.to_args())),
                file,
                outcome: Outcome::Checked {
                    program: Box::new(program),
                    report: result,
                },
            });
            continue;
        }
        status.suspend(|| {
            let options = if ptx.is_some() {
                args.ptx.to_args()
            } else {
                Vec::new()
            };
            print!(
                "{}",
                report::human::render_with_options(&file, &program, &result, color(), &options)
            );
            if let Some(ex) = &ptx {
                print!("{}", crate::cmd::extract::annotate(&file, ex, &result));
            }
            if schedule.is_none() && !program.expects.is_empty() {
                println!(
                    "  note: verify does not check `expect` lines ({} here); `phasecheck test {}` does",
                    program.expects.len(),
                    file.name
                );
            }
        });
    }
    drop(status);
    if let Some(dot) = &args.dot
        && !dot_written
    {
        eprintln!(
            "note: no deadlock found, so no wait-for graph: {} was not written",
            dot.display()
        );
    }
    let pretty = |v: serde_json::Value| {
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("JSON values serialize")
        )
    };
    match args.format {
        LintFormat::Human => {}
        LintFormat::Json => pretty(files::json(&results, worst)),
        LintFormat::Sarif => pretty(report::sarif::render(&results, worst as u8)),
        LintFormat::Github => print!("{}", report::github::render(&results)),
    }
    worst
}

/// The search of `verify` on a loaded program: inline suppressions applied (suppressed
/// findings do not stop the search, `checker::goal`), a memory stop explained against the
/// budget.
pub(crate) fn check_program(
    program: &Program,
    file: &SourceFile,
    options: &CheckOptions,
    budget: &Budget,
    progress: Option<&dyn Fn(&checker::Progress)>,
) -> checker::Report {
    let options = CheckOptions {
        goal: checker::lints::suppress::goal(program, file),
        ..options.clone()
    };
    let mut result = checker::check_with_progress(program, &options, progress);
    budget.explain(&mut result, options.max_memory_bytes);
    checker::lints::suppress::apply_to_report(program, file, &mut result);
    result
}

fn unreadable(name: String, message: String) -> FileResult {
    FileResult {
        origin: None,
        file: SourceFile::new(name, ""),
        outcome: Outcome::Unreadable(message),
    }
}

fn replay_text(file: &SourceFile, trace: &[checker::TraceStep]) -> String {
    let mut out = format!("{}: replayed trace:\n", file.name);
    for (i, s) in trace.iter().enumerate() {
        out.push_str(&format!(
            "  {:>3}. {}  line {}  {}  {}\n",
            i + 1,
            s.thread,
            file.line_of(s.span),
            s.op,
            s.state
        ));
    }
    out
}
