//! Checking `expect` lines (language.md §7) against checker reports.
//!
//! One place for the logic that both `phasecheck test` (api/src/cmd/test.rs) and the corpus test
//! (tests/corpus.rs, through `phasecheck_api::expectations`) use: find `.phase` files, load a
//! file once per `expect` line with that line's parameter overrides, check it, judge the report
//! against the line, and match failures against a known-gaps list.
//!
//! Judgement (each line on its own, with its own overrides):
//! - `expect ok`: no error-level finding;
//! - `expect deadlock|ub|race [RULE]`: at least one finding of that class (of that rule);
//! - `expect warning RULE`: a warning-level finding of that rule;
//! - an inconclusive search fails every line; an unknown rule name fails its line;
//! - a rule whose class is not the line's verdict (`expect ub data-race`) fails its line.

use checker::{CheckOptions, Report, Severity, Verdict};
use protocols::ir::{Expect, ExpectVerdict};
use protocols::{LoadErrors, SourceFile};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One `expect` line of one file.
#[derive(Clone, Debug)]
pub struct Case {
    /// The file as it is reported (the path as found, without a leading `./`).
    pub file: String,
    /// 1-based line of the `expect`.
    pub line: u32,
    /// The line's text, whitespace collapsed (`expect ok with K = 1`).
    pub text: String,
}

/// What checking one `expect` line gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// The report does not match the line; the text says what it found instead.
    Fail(String),
    /// The file did not load with this line's overrides: never a known gap.
    LoadError(String),
}

#[derive(Clone, Debug)]
pub struct CaseResult {
    pub case: Case,
    pub outcome: Outcome,
    /// Wall-clock time of load + check, in milliseconds.
    pub elapsed_ms: u64,
}

/// Everything about one file: its cases, or why none could be run.
#[derive(Clone, Debug)]
pub struct FileResult {
    pub file: String,
    /// `Err` when the file could not be read or did not load with its declared parameters.
    pub cases: Result<Vec<CaseResult>, String>,
}

/// A file to check, with the `expect` lines to run (`None`: all of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub path: PathBuf,
    /// 1-based lines of the `expect` lines to run, from `FILE:LINE` arguments.
    pub lines: Option<Vec<u32>>,
}

/// The `.phase` files under `paths`, sorted and without duplicates. Files are taken as given;
/// directories are searched recursively, skipping hidden directories and `target`; `FILE:LINE`
/// selects one `expect` line of a file.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<Target>, String> {
    let mut found: Vec<Target> = Vec::new();
    for path in paths {
        let (path, line) = split_line_suffix(path);
        let meta =
            std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            walk(&path, &mut files)?;
            found.extend(files.into_iter().map(|path| Target { path, lines: None }));
        } else {
            found.push(Target {
                path,
                lines: line.map(|l| vec![l]),
            });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    // Merge duplicates: a whole file wins over selected lines.
    let mut merged: Vec<Target> = Vec::new();
    for t in found {
        match merged.last_mut() {
            Some(last) if last.path == t.path => match (&mut last.lines, t.lines) {
                (Some(a), Some(b)) => {
                    a.extend(b);
                    a.sort_unstable();
                    a.dedup();
                }
                (lines, _) => *lines = None,
            },
            _ => merged.push(t),
        }
    }
    Ok(merged)
}

/// `corpus/a.phase:37` -> (`corpus/a.phase`, Some(37)) when the whole string is not a path.
fn split_line_suffix(path: &Path) -> (PathBuf, Option<u32>) {
    if path.exists() {
        return (path.to_path_buf(), None);
    }
    let s = path.to_string_lossy();
    if let Some((file, line)) = s.rsplit_once(':') {
        if let Ok(line) = line.parse::<u32>() {
            if Path::new(file).is_file() {
                return (PathBuf::from(file), Some(line));
            }
        }
    }
    (path.to_path_buf(), None)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        paths.push(entry.path());
    }
    paths.sort();
    for path in paths {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(&path, found)?;
            }
        } else if name.ends_with(".phase") {
            found.push(path);
        }
    }
    Ok(())
}

/// The name a path is reported under (and matched against the known-gaps list by).
pub fn display_name(path: &Path) -> String {
    let s = path.display().to_string().replace('\\', "/");
    s.strip_prefix("./").map(str::to_string).unwrap_or(s)
}

/// Collapse runs of whitespace to one space.
pub fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Load errors of one file as one line per error: `file:line: CODE message`.
pub fn describe_load_errors(errors: &LoadErrors) -> String {
    let mut out = Vec::new();
    for e in &errors.errors {
        let place = match e.span {
            Some(span) => format!("{}:{}", errors.file.name, errors.file.line_of(span)),
            None => errors.file.name.clone(),
        };
        out.push(format!("{place}: {} {}", e.code, e.message));
    }
    out.join("; ")
}

