//! Branches on values the executor cannot know (issue 23, FlashInfer's `sum > 0` in its
//! online softmax, attention_updater.cuh:235): around code that only computes registers they
//! are followed without an assumption (`exec/join.rs`); anywhere else the error names the
//! `--assume` that decides them.

use ptx::Options;

fn opts(assume: &[(u32, i64)]) -> Options {
    Options {
        block: Some([32, 1, 1]),
        assume: assume.iter().map(|(l, v)| (l.to_string(), *v)).collect(),
        ..Default::default()
    }
}

/// A kernel whose float `%f2` (from global memory, summed) decides a branch over `arm`; after
/// the branch's target, `after`; every thread stores to `tile`.
fn kernel(arm: &str, after: &str) -> String {
    format!(
        ".version 8.0\n.target sm_90a\n.address_size 64\n\
         .visible .entry k(\n .param .u64 k_param_0\n)\n{{\n\
         .reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<8>;\n.reg .b64 %rd<8>;\n\
         .shared .align 16 .b8 tile[256];\n\
         ld.param.u64 %rd1, [k_param_0];\n\
         cvta.to.global.u64 %rd2, %rd1;\n\
         ld.global.f32 %f1, [%rd2];\n\
         add.f32 %f2, %f1, %f1;\n\
         setp.leu.f32 %p1, %f2, 0f00000000;\n\
         mov.u32 %r3, 0;\n\
         @%p1 bra SKIP;\n\
         {arm}\n\
         SKIP:\n\
         {after}\n\
         mov.u32 %r2, tile;\n\
         mov.u32 %r5, %tid.x;\n\
         shl.b32 %r6, %r5, 2;\n\
         add.u32 %r7, %r2, %r6;\n\
         st.shared.u32 [%r7], %r5;\n\
         ret;\n}}\n"
    )
}

fn line_of(text: &str, start: &str) -> u32 {
    text.lines().position(|l| l.starts_with(start)).unwrap() as u32 + 1
}

fn err(text: &str, o: &Options) -> String {
    match ptx::extract(text, "t.ptx", o) {
        Ok(e) => panic!("extracted:\n{}", e.text),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_branch_around_register_only_code_needs_no_assumption() {
    let text = kernel("div.rn.f32 %f3, %f2, %f2;\nmov.u32 %r3, 1;", "");
    let ex = ptx::extract(&text, "t.ptx", &opts(&[])).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ex.text.contains("write tile bytes 4 * tid .. +4"),
        "{}",
        ex.text
    );
}

#[test]
fn a_register_written_on_one_way_only_is_unknown_after_the_branch() {
    let text = kernel(
        "div.rn.f32 %f3, %f2, %f2;\nmov.u32 %r3, 1;",
        "setp.eq.s32 %p2, %r3, 0;\n@%p2 bra DONE;\nmov.u32 %r9, tile;\nst.shared.u32 [%r9], %r3;\nDONE:",
    );
    let arm = line_of(&text, "mov.u32 %r3, 1;");
    let e = err(&text, &opts(&[]));
    assert!(e.contains("writes on one way only of the branch"), "{e}");
    assert!(e.contains(&format!("--assume {arm}=VALUE")), "{e}");
    // Given, the thread goes on.
    ptx::extract(&text, "t.ptx", &opts(&[(arm, 1)])).unwrap_or_else(|e| panic!("{e}"));
}

/// A store on one way: the two ways make different events, so the branch is not followed
/// without an assumption, and the error says which one, with a float's bits.
#[test]
fn a_branch_around_an_access_still_asks_for_the_float() {
    let text = kernel("mov.u32 %r9, tile;\nst.shared.u32 [%r9], %r3;", "");
    let sum = line_of(&text, "add.f32");
    let e = err(&text, &opts(&[]));
    assert!(e.contains("a floating-point value"), "{e}");
    assert!(e.contains(&format!("--assume {sum}=BITS")), "{e}");
    assert!(e.contains("1065353216 is 1.0"), "{e}");
    // 1 (the least positive float): `sum <= 0` is false, the store happens.
    let ex = ptx::extract(&text, "t.ptx", &opts(&[(sum, 1)])).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("write tile bytes 0 .. +4"), "{}", ex.text);
}

/// A backward branch (a loop) is never followed this way, even over register-only code.
#[test]
fn a_loop_on_an_unknown_is_still_an_error() {
    let text = kernel(
        "",
        "LOOP:\nadd.f32 %f2, %f2, %f2;\nsetp.leu.f32 %p3, %f2, 0f00000000;\n@%p3 bra LOOP;",
    );
    let e = err(&text, &opts(&[]));
    assert!(
        e.contains("depends on a value phasecheck cannot know"),
        "{e}"
    );
}
