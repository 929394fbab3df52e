//! The checking commands as functions that return report values: [`verify_text`], [`verify`],
//! [`verify_ptx`], [`lint`] and [`extract`]. The command line's `verify` and `lint` run the same
//! searches (`cmd::verify::check_program`, `cmd::lint::check`) and print what these return.

use crate::args::{Exit, LintArgs};
use crate::budget::Budget;
use crate::cmd::extract::PtxArgs;
use crate::report;
use crate::report::files::{FileResult, Outcome, Summary};
use checker::{CheckOptions, Report};
use protocols::SourceFile;
use std::path::Path;
use std::time::Duration;

/// Bad input: a file that cannot be read, a protocol that does not load (the message holds the
/// loader's diagnostics, without colour), a PTX kernel the front end cannot extract, or a bad
/// option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message.trim_end())
    }
}

impl std::error::Error for Error {}

fn error(message: impl Into<String>) -> Error {
    Error {
        message: message.into(),
    }
}

/// The options of [`verify`], [`verify_text`] and [`verify_ptx`]: those of
/// `phasecheck verify` (same defaults).
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Parameter overrides, `("K", 64)` for `--param K=64`.
    pub params: Vec<(String, i64)>,
    /// Stop with verdict `inconclusive` after this many distinct states.
    pub max_states: u64,
    /// The most memory the search may use, in bytes.
    pub max_memory: u64,
    /// Per-thread bound on the trips of one `while` loop.
    pub max_loop_trips: u32,
    /// Stop with verdict `inconclusive` after this much time (`None`: no limit).
    pub max_time: Option<Duration>,
    /// Search every interleaving even after an error is found.
    pub exhaustive: bool,
    /// For PTX input: kernel, block, cluster, kernel arguments, assumptions.
    pub ptx: PtxArgs,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            params: Vec::new(),
            max_states: 50_000_000,
            max_memory: 4 << 30,
            max_loop_trips: 1_000,
            max_time: Some(Duration::from_secs(600)),
            exhaustive: false,
            ptx: PtxArgs::default(),
        }
    }
}

/// The result of a check: one entry per file (one for `verify*`), and the exit code the
/// command line would give.
pub struct Checked {
    pub results: Vec<FileResult>,
    pub exit: Exit,
}

impl Checked {
    fn of(results: Vec<FileResult>, exit: Exit) -> Checked {
        Checked { results, exit }
    }

    /// The report of the first file that was checked (for `verify*`, the only one).
    pub fn report(&self) -> Option<&Report> {
        self.results.iter().find_map(|r| match &r.outcome {
            Outcome::Checked { report, .. } => Some(report),
            _ => None,
        })
    }

    /// The verdict over all files, in the checker's words: `hazard` when any file has an
    /// error-level finding, else `inconclusive` when any search stopped at a limit, else
    /// `ok`; `bad-input` before all when a file (of `lint`) could not be read or loaded.
    pub fn verdict(&self) -> &'static str {
        let s = Summary::of(&self.results);
        if s.bad_input > 0 {
            "bad-input"
        } else if s.errors > 0 {
            "hazard"
        } else if s.inconclusive > 0 {
            "inconclusive"
        } else {
            "ok"
        }
    }

    /// `--format json` of `lint` (schema 1: `files`, `summary`, `exit_code`).
    pub fn to_json(&self) -> serde_json::Value {
        report::files::json(&self.results, self.exit)
    }

    /// SARIF 2.1.0, as `lint --format sarif` writes it.
    pub fn to_sarif(&self) -> serde_json::Value {
        report::sarif::render(&self.results, self.exit as u8)
    }

    /// The human report (no colour), as `lint` prints it.
    pub fn to_human(&self) -> String {
        report::files::human(&self.results, self.exit, false)
    }
}

fn check_source(file: SourceFile, options: &VerifyOptions) -> Result<Checked, Error> {
    if options.max_states == 0 {
        return Err(error("max_states must be at least 1"));
    }
    let program = protocols::load(&file, &options.params)
        .map_err(|errors| error(protocols::render::render(&errors, false, 100)))?;
    let budget = Budget::new(options.max_memory, 1);
    let check = CheckOptions {
        max_states: options.max_states,
        max_memory_bytes: budget.search_limit(None),
        max_loop_trips: options.max_loop_trips,
        max_time: options.max_time,
        exhaustive: options.exhaustive,
        ..CheckOptions::default()
    };
    let report = crate::cmd::verify::check_program(&program, &file, &check, &budget, None);
    let exit = report::exit_code(&report);
    let result = FileResult {
        origin: None,
        file,
        outcome: Outcome::Checked {
            program: Box::new(program),
            report,
        },
    };
    Ok(Checked::of(vec![result], exit))
}