/// Judge one report against one `expect` line. `Ok(())` when it holds.
pub fn judge(expect: &Expect, report: &Report) -> Result<(), String> {
    let rule = match &expect.rule {
        None => None,
        Some(name) => match checker::rules::find(name) {
            Some(rule) => Some(rule),
            None => {
                return Err(format!(
                    "unknown rule `{name}` (see `phasecheck rules` for the catalogue)"
                ));
            }
        },
    };
    let class = match expect.verdict {
        ExpectVerdict::Ok => None,
        ExpectVerdict::Deadlock => Some(checker::Class::Deadlock),
        ExpectVerdict::Ub => Some(checker::Class::Ub),
        ExpectVerdict::Race => Some(checker::Class::Race),
        ExpectVerdict::Warning => Some(checker::Class::Perf),
    };
    if let (Some(rule), Some(class)) = (rule, class) {
        // `expect warning RULE` may name a rule of any class whose severity was lowered; the
        // error verdicts must name a rule of their own class.
        if expect.verdict != ExpectVerdict::Warning && rule.class != class {
            return Err(format!(
                "rule `{}` is of class {}, not {}",
                rule.name,
                rule.class.as_str(),
                class.as_str()
            ));
        }
    }
    if expect.verdict == ExpectVerdict::Warning && rule.is_none() {
        return Err("`expect warning` needs a rule name".into());
    }
    if expect.verdict == ExpectVerdict::Ok && rule.is_some() {
        return Err("`expect ok` takes no rule name".into());
    }
    if report.verdict == Verdict::Inconclusive {
        let why = report
            .incomplete
            .as_ref()
            .map(|i| format!("{} (covered: {})", i.reason, i.covered))
            .unwrap_or_else(|| "the search stopped early".into());
        return Err(format!("inconclusive: {why}"));
    }
    let holds = match expect.verdict {
        ExpectVerdict::Ok => !report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Error),
        ExpectVerdict::Warning => report
            .findings
            .iter()
            .any(|f| f.severity == Severity::Warning && Some(f.rule.name) == rule.map(|r| r.name)),
        _ => report
            .findings
            .iter()
            .any(|f| Some(f.class()) == class && rule.is_none_or(|r| f.rule.name == r.name)),
    };
    if holds {
        Ok(())
    } else if report.findings.is_empty() {
        Err("found nothing".into())
    } else {
        Err(format!("found {}", summarize(report)))
    }
}

/// What the search for one `expect` line looks for: the class (and rule) the line names, so
/// that a search which first meets another error goes on until it has found what the line
/// expects or searched everything; `expect ok` is decided by any error. ([`check_caught_with`]
/// adds the file's inline suppressions, whose findings decide nothing.)
pub fn goal(expect: &Expect) -> checker::goal::Goal {
    let rule = expect.rule.as_deref().and_then(checker::rules::find);
    let wanted = match expect.verdict {
        ExpectVerdict::Ok => None,
        ExpectVerdict::Warning => Some(checker::goal::Wanted {
            class: None,
            rule,
            warning: true,
        }),
        ExpectVerdict::Deadlock | ExpectVerdict::Ub | ExpectVerdict::Race => {
            Some(checker::goal::Wanted {
                class: Some(match expect.verdict {
                    ExpectVerdict::Deadlock => checker::Class::Deadlock,
                    ExpectVerdict::Ub => checker::Class::Ub,
                    _ => checker::Class::Race,
                }),
                rule,
                warning: false,
            })
        }
    };
    checker::goal::Goal {
        allowed: Vec::new(),
        wanted: wanted.into_iter().collect(),
    }
}

/// A short account of a report: `no findings`, or its findings as `class rule (severity)`
/// (`deadlock (error)` for the rule named after its class).
pub fn summarize(report: &Report) -> String {
    if report.findings.is_empty() {
        return "no findings".into();
    }
    let mut parts: Vec<String> = Vec::new();
    for f in &report.findings {
        // A rule named after its class (`deadlock`) is named once.
        let class = f.class().as_str();
        let s = if f.rule.name == class {
            format!("{class} ({})", f.severity.as_str())
        } else {
            format!("{class} {} ({})", f.rule.name, f.severity.as_str())
        };
        if !parts.contains(&s) {
            parts.push(s);
        }
    }
    parts.join(", ")
}

thread_local! {
    /// Where the last panic on this thread happened (set by [`quiet_panics`]'s hook).
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replace the panic hook with one that only records where a panic happened, so that a checker
/// panic caught by [`check_caught`] is reported as one failure line instead of a backtrace.
pub fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        PANIC_AT.with(|p| *p.borrow_mut() = Some(at));
    }));
}

/// Check a program; a panic in the checker becomes an error message (one bad case must not
/// take the whole suite down).
pub fn check_caught(
    file: &SourceFile,
    program: &protocols::ir::Program,
    options: &CheckOptions,
) -> Result<Report, String> {
    check_caught_with(file, program, options, None)
}

