//! From a finding to what the sequencer replays: the thread steps of its counterexample,
//! deferred landings of copies in flight, the access held open for a race, and whether the
//! finding runs unsequenced.

use checker::{Actor, Class, Finding};
use gpu_harness::lower::Lowered;
use gpu_harness::sequencer::{self, Landing, Partner, SeqStep};
use protocols::Span;
use protocols::ir::Program;

/// The statement id of a span (exact, else the statement containing it).
pub fn stmt_of(lowered: &Lowered, span: Span) -> Option<u32> {
    lowered
        .stmts
        .iter()
        .find(|s| s.span == span)
        .or_else(|| {
            lowered
                .stmts
                .iter()
                .find(|s| s.span.start <= span.start && span.end <= s.span.end)
        })
        .map(|s| s.id)
}

/// A counterexample as sequencer steps: actor numbers from the schedule (exact), statements
/// from the trace (unfolded by its repeat counts). A TMA landing (an async event) becomes a
/// deferred landing before the next step when its copy has one destination block; other
/// async events are left to the hardware. Returns the thread steps, the landings and where
/// the trace completes a thread's `cp.async` copies (see [`Steps`]).
pub fn steps_of(program: &Program, lowered: &Lowered, f: &Finding) -> Result<Steps, String> {
    let kernel = &program.kernels[0];
    let nthreads = kernel.block * kernel.cluster;
    let unfolded: Vec<&checker::TraceStep> = f
        .trace
        .iter()
        .flat_map(|t| std::iter::repeat_n(t, t.repeat.max(1) as usize))
        .collect();
    let stmt_at = |span: Span| {
        stmt_of(lowered, span).ok_or_else(|| {
            format!(
                "the trace has a step (bytes {}..{} of the file) that is no statement of the \
                 kernel",
                span.start, span.end
            )
        })
    };
    let mut steps = Vec::new();
    let mut landings = Vec::new();
    let mut fills_done = Vec::new();
    // Each step's trace entry, to match a landing with its issue.
    let mut issued: Vec<&checker::TraceStep> = Vec::new();
    let mut land = |t: &checker::TraceStep,
                    steps: &[SeqStep],
                    issued: &[&checker::TraceStep],
                    landings: &mut Vec<Landing>|
     -> Result<(), String> {
        let Actor::Async { cta, tid, what, .. } = &t.actor else {
            return Ok(());
        };
        if what.starts_with("cp.async") {
            fills_done.push((*cta, *tid, steps.len()));
        }
        let stmt = stmt_at(t.span)?;
        if what != "tma" || !lowered.stmts[stmt as usize].deferrable {
            return Ok(());
        }
        if let Some(issue) = landing_issue(t, *cta, *tid, stmt, steps, issued, landings) {
            landings.push(Landing {
                issue,
                before: steps.len(),
            });
        }
        Ok(())
    };
    if unfolded.len() == f.schedule.0.len() {
        for (t, &actor) in unfolded.iter().zip(&f.schedule.0) {
            if actor >= nthreads {
                land(t, &steps, &issued, &mut landings)?;
                continue;
            }
            steps.push(SeqStep {
                cta: actor / kernel.block,
                tid: actor % kernel.block,
                stmt: stmt_at(t.span)?,
            });
            issued.push(t);
        }
    } else {
        // Fall back on the trace's own actors (exact when nothing was folded).
        for t in &f.trace {
            match t.actor {
                Actor::Thread { cta, tid, .. } => {
                    let stmt = stmt_at(t.span)?;
                    for _ in 0..t.repeat.max(1) {
                        steps.push(SeqStep { cta, tid, stmt });
                        issued.push(t);
                    }
                }
                Actor::Async { .. } => {
                    for _ in 0..t.repeat.max(1) {
                        land(t, &steps, &issued, &mut landings)?;
                    }
                }
            }
        }
    }
    Ok(Steps {
        steps,
        landings,
        fills_done,
    })
}

/// A counterexample as the sequencer replays it.
pub struct Steps {
    pub steps: Vec<SeqStep>,
    pub landings: Vec<Landing>,
    /// `(cta, tid, before)`: the trace completes thread (cta, tid)'s `cp.async` copies (a
    /// `cp.async` arrive-on event) just before step `before`; its earlier copies are no longer
    /// in flight from there on.
    pub fills_done: Vec<(u32, u32, usize)>,
}

