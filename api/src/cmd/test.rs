//! `phasecheck test [PATHS]`: run every `expect` line of every `.phase` file under PATHS and
//! print one line per `expect` line, then `N passed, N failed`.
//!
//! The judging logic is shared with the corpus test (tests/corpus.rs): see
//! `crate::expectations`.

use crate::args::{Exit, TestArgs};
use crate::budget::Budget;
use crate::config;
use crate::expectations::{self, Case, KnownGaps, Status as CaseStatus};
use crate::status::Status;
use checker::Report;
use std::path::{Path, PathBuf};

/// Each search shows its progress (`crate::status`) and says a memory stop in terms of the
/// run's `--max-memory`.
struct Watched<'a> {
    status: &'a Status,
    budget: Budget,
}

impl expectations::Watch for Watched<'_> {
    fn search(&self, case: &Case, check: &mut expectations::Search<'_>) -> Result<Report, String> {
        let limit = self.budget.search_limit(None);
        let search = self
            .status
            .search(format!("{}:{}", case.file, case.line), limit);
        let mut out = check(Some(&|p| search.update(p)));
        drop(search);
        if let Ok(report) = &mut out {
            self.budget.explain(report, limit);
        }
        out
    }
}

/// The known-gaps list that the nearest `phasecheck.toml` of the files names (`[test]
/// known-gaps`): none, or one for all of them; files governed by different lists are an error.
fn configured_gaps(files: &[expectations::Target]) -> Result<Option<PathBuf>, String> {
    let mut finder = config::Finder::default();
    let mut found: Option<(PathBuf, PathBuf)> = None; // (list, the config naming it)
    for t in files {
        let Some(cfg) = finder.for_file(&t.path).map_err(|e| e.to_string())? else {
            continue;
        };
        let Some(list) = &cfg.known_gaps else {
            continue;
        };
        match &found {
            None => found = Some((list.clone(), cfg.path.clone())),
            Some((l, c)) if l != list => {
                return Err(format!(
                    "the files name different known-gaps lists ({} in {}, {} in {}): check them \
                     apart, or name one with --known-gaps",
                    l.display(),
                    c.display(),
                    list.display(),
                    cfg.path.display()
                ));
            }
            Some(_) => {}
        }
    }
    let Some((list, cfg)) = found else {
        return Ok(None);
    };
    let (list, cfg) = (relative(&list), relative(&cfg));
    println!(
        "NOTE known gaps: {} (`[test] known-gaps` of {}; --no-config ignores it)",
        list.display(),
        cfg.display()
    );
    Ok(Some(list))
}

/// `path` relative to the current folder when it is below it (for messages).
fn relative(path: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| path.to_path_buf())
}

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
    let gaps_path = match &args.known_gaps {
        Some(p) => Some(p.clone()),
        None if args.no_config => None,
        None => match configured_gaps(&files) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return Exit::BadInput;
            }
        },
    };
    let gaps = match &gaps_path {
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
    let mode = match crate::status::Mode::from_env() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::BadInput;
        }
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
        .min(files.len())
        .max(1);
    let budget = Budget::new(args.max_memory, jobs);
    let mut options = checker::CheckOptions {
        max_memory_bytes: budget.search_limit(None),
        ..checker::CheckOptions::default()
    };
    if let Some(n) = args.max_states {
        options.max_states = n;
    }
    if let Some(t) = args.max_time {
        options.max_time = t.0;
    }
    if let Some(n) = args.max_loop_trips {
        options.max_loop_trips = n;
    }
    let status = Status::new("test", mode, 0);
    let watch = Watched {
        status: &status,
        budget,
    };
    expectations::quiet_panics();
    // Known gaps are expected to fail, most of them by not finishing: they get their own,
    // short budget so that a listed capacity gap does not hold the suite for the full limit.
    let mut gap_options = options.clone();
    let gap_time = args.gap_time.0;
    gap_options.max_time = match (options.max_time, gap_time) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut results = expectations::check_files_watched(
        &files,
        &options,
        jobs,
        &|c| gaps.find(c).is_some(),
        &watch,
    );
    if !gaps.entries.is_empty() {
        let gap_results = expectations::check_files_watched(
            &files,
            &gap_options,
            jobs,
            &|c| gaps.find(c).is_none(),
            &watch,
        );
        expectations::merge_results(&mut results, gap_results);
    }
    drop(status);

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
                        CaseStatus::Pass => {
                            passed += 1;
                            println!("PASS {place} {}", result.case.text);
                        }
                        CaseStatus::KnownGap(why) => {
                            known += 1;
                            println!("GAP  {place} {}: {why}", result.case.text);
                        }
                        CaseStatus::Fail(why) => {
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
    if let Some(path) = &gaps_path {
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
        let gaps = if known == 1 {
            "known gap"
        } else {
            "known gaps"
        };
        println!("{passed} passed, {failed} failed, {known} {gaps}");
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
