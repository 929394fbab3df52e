//! Running a program under loom: one `loom::model` exploration, every execution a fresh
//! [`World`] with the protocol's threads as loom threads (thread 0 on loom's main thread, the
//! asynchronous agent on one more), findings gathered across executions.

use crate::data::{Class, Elections, Findings};
use crate::interp::Thread;
use crate::prog::Prog;
use crate::runtime::World;
use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Exploration bounds (loom's own, see docs/design.md "The loom oracle").
#[derive(Clone, Debug)]
pub struct Options {
    /// loom's preemption bound (`LOOM_MAX_PREEMPTIONS`): `None` explores every interleaving
    /// that loom's partial-order reduction does not prove equivalent to one already run.
    pub preemption_bound: Option<usize>,
    /// Stop after this many executions (the outcome is then not complete).
    pub max_executions: Option<usize>,
    /// loom's bound on scheduling decisions in one execution (`LOOM_MAX_BRANCHES`).
    pub max_branches: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            preemption_bound: Some(2),
            max_executions: None,
            max_branches: 20_000,
        }
    }
}

/// What the executions of one exploration observed.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Every (class, rule) some execution raised.
    pub found: BTreeSet<(Class, &'static str)>,
    pub executions: usize,
    /// loom explored everything its bounds allow (no cut by `max_executions`, no branch
    /// limit).
    pub complete: bool,
    /// A panic of loom's own, classified: loom's deadlock detection ("deadlock") or branch
    /// limit ("branches"). The exploration ended there.
    pub loom_panic: Option<String>,
}

impl Outcome {
    pub fn classes(&self) -> BTreeSet<Class> {
        self.found.iter().map(|f| f.0).collect()
    }
}

/// At most this many loom explorations per program, one per sequence of leaders
/// ([`explore`]); past it the outcome is not complete.
const MAX_ELECTION_SEQUENCES: usize = 256;

/// Explore `prog`: every interleaving loom's bounds allow, for every leader each `elect`
/// without a leader may pick (semantics.md W3: any lane at the `elect`). loom enumerates
/// schedules, not data choices, so each sequence of picks is one loom exploration
/// ([`Elections`]); the sequences are enumerated in lexicographic order from the number of
/// candidates the executions saw at each choice (the most over the executions: a pick past
/// an execution's candidates wraps, repeating one already explored). The findings are the
/// union; the executions the sum.
pub fn explore(prog: &Prog, opts: &Options) -> Outcome {
    let mut script: Vec<usize> = Vec::new();
    let mut total = Outcome {
        complete: true,
        ..Outcome::default()
    };
    for _ in 0..MAX_ELECTION_SEQUENCES {
        let elections = Elections {
            script: script.clone(),
            seen: Default::default(),
        };
        let out = explore_one(prog, opts, elections.clone());
        total.found.extend(out.found);
        total.executions += out.executions;
        total.complete &= out.complete;
        if total.loom_panic.is_none() {
            total.loom_panic = out.loom_panic;
        }
        let seen = elections
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        script.resize(seen.len(), 0);
        // The next sequence: the last choice that has a candidate left moves on, the later
        // ones start again from the first.
        match (0..seen.len()).rev().find(|&k| script[k] + 1 < seen[k]) {
            Some(k) => {
                script[k] += 1;
                script.truncate(k + 1);
            }
            None => return total,
        }
    }
    total.complete = false;
    total
}

/// One loom exploration, with the leaders `elections` picks.
fn explore_one(prog: &Prog, opts: &Options, elections: Elections) -> Outcome {
    let found: Findings = Default::default();
    let executions = Arc::new(AtomicUsize::new(0));
    let prog = Arc::new(Prog {
        program: prog.program.clone(),
        threads: prog.threads,
        base: prog.base.clone(),
        nbars: prog.nbars,
        nbufs: prog.nbufs,
        needs_agent: prog.needs_agent,
    });
    let mut builder = loom::model::Builder::new();
    builder.max_threads = loom::MAX_THREADS;
    builder.max_branches = opts.max_branches;
    builder.preemption_bound = opts.preemption_bound;
    builder.max_permutations = opts.max_executions;
    // The permutation limit is looked at every `checkpoint_interval` executions.
    builder.checkpoint_interval = 1;
    let model = {
        let found = found.clone();
        let executions = executions.clone();
        move || {
            executions.fetch_add(1, Ordering::Relaxed);
            let world =
                loom::sync::Arc::new(World::new(prog.clone(), found.clone(), elections.clone()));
            let mut handles = Vec::new();
            for t in 1..prog.threads as usize {
                let w = world.clone();
                handles.push(loom::thread::spawn(move || Thread::new(&w, t).run()));
            }
            if prog.needs_agent {
                let w = world.clone();
                handles.push(loom::thread::spawn(move || {
                    let _ = w.agent();
                }));
            }
            Thread::new(&world, 0).run();
            for h in handles {
                h.join().unwrap();
            }
        }
    };
    let result = catch_unwind(AssertUnwindSafe(|| builder.check(model)));
    let executions = executions.load(Ordering::Relaxed);
    let mut out = Outcome {
        found: found.lock().unwrap().clone(),
        executions,
        complete: opts.max_executions.is_none_or(|m| executions + 1 < m),
        loom_panic: None,
    };
    if let Err(payload) = result {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        if msg.contains("deadlock") {
            out.found.insert((Class::Deadlock, "deadlock"));
            out.loom_panic = Some("deadlock".into());
        } else if msg.contains("maximum number of branches") {
            out.loom_panic = Some("branches".into());
        } else {
            // Anything else is a bug of the oracle: let the test see it.
            std::panic::resume_unwind(payload);
        }
        out.complete = false;
    }
    out
}
