//! `phasecheck verify PATH...`: load, check, report (folders: every `.phase` file below).

use crate::cli::{Exit, Format, VerifyArgs};
use crate::report;
use crate::report::files::{self, FileResult, Outcome};
use checker::{CheckOptions, Schedule};
use indicatif::{ProgressBar, ProgressStyle};
use protocols::SourceFile;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// The files to check: files as given, folders as every `.phase` file below them (as `lint`
/// finds them: sorted, honouring `.gitignore`).
fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
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
    let options = CheckOptions {
        max_states: args.max_states,
        max_memory_bytes: args.max_memory,
        max_loop_trips: args.max_loop_trips,
        max_time: args.max_time.0,
        symmetry: !args.no_symmetry,
        partial_order: !args.no_por,
        exhaustive: args.exhaustive,
        ..CheckOptions::default()
    };
    let json = args.format == Format::Json;
    // `--format json`: every file's entry, rendered together at the end.
    let mut results: Vec<FileResult> = Vec::new();
    let mut dot_written = false;
    for path in &files {
        let name = path.display().to_string();
        let text = match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(_) => {
                    worst = Exit::BadInput;
                    if json {
                        results.push(unreadable(name, "it is not UTF-8 text".into()));
                    } else {
                        eprintln!("error: {} is not UTF-8 text", path.display());
                    }
                    continue;
                }
            },
            Err(e) => {
                worst = Exit::BadInput;
                if json {
                    results.push(unreadable(name, format!("cannot read it: {e}")));
                } else {
                    eprintln!("error: cannot read {}: {e}", path.display());
                }
                continue;
            }
        };
        let file = SourceFile::new(name, text);
        let program = match protocols::load(&file, &args.params) {
            Err(errors) => {
                worst = Exit::BadInput;
                if json {
                    results.push(FileResult {
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
                    if !json {
                        print!("{}", replay_text(&file, &r.trace));
                    }
                    rep
                }
            }
        } else {
            let mut result = with_progress(&file.name, |cb| {
                checker::check_with_progress(&program, &options, cb)
            });
            checker::lints::suppress::apply_to_report(&program, &file, &mut result);
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
        if json {
            results.push(FileResult {
                file,
                outcome: Outcome::Checked {
                    program: Box::new(program),
                    report: result,
                },
            });
            continue;
        }
        print!(
            "{}",
            report::human::render(&file, &program, &result, color())
        );
        if schedule.is_none() && !program.expects.is_empty() {
            println!(
                "  note: verify does not check `expect` lines ({} here); `phasecheck test {}` does",
                program.expects.len(),
                file.name
            );
        }
    }
    if let Some(dot) = &args.dot
        && !dot_written
    {
        eprintln!(
            "note: no deadlock found, so no wait-for graph: {} was not written",
            dot.display()
        );
    }
    if json {
        let value = files::json(&results, worst);
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON values serialize")
        );
    }
    worst
}

fn unreadable(name: String, message: String) -> FileResult {
    FileResult {
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

/// Run `f` with a progress bar on stderr once the search takes longer than a second (only
/// when stderr is a terminal).
fn with_progress<R>(name: &str, f: impl FnOnce(Option<&dyn Fn(&checker::Progress)>) -> R) -> R {
    if !std::io::stderr().is_terminal() {
        return f(None);
    }
    let start = Instant::now();
    let bar = ProgressBar::hidden();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let shown = std::cell::Cell::new(false);
    let cb = |p: &checker::Progress| {
        if !shown.get() && start.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            shown.set(true);
        }
        bar.set_message(format!(
            "{name}: {} states, depth {}, {} queued, {:.1}s",
            p.states,
            p.depth,
            p.queued,
            p.elapsed_ms as f64 / 1000.0
        ));
        bar.tick();
    };
    let r = f(Some(&cb));
    bar.finish_and_clear();
    r
}
