//! The command line: one subcommand per library command (`phasecheck_api::cmd`); the
//! options of each live in `phasecheck_api::args`.

use clap::{Parser, Subcommand};
use phasecheck_api::args::*;

#[derive(Parser, Debug)]
#[command(
    name = "phasecheck",
    version,
    about = "Checks and fuzzes GPU barrier protocols (.phase files)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Explore every interleaving of each file and report deadlocks, UB and races.
    Verify(VerifyArgs),
    /// Check every .phase file under the paths for CI: human, JSON, SARIF or GitHub output.
    Lint(LintArgs),
    /// List the rules (code, name, class, severity, summary).
    Rules(RulesArgs),
    /// Print a rule's documentation (by name or code).
    Explain(ExplainArgs),
    /// Lower a .phase file to a CUDA C++ stress kernel (readable; compiles with nvcc and NVRTC).
    Lower(LowerArgs),
    /// Run the protocol's stress kernel on the GPU with random delays and report hangs and
    /// stale reads.
    Fuzz(FuzzArgs),
    /// Replay each error-level finding of the checker on the GPU and report whether the
    /// hardware shows it.
    Confirm(ConfirmArgs),
    /// Run every `expect` line of the .phase files under PATHS (a protocol test suite).
    Test(TestArgs),
    /// Check systematic mutants of each protocol (a flipped parity, a count off by one, a
    /// removed wait, ...) and report the share the checker flags; with --gpu, also run each
    /// mutant on the GPU and compare.
    Mutate(MutateArgs),
    /// Extract a kernel's synchronization skeleton from its PTX as a .phase protocol
    /// (docs/ptx.md); `verify` takes .ptx files with the same options.
    Extract(phasecheck_api::cmd::extract::ExtractArgs),
    /// Run a CUDA program on the GPU and record every kernel launch (grid, block, cluster,
    /// parameter bytes, tensor maps) for `--launch FILE#N` (docs/ptx.md).
    Capture(phasecheck_api::cmd::capture::CaptureArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every option and argument of every subcommand says what it does in `--help` (`-p/--param`
    /// of `fuzz` and `confirm` once had none).
    #[test]
    fn every_argument_has_help() {
        let cli = Cli::command();
        let mut missing = Vec::new();
        for sub in cli.get_subcommands() {
            for arg in sub.get_arguments() {
                if arg.is_hide_set() || arg.get_id() == "help" || arg.get_id() == "version" {
                    continue;
                }
                if arg.get_help().is_none() {
                    missing.push(format!("{} {}", sub.get_name(), arg.get_id()));
                }
            }
        }
        assert!(missing.is_empty(), "arguments without help: {missing:?}");
    }
}
