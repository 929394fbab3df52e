//! The part of `confirm` that needs no GPU, as a report value: [`confirm_plan`] checks a
//! protocol and, for each error-level finding, lowers the kernel that would replay it, plans
//! the replay (`campaign::confirm::plan`) and lists what keeps the sequencer from forcing the
//! trace (`campaign::confirm::obstacle`). `phasecheck confirm` then runs these plans on the GPU.

use crate::checks::{Error, VerifyOptions, verify_text};
use crate::report::files::Outcome;
use campaign::confirm::obstacle::{Obstacle, obstacles};
use campaign::confirm::plan::plan;
use campaign::confirm::replay::lower_for_replay;
use checker::Severity;
use serde::Serialize;

/// How `confirm` would replay one error-level finding.
#[derive(Clone, Debug, Serialize)]
pub struct PlannedReplay {
    pub rule: &'static str,
    /// The finding's line (1-based) and the first line of its statement.
    pub line: u32,
    pub statement: String,
    /// Thread steps the device-side sequencer forces, in the trace's order (0 when the replay
    /// runs unsequenced).
    pub steps: usize,
    /// The finding is replayed without the sequencer (a proxy-fence race: many blocks of the
    /// proxy-window kernel, docs/gpu.md "Proxy fences").
    pub unsequenced: bool,
    /// Why the trace cannot be replayed (or its kernel not lowered), when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_replayable: Option<String>,
    /// What keeps the sequencer from forcing the trace, by class (empty: nothing).
    pub obstacles: Vec<Obstacle>,
}

/// Check the protocol `text` and plan the replay of each error-level finding, as `confirm`
/// does before it launches anything (no GPU).
///
/// ```
/// use phasecheck_api::{VerifyOptions, confirm_plan};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus/hazards/data-race/fail.phase");
/// let text = std::fs::read_to_string(path).unwrap();
/// let plans = confirm_plan("fail.phase", &text, &VerifyOptions::default()).unwrap();
/// let race = plans.iter().find(|p| p.rule == "data-race").unwrap();
/// assert!(race.not_replayable.is_none());
/// assert!(race.steps > 0 && !race.unsequenced);
/// // A protocol without findings has nothing to replay.
/// let ok = std::fs::read_to_string(path.replace("fail", "pass")).unwrap();
/// assert!(confirm_plan("pass.phase", &ok, &VerifyOptions::default()).unwrap().is_empty());
/// ```
pub fn confirm_plan(
    name: &str,
    text: &str,
    options: &VerifyOptions,
) -> Result<Vec<PlannedReplay>, Error> {
    let checked = verify_text(name, text, options)?;
    let mut out = Vec::new();
    for result in &checked.results {
        let Outcome::Checked { program, report } = &result.outcome else {
            continue;
        };
        let file = &result.file;
        for f in report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
        {
            let mut planned = PlannedReplay {
                rule: f.rule.name,
                line: file.line_col(f.span.start).line,
                statement: campaign::fuzz::stmt_text(file, f.span),
                steps: 0,
                unsequenced: false,
                not_replayable: None,
                obstacles: Vec::new(),
            };
            match lower_for_replay(program, file, f) {
                Err(e) => {
                    planned.not_replayable = Some(format!("cannot be lowered: {}", e.message))
                }
                Ok((lowered, _)) => {
                    let p = plan(program, &lowered, f);
                    match &p {
                        Ok(p) => {
                            planned.steps = p.steps.len();
                            planned.unsequenced = p.unsequenced;
                        }
                        Err(e) => planned.not_replayable = Some(e.clone()),
                    }
                    planned.obstacles =
                        obstacles(f, p.as_ref().map_err(|e| e.as_str()), &lowered, file);
                }
            }
            out.push(planned);
        }
    }
    Ok(out)
}
