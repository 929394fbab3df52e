//! `phasecheck lower FILE [-o kernel.cu]`: the protocol as a CUDA C++ stress kernel.

use crate::args::{Exit, LowerArgs};
use crate::report;
use gpu_harness::lower::{self, LowerOptions, Mode};
use protocols::SourceFile;
use protocols::ir::Program;
use std::path::Path;

/// Read and load one file; load errors are printed (human form) and mapped to exit 2, with a
/// one-line account of what went wrong (for `--format json`).
pub fn load(
    path: &Path,
    params: &[(String, i64)],
) -> Result<(SourceFile, Program), (Exit, String)> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            let msg = format!("cannot read {}: {e}", path.display());
            eprintln!("error: {msg}");
            return Err((Exit::BadInput, msg));
        }
    };
    // Bytes that are not UTF-8 are a load error (E0004) like any other.
    let file = SourceFile::from_bytes(path.display().to_string(), bytes).map_err(|errors| {
        eprint!("{}", report::load_errors::human(&errors));
        let msg = format!("{} is not UTF-8 text", path.display());
        (Exit::BadInput, msg)
    })?;
    match protocols::load(&file, params) {
        Ok(p) => Ok((file, p)),
        Err(errors) => {
            eprint!("{}", report::load_errors::human(&errors));
            let msg = format!(
                "{} does not load ({}; `phasecheck verify` shows them)",
                file.name,
                report::count(errors.errors.len(), "load error")
            );
            Err((Exit::BadInput, msg))
        }
    }
}

/// Print a lowering error with its place in the file.
pub fn report_lower_error(file: &SourceFile, e: &lower::LowerError) {
    match e.span {
        Some(span) => {
            let lc = file.line_col(span.start);
            eprintln!(
                "error: cannot lower {}:{}:{}: {}",
                file.name, lc.line, lc.column, e.message
            );
        }
        None => eprintln!("error: cannot lower {}: {}", file.name, e.message),
    }
}

pub fn run(args: &LowerArgs) -> Exit {
    let (file, program) = match crate::cmd::extract::load_any(&args.file, &args.params, &args.ptx) {
        Ok(x) => x,
        Err((code, _)) => return code,
    };
    let mode = if args.confirm {
        Mode::Confirm
    } else {
        Mode::Fuzz
    };
    let lowered = match lower::lower(
        &program,
        Some(&file),
        &LowerOptions {
            mode,
            proxy_window: args.proxy_window,
            ..Default::default()
        },
    ) {
        Ok(l) => l,
        Err(e) => {
            report_lower_error(&file, &e);
            return Exit::BadInput;
        }
    };
    match &args.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &lowered.source) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return Exit::BadInput;
            }
        }
        None => print!("{}", lowered.source),
    }
    Exit::Clean
}
