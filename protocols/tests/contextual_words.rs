//! Statement words are contextual (docs/language.md, "Statement words are contextual"): every
//! word of the language ([`protocols::KEYWORDS`]) can be a name in every place that takes one,
//! and the program means the same as with an ordinary name. Generated: every keyword in every
//! template below; the IR dump with the keyword must equal the dump with an ordinary name
//! (`qqname`) with the keyword put back. The builtins cannot name a value (E0102).

use protocols::ir_display::dump;
use protocols::{BUILTIN_NAMES, KEYWORDS, LoadErrors, SourceFile, load};

/// The slot a template names.
const SLOT: &str = "@@";
const PLAIN: &str = "qqname";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    /// A parameter, local or loop variable: the builtins are reserved there.
    Value,
    /// An object, role, kernel, domain or protocol: any word.
    Other,
}

/// (what the slot names, program with `@@` in every place that names it).
const TEMPLATES: &[(&str, Slot, &str)] = &[
    (
        "protocol name",
        Slot::Other,
        "protocol @@\nblock 32\nsyncthreads\n",
    ),
    (
        "parameter: declarations, expressions, continuation lines, `expect ... with`",
        Slot::Value,
        "protocol p
param @@ = 2
block 32 * @@
mbarrier b[@@]
if tid < @@ {
  init b[@@ - 1], @@
}
syncthreads
let y = @@ + 1
let z = @@
let w = 1 +
  @@ * 2
let v = (1 +
  @@)
let u = min(@@, 3) - max(1, @@)
bar_sync 1, 32 * @@
wait_group @@
bulk_wait_read @@ - 1
while y < @@ { y = y + @@ }
expect ok with @@ = 1
",
    ),
    (
        "local: `let`, assignments at the top level and in blocks, after an `if` block",
        Slot::Value,
        "protocol p
block 32
let @@ = 0
@@ = @@ + 1
if @@ == 1 {
  @@ = 2
}
@@ = 3
if tid == 0 {
  @@ = 4
} else {
  @@ = 5
}
@@ = @@
while @@ < 5 {
  @@ = @@ + 1
}
",
    ),
    (
        "loop variable",
        Slot::Value,
        "protocol p
block 32
buffer x[4]
for @@ in 0..4 {
  if tid == @@ {
    write x[@@]
  }
}
",
    ),
    (
        "token local",
        Slot::Value,
        "protocol p
block 32
mbarrier b
if tid == 0 { init b, 32 }
syncthreads
let @@ = arrive b
wait b token @@
",
    ),
    (
        "test_wait result",
        Slot::Value,
        "protocol p
block 32
mbarrier b
if tid == 0 { init b, 32 }
syncthreads
arrive b
let @@ = test_wait b parity 0
if @@ == 0 { compute }
",
    ),
    (
        "role",
        Slot::Other,
        "protocol p
block 64
role @@ when tid < 32 {
  syncwarp
}
role @@ when tid >= 32 {
  compute
}
",
    ),
    (
        "mbarrier",
        Slot::Other,
        "protocol p
block 32
mbarrier @@[2]
if tid == 0 {
  init @@[0], 32
  init @@[1], 32
}
fence_mbarrier_init
syncthreads
arrive @@[0]
wait @@[0] parity 0
let t = arrive @@[1], 1 scope cta
wait @@[1] token t
let r = test_wait @@[0] parity 1
if tid == 0 {
  expect_tx @@[0], 16
  complete_tx @@[0], 16
  arrive_expect_tx @@[1], 16
  arrive_drop @@[1]
  inval @@[0]
}
",
    ),
    (
        "barrier with completion",
        Slot::Other,
        "protocol p
block 32
barrier @@ with completion
if tid == 0 { init @@, 32 }
syncthreads
arrive_and_wait @@
",
    ),
    (
        "buffer",
        Slot::Other,
        "protocol p
block 32
mbarrier full
buffer @@[2]
if tid == 0 { init full, 1 }
syncthreads
if tid == 0 {
  write @@[0]
  arrive_expect_tx full, 64
  tma @@[1] -> full, 64
}
wait full parity 0
read @@[0]
mma @@[1]
write part @@[0]
fence_proxy_async
if tid == 0 { tma_store @@[1]; bulk_commit; bulk_wait_read 0 }
cp_async @@[0]
cp_async_arrive full noinc
commit_group
wait_group 0
",
    ),
    (
        "object in a peer block",
        Slot::Other,
        "protocol p
block 32
cluster 2
mbarrier @@
if tid == 0 { init @@, 1 }
cluster_arrive
cluster_wait
if cta == 1 && tid == 0 { arrive @@ @ 0 scope cluster }
if cta == 0 && tid == 0 { wait @@ parity 0 scope cluster }
cluster_sync
",
    ),
    (
        "thread pipeline",
        Slot::Other,
        "protocol p
block 32
buffer x
pipeline @@ thread
producer_acquire @@
memcpy_async x -> @@
producer_commit @@
consumer_wait @@
read x
consumer_release @@
",
    ),
    (
        "block pipeline",
        Slot::Other,
        "protocol p
block 2
buffer x
pipeline @@ stages 2 producers 1 consumers 1
if tid == 0 { producer_acquire @@; write x; producer_commit @@ }
if tid == 1 { consumer_wait_prior @@, 0; read x; consumer_release @@; quit @@ }
",
    ),
    (
        "global, kernel and domain",
        Slot::Other,
        "protocol p
global @@
kernel @@ domain @@ block 32 {
  store @@
  store_release @@ scope gpu
  fence scope gpu
}
kernel k2 block 32 {
  load_acquire @@ scope gpu
  load @@
}
",
    ),
];

