//! The GPU commands' child processes: `confirm` replays each finding, and `mutate --gpu` runs
//! each mutant, in a process of its own (the same binary, with a hidden option), because a
//! kernel stuck in a hardware barrier is freed only with its process and must not take the
//! other findings or mutants with it. The children run the campaigns
//! (`campaign::confirm::driver`, `campaign::mutate::gpu`) and answer in JSON; this module
//! starts them and reads their answers back.

use crate::args::{ConfirmArgs, MutateArgs};
use crate::cmd::mutate::{MutantResult, Operator, Prepared, Verdict4, time_arg};
use campaign::confirm::report::{ConfirmReport, FindingResult};
use campaign::mutate::gpu::GpuOutcome;
use checker::Finding;
use protocols::SourceFile;

/// Why `confirm`'s children gave no report.
pub(crate) enum ChildrenError {
    /// The executable cannot be found or started.
    Spawn(String),
    /// A child could not use the GPU (exit 2): its reason and message (`--format json`'s
    /// `skipped` object), and what it printed to standard error.
    NotRun {
        reason: String,
        error: String,
        stderr: String,
    },
}

/// Replay each error-level finding of `file` (`errors`, checked in `check_seconds`) in a child
/// process of its own (`phasecheck confirm FILE --finding N --format json`, the same binary):
/// a kernel stuck in a hardware barrier can only be ended with its process, and must not take
/// the other findings with it. The children's results, in order.
pub(crate) fn confirm_in_children(
    args: &ConfirmArgs,
    file: &SourceFile,
    errors: &[&Finding],
    check_seconds: f64,
) -> Result<ConfirmReport, ChildrenError> {
    let exe = std::env::current_exe()
        .map_err(|e| ChildrenError::Spawn(format!("cannot find the phasecheck executable: {e}")))?;
    let mut out = ConfirmReport::new(&file.name, check_seconds);
    out.device = String::new();
    for (i, f) in errors.iter().enumerate() {
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("confirm")
            .arg(&args.file)
            .args(["--format", "json", "--finding", &i.to_string()])
            .args(["--seconds", &args.seconds.to_string()])
            .args(["--device", &args.gpu.device.to_string()])
            .args(["--delay-ns", &args.gpu.delay_ns.to_string()])
            .args(["--delay-every", &args.gpu.delay_every.to_string()])
            .args(["--wait-cycles", &args.gpu.wait_cycles.to_string()])
            .args(["--aim-seconds", &args.aim_seconds.to_string()]);
        if let Some(t) = args.gpu.launch_timeout {
            cmd.args(["--launch-timeout", &t.to_string()]);
        }
        for (k, v) in &args.params {
            cmd.args(["--param", &format!("{k}={v}")]);
        }
        cmd.args(args.ptx.to_args());
        let res = cmd
            .output()
            .map_err(|e| ChildrenError::Spawn(format!("cannot run {}: {e}", exe.display())))?;
        let parsed: Option<serde_json::Value> = serde_json::from_slice(&res.stdout).ok();
        let field = |k: &str| {
            parsed
                .as_ref()
                .and_then(|v| v[k].as_str())
                .map(str::to_string)
        };
        if res.status.code() == Some(2) {
            return Err(ChildrenError::NotRun {
                reason: field("reason").unwrap_or_else(|| "no-gpu".into()),
                error: field("error").unwrap_or_else(|| "the replay could not run".into()),
                stderr: String::from_utf8_lossy(&res.stderr).into_owned(),
            });
        }
        // A child whose kernel did not lower names no device: keep one that ran.
        if let Some(d) = field("device")
            && (out.device.is_empty() || !d.starts_with("none"))
        {
            out.device = d;
        }
        let result = parsed
            .as_ref()
            .and_then(|v| v["findings"].get(0).cloned())
            .and_then(|v| serde_json::from_value::<FindingResult>(v).ok());
        out.findings.push(result.unwrap_or_else(|| {
            let mut r = FindingResult::new(f, file);
            r.detail = format!(
                "the replay ended without a result: {}",
                String::from_utf8_lossy(&res.stderr).trim()
            );
            r
        }));
    }
    Ok(out)
}

