//! Nothing panics on any input: random bytes, random token streams and mutations of a valid
//! file go through `load` (proptest shrinks any failure to a small input). Deeply nested and
//! very long inputs are tested directly: they must give an error, not a stack overflow.

use proptest::prelude::*;
use protocols::{SourceFile, load, render};

const VALID: &str = include_str!("fixtures/all_statements.phase");

/// Load and render: both must return, whatever the input.
fn check(text: &str, overrides: &[(String, i64)]) {
    let file = SourceFile::new("fuzz.phase", text);
    match load(&file, overrides) {
        Ok(p) => {
            let _ = protocols::ir_display::dump(&p, Some(&file));
        }
        Err(e) => {
            assert!(!e.errors.is_empty(), "Err with no errors");
            for err in &e.errors {
                assert!(err.code.starts_with('E') && err.code.len() == 5);
                if let Some(s) = err.span {
                    assert!(s.start <= s.end && s.end as usize <= file.text.len());
                }
            }
            // Rendering is slow-ish (miette); ten errors exercise it as well as a hundred.
            let mut few = e.clone();
            few.errors.truncate(10);
            let _ = render::render(&few, false, 80);
        }
    }
}

const VOCAB: &[&str] = &[
    "protocol",
    "p",
    "param",
    "N",
    "=",
    "2",
    "0x10",
    "0b1",
    "1_000",
    "9223372036854775807",
    "block",
    "32",
    "cluster",
    "mbarrier",
    "barrier",
    "with",
    "completion",
    "pipeline",
    "stages",
    "producers",
    "consumers",
    "thread",
    "buffer",
    "global",
    "kernel",
    "domain",
    "expect",
    "ok",
    "deadlock",
    "warning",
    "stale-token",
    "let",
    "if",
    "else",
    "for",
    "in",
    "..",
    "while",
    "role",
    "when",
    "elect",
    "exit",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "@",
    "->",
    ",",
    ";",
    "\n",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<<",
    ">>",
    "&",
    "|",
    "^",
    "&&",
    "||",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "!",
    "tid",
    "lane",
    "warp",
    "cta",
    "nthreads",
    "ncta",
    "min",
    "max",
    "init",
    "inval",
    "arrive",
    "arrive_drop",
    "arrive_expect_tx",
    "expect_tx",
    "complete_tx",
    "wait",
    "parity",
    "token",
    "arrive_and_wait",
    "test_wait",
    "syncthreads",
    "bar_sync",
    "bar_arrive",
    "syncwarp",
    "cluster_sync",
    "read",
    "write",
    "part",
    "mma",
    "tma",
    "multicast",
    "tma_store",
    "cp_async",
    "cp_async_arrive",
    "noinc",
    "producer_acquire",
    "consumer_wait",
    "consumer_wait_prior",
    "memcpy_async",
    "quit",
    "store",
    "load",
    "store_release",
    "load_acquire",
    "fence",
    "scope",
    "gpu",
    "sys",
    "full",
    "slot",
    "t",
    "x",
    "#",
    "//",
    "# phasecheck: allow(a-b) r",
    "\u{e9}",
    "$",
];

fn token_stream() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(VOCAB), prop::bool::ANY), 0..200).prop_map(|toks| {
        let mut s = String::new();
        for (t, nl) in toks {
            s.push_str(t);
            s.push(if nl { '\n' } else { ' ' });
        }
        s
    })
}

/// A valid file with a few bytes deleted, replaced or inserted.
fn mutation() -> impl Strategy<Value = String> {
    prop::collection::vec((0usize..VALID.len(), 0u8..3, any::<u8>()), 1..8).prop_map(|edits| {
        let mut bytes = VALID.as_bytes().to_vec();
        for (at, kind, b) in edits {
            let at = at.min(bytes.len().saturating_sub(1));
            match kind {
                0 if !bytes.is_empty() => {
                    bytes.remove(at);
                }
                1 if !bytes.is_empty() => bytes[at] = b,
                _ => bytes.insert(at, b),
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        check(&String::from_utf8_lossy(&bytes), &[]);
    }

    #[test]
    fn random_token_streams_never_panic(text in token_stream()) {
        check(&text, &[]);
        check(&format!("protocol p\nblock 32\n{text}"), &[("N".into(), -1)]);
    }

    #[test]
    fn mutated_valid_files_never_panic(text in mutation()) {
        check(&text, &[]);
    }

    #[test]
    fn any_param_override_never_panics(
        name in prop::sample::select(&["STAGES", "BYTES", "MASK", "HEX", "NOPE"][..]),
        value in any::<i64>(),
    ) {
        check(VALID, &[(name.to_string(), value)]);
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    // Far beyond the nesting limits (64) and beyond what unbounded recursion would survive
    // on a 2 MiB test-thread stack.
    let n = 30_000;
    let cases = [
        format!(
            "protocol p\nblock 32\nparam N = {}1{}",
            "(".repeat(n),
            ")".repeat(n)
        ),
        format!("protocol p\nblock 32\nparam N = {}1", "-".repeat(n)),
        format!("protocol p\nblock 32\nparam N = {}", "!(".repeat(n)),
        format!("protocol p\nblock 32\nparam N = 1{}", " + 1".repeat(n)),
        format!("protocol p\nblock 32\n{}", "if 1 {".repeat(n)),
        format!(
            "protocol p\nblock 32\n{}{}",
            "elect { ".repeat(n),
            "}".repeat(n)
        ),
        "{".repeat(n),
        "}".repeat(n),
        "[".repeat(n),
    ];
    for text in &cases {
        let file = SourceFile::new("deep.phase", text);
        assert!(load(&file, &[]).is_err());
    }
}

#[test]
fn long_flat_files_load() {
    let mut text = String::from("protocol p\nblock 32\nbuffer b\n");
    for i in 0..20_000 {
        text.push_str(&format!("let x{i} = {i} + 1\nread b\n"));
    }
    let p = load(&SourceFile::new("long.phase", &text), &[]).expect("loads");
    assert_eq!(p.kernels[0].body.len(), 40_000);
}
