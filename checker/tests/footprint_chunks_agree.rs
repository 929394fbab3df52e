//! The partial-order reduction's footprints folded chunk by chunk from the cache
//! (`model/exec/footprint.rs`, `Chunk`) are the footprints folded thread by thread, in every
//! state a search analyses: with `cross_check` on, every call of `footprint::frozen` computes
//! both and records any difference, field by field (the stuck phases, every flag, count and
//! bound, the ranged accesses in their order).
//!
//! Chunks of 3 threads (so that the small protocols have several, and chunks straddle warps,
//! roles and blocks) and of 32 (the size the checker uses), over the corpus (every `expect`
//! line's parameters, production sizes included, each search cut at a few thousand states) and
//! over generated protocols of every shape `protogen` makes (each with its bug or without).
//!
//! One test function: the chunk size is a process-wide setting.

mod common;

use checker::CheckOptions;
use checker::model::exec::cross_check;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// States per search: enough to reach the pipelines' steady state in the corpus.
const MAX_STATES: u64 = 4_000;

fn options() -> CheckOptions {
    CheckOptions {
        max_states: MAX_STATES,
        exhaustive: true,
        ..CheckOptions::default()
    }
}

fn corpus() -> Vec<protocols::ir::Program> {
    let mut files = common::corpus_files();
    // The per-warp release bench too: with `ELECT = 1` its warps elect their releasing lane, so
    // lanes' runs take `elect` as their warp's leader decides, and the warp-wide checks
    // (`footprint::elect`) gather lanes from several chunks of 3.
    files.push(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/per_warp_release.phase"),
    );
    let mut programs = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("readable");
        let file = protocols::SourceFile::new(path.display().to_string(), &text);
        let Ok(declared) = protocols::load(&file, &[]) else {
            continue;
        };
        let mut seen: Vec<Vec<(String, i64)>> = vec![Vec::new()];
        programs.push(declared.clone());
        for e in &declared.expects {
            if seen.contains(&e.overrides) {
                continue;
            }
            seen.push(e.overrides.clone());
            if let Ok(p) = protocols::load(&file, &e.overrides) {
                programs.push(p);
            }
        }
    }
    programs
}

/// `cases` protocols of `strategy`, from a fixed seed.
fn generated<S: Strategy<Value = String>>(strategy: S, cases: u32) -> Vec<protocols::ir::Program> {
    let config = Config {
        rng_algorithm: RngAlgorithm::ChaCha,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    (0..cases)
        .map(|_| {
            let src = strategy
                .new_tree(&mut runner)
                .expect("a protocol")
                .current();
            let file = protocols::SourceFile::new("gen.phase", &src);
            protocols::load(&file, &[]).expect("a generated protocol loads")
        })
        .collect()
}

#[test]
fn chunked_footprints_are_the_footprints() {
    let mut programs = corpus();
    let corpus_len = programs.len();
    assert!(corpus_len >= 300, "only {corpus_len} corpus programs");
    programs.extend(generated(protogen::protocol(), 48));
    programs.extend(generated(protogen::ring(), 24));
    programs.extend(generated(protogen::pipe(), 16));
    programs.extend(generated(protogen::tile(), 16));
    programs.extend(generated(protogen::dispatch(), 16));
    programs.extend(generated(protogen::poll(), 16));
    programs.extend(generated(protogen::cluster(), 24));
    programs.extend(generated(protogen::per_warp(), 16));
    programs.extend(generated(protogen::elements(), 16));
    for chunk in [3, 32] {
        cross_check::enable(chunk);
        let before = cross_check::compared();
        for p in &programs {
            checker::check(p, &options());
        }
        let compared = cross_check::compared() - before;
        eprintln!(
            "chunks of {chunk}: {compared} footprints compared over {} programs",
            programs.len()
        );
        // The comparison ran (a test that compares nothing passes whatever the cache does).
        assert!(compared > 10_000, "only {compared} footprints compared");
        let differences = cross_check::differences();
        assert!(
            differences.is_empty(),
            "chunks of {chunk}: the chunked footprints differ:\n{}",
            differences.join("\n")
        );
    }
}
