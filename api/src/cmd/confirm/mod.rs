//! `phasecheck confirm FILE`: check the file, then replay each error-level finding's
//! counterexample on the GPU with the device-side sequencer and look for the hazard; files
//! without error-level findings are fuzzed instead. The driver is
//! `campaign::confirm::driver`; each finding runs in a child process of its own
//! ([`crate::children::confirm_in_children`]). This module renders the report.

pub(crate) mod real;
pub(crate) mod report;
mod verdict;

use crate::args::{ConfirmArgs, Exit, Format};
use crate::children::{self, ChildrenError};
use crate::cmd::fuzz::{self, GpuOptions};
use crate::cmd::lower::report_lower_error;
use campaign::confirm::driver::{self, ConfirmError, ConfirmPlan, ConfirmSettings};
use gpu_harness::run::end_process;
use report::{ConfirmReport, print_report};

/// Print the report and end the process: a stuck kernel (or a faulted context) is freed only
/// with the process.
fn report_and_end(format: Format, out: &ConfirmReport) -> ! {
    print_report(format, out);
    eprintln!(
        "note: the GPU context is lost; the remaining findings of {} were not replayed",
        out.file
    );
    end_process(Exit::Findings as i32)
}

/// The exit code of a report: 1 when the GPU showed a hazard.
fn exit_of(out: &ConfirmReport) -> Exit {
    if out.shown() {
        Exit::Findings
    } else {
        Exit::Clean
    }
}

/// The command line's confirm settings.
pub(crate) fn settings(args: &ConfirmArgs) -> ConfirmSettings {
    ConfirmSettings {
        seconds: args.seconds,
        aim_seconds: args.aim_seconds,
        fuzz_seconds: args.fuzz_seconds,
        gpu: GpuOptions::from(&args.gpu),
    }
}

pub fn run(args: &ConfirmArgs) -> Exit {
    if args.app.app {
        return real::run(args);
    }
    let name = args.file.display().to_string();
    let not_run = fuzz::NotRun {
        format: args.format,
        file: &name,
    };
    let (file, program) = match crate::cmd::extract::load_any(&args.file, &args.params, &args.ptx) {
        Ok(x) => x,
        Err((code, msg)) => return not_run.print("bad-input", &msg, code),
    };
    let (report, check_seconds) = driver::check(&program, &file);
    let errors = driver::error_findings(&report);
    if !errors.is_empty() && args.finding.is_none() {
        return match children::confirm_in_children(args, &file, &errors, check_seconds) {
            Ok(out) => {
                print_report(args.format, &out);
                exit_of(&out)
            }
            Err(ChildrenError::Spawn(msg)) => {
                eprintln!("error: {msg}");
                Exit::BadInput
            }
            Err(ChildrenError::NotRun {
                reason,
                error,
                stderr,
            }) => {
                // The child could not use the GPU (or CUDA is missing): say why, once.
                eprint!("{stderr}");
                not_run.print(&reason, &error, Exit::BadInput)
            }
        };
    }
    let format = args.format;
    let plan = ConfirmPlan {
        settings: settings(args),
        only: args.finding,
        on_lower_error: report_lower_error,
        watchdog: std::sync::Arc::new(move |out: ConfirmReport| print_report(format, &out)),
        exit_code: Exit::Findings as i32,
    };
    match driver::confirm_program(&file, &program, &report, check_seconds, &plan) {
        Ok(out) if out.context_lost() => report_and_end(format, &out),
        Ok(out) => {
            print_report(format, &out);
            exit_of(&out)
        }
        Err(ConfirmError::NoSuchFinding { index, count }) => not_run.print(
            "bad-input",
            &format!("there is no error-level finding {index} ({count} found)"),
            Exit::BadInput,
        ),
        Err(ConfirmError::NotLowered(e)) => {
            not_run.print("not-lowered", &e.message, Exit::BadInput)
        }
        Err(ConfirmError::Run { report, error }) if report.findings.is_empty() => {
            fuzz::fail_as(error, Some(&not_run))
        }
        Err(ConfirmError::Run { report, error }) => {
            print_report(format, &report);
            fuzz::fail(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The campaign ends a process whose stuck launch's read-back hung with the command line's
    /// "findings" exit code.
    #[test]
    fn the_stuck_exit_is_the_findings_exit() {
        assert_eq!(campaign::confirm::replay::STUCK_EXIT, Exit::Findings as i32);
    }
}