/// [`check_caught`] with the checker's progress callback.
pub fn check_caught_with(
    file: &SourceFile,
    program: &protocols::ir::Program,
    options: &CheckOptions,
    progress: Option<&dyn Fn(&checker::Progress)>,
) -> Result<Report, String> {
    // The suppressions applied to the report below allow their findings: those must not
    // decide the search (`checker::goal`).
    let mut options = options.clone();
    options
        .goal
        .allowed
        .extend(checker::lints::suppress::allowed(program, file));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut report = checker::check_with_progress(program, &options, progress);
        checker::lints::suppress::apply_to_report(program, file, &mut report);
        report
    }))
    .map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        match PANIC_AT.with(|p| p.borrow_mut().take()) {
            Some(at) => format!("the checker panicked at {at}: {msg}"),
            None => format!("the checker panicked: {msg}"),
        }
    })
}

/// One case's search, given the checker's progress callback (or none).
pub type Search<'a> = dyn FnMut(Option<&dyn Fn(&checker::Progress)>) -> Result<Report, String> + 'a;

/// What runs each case's search: `phasecheck test` shows its progress and restates a memory
/// limit in terms of `--max-memory`.
pub trait Watch: Sync {
    /// Run `check` (the search of `case`) with a progress callback if wanted.
    fn search(&self, case: &Case, check: &mut Search<'_>) -> Result<Report, String> {
        let _ = case;
        check(None)
    }
}

/// Searches run as they are.
pub struct Unwatched;
impl Watch for Unwatched {}

/// Run the `expect` lines of one file that the target selects and `skip` does not reject, each
/// search through `watch`.
pub fn check_file(
    target: &Target,
    options: &CheckOptions,
    skip: &(dyn Fn(&Case) -> bool + Sync),
    watch: &dyn Watch,
) -> FileResult {
    let path = &target.path;
    let name = display_name(path);
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            return FileResult {
                file: name.clone(),
                cases: Err(format!("cannot read {name}: {e}")),
            };
        }
    };
    // Bytes that are not UTF-8 are a load error (E0004) like any other.
    let loaded = SourceFile::from_bytes(name.clone(), bytes)
        .and_then(|file| protocols::load(&file, &[]).map(|p| (file, p)));
    let (file, program) = match loaded {
        Ok(p) => p,
        Err(errors) => {
            return FileResult {
                file: name,
                cases: Err(describe_load_errors(&errors)),
            };
        }
    };
    if let Some(lines) = &target.lines {
        let missing: Vec<String> = lines
            .iter()
            .filter(|l| !program.expects.iter().any(|e| file.line_of(e.span) == **l))
            .map(u32::to_string)
            .collect();
        if !missing.is_empty() {
            return FileResult {
                file: name.clone(),
                cases: Err(format!(
                    "{name} has no expect line at line {}",
                    missing.join(", ")
                )),
            };
        }
    }
    let mut cases = Vec::new();
    for expect in &program.expects {
        let case = Case {
            file: name.clone(),
            line: file.line_of(expect.span),
            text: normalize(file.slice(expect.span)),
        };
        if target
            .lines
            .as_ref()
            .is_some_and(|l| !l.contains(&case.line))
            || skip(&case)
        {
            continue;
        }
        let start = std::time::Instant::now();
        let outcome = match protocols::load(&file, &expect.overrides) {
            Err(errors) => Outcome::LoadError(describe_load_errors(&errors)),
            Ok(program) => match watch.search(&case, &mut |progress| {
                let options = CheckOptions {
                    goal: goal(expect),
                    ..options.clone()
                };
                check_caught_with(&file, &program, &options, progress)
            }) {
                Ok(report) => match judge(expect, &report) {
                    Ok(()) => Outcome::Pass,
                    Err(why) => Outcome::Fail(why),
                },
                Err(why) => Outcome::Fail(why),
            },
        };
        cases.push(CaseResult {
            case,
            outcome,
            elapsed_ms: start.elapsed().as_millis() as u64,
        });
    }
    FileResult {
        file: name,
        cases: Ok(cases),
    }
}

/// Add the cases of `more` (the same files, other `expect` lines) to `results`, in line order.
pub fn merge_results(results: &mut [FileResult], more: Vec<FileResult>) {
    for (r, m) in results.iter_mut().zip(more) {
        if let (Ok(cases), Ok(extra)) = (&mut r.cases, m.cases) {
            cases.extend(extra);
            cases.sort_by_key(|c| c.case.line);
        }
    }
}

/// Check many files on `jobs` threads; results come back in the order of `targets`.
pub fn check_files(
    targets: &[Target],
    options: &CheckOptions,
    jobs: usize,
    skip: &(dyn Fn(&Case) -> bool + Sync),
) -> Vec<FileResult> {
    check_files_watched(targets, options, jobs, skip, &Unwatched)
}