/// Check a protocol given as `.phase` text (`name` is the file name its findings point to).
///
/// ```
/// use phasecheck_api::{VerifyOptions, verify_text};
/// let text = "protocol p
/// block 2
/// mbarrier full
/// buffer data
/// if tid == 0 {
///   init full, 1
/// }
/// syncthreads
/// if tid == 0 {
///   write data
///   arrive full
/// }
/// if tid == 1 {
///   read data
/// }
/// ";
/// let checked = verify_text("race.phase", text, &VerifyOptions::default()).unwrap();
/// assert_eq!(checked.verdict(), "hazard");
/// let report = checked.report().unwrap();
/// assert_eq!(report.findings[0].rule.name, "data-race");
/// // With the wait before the read, the race is gone.
/// let fixed = text.replace("  read data", "  wait full parity 0\n  read data");
/// assert_eq!(verify_text("ok.phase", &fixed, &VerifyOptions::default()).unwrap().verdict(), "ok");
/// // Bad input is an error, not a report.
/// assert!(verify_text("bad.phase", "protocol\n", &VerifyOptions::default()).is_err());
/// ```
pub fn verify_text(name: &str, text: &str, options: &VerifyOptions) -> Result<Checked, Error> {
    check_source(SourceFile::new(name, text), options)
}

/// Check a `.phase` file, or a `.ptx` file as the protocol extracted from it (with
/// `options.ptx`).
///
/// ```
/// use phasecheck_api::{VerifyOptions, verify};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/hazards/data-race/pass.phase");
/// assert_eq!(verify(path.as_ref(), &VerifyOptions::default()).unwrap().verdict(), "ok");
/// assert!(verify("no/such/file.phase".as_ref(), &VerifyOptions::default()).is_err());
/// ```
pub fn verify(path: &Path, options: &VerifyOptions) -> Result<Checked, Error> {
    let bytes =
        std::fs::read(path).map_err(|e| error(format!("cannot read {}: {e}", path.display())))?;
    let name = path.display().to_string();
    let text = String::from_utf8(bytes)
        .map_err(|_| error(format!("{name}: the file is not UTF-8 text")))?;
    if crate::cmd::extract::is_ptx(path) {
        verify_ptx(&name, &text, options)
    } else {
        verify_text(&name, &text, options)
    }
}

/// Check a kernel given as PTX text: its synchronization skeleton is extracted (crate `ptx`,
/// docs/ptx.md, with `options.ptx`) and checked; findings point into the extracted protocol,
/// under `name`.
///
/// ```
/// use phasecheck_api::{VerifyOptions, cmd::extract::PtxArgs, verify_ptx};
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../ptx/tests/fixtures");
/// let options = VerifyOptions {
///     ptx: PtxArgs { block: Some([64, 1, 1]), args: vec![("2".into(), 4)], ..PtxArgs::default() },
///     ..VerifyOptions::default()
/// };
/// let ok = std::fs::read_to_string(format!("{dir}/double_buffer.ptx")).unwrap();
/// assert_eq!(verify_ptx("db.ptx", &ok, &options).unwrap().verdict(), "ok");
/// let bug = std::fs::read_to_string(format!("{dir}/double_buffer_parity_bug.ptx")).unwrap();
/// assert_eq!(verify_ptx("bug.ptx", &bug, &options).unwrap().verdict(), "hazard");
/// // Without the trip count (parameter 2) the front end asks for it.
/// let mut no_trips = options.clone();
/// no_trips.ptx.args.clear();
/// let Err(err) = verify_ptx("db.ptx", &ok, &no_trips) else { panic!("checked without K") };
/// assert!(err.message.contains("--arg 2="), "{err}");
/// ```
pub fn verify_ptx(name: &str, ptx_text: &str, options: &VerifyOptions) -> Result<Checked, Error> {
    let ex = extract(name, ptx_text, &options.ptx)?;
    check_source(SourceFile::new(name, ex.text), options)
}

/// A kernel's PTX as a `.phase` protocol (what `phasecheck extract` prints is `.text`).
pub fn extract(name: &str, ptx_text: &str, options: &PtxArgs) -> Result<ptx::Extracted, Error> {
    // `extract_text` resolves `--launch` (a capture file) as the command line does.
    crate::cmd::extract::extract_text(ptx_text, name, options)
        .map_err(|e| error(format!("{name}: {e}")))
}

/// `phasecheck lint`: every `.phase` file under the paths, with configuration files, levels
/// and parameters as on the command line. A file that does not load is a result (verdict
/// `error`), not an `Err`; a usage or configuration error is an `Err`.
///
/// ```
/// use phasecheck_api::{lint, args::LintArgs};
/// use clap::Parser;
/// #[derive(Parser)]
/// struct Cli { #[command(flatten)] lint: LintArgs }
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/hazards/data-race");
/// let args = Cli::parse_from(["lint", "--no-config", dir]).lint;
/// let checked = lint(&args).unwrap();
/// assert_eq!(checked.results.len(), 2);
/// assert_eq!(checked.verdict(), "hazard");
/// assert_eq!(checked.to_sarif()["version"], "2.1.0");
/// ```
pub fn lint(args: &LintArgs) -> Result<Checked, Error> {
    crate::cmd::lint::check(args)
        .map(|l| Checked::of(l.results, l.exit))
        .map_err(error)
}
