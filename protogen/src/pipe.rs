//! [`Pipe`]: cuda::pipeline, block scope (partitioned) and thread scope.
//!
//! One shape of the generated protocols; the crate's documentation lists them all.

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

/// Deliberate bugs in a [`Pipe`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipeBug {
    /// The consumer releases the stage before it reads it.
    ReleaseBeforeRead,
    /// The consumer skips `consumer_wait` on this batch.
    MissingWait(u32),
    /// A consumer calls `producer_acquire` (role misuse of a partitioned pipeline).
    ConsumerAcquires,
    /// Consumer `.0` quits (and exits) at batch `.1`.
    EarlyQuit(u32, u32),
    /// Thread scope: `consumer_wait_prior` allows one batch too many in flight.
    WaitPriorTooLax,
}

/// A `cuda::pipeline`: block scope with `producers` producer threads and `consumers` consumer
/// threads (partitioned) or every thread both (`unified`), or (`thread_scope`) a per-thread
/// pipeline of `batches` batches drained with `consumer_wait_prior`.
#[derive(Clone, Debug)]
pub struct Pipe {
    pub thread_scope: bool,
    /// Block scope: 1 or 2 producer threads.
    pub producers: u32,
    /// Block scope: every thread produces and consumes (the producer and consumer counts are
    /// the block size).
    pub unified: bool,
    pub consumers: u32,
    pub stages: u32,
    pub batches: u32,
    /// Every role ends with `quit`.
    pub quit: bool,
    pub bug: Option<PipeBug>,
}

/// The parameters of a random [`Pipe`].
pub fn pipe_params() -> impl Strategy<Value = Pipe> {
    (
        (any::<bool>(), 1..=2u32, any::<bool>()),
        1..=2u32,
        1..=2u32,
        1..=3u32,
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(PipeBug::ReleaseBeforeRead),
                (0..3u32).prop_map(PipeBug::MissingWait),
                Just(PipeBug::ConsumerAcquires),
                (0..2u32, 0..3u32).prop_map(|(w, b)| PipeBug::EarlyQuit(w, b)),
                Just(PipeBug::WaitPriorTooLax),
            ],
        ),
    )
        .prop_map(
            |((thread_scope, producers, unified), consumers, stages, batches, quit, bug)| Pipe {
                thread_scope,
                producers,
                unified,
                consumers,
                stages,
                batches,
                quit,
                bug,
            },
        )
}

/// `cuda::pipeline` producer/consumer loops.
pub fn pipe() -> impl Strategy<Value = String> {
    pipe_params().prop_map(|p| p.source())
}

impl Pipe {
    /// Render the protocol.
    pub fn source(&self) -> String {
        let nb = self.batches.max(1);
        if self.thread_scope {
            let mut w = Src::new("gen_pipeline_thread");
            w.param("NT", self.consumers.clamp(1, 2) + 1);
            w.param("NB", nb);
            w.line("block NT");
            w.blank();
            w.line("pipeline tp thread");
            w.line("buffer buf[NB * NT]");
            w.blank();
            w.open("for b in 0..NB");
            w.line("memcpy_async buf[b * NT + tid] -> tp");
            w.line("producer_commit tp");
            w.close();
            w.open("for b in 0..NB");
            let prior = if self.bug == Some(PipeBug::WaitPriorTooLax) {
                "NB - b"
            } else {
                "NB - 1 - b"
            };
            match self.bug {
                Some(PipeBug::MissingWait(x)) => w.line(format!(
                    "if b != {} {{ consumer_wait_prior tp, {prior} }}",
                    pick(x, nb)
                )),
                _ => w.line(format!("consumer_wait_prior tp, {prior}")),
            }
            w.line("read buf[b * NT + tid]");
            w.close();
            if self.quit {
                w.line("quit tp");
            }
            return w.finish();
        }
        if self.unified {
            return self.unified_source(nb);
        }
        let nc = self.consumers.clamp(1, 2);
        let np = self.producers.clamp(1, 2);
        let mut w = Src::new("gen_pipeline_block");
        w.param("STAGES", self.stages.clamp(1, 2));
        w.param("NB", nb);
        w.param("NP", np);
        w.param("NC", nc);
        w.line("block NP + NC");
        w.blank();
        w.line("pipeline pipe stages STAGES producers NP consumers NC");
        w.line("buffer chunk[STAGES * NP]");
        w.blank();
        w.open("role producer when tid < NP");
        w.open("for b in 0..NB");
        w.line("producer_acquire pipe");
        w.line("memcpy_async chunk[(b % STAGES) * NP + tid] -> pipe");
        w.line("producer_commit pipe");
        w.close();
        if self.quit {
            w.line("quit pipe");
        }
        w.close();
        w.open("role consumer when tid >= NP");
        w.open("for b in 0..NB");
        if let Some(PipeBug::EarlyQuit(who, at)) = self.bug {
            w.open(format!(
                "if tid == NP + {} && b == {}",
                pick(who, nc),
                pick(at, nb)
            ));
            w.line("quit pipe");
            w.line("exit");
            w.close();
        }
        match self.bug {
            Some(PipeBug::MissingWait(x)) => {
                w.line(format!("if b != {} {{ consumer_wait pipe }}", pick(x, nb)))
            }
            _ => w.line("consumer_wait pipe"),
        }
        // Each consumer reads the part of one producer.
        let read = "read chunk[(b % STAGES) * NP + (tid - NP) % NP]";
        if self.bug == Some(PipeBug::ReleaseBeforeRead) {
            w.line("consumer_release pipe");
            w.line(read);
        } else {
            w.line(read);
            w.line("consumer_release pipe");
        }
        if self.bug == Some(PipeBug::ConsumerAcquires) {
            w.line("if b == 0 { producer_acquire pipe }");
        }
        w.close();
        if self.quit {
            w.line("quit pipe");
        }
        w.close();
        w.finish()
    }

    /// A unified block pipeline: every thread fills its part of a stage, then reads a
    /// neighbour's part of it.
    fn unified_source(&self, nb: u32) -> String {
        let nt = self.consumers.clamp(1, 2) + 1;
        let mut w = Src::new("gen_pipeline_unified");
        w.param("STAGES", self.stages.clamp(1, 2));
        w.param("NB", nb);
        w.param("NT", nt);
        w.line("block NT");
        w.blank();
        w.line("pipeline pipe stages STAGES producers NT consumers NT");
        w.line("buffer chunk[STAGES * NT]");
        w.blank();
        w.open("for b in 0..NB");
        if let Some(PipeBug::EarlyQuit(who, at)) = self.bug {
            w.open(format!(
                "if tid == {} && b == {}",
                pick(who, nt),
                pick(at, nb)
            ));
            w.line("quit pipe");
            w.line("exit");
            w.close();
        }
        w.line("producer_acquire pipe");
        w.line("memcpy_async chunk[(b % STAGES) * NT + tid] -> pipe");
        w.line("producer_commit pipe");
        match self.bug {
            Some(PipeBug::MissingWait(x)) => {
                w.line(format!("if b != {} {{ consumer_wait pipe }}", pick(x, nb)))
            }
            _ => w.line("consumer_wait pipe"),
        }
        let read = "read chunk[(b % STAGES) * NT + (tid + 1) % NT]";
        if self.bug == Some(PipeBug::ReleaseBeforeRead) {
            w.line("consumer_release pipe");
            w.line(read);
        } else {
            w.line(read);
            w.line("consumer_release pipe");
        }
        w.close();
        if self.quit {
            w.line("quit pipe");
        }
        w.finish()
    }
}
