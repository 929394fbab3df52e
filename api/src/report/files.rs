//! The result of `phasecheck lint`: one entry per file, the value every lint format renders.

use crate::args::Exit;
use checker::{Report, Severity, Verdict};
use protocols::ir::Program;
use protocols::{LoadErrors, SourceFile};

pub enum Outcome {
    /// Loaded and checked; the report has configuration and suppressions applied.
    Checked {
        program: Box<Program>,
        report: Report,
    },
    /// The loader rejected it.
    LoadFailed(LoadErrors),
    /// It could not be read (missing, not UTF-8, ...): the message says why.
    Unreadable(String),
}

pub struct FileResult {
    pub file: SourceFile,
    pub outcome: Outcome,
    /// For a `.ptx` file: its extraction, to report findings at the CUDA source or PTX lines.
    pub origin: Option<super::origin::PtxOrigin>,
}

impl FileResult {
    /// What the reporters ask where a span of this file is.
    pub fn locator(&self) -> super::origin::Locator<'_> {
        super::origin::Locator::new(&self.file, self.origin.as_ref())
    }
}

/// Counts over all files, for summaries and the exit code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    pub files: usize,
    pub errors: usize,
    pub warnings: usize,
    /// Files whose search stopped at a limit.
    pub inconclusive: usize,
    /// Files that could not be read or loaded.
    pub bad_input: usize,
}

impl Summary {
    pub fn of(results: &[FileResult]) -> Summary {
        let mut s = Summary {
            files: results.len(),
            ..Summary::default()
        };
        for r in results {
            match &r.outcome {
                Outcome::Checked { report, .. } => {
                    for f in &report.findings {
                        match f.severity {
                            Severity::Error => s.errors += 1,
                            Severity::Warning => s.warnings += 1,
                        }
                    }
                    if report.verdict == Verdict::Inconclusive {
                        s.inconclusive += 1;
                    }
                }
                Outcome::LoadFailed(_) | Outcome::Unreadable(_) => s.bad_input += 1,
            }
        }
        s
    }

    /// 2 bad input, else 1 errors (or warnings when they are denied), else 3 inconclusive,
    /// else 0.
    pub fn exit(&self, deny_warnings: bool) -> Exit {
        if self.bad_input > 0 {
            Exit::BadInput
        } else if self.errors > 0 || (deny_warnings && self.warnings > 0) {
            Exit::Findings
        } else if self.inconclusive > 0 {
            Exit::Inconclusive
        } else {
            Exit::Clean
        }
    }
}

/// `--format json`: the checker's per-file contract (`report::json`), one entry per file, and
/// a summary.
pub fn json(results: &[FileResult], exit: Exit) -> serde_json::Value {
    let files: Vec<serde_json::Value> = results
        .iter()
        .map(|r| match &r.outcome {
            Outcome::Checked { program, report } => {
                super::json::render_located(r.locator(), program, report)
            }
            Outcome::LoadFailed(errors) => super::load_errors::json(errors),
            Outcome::Unreadable(msg) => serde_json::json!({
                "schema": 1,
                "file": r.file.name,
                "verdict": "error",
                "errors": [{ "file": r.file.name, "code": "unreadable", "message": msg }],
            }),
        })
        .collect();
    serde_json::json!({
        "schema": 1,
        "tool": "phasecheck",
        "version": env!("CARGO_PKG_VERSION"),
        "files": files,
        "summary": Summary::of(results),
        "exit_code": exit as u8,
    })
}

/// `--format human`: the checker's human report for every file with something to say, then
/// one summary line (coloured only when `color`).
pub fn human(results: &[FileResult], exit: Exit, color: bool) -> String {
    let mut out = String::new();
    for r in results {
        match &r.outcome {
            Outcome::Checked { program, report } => {
                if !report.findings.is_empty() || report.incomplete.is_some() {
                    match &r.origin {
                        // A `.ptx` file: replay commands with its options, and where each
                        // finding is in the CUDA source, as `verify` prints them.
                        Some(o) => {
                            out.push_str(&super::human::render_with_options(
                                &r.file, program, report, color, &o.options,
                            ));
                            out.push_str(&crate::cmd::extract::annotate(
                                &r.file,
                                &o.extracted,
                                report,
                            ));
                        }
                        None => {
                            out.push_str(&super::human::render(&r.file, program, report, color))
                        }
                    }
                }
            }
            // Same colour decision as the findings (stdout, `--output`), not stderr's.
            Outcome::LoadFailed(errors) => {
                out.push_str(&protocols::render::render(errors, color, 100))
            }
            Outcome::Unreadable(msg) => out.push_str(&format!("error: {}: {msg}\n", r.file.name)),
        }
    }
    let s = Summary::of(results);
    let paint = |code: &str, text: String| {
        if color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text
        }
    };
    let mut parts = vec![
        paint(
            if s.errors > 0 { "1;31" } else { "1" },
            super::count(s.errors, "error"),
        ),
        paint(
            if s.warnings > 0 { "1;33" } else { "1" },
            super::count(s.warnings, "warning"),
        ),
    ];
    if s.inconclusive > 0 {
        parts.push(paint("1;35", format!("{} inconclusive", s.inconclusive)));
    }
    if s.bad_input > 0 {
        parts.push(paint("1;31", format!("{} not loaded", s.bad_input)));
    }
    out.push_str(&format!(
        "checked {}: {} (exit {})\n",
        super::count(s.files, "file"),
        parts.join(", "),
        exit as u8
    ));
    out
}
