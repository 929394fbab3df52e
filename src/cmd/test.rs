//! `phasecheck test [PATHS]`: run every `expect` line of every `.phase` file under PATHS and
//! print one line per `expect` line, then `N passed, N failed`.
//!
//! The judging logic is shared with the corpus test (tests/corpus.rs): see
//! `crate::expectations`.

use crate::cli::{Exit, TestArgs};
use crate::expectations::{self, KnownGaps, Status};
use std::path::PathBuf;

pub fn run(args: &TestArgs) -> Exit {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let files = match expectations::discover(&paths) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::BadInput;
        }
    };
    if files.is_empty() {
        eprintln!("error: no .phase files under the given paths");
        return Exit::BadInput;
    }
    let gaps = match &args.known_gaps {
        None => KnownGaps::default(),
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => match KnownGaps::parse(&text) {
                Ok(g) => g,
                Err(e) => {
                    eprintln!("error: {}: {e}", path.display());
                    return Exit::BadInput;
                }
            },
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                return Exit::BadInput;
            }
        },
    };
    let mut options = checker::CheckOptions::default();
    if let Some(n) = args.max_states {
        options.max_states = n;
    }
    if let Some(t) = args.max_time {
        options.max_time = t.0;
    }
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    expectations::quiet_panics();
    // Known gaps are expected to fail, most of them by not finishing: they get their own,
    // short budget so that a listed capacity gap does not hold the suite for the full limit.
    let mut gap_options = options.clone();
    let gap_time = args.gap_time.0;
    gap_options.max_time = match (options.max_time, gap_time) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut results =
        expectations::check_files(&files, &options, jobs, &|c| gaps.find(c).is_some());
    if !gaps.entries.is_empty() {
        let gap_results =
            expectations::check_files(&files, &gap_options, jobs, &|c| gaps.find(c).is_none());
        expectations::merge_results(&mut results, gap_results);
    }

    let (mut passed, mut failed, mut known, mut load_errors) = (0usize, 0usize, 0usize, 0usize);
    for file in &results {
        match &file.cases {
            Err(why) => {
                println!("FAIL {}: does not load: {why}", file.file);
                failed += 1;
                load_errors += 1;
            }
            Ok(cases) if cases.is_empty() => {
                println!("NOTE {}: no expect lines", file.file);
            }
            Ok(cases) => {
                for result in cases {
                    let place = format!("{}:{}", result.case.file, result.case.line);
                    if args.timings {
                        print!("{:>7} ms  ", result.elapsed_ms);
                    }
                    match expectations::status(result, &gaps) {
                        Status::Pass => {
                            passed += 1;
                            println!("PASS {place} {}", result.case.text);
                        }
                        Status::KnownGap(why) => {
                            known += 1;
                            println!("GAP  {place} {}: {why}", result.case.text);
                        }
                        Status::Fail(why) => {
                            failed += 1;
                            if matches!(result.outcome, expectations::Outcome::LoadError(_)) {
                                load_errors += 1;
                            }
                            println!("FAIL {place} {}: {why}", result.case.text);
                        }
                    }
                }
            }
        }
    }
    if let Some(path) = &args.known_gaps {
        let whole_files: Vec<String> = files
            .iter()
            .filter(|t| t.lines.is_none())
            .map(|t| expectations::display_name(&t.path))
            .collect();
        for gap in expectations::unmatched_gaps(&gaps, &results, &whole_files) {
            failed += 1;
            println!(
                "FAIL {}:{}: known gap `{}: {}` matches no expect line: remove it",
                path.display(),
                gap.line,
                gap.file,
                gap.text
            );
        }
    }
    if known > 0 {
        println!("{passed} passed, {failed} failed, {known} known gaps");
    } else {
        println!("{passed} passed, {failed} failed");
    }
    if load_errors > 0 {
        Exit::BadInput
    } else if failed > 0 {
        Exit::Findings
    } else {
        Exit::Clean
    }
}
