//! The round trip: every corpus file, at the parameters of each of its `expect` lines, lowered
//! to CUDA (`phasecheck lower`), made plain (`fixtures/roundtrip/plain.py`), compiled to PTX
//! with nvcc (`fixtures/roundtrip/regen.py`; the PTX is committed, CI has no nvcc) and
//! extracted back must get the corpus file's verdict and the same set of rule codes.
//!
//! `fixtures/roundtrip/manifest.txt` lists every case: `ok` (it must round trip), `scaled` (a
//! scaled-down model that no kernel can have, whose twin at whole warps must be `ok`), or `skip`
//! with a reason (it must still fail the way the reason says: a case that starts working must
//! be moved to `ok`).

use checker::{CheckOptions, Severity, Verdict};
use protocols::SourceFile;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixtures() -> PathBuf {
    root().join("ptx/tests/fixtures/roundtrip")
}

#[derive(Debug)]
enum Status {
    Ok {
        block: u32,
        cluster: u32,
        slow: bool,
        /// `last-out`: the kernel's libcu++ pipeline lets the last thread to leave invalidate
        /// its barriers, found by the value an atomic fetch_add returns (an order the executor
        /// does not know): every such value is taken as "not the last" (`--assume LINE=0`),
        /// which leaves the final `inval`s out.
        last_out: bool,
    },
    /// A scaled-down model (one model thread for a warp or a warpgroup) whose named barriers
    /// count fewer than a warp, which `lower` refuses; the same file at `twin` (whole warps)
    /// is a case of its own that round trips.
    Scaled { twin: Vec<(String, i64)> },
    /// `phasecheck lower` refuses the file at these parameters.
    SkipLower,
    /// The front end cannot extract the PTX, or the protocol it extracts does not keep the
    /// verdict and rules.
    SkipExtract,
}

#[derive(Debug)]
struct Case {
    phase: String,
    params: Vec<(String, i64)>,
    status: Status,
}

impl Case {
    fn key(&self) -> String {
        key(&self.phase, &self.params)
    }

    fn ptx_name(&self) -> String {
        let mut name = self
            .phase
            .trim_end_matches(".phase")
            .replace('/', "__")
            .to_string();
        if !self.params.is_empty() {
            name.push('@');
            name.push_str(&params_text(&self.params));
        }
        name + ".ptx"
    }
}

fn params_text(params: &[(String, i64)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `K=V,K=V`.
fn parse_params(text: &str) -> Vec<(String, i64)> {
    text.split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("PARAM=VALUE");
            (k.to_string(), v.parse().expect("an integer parameter"))
        })
        .collect()
}

fn key(phase: &str, params: &[(String, i64)]) -> String {
    if params.is_empty() {
        phase.to_string()
    } else {
        format!("{phase} {}", params_text(params))
    }
}

fn cases() -> Vec<Case> {
    let m = fixtures().join("manifest.txt");
    let text = std::fs::read_to_string(&m).expect("the manifest");
    let mut out = Vec::new();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (case, status) = l
            .split_once('|')
            .unwrap_or_else(|| panic!("manifest line without `|`: {l}"));
        let mut w = case.split_whitespace();
        let phase = w.next().expect("a corpus file").to_string();
        let params = w.next().map(parse_params).unwrap_or_default();
        let status = status.trim();
        let status = if let Some(rest) = status.strip_prefix("ok ") {
            let w: Vec<&str> = rest.split_whitespace().collect();
            Status::Ok {
                block: w[0].parse().expect("a block size"),
                cluster: w[1].parse().expect("a cluster size"),
                slow: w[2..].contains(&"slow"),
                last_out: w[2..].contains(&"last-out"),
            }
        } else if let Some(rest) = status.strip_prefix("scaled as ") {
            let (twin, _why) = rest
                .split_once(": ")
                .unwrap_or_else(|| panic!("`scaled as PARAMS: WHY`: {l}"));
            Status::Scaled {
                twin: parse_params(twin),
            }
        } else if status.starts_with("skip lower: ") {
            Status::SkipLower
        } else if status.starts_with("skip extract: ") {
            Status::SkipExtract
        } else {
            panic!(
                "manifest line with an unknown status (ok, scaled as PARAMS: WHY, skip lower: WHY, \
                 skip extract: WHY): {l}"
            );
        };
        out.push(Case {
            phase,
            params,
            status,
        });
    }
    out
}

