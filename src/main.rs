//! `phasecheck`: correctness checker and GPU fuzzer for barrier protocols. The commands live in
//! the library (`phasecheck_api::cmd`); this binary parses the command line and calls one of
//! them.

mod cli;

use clap::Parser;
use phasecheck_api::cmd;
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
    };
    ExitCode::from(code as u8)
}
