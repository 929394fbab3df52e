//! `mutate` as a function that returns a report value: [`mutate_text`] (and [`mutate`] for a
//! path) makes the mutants of a protocol ([`campaign::mutate`]'s operators) and checks each
//! one, the checker side of `phasecheck mutate` (the GPU side, `--gpu`, runs each mutant in a
//! child process and stays on the command line). [`mutants`] only makes them.

use crate::budget::Budget;
use crate::checks::Error;
use crate::cmd::mutate::{Verdict4, check};
use crate::status::{Mode, Status};
use campaign::mutate::{Change, Operator, Skipped, loaded_mutants};
use checker::CheckOptions;
use protocols::SourceFile;
use serde::Serialize;
use std::path::Path;
use std::time::Duration;

/// The options of [`mutate`] and [`mutants`]: those of `phasecheck mutate` (same defaults,
/// except that the parameters are the ones given here, on top of the declared values).
#[derive(Clone, Debug)]
pub struct MutateOptions {
    /// Parameter overrides, `("K", 64)` for `--param K=64`.
    pub params: Vec<(String, i64)>,
    /// The operators to apply (all when empty).
    pub operators: Vec<Operator>,
    /// Stop a mutant's search with verdict `inconclusive` after this many distinct states.
    pub max_states: u64,
    /// The most memory one search may use, in bytes.
    pub max_memory: u64,
    /// Per-thread bound on the trips of one `while` loop.
    pub max_loop_trips: u32,
    /// Stop a mutant's search with verdict `inconclusive` after this much time.
    pub max_time: Option<Duration>,
}

impl Default for MutateOptions {
    fn default() -> Self {
        MutateOptions {
            params: Vec::new(),
            operators: Vec::new(),
            max_states: 2_000_000,
            max_memory: 2 << 30,
            max_loop_trips: 1_000,
            max_time: Some(Duration::from_secs(10)),
        }
    }
}

/// A mutant that loads: its 1-based id, the operator, the lines it changes and its text.
#[derive(Clone, Debug, Serialize)]
pub struct Mutant {
    pub id: usize,
    pub operator: Operator,
    pub change: Change,
    /// The mutant's `.phase` text.
    pub text: String,
}

/// The mutants of a protocol, made but not checked.
#[derive(Clone, Debug, Serialize)]
pub struct Mutants {
    pub mutants: Vec<Mutant>,
    /// Proposals that do not load, with the first load error.
    pub not_loading: Vec<Skipped>,
    /// Proposals whose text equals an earlier mutant's (or the original's).
    pub duplicates: usize,
}

/// The checker's answer for one program.
#[derive(Clone, Debug, Serialize)]
pub struct MutantCheck {
    /// `ok`, `hazard`, `inconclusive`, or `error` (the checker panicked: a checker bug).
    pub verdict: &'static str,
    /// Rules of the error-level findings, in report order, each once.
    pub rules: Vec<&'static str>,
    /// Why the search stopped early, or the checker's panic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub states: u64,
}

/// One checked mutant.
#[derive(Clone, Debug, Serialize)]
pub struct MutantResult {
    #[serde(flatten)]
    pub mutant: Mutant,
    pub checked: MutantCheck,
}

/// The result of [`mutate`]: the original's check, each mutant's, and the mutation score.
#[derive(Clone, Debug, Serialize)]
pub struct MutateReport {
    pub file: String,
    pub original: MutantCheck,
    pub mutants: Vec<MutantResult>,
    pub not_loading: Vec<Skipped>,
    pub duplicates: usize,
}

impl MutateReport {
    /// The share of mutants the checker flags as a hazard (`None` without mutants), as
    /// `phasecheck mutate` reports it.
    pub fn score(&self) -> Option<f64> {
        let hazards = self
            .mutants
            .iter()
            .filter(|m| m.checked.verdict == "hazard")
            .count();
        (!self.mutants.is_empty()).then(|| hazards as f64 / self.mutants.len() as f64)
    }

    /// The report as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("the mutate report serializes")
    }
}

fn load(
    name: &str,
    text: &str,
    params: &[(String, i64)],
) -> Result<(SourceFile, protocols::ir::Program), Error> {
    let file = SourceFile::new(name, text);
    let program = protocols::load(&file, params).map_err(|errors| Error {
        message: protocols::render::render(&errors, false, 100),
    })?;
    Ok((file, program))
}

