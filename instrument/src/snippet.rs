//! The PTX text the instrumenter inserts. Every register it uses is its own (`%phck_*`,
//! declared at the top of each function), so the kernel's registers, predicates and labels are
//! untouched; labels are `$phck_*_ID`, unique per point.

use capture::fuzz::{CFG_SYMBOL, RECORD_WORDS, STUCK_CAPACITY, STUCK_COUNT_SYMBOL, STUCK_SYMBOL};

/// The module-level globals, with the options as initializers (the host writes only the seed).
pub fn globals(delay_chance: u32, delay_mask: u32, wait_bound_us: u32) -> String {
    format!(
        "\n// phasecheck fuzz --app: the instrumented kernel's globals (issue 27)\n\
         .visible .global .align 4 .u32 {CFG_SYMBOL}[4] = {{1, {delay_chance}, {delay_mask}, {wait_bound_us}}};\n\
         .visible .global .align 4 .u32 {STUCK_COUNT_SYMBOL};\n\
         .visible .global .align 4 .u32 {STUCK_SYMBOL}[{}];\n",
        STUCK_CAPACITY as usize * RECORD_WORDS
    )
}

/// One xorshift32 step of the thread's state `%phck_s`.
const XORSHIFT: &str = "\tshl.b32 \t%phck_t, %phck_s, 13;\n\
     \txor.b32 \t%phck_s, %phck_s, %phck_t;\n\
     \tshr.b32 \t%phck_t, %phck_s, 17;\n\
     \txor.b32 \t%phck_s, %phck_s, %phck_t;\n\
     \tshl.b32 \t%phck_t, %phck_s, 5;\n\
     \txor.b32 \t%phck_s, %phck_s, %phck_t;\n";

/// Declarations and the state's seeding, at the top of a function's body. `salt` tells the
/// functions apart.
pub fn prologue(salt: u32) -> String {
    let mut s = String::from(
        "\t// phasecheck: instrumentation state\n\
         \t.reg .b32 \t%phck_s, %phck_t, %phck_c, %phck_m, %phck_w;\n\
         \t.reg .b64 \t%phck_b, %phck_t0, %phck_n, %phck_a;\n\
         \t.reg .pred \t%phck_p;\n",
    );
    s += &format!(
        "\tld.global.u32 \t%phck_s, [{CFG_SYMBOL}];\n\
         \tld.global.u32 \t%phck_c, [{CFG_SYMBOL}+4];\n\
         \tld.global.u32 \t%phck_m, [{CFG_SYMBOL}+8];\n\
         \tld.global.u32 \t%phck_t, [{CFG_SYMBOL}+12];\n\
         \tmul.wide.u32 \t%phck_b, %phck_t, 1000;\n"
    );
    // Odd multipliers: distinct threads and blocks get distinct states.
    for (reg, mul) in [
        ("%tid.x", 0x9E37_79B1u32),
        ("%tid.y", 0x85EB_CA77),
        ("%tid.z", 0xC2B2_AE3D),
        ("%ctaid.x", 0x27D4_EB2F),
        ("%ctaid.y", 0x1656_67B1),
        ("%ctaid.z", 0xD3A2_646D),
    ] {
        s += &format!(
            "\tmov.u32 \t%phck_t, {reg};\n\tmad.lo.u32 \t%phck_s, %phck_t, {mul}, %phck_s;\n"
        );
    }
    s += &format!(
        "\txor.b32 \t%phck_s, %phck_s, {};\n\tor.b32 \t%phck_s, %phck_s, 1;\n",
        salt.wrapping_mul(0x2545_F491)
    );
    for _ in 0..3 {
        s += XORSHIFT;
    }
    s += "\tmov.u32 \t%phck_w, -1;\n\tmov.u64 \t%phck_t0, 0;\n";
    s
}

/// A random delay: with chance `%phck_c`/256, sleep up to `%phck_m` nanoseconds.
pub fn delay(id: u32, place: &str) -> String {
    format!(
        "\t// phasecheck: delay {place} point {id}\n{XORSHIFT}\
         \tand.b32 \t%phck_t, %phck_s, 255;\n\
         \tsetp.lt.u32 \t%phck_p, %phck_t, %phck_c;\n\
         \tshr.b32 \t%phck_t, %phck_s, 8;\n\
         \tand.b32 \t%phck_t, %phck_t, %phck_m;\n\
         \t@%phck_p nanosleep.u32 \t%phck_t;\n"
    )
}