/// The issue step of a TMA landing: the first step of the issuing thread at the `tma` whose
/// copy has not landed yet, preferring one on the barrier the landing completes (the issue's
/// state names it: `full[1]: phase ...`; the landing's text ends `completes tx on full[1]`).
pub fn landing_issue(
    t: &checker::TraceStep,
    cta: u32,
    tid: u32,
    stmt: u32,
    steps: &[SeqStep],
    issued: &[&checker::TraceStep],
    landings: &[Landing],
) -> Option<usize> {
    let open: Vec<usize> = (0..steps.len())
        .filter(|&i| steps[i] == SeqStep { cta, tid, stmt })
        .filter(|&i| landings.iter().all(|l| l.issue != i))
        .collect();
    let bar = t.op.rsplit("completes tx on ").next().unwrap_or("");
    open.iter()
        .copied()
        .find(|&i| issued[i].state.starts_with(&format!("{bar}:")))
        .or_else(|| open.first().copied())
}

/// A race with an async fill in flight: the finding's statements are a deferrable fill (a
/// one-destination `tma`, a `cp_async` or a `memcpy_async`) and a buffer access (`read`,
/// `write`, `mma`) that the trace runs after the issue while the copy has not landed. Returns
/// (access step, issue step).
pub fn tma_in_flight(
    lowered: &Lowered,
    f: &Finding,
    steps: &[SeqStep],
    landings: &[Landing],
    fills_done: &[(u32, u32, usize)],
) -> Option<(usize, usize)> {
    let mut stmts: Vec<u32> = f
        .labels
        .iter()
        .filter_map(|l| stmt_of(lowered, l.span))
        .collect();
    stmts.extend(stmt_of(lowered, f.span));
    let info = |s: u32| &lowered.stmts[s as usize];
    let tma = stmts.iter().copied().find(|&s| info(s).deferrable)?;
    let access = stmts
        .iter()
        .copied()
        .find(|&s| matches!(info(s).keyword, "read" | "write" | "write part" | "mma"))?;
    let a = steps.iter().rposition(|st| st.stmt == access)?;
    // The copy must still be in flight at the access: not landed by a deferred landing before
    // it, nor (a `cp.async`/`memcpy_async`) completed by its thread's arrive-on event.
    let in_flight = |i: usize| {
        let st = steps[i];
        landings.iter().all(|l| l.issue != i || l.before > a)
            && fills_done.iter().all(|&(cta, tid, before)| {
                (cta, tid) != (st.cta, st.tid) || before <= i || before > a
            })
    };
    // Or the copy is issued after the access (a write-after-read against an earlier access
    // that nothing released) and lands after the trace: the access is held open across the
    // issue until the landing.
    let landed = |i: usize| {
        let st = steps[i];
        landings.iter().any(|l| l.issue == i)
            || fills_done
                .iter()
                .any(|&(cta, tid, before)| (cta, tid) == (st.cta, st.tid) && before > i)
    };
    let issue = (0..a)
        .rev()
        .find(|&i| steps[i].stmt == tma && in_flight(i))
        .or_else(|| (a + 1..steps.len()).find(|&i| steps[i].stmt == tma && !landed(i)))?;
    Some((a, issue))
}

/// The thread whose next step after `schedule` executes statement `stmt`, and its actor.
pub fn next_access(
    program: &Program,
    lowered: &Lowered,
    schedule: &checker::Schedule,
    stmt: u32,
    not_actor: Option<u32>,
) -> Option<(SeqStep, u32)> {
    let kernel = &program.kernels[0];
    let nthreads = kernel.block * kernel.cluster;
    let options = checker::CheckOptions::default();
    for actor in (0..nthreads.min(1024)).filter(|a| Some(*a) != not_actor) {
        let mut sched = schedule.clone();
        sched.0.push(actor);
        if let Ok(r) = checker::replay(program, &options, &sched) {
            if r.trace.last().and_then(|t| stmt_of(lowered, t.span)) == Some(stmt) {
                let step = SeqStep {
                    cta: actor / kernel.block,
                    tid: actor % kernel.block,
                    stmt,
                };
                return Some((step, actor));
            }
        }
    }
    None
}

