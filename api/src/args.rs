//! The options of each command, as the `phasecheck` command line spells them (clap `Args`
//! structs with public fields, so a library caller fills them in too). Each command's
//! behaviour lives in `cmd/<name>.rs`.

use clap::{Args, ValueEnum};
use std::path::PathBuf;

/// Exit codes that CI systems rely on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// No error-level finding.
    Clean = 0,
    /// Error-level findings (or warnings with `--deny warnings`).
    Findings = 1,
    /// Bad input, usage or configuration.
    BadInput = 2,
    /// A search stopped at a limit.
    Inconclusive = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

/// `NAME=VALUE` for `--param`.
pub fn parse_param(s: &str) -> Result<(String, i64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=VALUE"))?;
    let value = value.trim().replace('_', "");
    let parsed = if let Some(hex) = value.strip_prefix("0x") {
        i64::from_str_radix(hex, 16)
    } else if let Some(bin) = value.strip_prefix("0b") {
        i64::from_str_radix(bin, 2)
    } else {
        value.parse()
    };
    let value = parsed.map_err(|_| format!("`{value}` is not an integer"))?;
    Ok((name.trim().to_string(), value))
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The .phase files to check; a folder stands for every .phase file below it (sorted,
    /// honouring .gitignore, as `lint` finds them).
    #[arg(required = true, value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Override a parameter: `--param K=64` (repeatable).
    #[arg(long = "param", short = 'p', value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// Output: diagnostics with traces, JSON (one object with a `files` array), SARIF 2.1.0
    /// or GitHub annotations, as `lint` writes them (docs/ci.md).
    #[arg(long, value_enum, default_value_t = LintFormat::Human)]
    pub format: LintFormat,
    /// Stop with verdict `inconclusive` after this many distinct states.
    #[arg(long, default_value_t = 50_000_000)]
    pub max_states: u64,
    /// The most memory the run may use (bytes, or with a K/M/G suffix): a search that would
    /// need more stops with verdict `inconclusive`.
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_MAX_MEMORY, value_parser = parse_size)]
    pub max_memory: u64,
    /// Per-thread bound on the trips of one `while` loop.
    #[arg(long, default_value_t = 1_000)]
    pub max_loop_trips: u32,
    /// Stop with verdict `inconclusive` after this much time per file (`90s`, `10m`, `1h`;
    /// `none` for no limit).
    #[arg(long, default_value = "10m", value_parser = parse_time_limit)]
    pub max_time: TimeLimit,
    /// Write the wait-for graph of the first deadlock as Graphviz to FILE.
    #[arg(long, value_name = "FILE")]
    pub dot: Option<PathBuf>,
    /// Replay a counterexample schedule (as printed with a finding, e.g. `a11Ou3Hh`: runs of
    /// one actor; the older dotted form `0.0.3.40` is read too) and print its trace instead of
    /// searching.
    #[arg(long, value_name = "SCHEDULE")]
    pub replay: Option<String>,
    /// Turn thread-symmetry reduction off (same findings, more states; for cross-checking).
    #[arg(long)]
    pub no_symmetry: bool,
    /// Turn partial-order reduction off (same findings, more states; for cross-checking).
    #[arg(long)]
    pub no_por: bool,
    /// Search every interleaving to the end even after an error is found (by default the
    /// search stops 5 000 states after its first error, or when the random-schedule
    /// portfolio confirms one), to list every finding.
    #[arg(long)]
    pub exhaustive: bool,
    /// Worker threads for the search (states are expanded in parallel batches) and the
    /// random-schedule portfolio; default: one per core. The exhaustive search visits the same states in the same order
    /// whatever the number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub ptx: crate::cmd::extract::PtxArgs,
}