/// [`check_files`], each search run through `watch`. The threads are plain threads, not
/// rayon's: the checker's portfolio runs on rayon's pool, where a waiting thread could take up
/// another file, so that more than `jobs` searches (and their memory) would be alive at once.
pub fn check_files_watched(
    targets: &[Target],
    options: &CheckOptions,
    jobs: usize,
    skip: &(dyn Fn(&Case) -> bool + Sync),
    watch: &dyn Watch,
) -> Vec<FileResult> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<FileResult>>> = Mutex::new(vec![None; targets.len()]);
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1).min(targets.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(target) = targets.get(i) else { break };
                    let result = check_file(target, options, skip, watch);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// One entry of a known-gaps list: `path: expect-line-text  # reason`.
#[derive(Clone, Debug)]
pub struct Gap {
    pub file: String,
    pub text: String,
    pub reason: String,
    /// 1-based line in the list.
    pub line: u32,
}

/// Expected failures: `expect` lines whose failure is a known checker gap. A listed line that
/// passes, or an entry that matches no `expect` line, is an error (the list can only shrink).
#[derive(Clone, Debug, Default)]
pub struct KnownGaps {
    pub entries: Vec<Gap>,
}

impl KnownGaps {
    /// Parse the list: blank lines and lines starting with `#` are ignored.
    pub fn parse(text: &str) -> Result<KnownGaps, String> {
        let mut entries = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (body, reason) = match line.split_once('#') {
                Some((b, r)) => (b.trim(), r.trim()),
                None => (line, ""),
            };
            let Some((file, expect)) = body.split_once(':') else {
                return Err(format!(
                    "line {}: expected `path: expect-line-text  # reason`",
                    i + 1
                ));
            };
            if reason.is_empty() {
                return Err(format!("line {}: a known gap needs a `# reason`", i + 1));
            }
            entries.push(Gap {
                file: file.trim().trim_start_matches("./").to_string(),
                text: normalize(expect),
                reason: reason.to_string(),
                line: i as u32 + 1,
            });
        }
        Ok(KnownGaps { entries })
    }

    pub fn find(&self, case: &Case) -> Option<&Gap> {
        self.entries
            .iter()
            .find(|g| g.text == case.text && same_file(&g.file, &case.file))
    }
}

/// Whether a known-gaps entry's path names the checked file `checked` (as it is reported):
/// the same text, or the same file, the entry's (relative) path being the tail of the file's
/// absolute path, so that an entry `corpus/guide/a.phase` also matches when `phasecheck test`
/// runs inside `corpus/` and reports `guide/a.phase`.
pub fn same_file(entry: &str, checked: &str) -> bool {
    if entry == checked {
        return true;
    }
    let Ok(abs) = std::fs::canonicalize(checked) else {
        return false;
    };
    let entry = Path::new(entry);
    if entry.is_absolute() {
        std::fs::canonicalize(entry).is_ok_and(|e| e == abs)
    } else {
        abs.ends_with(entry)
    }
}

/// The verdict on one case after the known gaps are applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Pass,
    /// Failed as listed in the known gaps.
    KnownGap(String),
    Fail(String),
}

/// Apply the known gaps to one case.
pub fn status(result: &CaseResult, gaps: &KnownGaps) -> Status {
    let gap = gaps.find(&result.case);
    match (&result.outcome, gap) {
        (Outcome::Pass, None) => Status::Pass,
        (Outcome::Pass, Some(g)) => Status::Fail(format!(
            "passes now but is listed as a known gap (line {} of the list): remove that line",
            g.line
        )),
        (Outcome::Fail(why), None) => Status::Fail(why.clone()),
        (Outcome::Fail(why), Some(g)) => {
            Status::KnownGap(format!("{why}; known gap: {}", g.reason))
        }
        (Outcome::LoadError(why), _) => Status::Fail(format!("load error: {why}")),
    }
}

/// Known-gap entries that name one of `files` (files checked with all their `expect` lines)
/// but match none of its cases: stale entries.
pub fn unmatched_gaps<'a>(
    gaps: &'a KnownGaps,
    results: &[FileResult],
    files: &[String],
) -> Vec<&'a Gap> {
    gaps.entries
        .iter()
        // Other entries (`path: no RULE`, used by tests/corpus.rs) are not expect lines.
        .filter(|g| g.text.starts_with("expect"))
        .filter(|g| files.iter().any(|f| same_file(&g.file, f)))
        .filter(|g| {
            !results.iter().any(|f| {
                f.cases.as_ref().is_ok_and(|cs| {
                    cs.iter()
                        .any(|c| c.case.text == g.text && same_file(&g.file, &c.case.file))
                })
            })
        })
        .collect()
}