fn load_text(text: &str) -> Result<String, LoadErrors> {
    let file = SourceFile::new("t.phase", text);
    load(&file, &[]).map(|p| dump(&p, Some(&file)))
}

fn messages(e: &LoadErrors) -> Vec<String> {
    e.errors
        .iter()
        .map(|e| format!("{}: {}", e.code, e.message))
        .collect()
}

#[test]
fn every_word_is_a_name_in_every_place_that_takes_one() {
    assert!(KEYWORDS.len() > 60, "the keyword list is the lexer's");
    let mut checked = 0;
    for &(what, slot, template) in TEMPLATES {
        let plain = load_text(&template.replace(SLOT, PLAIN))
            .unwrap_or_else(|e| panic!("{what} with an ordinary name: {:?}", messages(&e)));
        for &word in KEYWORDS {
            let text = template.replace(SLOT, word);
            let loaded = load_text(&text);
            if slot == Slot::Value && BUILTIN_NAMES.contains(&word) {
                let e = loaded.expect_err("a builtin cannot name a value");
                assert!(
                    e.errors.iter().any(|e| e.code == "E0102"),
                    "{what} named `{word}`: {:?}",
                    messages(&e)
                );
                continue;
            }
            let got = loaded.unwrap_or_else(|e| {
                panic!("{what} named `{word}` does not load: {:?}", messages(&e))
            });
            assert_eq!(
                got,
                plain.replace(PLAIN, word),
                "{what} named `{word}` means something else"
            );
            checked += 1;
        }
    }
    assert!(checked > 700, "{checked}");
}

#[test]
fn builtins_cannot_name_values_but_can_name_objects() {
    for word in BUILTIN_NAMES {
        for text in [
            format!("protocol p\nparam {word} = 1\nblock 32\n"),
            format!("protocol p\nblock 32\nlet {word} = 1\n"),
            format!("protocol p\nblock 32\nfor {word} in 0..2 {{ compute }}\n"),
            format!("protocol p\nblock 32\n{word} = 1\n"),
        ] {
            let e = load(&SourceFile::new("t.phase", &text), &[]).expect_err(&text);
            let err = e.errors.iter().find(|e| e.code == "E0102").expect(&text);
            assert!(err.message.contains(&format!("`{word}` is a builtin")));
            let span = err.span.expect("a place");
            assert_eq!(&text[span.start as usize..span.end as usize], *word);
            assert!(err.help.as_deref().is_some_and(|h| h.contains("namespace")));
        }
    }
}