/// The verdict and the rule codes of every error-level finding, from an exhaustive search (a
/// search that stops after its first error may miss a second rule on either side).
///
/// Warnings are not compared: they are lints on how a protocol is written (a parity written
/// as an expression that is not a bit, an unused suppression comment, an arrive under a
/// condition on the lane), which compiling it to PTX and extracting it back does not keep.
fn verdict(file: &SourceFile, params: &[(String, i64)]) -> (Verdict, BTreeSet<&'static str>) {
    let program = protocols::load(file, params)
        .unwrap_or_else(|e| panic!("{}: {e:?}\n{}", file.name, file.text));
    let options = CheckOptions {
        exhaustive: true,
        ..Default::default()
    };
    let r = checker::check(&program, &options);
    let rules = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.code)
        .collect();
    (r.verdict, rules)
}

fn corpus_file(phase: &str) -> SourceFile {
    let text = std::fs::read_to_string(root().join("corpus").join(phase)).expect("the corpus file");
    SourceFile::new(phase.to_string(), text)
}

/// What the round trip of `c` gives: Ok(()) when the extracted protocol has the corpus file's
/// verdict and rule codes, else why not.
fn round_trip(c: &Case, block: u32, cluster: u32, last_out: bool) -> Result<(), String> {
    let ptx_name = c.ptx_name();
    let ptx_text = std::fs::read_to_string(fixtures().join(&ptx_name))
        .map_err(|e| format!("{ptx_name}: the committed PTX: {e}"))?;
    let mut opts = ptx::Options {
        block: Some([block, 1, 1]),
        cluster: Some(cluster),
        args: [("0", 1), ("1", 0), ("2", 1), ("3", 1_000_000), ("6", 0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        ..Default::default()
    };
    let ex = loop {
        match ptx::extract(&ptx_text, &ptx_name, &opts) {
            Ok(ex) => break ex,
            // `last-out`: the atomic's old value is "not the last".
            Err(e)
                if last_out
                    && opts.assume.len() < 8
                    && e.message.contains("the old value returned by an atomic") =>
            {
                let line = e
                    .help
                    .as_deref()
                    .and_then(|h| h.split("--assume ").nth(1))
                    .and_then(|r| r.split('=').next())
                    .ok_or_else(|| format!("{ptx_name}: {e}"))?;
                opts.assume.push((line.to_string(), 0));
            }
            Err(e) => return Err(format!("{ptx_name}: {e}")),
        }
    };
    // (The corpus file's verdict after the extraction: a case that does not extract costs no
    // search.)
    let (want, want_rules) = verdict(&corpus_file(&c.phase), &c.params);
    let (got, got_rules) = verdict(&SourceFile::new(ptx_name.clone(), &ex.text), &[]);
    if got != want || got_rules != want_rules {
        return Err(format!(
            "{}: {want:?} {want_rules:?}, extracted from {ptx_name}: {got:?} {got_rules:?}",
            c.key()
        ));
    }
    Ok(())
}

fn run(slow: bool) {
    let mut failures = Vec::new();
    let mut n = 0;
    // RT_FILTER=TEXT: only the cases whose corpus path contains TEXT (while working on them).
    let filter = std::env::var("RT_FILTER").unwrap_or_default();
    for c in cases().into_iter().filter(|c| c.key().contains(&filter)) {
        let Status::Ok {
            block,
            cluster,
            slow: is_slow,
            last_out,
        } = c.status
        else {
            continue;
        };
        if is_slow && !slow {
            continue;
        }
        n += 1;
        let t = std::time::Instant::now();
        let r = round_trip(&c, block, cluster, last_out);
        eprintln!(
            "{}: {} ({:.1} s)",
            c.key(),
            if r.is_ok() { "ok" } else { "FAILS" },
            t.elapsed().as_secs_f64()
        );
        if let Err(e) = r {
            failures.push(e);
        }
    }
    assert!(n > 0);
    assert!(
        failures.is_empty(),
        "{} of {n} cases do not round trip:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn lowered_corpus_files_keep_their_verdict() {
    run(false);
}

/// With the `slow` cases (a few seconds each in release, minutes in debug).
#[test]
#[ignore]
fn lowered_corpus_files_keep_their_verdict_all() {
    run(true);
}

fn corpus_files(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("the corpus folder")
        .map(|e| e.expect("a folder entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            corpus_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "phase") {
            let rel = p
                .strip_prefix(root().join("corpus"))
                .expect("under corpus/");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The manifest lists every corpus file at the parameters of each of its `expect` lines, once.
#[test]
fn manifest_lists_every_corpus_case() {
    let mut files = Vec::new();
    corpus_files(&root().join("corpus"), &mut files);
    assert!(files.len() > 50, "the corpus: {files:?}");
    let mut want = BTreeSet::new();
    for phase in &files {
        let file = corpus_file(phase);
        let program = protocols::load(&file, &[]).unwrap_or_else(|e| panic!("{phase}: {e:?}"));
        let mut sets: Vec<Vec<(String, i64)>> = Vec::new();
        for e in &program.expects {
            if !sets.contains(&e.overrides) {
                sets.push(e.overrides.clone());
            }
        }
        if sets.is_empty() {
            sets.push(Vec::new());
        }
        for s in sets {
            want.insert(key(phase, &s));
        }
    }
    let mut got = BTreeMap::new();
    for c in cases() {
        *got.entry(c.key()).or_insert(0) += 1;
    }
    let twice: Vec<_> = got
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(k, _)| k)
        .collect();
    let missing: Vec<_> = want.iter().filter(|k| !got.contains_key(*k)).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains(*k)).collect();
    assert!(
        twice.is_empty() && missing.is_empty() && extra.is_empty(),
        "manifest.txt does not match the corpus (regen.py --update-manifest adds new cases)\n\
         listed twice: {twice:?}\nnot listed: {missing:?}\nno such corpus case: {extra:?}"
    );
}

/// A case listed as `skip lower` or `scaled` still cannot be lowered.
#[test]
fn skipped_cases_still_cannot_be_lowered() {
    let mut lowered = Vec::new();
    for c in cases() {
        if !matches!(c.status, Status::SkipLower | Status::Scaled { .. }) {
            continue;
        }
        let file = corpus_file(&c.phase);
        let program =
            protocols::load(&file, &c.params).unwrap_or_else(|e| panic!("{}: {e:?}", c.key()));
        let r = gpu_harness::lower::lower(
            &program,
            Some(&file),
            &gpu_harness::lower::LowerOptions::default(),
        );
        if r.is_ok() {
            lowered.push(c.key());
        }
    }
    assert!(
        lowered.is_empty(),
        "listed as `skip lower` but lowered now (regenerate their PTX and list them as ok): {lowered:?}"
    );
}

/// A case listed as `skip extract` still does not round trip.
#[test]
fn skipped_cases_still_do_not_round_trip() {
    let mut working = Vec::new();
    for c in cases() {
        if !matches!(c.status, Status::SkipExtract) {
            continue;
        }
        // The block and cluster sizes are the corpus file's.
        let program = protocols::load(&corpus_file(&c.phase), &c.params)
            .unwrap_or_else(|e| panic!("{}: {e:?}", c.key()));
        let block = program.kernels[0].block;
        let cluster = program.kernels[0].cluster;
        if round_trip(&c, block, cluster, true).is_ok() {
            working.push(c.key());
        }
    }
    assert!(
        working.is_empty(),
        "listed as `skip extract` but round trip now (list them as ok): {working:?}"
    );
}

/// Every `scaled` case has its twin at whole warps among the `ok` cases, and every file with a
/// scaled case has an `ok` case in the ordinary (not `slow`) test: the file is round tripped at
/// a size the GPU runs.
#[test]
fn scaled_cases_have_twins_that_round_trip() {
    let all = cases();
    let status_of = |phase: &str, params: &[(String, i64)]| {
        all.iter()
            .find(|c| c.phase == phase && c.params == params)
            .map(|c| &c.status)
    };
    let mut problems = Vec::new();
    let mut scaled = 0;
    for c in &all {
        let Status::Scaled { twin } = &c.status else {
            continue;
        };
        scaled += 1;
        if !matches!(status_of(&c.phase, twin), Some(Status::Ok { .. })) {
            problems.push(format!(
                "{}: its twin `{}` is not an `ok` case",
                c.key(),
                key(&c.phase, twin)
            ));
        }
        let ordinary = all
            .iter()
            .any(|o| o.phase == c.phase && matches!(o.status, Status::Ok { slow: false, .. }));
        if !ordinary {
            problems.push(format!(
                "{}: the file has no `ok` case in the ordinary test",
                c.key()
            ));
        }
    }
    assert!(scaled > 0, "no scaled case: is this test still needed?");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
