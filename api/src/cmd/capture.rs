//! `phasecheck capture [-o FILE] -- ./app ARGS`: record every kernel launch of a program on a
//! GPU machine (crate `capture`, docs/ptx.md "Launch capture").

use crate::args::Exit;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CaptureArgs {
    /// Write the launches here (JSON Lines; `--launch FILE#N` reads them).
    #[arg(short = 'o', long = "output", default_value = "launches.json")]
    pub output: PathBuf,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "PROGRAM ARGS")]
    pub command: Vec<String>,
}

pub fn run(a: &CaptureArgs) -> Exit {
    match capture::record::run(&a.command, &a.output) {
        Ok(o) => {
            let kernels: Vec<String> = o.kernels.iter().map(|(k, n)| format!("{k} x{n}")).collect();
            eprintln!(
                "{}: {} launches{}{}",
                a.output.display(),
                o.launches,
                if kernels.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", kernels.join(", "))
                },
                match o.exit_code {
                    Some(0) => String::new(),
                    Some(c) => format!("; the program exited with {c}"),
                    None => "; the program was killed by a signal".into(),
                }
            );
            if o.launches == 0 {
                eprintln!(
                    "warning: no launch was recorded (a program without CUDA, a driver older than \
                     CUDA 12.4, or CUPTI not found: set PHASECHECK_CUPTI to libcupti.so)"
                );
            }
            if o.exit_code == Some(0) {
                Exit::Clean
            } else {
                Exit::Findings
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            Exit::BadInput
        }
    }
}
