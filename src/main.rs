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

/// Die of SIGPIPE when the reader of standard output goes away (`phasecheck verify ... | head`),
/// as other command-line tools do, instead of panicking in `println!` on the broken pipe: Rust
/// ignores SIGPIPE by default, so every write would fail with EPIPE.
#[cfg(unix)]
fn die_quietly_on_closed_stdout() {
    // SAFETY: called first thing in `main`, before any other thread exists; setting a signal's
    // disposition to SIG_DFL installs no handler code, so there is nothing to be unsafe about
    // beyond the FFI call itself.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn die_quietly_on_closed_stdout() {}

fn main() -> ExitCode {
    die_quietly_on_closed_stdout();
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