/// Make the mutants of the protocol `text` (named `name` in messages), without checking them.
///
/// ```
/// use phasecheck_api::{MutateOptions, mutants};
/// use phasecheck_api::campaign::mutate::Operator;
/// let text = "protocol p\nblock 2\nmbarrier bar\nif tid == 0 { init bar, 2 }\nsyncthreads\n\
///             arrive bar\nwait bar parity 0\n";
/// let options = MutateOptions { operators: vec![Operator::FlipParity], ..Default::default() };
/// let m = mutants("p.phase", text, &options).unwrap();
/// assert_eq!(m.mutants.len(), 1);
/// assert_eq!(m.mutants[0].change.after, ["wait bar parity 1"]);
/// assert!(m.mutants[0].text.contains("wait bar parity 1"));
/// ```
pub fn mutants(name: &str, text: &str, options: &MutateOptions) -> Result<Mutants, Error> {
    let (file, program) = load(name, text, &options.params)?;
    let (loaded, not_loading, duplicates) =
        loaded_mutants(&file, &program, &options.params, &options.operators);
    let mutants = loaded
        .into_iter()
        .enumerate()
        .map(|(i, l)| Mutant {
            id: i + 1,
            operator: l.operator,
            change: l.change,
            text: l.file.text.to_string(),
        })
        .collect();
    Ok(Mutants {
        mutants,
        not_loading,
        duplicates,
    })
}

/// Make the mutants of the protocol `text` and check the original and each mutant with the
/// checker (no GPU), as `phasecheck mutate` does without `--gpu`.
///
/// ```
/// use phasecheck_api::{MutateOptions, mutate_text};
/// let text = "protocol p\nblock 2\nmbarrier bar\nif tid == 0 { init bar, 2 }\nsyncthreads\n\
///             arrive bar\nwait bar parity 0\n";
/// let report = mutate_text("p.phase", text, &MutateOptions::default()).unwrap();
/// assert_eq!(report.original.verdict, "ok");
/// // The flipped parity waits for a phase that never completes.
/// let flipped = report.mutants.iter().find(|m| m.mutant.operator.name() == "flip-parity").unwrap();
/// assert_eq!(flipped.checked.verdict, "hazard");
/// assert!(report.score().unwrap() > 0.0);
/// assert_eq!(report.to_json()["mutants"][0]["id"], 1);
/// ```
pub fn mutate_text(name: &str, text: &str, options: &MutateOptions) -> Result<MutateReport, Error> {
    if options.max_states == 0 {
        return Err(Error {
            message: "max_states must be at least 1".into(),
        });
    }
    let (file, program) = load(name, text, &options.params)?;
    let check_options = CheckOptions {
        max_states: options.max_states,
        max_memory_bytes: Budget::new(options.max_memory, 1).search_limit(None),
        max_loop_trips: options.max_loop_trips,
        max_time: options.max_time,
        ..CheckOptions::default()
    };
    let status = Status::new("mutate", Mode::Off, 0);
    let checked = |file: &SourceFile, program: &protocols::ir::Program, what: String| {
        let c = check(file, program, &check_options, &status, what);
        MutantCheck {
            verdict: match c.verdict {
                Verdict4::Ok => "ok",
                Verdict4::Hazard => "hazard",
                Verdict4::Inconclusive => "inconclusive",
                Verdict4::Error => "error",
            },
            rules: c.rules,
            note: c.note,
            states: c.states,
        }
    };
    let original = checked(&file, &program, name.to_string());
    let (loaded, not_loading, duplicates) =
        loaded_mutants(&file, &program, &options.params, &options.operators);
    let mutants = loaded
        .into_iter()
        .enumerate()
        .map(|(i, l)| MutantResult {
            checked: checked(&l.file, &l.program, format!("{name} mutant {}", i + 1)),
            mutant: Mutant {
                id: i + 1,
                operator: l.operator,
                change: l.change,
                text: l.file.text.to_string(),
            },
        })
        .collect();
    Ok(MutateReport {
        file: name.to_string(),
        original,
        mutants,
        not_loading,
        duplicates,
    })
}

/// [`mutate_text`] of a `.phase` file.
pub fn mutate(path: &Path, options: &MutateOptions) -> Result<MutateReport, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error {
        message: format!("cannot read {}: {e}", path.display()),
    })?;
    mutate_text(&path.display().to_string(), &text, options)
}