/// The places where a word could read either way, and how they are decided.
#[test]
fn ambiguous_places_are_decided_and_explained() {
    // `let X = arrive` with nothing after it: a value named `arrive`, unknown here; the help
    // says what the operation needs.
    let e = load(
        &SourceFile::new("t.phase", "protocol p\nblock 32\nlet t = arrive\n"),
        &[],
    )
    .expect_err("no value named arrive");
    assert_eq!(e.errors[0].code, "E0201");
    assert!(
        e.errors[0]
            .help
            .as_deref()
            .is_some_and(|h| h.contains("barrier")),
        "{:?}",
        e.errors
    );
    // ... but with a parameter of that name it is that value.
    assert!(
        load_text("protocol p\nparam arrive = 2\nblock 32\nlet t = arrive\n").is_ok(),
        "a value named `arrive`"
    );
    // A continuation line that is a statement word alone starts a statement: the dangling `+`
    // is reported (and so is the `load` without its object).
    let e = load(
        &SourceFile::new(
            "t.phase",
            "protocol p\nparam load = 2\nblock 32\nlet y = 1 +\n  load\n",
        ),
        &[],
    )
    .expect_err("`load` starts a statement");
    assert!(e.errors.iter().all(|e| e.code == "E0101"), "{:?}", e.errors);
    assert!(load_text("protocol p\nparam load = 2\nblock 32\nlet y = 1 +\n  (load)\n").is_ok());
    // `write part` followed by a name is a part write; otherwise `part` is the buffer.
    let part =
        load_text("protocol p\nblock 32\nbuffer part[2]\nwrite part[0]\nwrite part part[1]\n")
            .expect("loads");
    assert!(part.contains("write part[0]  #"), "{part}");
    assert!(part.contains("write part part[1]  #"), "{part}");
    let part = load_text("protocol p\nblock 32\nbuffer part\nwrite part\n").expect("loads");
    assert!(part.contains("write part  #"), "{part}");
}

/// `write X value N` (language.md, "Same-value stores"): the value is a constant, printed back
/// by `ir_display`; a part write takes none; `write part value E` writes the buffer `part`.
#[test]
fn write_value_clause() {
    let t = load_text(
        "protocol p\nparam V = 3\nblock 32\nbuffer flag[2]\nbuffer part\nbuffer value\n\
         write flag[1] value V * 2 + 1\nwrite part value 5\nwrite part value\nwrite value value -1\n",
    )
    .expect("loads");
    assert!(t.contains("write flag[1] value 7  #"), "{t}");
    assert!(t.contains("write part value 5  #"), "{t}");
    assert!(
        t.contains("write part value  #"),
        "a part write of `value`: {t}"
    );
    assert!(t.contains("write value value -1  #"), "{t}");
    let codes = |text: &str| -> Vec<String> {
        match load(&SourceFile::new("t.phase", text), &[]) {
            Ok(_) => Vec::new(),
            Err(e) => e.errors.iter().map(|e| e.code.to_string()).collect(),
        }
    };
    let head = "protocol p\nblock 32\nbuffer flag\n";
    assert_eq!(codes(&format!("{head}write flag value tid\n")), ["E0302"]);
    assert_eq!(
        codes(&format!("{head}for i in 0..2 {{ write flag value i }}\n")),
        ["E0302"]
    );
    assert_eq!(
        codes(&format!("{head}write part flag value 1\n")),
        ["E0101"]
    );
    assert_eq!(codes(&format!("{head}write flag value\n")), ["E0101"]);
}

/// `bar_sync ID[, N] unaligned` / `bar_arrive ID, N unaligned` (language.md, "Barriers without
/// `.aligned`"): a clause word after the barrier, printed back by `ir_display`; `unaligned` stays
/// a name everywhere else.
#[test]
fn unaligned_clause() {
    let t = load_text(
        "protocol p\nparam unaligned = 1\nblock 64\nbar_sync 1 unaligned\nbar_sync 2, 64 unaligned\n\
         bar_arrive 3, 64 unaligned\nbar_sync unaligned\nbar_sync 4\n",
    )
    .expect("loads");
    assert!(t.contains("bar_sync 1 unaligned  #"), "{t}");
    assert!(t.contains("bar_sync 2, 64 unaligned  #"), "{t}");
    assert!(t.contains("bar_arrive 3, 64 unaligned  #"), "{t}");
    assert!(
        t.contains("bar_sync unaligned  #"),
        "the parameter `unaligned` as the id: {t}"
    );
    assert!(t.contains("bar_sync 4  #"), "{t}");
}
