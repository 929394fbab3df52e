//! The result of `confirm`: per finding what the hardware showed, in human or JSON form.

use crate::args::Format;
use crate::cmd::fuzz;

pub use campaign::confirm::report::ConfirmReport;

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
            r.outcome_text()
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
    if report.findings.is_empty() && report.fuzz.is_none() {
        let _ = writeln!(o, "  no error-level finding: nothing to replay");
    }
    if let Some(fz) = &report.fuzz {
        let _ = writeln!(
            o,
            "  no error-level finding: fuzzed instead, on a stress kernel built from the model"
        );
        for l in fuzz::render_human(fz).lines().skip(1) {
            let _ = writeln!(o, "{l}");
        }
    }
    let from_model = report.fuzz.is_some()
        || report.findings.iter().any(|r| {
            r.evidence == campaign::confirm::report::Evidence::Model
                && r.outcome != campaign::confirm::report::Outcome::ModelOnly
        });
    if report.file.ends_with(".ptx") && from_model {
        // Issue 27: for a kernel's PTX, the model is the extracted protocol; say so, and how
        // to run the kernel itself.
        let _ = writeln!(
            o,
            "  note: these results come from a stress kernel built from the protocol extracted \
             from {} (the model), not from the kernel itself; to run the real kernel, \
             instrumented, with the application's own arguments: `phasecheck fuzz --app {} -- \
             ./app ARGS`",
            report.file, report.file
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use campaign::confirm::aim::{self, AimedFuzz};
    use campaign::confirm::obstacle::{Obstacle, ObstacleClass};
    use campaign::confirm::report::{Evidence, FindingResult, Outcome};
    use checker::{Class, Finding};
    use protocols::SourceFile;

    /// A lone leader lane: lane 0 of the consumer warp arrives on `empty` alone (the checker
    /// finds a deadlock at line 19).
    const LONE_LEADER: &str = "protocol lone_leader\nparam N = 3\nblock 64\nmbarrier ready\n\
        mbarrier empty\nif tid == 0 {\n  init ready, 1\n  init empty, 1\n}\nsyncthreads\n\
        role producer when tid == 32 {\n  for i in 0..N {\n    wait empty parity (i % 2) ^ 1\n    \
        arrive ready\n  }\n}\nrole consumer when tid < 32 {\n  for i in 0..N {\n    \
        wait ready parity i % 2\n    if lane == 0 { arrive empty }\n  }\n}\n";

    fn lone_leader() -> (SourceFile, Finding) {
        let file = SourceFile::new("lone_leader.phase", LONE_LEADER);
        let program = protocols::load(&file, &[]).expect("loads");
        let report = checker::check(&program, &checker::CheckOptions::default());
        let f = report
            .findings
            .into_iter()
            .find(|f| f.class() == Class::Deadlock)
            .expect("a deadlock");
        (file, f)
    }

    /// The report: why the replay cannot show a finding and what the aimed fuzz did, in both
    /// outputs; the parent reads a child's JSON back.
    #[test]
    fn reasons_and_the_aimed_fuzz_are_reported() {
        let (file, f) = lone_leader();
        let mut r = FindingResult::new(&f, &file);
        r.detail = "the replayed interleaving did not show it".into();
        r.trials = 1320;
        r.why_not_shown = vec![Obstacle::new(ObstacleClass::WarpLanes, "lanes apart")];
        r.aimed_fuzz = Some(AimedFuzz {
            seconds: 5.0,
            rounds: 12,
            trials: 12672,
            lines: vec![19, 22],
            delay_ns: vec![2000, 20000],
            targets: vec![aim::Targets::Laggards, aim::Targets::HalfOfEachWarp],
            shown: false,
            trials_showing: 0,
            stuck: false,
            detail: "nothing seen".into(),
            seed: None,
        });
        let out = ConfirmReport {
            file: "lone_leader.phase".into(),
            device: "test".into(),
            check_seconds: 0.1,
            findings: vec![r],
            fuzz: None,
        };
        let text = render(&out);
        assert!(
            text.contains("why not shown (warp-lanes): lanes apart"),
            "{text}"
        );
        assert!(
            text.contains(
                "aimed fuzz (12 round(s), 12672 trials, 5.00 s; delays of up to 2 us / 20 us \
                 before line 19, 22 in the threads the trace holds back; a random half of each \
                 warp's lanes): nothing seen"
            ),
            "{text}"
        );
        let json = serde_json::to_value(&out).expect("serializes");
        let row = &json["findings"][0];
        assert_eq!(row["why_not_shown"][0]["class"], "warp-lanes");
        assert_eq!(row["aimed_fuzz"]["targets"][1], "half-of-each-warp");
        assert!(row["aimed_fuzz"].get("stuck").is_none());
        let back: FindingResult = serde_json::from_value(row.clone()).expect("reads back");
        assert_eq!(back.why_not_shown[0].class, ObstacleClass::WarpLanes);
        assert_eq!(back.aimed_fuzz.expect("aimed").trials, 12672);
    }

    /// A result the model's stress kernel gave never reads as a bare "confirmed" (issue 27):
    /// the row names the kernel; the JSON says `evidence`, and a child's JSON without it reads
    /// back as the model's.
    #[test]
    fn the_report_says_which_kernel_showed_a_finding() {
        let (file, f) = lone_leader();
        let mut r = FindingResult::new(&f, &file);
        r.outcome = Outcome::Confirmed;
        r.detail = "bounded waits expired at line 19".into();
        let mut out = ConfirmReport::new("lone_leader.phase", 0.1);
        out.findings.push(r.clone());
        let text = render(&out);
        assert!(
            text.contains("confirmed on a stress kernel built from the model\n"),
            "{text}"
        );
        let json = serde_json::to_value(&out).expect("serializes");
        assert_eq!(json["findings"][0]["evidence"], "model");
        assert_eq!(json["findings"][0]["outcome"], "confirmed");
        let mut row = json["findings"][0].clone();
        row.as_object_mut().expect("an object").remove("evidence");
        let back: FindingResult = serde_json::from_value(row).expect("reads back");
        assert_eq!(back.evidence, Evidence::Model);
        r.evidence = Evidence::RealKernel;
        out.findings = vec![r.clone()];
        assert!(render(&out).contains("confirmed on the real kernel\n"));
        // A replay on the real kernel that did not show it says why, and is never "confirmed".
        r.outcome = Outcome::NotReproduced;
        r.reason = Some("diverged at step 12".into());
        out.findings = vec![r.clone()];
        let text = render(&out);
        assert!(
            text.contains("not reproduced on the real kernel (diverged at step 12)\n"),
            "{text}"
        );
        assert!(!text.contains("confirmed"), "{text}");
        let json = serde_json::to_value(&out).expect("serializes");
        assert_eq!(json["findings"][0]["outcome"], "not-reproduced");
        assert_eq!(json["findings"][0]["evidence"], "real-kernel");
        assert_eq!(json["findings"][0]["reason"], "diverged at step 12");
        // A finding `confirm --app` does not replay rests on the model alone.
        r.outcome = Outcome::ModelOnly;
        r.evidence = Evidence::Model;
        r.reason = None;
        out.findings = vec![r.clone()];
        let text = render(&out);
        assert!(
            text.contains("model only (not replayed on the real kernel)\n"),
            "{text}"
        );
        assert!(!text.contains("confirmed"), "{text}");
        r.outcome = Outcome::NotObservable;
        out.findings = vec![r];
        let text = render(&out);
        assert!(text.contains("not observable on hardware\n"), "{text}");
        assert!(!text.contains("real kernel"), "{text}");
    }

    /// For a `.ptx` input, a report with results from the model says so in a note naming
    /// `fuzz --app`; a `.phase` file's report has no such note (its model is the input).
    #[test]
    fn a_ptx_report_from_the_model_points_to_the_real_kernel() {
        let (file, f) = lone_leader();
        let mut r = FindingResult::new(&f, &file);
        r.outcome = Outcome::Confirmed;
        let mut out = ConfirmReport::new("k.ptx", 0.1);
        out.findings.push(r.clone());
        let text = render(&out);
        assert!(
            text.contains("note: these results come from a stress kernel built from the protocol extracted from k.ptx (the model), not from the kernel itself"),
            "{text}"
        );
        assert!(
            text.contains("phasecheck fuzz --app k.ptx -- ./app ARGS"),
            "{text}"
        );
        let mut phase = ConfirmReport::new("lone_leader.phase", 0.1);
        phase.findings.push(r);
        assert!(!render(&phase).contains("note:"));
    }
}