/// A wall-clock limit: `90`, `90s`, `500ms`, `10m`, `1h`; `0` or `none` for no limit.
pub fn parse_time_limit(s: &str) -> Result<TimeLimit, String> {
    let t = s.trim().to_ascii_lowercase();
    if t == "none" || t == "0" {
        return Ok(TimeLimit(None));
    }
    let (num, unit_ms) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1u64)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1_000)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60_000)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3_600_000)
    } else {
        (t.as_str(), 1_000)
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a time limit (e.g. 90s, 10m, 1h, or none)"))?;
    let ms = n
        .checked_mul(unit_ms)
        .ok_or_else(|| format!("`{s}` is too large"))?;
    Ok(TimeLimit(
        (ms > 0).then(|| std::time::Duration::from_millis(ms)),
    ))
}

/// `--max-time`: `None` is no limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeLimit(pub Option<std::time::Duration>);

/// `--max-memory` of `verify`, `lint` and `test`: one budget for the whole run. It fits the
/// smallest standard GitHub-hosted runner (7 GB for everything, the runner itself and the build
/// included) with room to spare; docs/ci.md.
pub const DEFAULT_MAX_MEMORY: &str = "4G";

/// `123`, `64K`, `512M`, `6G` (binary units; `B` or `iB` after the letter may be written).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not a size (e.g. 512M, 4G, or bytes)");
    let t = s.trim().replace('_', "");
    let lower = t.to_ascii_lowercase();
    let unit = lower.trim_end_matches("ib").trim_end_matches('b');
    let (num, mult) = match unit.char_indices().last() {
        Some((i, 'k')) => (&unit[..i], 1u64 << 10),
        Some((i, 'm')) => (&unit[..i], 1 << 20),
        Some((i, 'g')) => (&unit[..i], 1 << 30),
        Some((i, 't')) => (&unit[..i], 1 << 40),
        // A bare `B`/`iB` without K/M/G/T is only bytes when it is `B`.
        _ if lower.ends_with("ib") => return Err(bad()),
        _ => (unit, 1),
    };
    let n: u64 = num.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(format!("`{s}`: the size must be more than 0"));
    }
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}` is too large"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    /// Diagnostics for people; colour only on a terminal, never with NO_COLOR.
    Human,
    /// The `verify` JSON contract, one entry per file, plus a summary.
    Json,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// GitHub Actions workflow commands (annotations).
    Github,
}

#[derive(Args, Debug)]
pub struct LintArgs {
    /// Files or folders to check (folders: every .phase file, honouring .gitignore; a .ptx
    /// file given by name is checked as the protocol extracted from it, docs/ptx.md).
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = LintFormat::Human)]
    pub format: LintFormat,
    /// Write the output to this file instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Report these rules (or classes) as errors; `-D warnings` fails on any warning.
    #[arg(long = "deny", short = 'D', value_name = "RULE")]
    pub deny: Vec<String>,
    /// Report these rules (or classes) as warnings.
    #[arg(long = "warn", short = 'W', value_name = "RULE")]
    pub warn: Vec<String>,
    /// Do not report these rules (or classes).
    #[arg(long = "allow", short = 'A', value_name = "RULE")]
    pub allow: Vec<String>,
    /// Override a parameter in every file that declares it: `--param K=64` (repeatable).
    #[arg(long = "param", short = 'p', value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// Use this configuration file for every file instead of the nearest phasecheck.toml.
    #[arg(long, conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Ignore phasecheck.toml files.
    #[arg(long)]
    pub no_config: bool,
    /// Stop each search after this many states (verdict inconclusive, exit 3).
    #[arg(long)]
    pub max_states: Option<u64>,
    /// Stop each search after this much time (`90s`, `10m`, `none`; default 10m).
    #[arg(long, value_parser = parse_time_limit)]
    pub max_time: Option<TimeLimit>,
    /// Per-thread bound on the trips of one `while` loop (default 1000).
    #[arg(long, value_name = "N")]
    pub max_loop_trips: Option<u32>,
    /// The most memory the whole run may use (`4G`, `512M`), shared equally by the files
    /// checked at once; a search that would need more than its share is inconclusive (exit 3).
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_MAX_MEMORY, value_parser = parse_size)]
    pub max_memory: u64,
    /// Files checked at once (default: the number of cores); fewer give each search a larger
    /// share of --max-memory.
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    #[command(flatten)]
    pub ptx: crate::cmd::extract::PtxArgs,
}

/// `--jobs N`: at least 1.
pub fn parse_jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{s}` is not a number of jobs")),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    Human,
    Json,
    /// The Markdown of docs/rules.md.
    Markdown,
}

