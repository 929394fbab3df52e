//! `phasecheck lower FILE [-o kernel.cu]`: the protocol as a CUDA C++ stress kernel.

use crate::cli::{Exit, LowerArgs};
use crate::report;
use gpu_harness::lower::{self, LowerOptions, Mode};
use protocols::SourceFile;
use protocols::ir::Program;
use std::path::Path;

/// Read and load one file; load errors are printed (human form) and mapped to exit 2.
pub fn load(path: &Path, params: &[(String, i64)]) -> Result<(SourceFile, Program), Exit> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", path.display());
            return Err(Exit::BadInput);
        }
    };
    // Bytes that are not UTF-8 are a load error (E0004) like any other.
    let file = SourceFile::from_bytes(path.display().to_string(), bytes).map_err(|errors| {
        eprint!("{}", report::load_errors::human(&errors));
        Exit::BadInput
    })?;
    match protocols::load(&file, params) {
        Ok(p) => Ok((file, p)),
        Err(errors) => {
            eprint!("{}", report::load_errors::human(&errors));
            Err(Exit::BadInput)
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
    let (file, program) = match load(&args.file, &args.params) {
        Ok(x) => x,
        Err(code) => return code,
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