/// Continue `schedule` with the checker, one thread step at a time (the lowest thread that
/// can move; async events never, so copies stay in flight), until a thread accesses the buffer
/// of a one-destination TMA issued and not landed. Returns the added steps and the (access,
/// issue) step indices into `steps` + the added steps. At most 32 steps.
pub fn extend_to_in_flight_access(
    program: &Program,
    lowered: &Lowered,
    schedule: &checker::Schedule,
    steps: &[SeqStep],
    landings: &[Landing],
) -> Option<(Vec<SeqStep>, usize, usize)> {
    let kernel = &program.kernels[0];
    let nthreads = kernel.block * kernel.cluster;
    let options = checker::CheckOptions::default();
    let mut sched = schedule.clone();
    let mut all: Vec<SeqStep> = steps.to_vec();
    for _ in 0..32 {
        let next = (0..nthreads.min(1024)).find_map(|actor| {
            let mut s = sched.clone();
            s.0.push(actor);
            let r = checker::replay(program, &options, &s).ok()?;
            let stmt = stmt_of(lowered, r.trace.last()?.span)?;
            Some((actor, stmt))
        })?;
        let (actor, stmt) = next;
        sched.0.push(actor);
        all.push(SeqStep {
            cta: actor / kernel.block,
            tid: actor % kernel.block,
            stmt,
        });
        let info = &lowered.stmts[stmt as usize];
        if !matches!(info.keyword, "read" | "write" | "write part" | "mma") {
            continue;
        }
        let access = all.len() - 1;
        let issue = all[..access].iter().rposition(|st| {
            let i = &lowered.stmts[st.stmt as usize];
            i.deferrable && i.object == info.object && st.cta == all[access].cta
        });
        if let Some(issue) = issue {
            if landings.iter().all(|l| l.issue != issue) {
                return Some((all.split_off(steps.len()), access, issue));
            }
        }
    }
    None
}

/// For a race: the earlier access to hold open (the labelled one) and the racing access.
pub fn race_pair(
    lowered: &Lowered,
    f: &Finding,
    steps: &[SeqStep],
) -> (Option<usize>, Option<usize>) {
    let Some(last) = steps.len().checked_sub(1) else {
        return (None, None);
    };
    let final_stmt = stmt_of(lowered, f.span);
    let final_idx = if final_stmt.is_some_and(|s| steps[last].stmt == s) {
        last
    } else {
        final_stmt
            .and_then(|s| steps.iter().rposition(|st| st.stmt == s))
            .unwrap_or(last)
    };
    let label_stmts: Vec<u32> = f
        .labels
        .iter()
        .filter_map(|l| stmt_of(lowered, l.span))
        .collect();
    let fin = steps[final_idx];
    let held = steps[..final_idx]
        .iter()
        .rposition(|st| label_stmts.contains(&st.stmt) && (st.tid, st.cta) != (fin.tid, fin.cta));
    match held {
        Some(h) => (Some(h), Some(final_idx)),
        // The other party is asynchronous (a copy in flight): hold the final access open.
        None => (Some(final_idx), None),
    }
}

/// What a finding's replay runs: the thread steps, the sequencer's table (with deferred TMA
/// landings and the held access), and a statement whose stale read also shows the finding.
pub struct ReplayPlan {
    pub steps: Vec<SeqStep>,
    pub table: sequencer::SeqTable,
    pub extra_wanted: Option<u32>,
    /// Run the kernel without the sequencer (an empty table), see [`unsequenced`].
    pub unsequenced: bool,
}

/// Whether the finding is replayed without the sequencer. A `missing-proxy-fence` before a
/// `tma_store` is between two accesses that the protocol's own synchronization already orders
/// (were they unordered it would be a data race): every interleaving reaches them in the
/// trace's order. What the hazard needs is the writers' generic stores still in flight when
/// the copy engine reads, a window of tens of cycles; the sequencer's hand-offs fence
/// (`__threadfence`, to order its turns), which drains those stores and closes the window.
/// So the kernel runs free, many blocks a launch, without delays, lowered with
/// `LowerOptions::proxy_window` (nothing between a write's stores and the copy waits for
/// them), and a stale stamp at the `tma_store` (what the copy stored is not what its source
/// held once the copy had completed) shows the hazard. Measured on an H100 (docs/gpu.md
/// "Proxy fences").
pub fn unsequenced(lowered: &Lowered, f: &Finding) -> bool {
    f.rule.name == "missing-proxy-fence"
        && stmt_of(lowered, f.span)
            .is_some_and(|s| lowered.stmts[s as usize].keyword == "tma_store")
}