#[derive(Args, Debug)]
pub struct RulesArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = RulesFormat::Human)]
    pub format: RulesFormat,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// Rule name (`stale-token`) or code (`PC209`).
    pub rule: String,
}

#[derive(Args, Debug)]
pub struct LowerArgs {
    /// The .phase file to lower (or a .ptx file: the protocol extracted from it, docs/ptx.md).
    pub file: PathBuf,
    /// Override a parameter: `--param K=64` (repeatable).
    #[arg(long = "param", short = 'p', value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// Write the kernel here instead of standard output.
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Lower with the device-side sequencer of `confirm` compiled in.
    #[arg(long)]
    pub confirm: bool,
    /// Lower as `confirm` does for the unsequenced replay of a `missing-proxy-fence` race:
    /// writes leave their stores in flight for a following bulk copy (docs/gpu.md).
    #[arg(long, conflicts_with = "confirm")]
    pub proxy_window: bool,
    #[command(flatten)]
    pub ptx: crate::cmd::extract::PtxArgs,
}

/// GPU run settings shared by `fuzz` and `confirm`.
#[derive(Args, Debug, Clone)]
pub struct GpuArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Largest random delay before a statement, in nanoseconds (0: no delays).
    #[arg(long, default_value_t = 200)]
    pub delay_ns: u32,
    /// One delay in every N delay points (statements), at a random position of each window
    /// of N; 1 = a delay before every statement (`compute` always delays).
    #[arg(long, default_value_t = 1)]
    pub delay_every: u32,
    /// Clock cycles a wait may spin before it counts as a hang.
    #[arg(long, default_value_t = 4_000_000)]
    pub wait_cycles: i64,
    /// Seconds to wait for one launch before it counts as stuck in a hardware collective
    /// (default: `fuzz` 30 + --seconds, `confirm` 10 for a replay and 30 for a fuzz round).
    #[arg(long, value_name = "SECONDS")]
    pub launch_timeout: Option<f64>,
}

#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// The .phase file to fuzz (or a .ptx file: the protocol extracted from it, docs/ptx.md).
    pub file: PathBuf,
    /// Override a parameter: `--param K=64` (repeatable).
    #[arg(long = "param", short = 'p', value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// How long to keep launching rounds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Blocks (trials) per round (default: 8 per multiprocessor).
    #[arg(long)]
    pub blocks: Option<u32>,
    /// Seed of the first round (later rounds use the following seeds).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Output: a summary for people, or one JSON object (also when no GPU can be used).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Also time a hand-written kernel (bench/gpu/baseline.cuh) with the same blocks
    /// and delays, and print the throughput ratio.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Trips of the baseline's main loop (set the protocol's `K` to the same value).
    #[arg(long, default_value_t = 2000)]
    pub baseline_iters: u32,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Fuzz only the kernel that `confirm` replays a `missing-proxy-fence` race with, in which
    /// writes leave their stores in flight for a following bulk copy (use with `--delay-ns 0`;
    /// e.g. on the fenced twin, as a control). Without it, files with a `tma_store` spend a
    /// quarter of the time in that kernel, without delays.
    #[arg(long)]
    pub proxy_window: bool,
    #[command(flatten)]
    pub ptx: crate::cmd::extract::PtxArgs,
    #[command(flatten)]
    pub app: crate::cmd::fuzz_app::AppArgs,
}