/// Run the GPU part of mutant `m` of a prepared file in a child process and read its answer.
pub(crate) fn mutant_in_child(
    args: &MutateArgs,
    prepared: &Prepared,
    only: &[Operator],
    m: &MutantResult,
) -> GpuOutcome {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return GpuOutcome::not_run(format!("cannot find the phasecheck executable: {e}"));
        }
    };
    let mut cmd = std::process::Command::new(&exe);
    // The child chooses exactly these parameters and operators, so its mutant N is ours.
    cmd.arg("mutate")
        .arg(&prepared.path)
        .args(["--declared", "--no-config", "--format", "json"])
        .args(["--gpu-child", &m.id.to_string()])
        .args(["--max-time", &time_arg(args.max_time)])
        .args(["--max-states", &args.max_states.to_string()])
        .args(["--max-memory", &args.max_memory.to_string()])
        .args(["--max-loop-trips", &args.max_loop_trips.to_string()])
        .args(["--gpu-seconds", &args.gpu_seconds.to_string()])
        .args(["--confirm-seconds", &args.confirm_seconds.to_string()])
        .args(["--device", &args.gpu_args.device.to_string()])
        .args(["--delay-ns", &args.gpu_args.delay_ns.to_string()])
        .args(["--delay-every", &args.gpu_args.delay_every.to_string()])
        .args(["--wait-cycles", &args.gpu_args.wait_cycles.to_string()])
        .args(["--aim-seconds", &args.aim_seconds.to_string()]);
    if let Some(t) = args.gpu_args.launch_timeout {
        cmd.args(["--launch-timeout", &t.to_string()]);
    }
    for (k, v) in &prepared.overrides {
        cmd.args(["--param", &format!("{k}={v}")]);
    }
    for op in only {
        cmd.args(["--operator", op.name()]);
    }
    if m.checked.verdict == Verdict4::Hazard {
        cmd.arg("--gpu-child-replay");
    }
    // The child bounds its own launches (stuck ones end it), so this deadline only catches a
    // child that hangs anyway (a driver call that never returns): it is killed, the mutant is
    // reported as not run, and the other mutants go on.
    let replays = m.checked.rules.len() as f64;
    let deadline = std::time::Duration::from_secs_f64(
        120.0 + args.gpu_seconds + replays * (args.confirm_seconds + args.aim_seconds + 45.0),
    );
    let out = match output_within(&mut cmd, deadline) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return GpuOutcome::not_run(format!(
                "the GPU run did not answer within {:.0} s and was killed",
                deadline.as_secs_f64()
            ));
        }
        Err(e) => return GpuOutcome::not_run(format!("cannot run {}: {e}", exe.display())),
    };
    let value: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
    if let Some(v) = &value
        && v["skipped"] == true
    {
        return GpuOutcome::not_run(format!(
            "not run ({}): {}",
            v["reason"].as_str().unwrap_or("?"),
            v["error"].as_str().unwrap_or("")
        ));
    }
    match value.and_then(|v| serde_json::from_value::<GpuOutcome>(v).ok()) {
        Some(o) => o,
        None => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            GpuOutcome::not_run(format!(
                "the GPU run ended without a result (exit {}): {}",
                out.status
                    .code()
                    .map_or_else(|| "by a signal".to_string(), |c| c.to_string()),
                stderr.trim().lines().last().unwrap_or("")
            ))
        }
    }
}

/// Run `cmd` to its end like `Command::output`, but kill it after `deadline` (`Ok(None)`).
fn output_within(
    cmd: &mut std::process::Command,
    deadline: std::time::Duration,
) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    // Both pipes drained on threads of their own, so that a full pipe never blocks the child.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if t0.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Ok(Some(std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child that answers is read whole; one that does not is killed at the deadline.
    #[cfg(unix)]
    #[test]
    fn a_child_past_its_deadline_is_killed() {
        use std::process::Command;
        use std::time::{Duration, Instant};
        let out = output_within(
            Command::new("sh").args(["-c", "echo answer; echo note >&2"]),
            Duration::from_secs(30),
        )
        .expect("runs")
        .expect("in time");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "answer\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "note\n");
        let t0 = Instant::now();
        let late = output_within(
            Command::new("sh").args(["-c", "sleep 30"]),
            Duration::from_millis(200),
        )
        .expect("runs");
        assert!(late.is_none());
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    }
}