pub fn plan(program: &Program, lowered: &Lowered, f: &Finding) -> Result<ReplayPlan, String> {
    let Steps {
        mut steps,
        mut landings,
        fills_done,
    } = steps_of(program, lowered, f)?;
    if unsequenced(lowered, f) {
        steps.clear();
        return Ok(ReplayPlan {
            steps,
            table: sequencer::SeqTable::default(),
            extra_wanted: None,
            unsequenced: true,
        });
    }
    let mut pair = None;
    // A race may be reported before its accesses run (they are enabled, the trace stops
    // before them): find, with the checker's replay, the thread whose next step is the
    // access, and replay it too; when the other (labelled) access is another thread's next
    // step as well, replay it after, with the first held open across it.
    if f.class() == Class::Race && f.rule.name != "stale-phase" {
        if let Some(s) = stmt_of(lowered, f.span) {
            // The last step runs the racing statement, but its thread also made the other
            // (labelled) access: a thread does not race with itself, so the race is between
            // accesses the trace has not run yet (e.g. both enabled once a barrier completes).
            let labelled: Vec<u32> = f
                .labels
                .iter()
                .filter_map(|l| stmt_of(lowered, l.span))
                .collect();
            let by_itself = steps.split_last().is_some_and(|(last, before)| {
                last.stmt == s
                    && before
                        .iter()
                        .rev()
                        .find(|st| labelled.contains(&st.stmt))
                        .is_some_and(|st| (st.cta, st.tid) == (last.cta, last.tid))
            });
            if steps.last().is_none_or(|l| l.stmt != s) || by_itself {
                let not = if by_itself {
                    steps
                        .last()
                        .map(|l| l.cta * program.kernels[0].block + l.tid)
                } else {
                    None
                };
                if let Some((extra, actor)) = next_access(program, lowered, &f.schedule, s, not) {
                    steps.push(extra);
                    let mut sched = f.schedule.clone();
                    sched.0.push(actor);
                    for l in &f.labels {
                        let Some(ls) = stmt_of(lowered, l.span) else {
                            continue;
                        };
                        if let Some((other, _)) =
                            next_access(program, lowered, &sched, ls, Some(actor))
                        {
                            steps.push(other);
                            pair = Some((Some(steps.len() - 2), Some(steps.len() - 1)));
                            break;
                        }
                    }
                }
            }
        }
    }
    // Against an async fill (TMA, cp.async, memcpy_async) the copy engine writes later: hold
    // the other (labelled) access open while the copy lands.
    let async_fill = stmt_of(lowered, f.span).is_some_and(|s| {
        matches!(
            lowered.stmts[s as usize].keyword,
            "tma" | "cp_async" | "memcpy_async"
        )
    });
    if async_fill && f.class() == Class::Race {
        pair = None;
        let label = f.labels.iter().find_map(|l| stmt_of(lowered, l.span));
        if let Some(ls) = label {
            let held = match steps.iter().rposition(|st| st.stmt == ls) {
                Some(h) => Some(h),
                None => next_access(program, lowered, &f.schedule, ls, None).map(|(st, _)| {
                    steps.push(st);
                    steps.len() - 1
                }),
            };
            if held.is_some() {
                pair = Some((held, None));
            }
        }
    }
    let race = f.class() == Class::Race && f.rule.name != "stale-phase";
    let (mut held, partner) = if race {
        pair.unwrap_or_else(|| race_pair(lowered, f, &steps))
    } else {
        (None, None)
    };
    let mut partner = partner.map(Partner::Step);
    // A race against a TMA copy in flight: the copy would land about a microsecond after its
    // issue, before the replayed access. Defer its landing to after the access (the trace
    // lands it there, or not at all) and hold the access open until it has landed.
    let mut extra_wanted = None;
    let mut in_flight = if race {
        tma_in_flight(lowered, f, &steps, &landings, &fills_done)
    } else {
        None
    };
    if race && in_flight.is_none() && f.rule.name == "expect-after-completion" {
        // The trace stops at the misplaced expect_tx: continue it with the checker until an
        // access to the buffer of a copy still in flight (the consequence the rule names).
        if let Some((extra, access, issue)) =
            extend_to_in_flight_access(program, lowered, &f.schedule, &steps, &landings)
        {
            steps.extend(extra);
            extra_wanted = Some(steps[access].stmt);
            in_flight = Some((access, issue));
        }
    }
    if let Some((access, issue)) = in_flight {
        let l = match landings.iter().position(|l| l.issue == issue) {
            Some(l) => l,
            None => {
                landings.push(Landing {
                    issue,
                    before: steps.len(),
                });
                landings.len() - 1
            }
        };
        held = Some(access);
        partner = Some(Partner::Landing(l));
    }
    let table = sequencer::build(&steps, &landings, held, partner);
    let table = if race { table.stop_after() } else { table };
    Ok(ReplayPlan {
        steps,
        table,
        extra_wanted,
        unsequenced: false,
    })
}