#[derive(Args, Debug)]
pub struct ConfirmArgs {
    /// The .phase file whose findings to replay (or a .ptx file: the protocol extracted from
    /// it, docs/ptx.md).
    pub file: PathBuf,
    /// Override a parameter: `--param K=64` (repeatable).
    #[arg(long = "param", short = 'p', value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// Time limit per finding, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Fuzzing time for files without error-level findings.
    #[arg(long, default_value_t = 10.0)]
    pub fuzz_seconds: f64,
    /// When a replay does not show a finding: seconds of fuzzing with delays aimed at the
    /// finding's statements and at the threads its trace holds back (0: none).
    #[arg(long, default_value_t = 5.0)]
    pub aim_seconds: f64,
    /// Replay only the N-th error-level finding, in this process (each finding is replayed in
    /// a child process of its own, so that a stuck kernel cannot take the others with it).
    #[arg(long, hide = true)]
    pub finding: Option<usize>,
    #[command(flatten)]
    pub gpu: GpuArgs,
    /// Output: a table for people, or one JSON object.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    #[command(flatten)]
    pub ptx: crate::cmd::extract::PtxArgs,
    /// `--app -- ./app ARGS`: replay each deadlock on the real kernel, instrumented, inside
    /// the application (docs/gpu.md, "Confirm on the real kernel"); --runs, --repeat and
    /// --delay-chance do not apply (one launch, no random delays).
    #[command(flatten)]
    pub app: crate::cmd::fuzz_app::AppArgs,
    /// With --app: replay FILE's counterexamples on this PTX instead (the same kernel with one
    /// line edited, line for line: the control that replays a bug's trace on the unmodified
    /// kernel).
    #[arg(long, requires = "app", value_name = "PTX")]
    pub replay_on: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct TestArgs {
    /// Files, directories (searched recursively for *.phase) or FILE:LINE (one expect line);
    /// default: the current directory.
    pub paths: Vec<PathBuf>,
    /// A list of expected failures (`path: expect-line-text  # reason` per line); a listed
    /// line that passes fails the run, so the list can only shrink. Default: `[test]
    /// known-gaps` of the nearest phasecheck.toml.
    #[arg(long, value_name = "FILE")]
    pub known_gaps: Option<PathBuf>,
    /// Ignore phasecheck.toml files (and so their `[test] known-gaps`).
    #[arg(long, conflicts_with = "known_gaps")]
    pub no_config: bool,
    /// Time budget of each known-gap line (they are expected to fail, mostly by not
    /// finishing), so a capacity gap does not hold the run for the full `--max-time`.
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = parse_time_limit)]
    pub gap_time: TimeLimit,
    /// Stop each search after this many states (the verdict is then inconclusive, a failure).
    #[arg(long, value_name = "N")]
    pub max_states: Option<u64>,
    /// Stop each search after this much time (`90s`, `10m`, `none`; default 10m).
    #[arg(long, value_parser = parse_time_limit)]
    pub max_time: Option<TimeLimit>,
    /// Files checked at once (default: the number of cores); fewer give each search a larger
    /// share of --max-memory.
    #[arg(long, short = 'j', value_name = "N", value_parser = parse_jobs)]
    pub jobs: Option<usize>,
    /// Per-thread bound on the trips of one `while` loop (default 1000).
    #[arg(long, value_name = "N")]
    pub max_loop_trips: Option<u32>,
    /// The most memory the whole run may use (`4G`, `512M`), shared equally by the searches
    /// that run at once; a search that would need more than its share is inconclusive.
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_MAX_MEMORY, value_parser = parse_size)]
    pub max_memory: u64,
    /// Print each line's load-and-check time.
    #[arg(long)]
    pub timings: bool,
}

