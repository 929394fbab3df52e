//! `phasecheck`: correctness checker and GPU fuzzer for barrier protocols.

mod budget;
mod cli;
mod cmd;
mod config;
mod expectations;
mod report;
mod status;

use clap::Parser;
use std::process::ExitCode;

/// The checker clones a state (a few dozen small vectors) for every transition; mimalloc's
/// thread-local free lists make that about a third cheaper than glibc malloc
/// (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Verify(args) => cmd::verify::run(&args),
        cli::Command::Lint(args) => cmd::lint::run(&args),
        cli::Command::Rules(args) => cmd::rules::run(&args),
        cli::Command::Explain(args) => cmd::explain::run(&args),
        cli::Command::Lower(args) => cmd::lower::run(&args),
        cli::Command::Fuzz(args) => cmd::fuzz::run(&args),
        cli::Command::Confirm(args) => cmd::confirm::run(&args),
        cli::Command::Test(args) => cmd::test::run(&args),
        cli::Command::Mutate(args) => cmd::mutate::run(&args),
        cli::Command::Extract(args) => cmd::extract::run(&args),
        cli::Command::Capture(args) => cmd::capture::run(&args),
    };
    ExitCode::from(code as u8)
}
