//! `phasecheck verify FILE...`: load, check, report.

use crate::cli::{Exit, Format, VerifyArgs};
use crate::report;
use checker::{CheckOptions, Schedule};
use indicatif::{ProgressBar, ProgressStyle};
use protocols::SourceFile;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

fn color() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub fn run(args: &VerifyArgs) -> Exit {
    let mut worst = Exit::Clean;
    let mut json_out = Vec::new();
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
    let mut dot_written = false;
    for path in &args.files {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                worst = Exit::BadInput;
                continue;
            }
        };
        // Bytes that are not UTF-8 are a load error (E0004) like any other.
        let loaded = SourceFile::from_bytes(path.display().to_string(), bytes)
            .and_then(|file| protocols::load(&file, &args.params).map(|p| (file, p)));
        let (file, program) = match loaded {
            Err(errors) => {
                match args.format {
                    Format::Human => eprint!("{}", report::load_errors::human(&errors)),
                    Format::Json => json_out.push(report::load_errors::json(&errors)),
                }
                worst = Exit::BadInput;
                continue;
            }
            Ok(p) => p,
        };
        if let Some(schedule) = &schedule {
            match checker::replay(&program, &options, schedule) {
                Err(e) => {
                    eprintln!("error: {}: {e}", file.name);
                    worst = Exit::BadInput;
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
                    match args.format {
                        Format::Human => {
                            print!("{}", replay_text(&file, &r.trace));
                            print!("{}", report::human::render(&file, &program, &rep, color()));
                        }
                        Format::Json => json_out.push(report::json::render(&file, &program, &rep)),
                    }
                    worst = report::worse(worst, report::exit_code(&rep));
                }
            }
            continue;
        }
        let mut result = with_progress(&file.name, |cb| {
            checker::check_with_progress(&program, &options, cb)
        });
        checker::lints::suppress::apply_to_report(&program, &file, &mut result);
        if let Some(dot) = &args.dot {
            if !dot_written {
                if let Some(f) = result.findings.iter().find(|f| !f.waits_for.is_empty()) {
                    if let Err(e) = std::fs::write(dot, checker::wait_for_dot(&f.waits_for)) {
                        eprintln!("error: cannot write {}: {e}", dot.display());
                        worst = Exit::BadInput;
                    }
                    dot_written = true;
                }
            }
        }
        let exit = report::exit_code(&result);
        match args.format {
            Format::Human => print!(
                "{}",
                report::human::render(&file, &program, &result, color())
            ),
            Format::Json => json_out.push(report::json::render(&file, &program, &result)),
        }
        worst = report::worse(worst, exit);
    }
    if args.format == Format::Json {
        let value = if json_out.len() == 1 {
            json_out.pop().expect("one element")
        } else {
            serde_json::Value::Array(json_out)
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("JSON values serialize")
        );
    }
    worst
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