#[derive(Args, Debug)]
pub struct MutateArgs {
    /// The .phase files to mutate; a folder stands for every .phase file below it.
    #[arg(required = true, value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Override a parameter in every file that declares it: `--param K=2` (repeatable; on top
    /// of the default parameters, see --declared).
    #[arg(long = "param", short = 'p', value_parser = parse_param)]
    pub params: Vec<(String, i64)>,
    /// Start from the declared parameter values instead of the small ones the file's first
    /// `expect ok ... with` line or the nearest phasecheck.toml's [[params]] give.
    #[arg(long)]
    pub declared: bool,
    /// Ignore phasecheck.toml files (their [[params]]).
    #[arg(long)]
    pub no_config: bool,
    /// Only these operators (repeatable or comma-separated): flip-parity, count-plus-one,
    /// count-minus-one, arrive-to-drop, drop-to-arrive, remove-wait, swap-stage, remove-fence,
    /// tx-plus-16, tx-minus-16, tx-times-2, exit-early, trips-plus-one, trips-minus-one,
    /// arrive-before-access, drop-value, drop-unaligned (docs/ci.md, "phasecheck mutate").
    #[arg(long = "operator", value_name = "NAME")]
    pub operators: Vec<String>,
    /// Output: a table per file for people, or one JSON object (docs/ci.md).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Stop each mutant's search after this much time (verdict inconclusive).
    #[arg(long, default_value = "10s", value_parser = parse_time_limit)]
    pub max_time: TimeLimit,
    /// Stop each mutant's search after this many states (verdict inconclusive).
    #[arg(long, default_value_t = 2_000_000)]
    pub max_states: u64,
    /// The most memory the run may use (one search at a time).
    #[arg(long, value_name = "SIZE", default_value = "2G", value_parser = parse_size)]
    pub max_memory: u64,
    /// Per-thread bound on the trips of one `while` loop.
    #[arg(long, default_value_t = 1_000)]
    pub max_loop_trips: u32,
    /// Also fuzz each mutant on the GPU and replay the checker's findings there, and print
    /// the agreement of checker and GPU (docs/gpu.md). Without a GPU this part is skipped.
    #[arg(long)]
    pub gpu: bool,
    /// With --gpu: fuzzing time per mutant, in seconds.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub gpu_seconds: f64,
    /// With --gpu: replay time per error-level finding of a mutant, in seconds (0: fuzz only).
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub confirm_seconds: f64,
    /// With --gpu: after a replay that does not show its finding, seconds of fuzzing aimed at
    /// the finding's statements and at the threads its trace holds back (0: none).
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub aim_seconds: f64,
    /// With --gpu: run every mutant the checker calls ok or inconclusive on the GPU (where a
    /// checker bug would show), but of the mutants it flags only N per file, spread evenly over
    /// the file's mutants; the others are reported as not run (sampled out). Default: all.
    #[arg(long, value_name = "N")]
    pub gpu_hazards: Option<usize>,
    #[command(flatten)]
    pub gpu_args: GpuArgs,
    /// Run the GPU part of mutant N in this process and print it as JSON (what `--gpu` runs
    /// in a child process per mutant).
    #[arg(long, hide = true, value_name = "N")]
    pub gpu_child: Option<usize>,
    /// With --gpu-child: the parent's checker flagged the mutant, replay its findings.
    #[arg(long, hide = true)]
    pub gpu_child_replay: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes() {
        let size = |s| parse_size(s).unwrap();
        assert_eq!(size("4G"), 4 << 30);
        assert_eq!(size("4g"), 4 << 30);
        assert_eq!(size("4GB"), 4 << 30);
        assert_eq!(size("4GiB"), 4 << 30);
        assert_eq!(size("512M"), 512 << 20);
        assert_eq!(size(" 512 MiB "), 512 << 20);
        assert_eq!(size("64K"), 64 << 10);
        assert_eq!(size("1T"), 1 << 40);
        assert_eq!(size("1_000_000"), 1_000_000);
        assert_eq!(size("4096B"), 4096);
        for bad in ["", "G", "4X", "-1G", "1.5G", "4iB", "four", "4é", "0", "0M"] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_size("99999999999T")
                .unwrap_err()
                .contains("too large")
        );
        assert!(parse_jobs("0").is_err());
        assert!(parse_jobs("x").is_err());
        assert_eq!(parse_jobs("3"), Ok(3));
    }

    #[test]
    fn time_limits() {
        let secs = |s| parse_time_limit(s).unwrap().0;
        assert_eq!(secs("90"), Some(Duration::from_secs(90)));
        assert_eq!(secs("90s"), Some(Duration::from_secs(90)));
        assert_eq!(secs("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(secs("10m"), Some(Duration::from_secs(600)));
        assert_eq!(secs("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(secs("none"), None);
        assert_eq!(secs("0"), None);
        assert!(parse_time_limit("soon").is_err());
        assert!(parse_time_limit("-5s").is_err());
    }
}