/// The first six words of a stuck record at `%phck_a`: the block's and the thread's
/// coordinates (`%ctaid.x..z`, `%tid.x..z`), through `%phck_t`.
pub fn store_coordinates() -> String {
    let mut s = String::new();
    for (k, reg) in [
        "%ctaid.x", "%ctaid.y", "%ctaid.z", "%tid.x", "%tid.y", "%tid.z",
    ]
    .iter()
    .enumerate()
    {
        s += &format!(
            "\tmov.u32 \t%phck_t, {reg};\n\tst.global.u32 \t[%phck_a+{}], %phck_t;\n",
            4 * k
        );
    }
    s
}

/// After a wait at point `id` whose completion predicate is `done`: when it failed, how long
/// this thread has been failing at this point; past the bound, a stuck record and `exit`.
/// `skip` is the guard under which the wait did not run (`@!%p`), if it had one; `on_ok` runs
/// when the wait succeeded, `on_fail` when it did not.
///
/// `replay` (a kernel that replays a counterexample, `confirm --app`): the stuck record's last
/// word is the thread's pending wait's group (`%phck_pg`, see `seq_snippet::wait_failed`), not
/// the seed, and the thread records once and goes on waiting instead of leaving: a thread that
/// left would let others past where they are stuck (a `syncwarp` releases when its other lanes
/// exit), and the report is to show where the deadlock holds them. The watchdog ends the hang.
pub fn bound(
    id: u32,
    done: &str,
    skip: Option<&str>,
    on_ok: &str,
    on_fail: &str,
    replay: bool,
) -> String {
    let mut s = format!("\t// phasecheck: bounded wait, point {id}\n");
    if let Some(g) = skip {
        s += &format!("\t{g} bra \t$phck_done_{id};\n");
    }
    // A replay records once, then waits on.
    let (once, full) = if replay {
        (
            format!("\t@%phck_rec bra \t$phck_done_{id};\n\tsetp.eq.u32 \t%phck_rec, 1, 1;\n"),
            format!("\t@%phck_p bra \t$phck_done_{id};\n"),
        )
    } else {
        (String::new(), "\t@%phck_p exit;\n".to_string())
    };
    s += &format!(
        "\t@{done} bra \t$phck_ok_{id};\n\
         {on_fail}\
         \tmov.u64 \t%phck_n, %globaltimer;\n\
         \tsetp.ne.u32 \t%phck_p, %phck_w, {id};\n\
         \t@%phck_p mov.u64 \t%phck_t0, %phck_n;\n\
         \tmov.u32 \t%phck_w, {id};\n\
         \tsub.u64 \t%phck_a, %phck_n, %phck_t0;\n\
         \tsetp.le.u64 \t%phck_p, %phck_a, %phck_b;\n\
         \t@%phck_p bra \t$phck_done_{id};\n\
         {once}\
         \tatom.global.add.u32 \t%phck_t, [{STUCK_COUNT_SYMBOL}], 1;\n\
         \tsetp.ge.u32 \t%phck_p, %phck_t, {STUCK_CAPACITY};\n\
         {full}\
         \tmul.wide.u32 \t%phck_a, %phck_t, {};\n\
         \tmov.u64 \t%phck_n, {STUCK_SYMBOL};\n\
         \tadd.u64 \t%phck_a, %phck_a, %phck_n;\n",
        RECORD_WORDS * 4
    );
    s += &store_coordinates();
    let (last_word, leave) = if replay {
        (
            "\tmov.u32 \t%phck_t, %phck_pg;\n".to_string(),
            format!("\tbra \t$phck_done_{id};\n"),
        )
    } else {
        (
            format!("\tld.global.u32 \t%phck_t, [{CFG_SYMBOL}];\n"),
            "\texit;\n".to_string(),
        )
    };
    s += &format!(
        "\tmov.u32 \t%phck_t, {id};\n\
         \tst.global.u32 \t[%phck_a+24], %phck_t;\n\
         {last_word}\
         \tst.global.u32 \t[%phck_a+28], %phck_t;\n\
         \tmembar.gl;\n\
         {leave}\
         $phck_ok_{id}:\n\
         \tmov.u32 \t%phck_w, -1;\n\
         {on_ok}\
         $phck_done_{id}:\n"
    );
    s
}
