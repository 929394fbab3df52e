//! The result of `confirm`: per finding what the hardware showed, in human or JSON form.

use crate::args::Format;
use crate::cmd::fuzz;

pub use campaign::confirm::report::{ConfirmReport, FindingResult, Outcome};

pub(super) fn render(report: &ConfirmReport) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "confirm {} on {} (checker: {:.2} s)",
        report.file, report.device, report.check_seconds
    );
    for r in &report.findings {
        let _ = writeln!(
            o,
            "  {:<9} {:<22} line {:<4} {:<36} {}",
            r.class,
            format!("{}({})", r.rule, r.code),
            r.line,
            r.statement,
            r.outcome.as_str()
        );
        let _ = writeln!(
            o,
            "            {} [{} of {} trials, {:.2} s, trace of {} steps]",
            r.detail, r.trials_showing, r.trials, r.seconds, r.trace_steps
        );
        for w in &r.why_not_shown {
            let _ = writeln!(
                o,
                "            why not shown ({}): {}",
                w.class.as_str(),
                w.detail
            );
        }
        if let Some(a) = &r.aimed_fuzz {
            let targets: Vec<&str> = a.targets.iter().map(|t| t.as_str()).collect();
            let lines: Vec<String> = a.lines.iter().map(|l| l.to_string()).collect();
            let ns: Vec<String> = a
                .delay_ns
                .iter()
                .map(|n| format!("{} us", f64::from(*n) / 1e3))
                .collect();
            let _ = writeln!(
                o,
                "            aimed fuzz ({} round(s), {} trials, {:.2} s; delays of up to {} \
                 before line {} in {}): {}{}",
                a.rounds,
                a.trials,
                a.seconds,
                ns.join(" / "),
                lines.join(", "),
                targets.join("; "),
                if a.shown { "shown: " } else { "" },
                a.detail
            );
        }
    }
    if let Some(fz) = &report.fuzz {
        let _ = writeln!(o, "  no error-level finding: fuzzed instead");
        for l in fuzz::render_human(fz).lines().skip(1) {
            let _ = writeln!(o, "{l}");
        }
    }
    o
}

pub(super) fn print_report(format: Format, out: &ConfirmReport) {
    match format {
        Format::Human => print!("{}", render(out)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(out).expect("JSON values serialize")
        ),
    }
}
