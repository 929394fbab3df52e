//! The sequencer's PTX (see [`crate::sequence`]): its globals, the per-thread state in the
//! kernel's prologue, the hold before a point and the turn's end after it. Registers are the
//! instrumenter's own (`%phck_*`), labels `$phck_sq*_ID` per point.

use crate::sequence::Sequence;
use capture::fuzz::{
    RECORD_WORDS, SEQ_HELD, SEQ_STATE_SYMBOL, SEQ_STATE_WORDS, STUCK_CAPACITY, STUCK_COUNT_SYMBOL,
    STUCK_SYMBOL,
};

/// Per thread, where its entries start (`.u32[actors + 1]`).
pub const OFFSETS_SYMBOL: &str = "__phasecheck_seq_offsets";
/// The entries `(group, occurrence, turn)`, three words each.
pub const ENTRIES_SYMBOL: &str = "__phasecheck_seq_entries";
/// The ticket once a held thread gave up: past every turn, so that every hold passes.
pub const TICKET_OFF: u32 = 0x7fff_ffff;

fn array(name: &str, words: &[u32]) -> String {
    // An empty table still needs one element to declare.
    let words: Vec<u32> = if words.is_empty() {
        vec![0]
    } else {
        words.to_vec()
    };
    let mut s = format!(
        ".visible .global .align 4 .u32 {name}[{}] = {{",
        words.len()
    );
    for (k, chunk) in words.chunks(16).enumerate() {
        if k > 0 {
            s.push(',');
        }
        s += "\n\t";
        let parts: Vec<String> = chunk.iter().map(u32::to_string).collect();
        s += &parts.join(", ");
    }
    s += "\n};\n";
    s
}

/// The sequencer's globals: its state (zeroed by the host before each launch) and the table.
pub fn globals(seq: &Sequence) -> String {
    let (offsets, entries) = seq.tables();
    format!(
        "// phasecheck confirm --app: the sequencer of a counterexample's replay ({} turns)\n\
         .visible .global .align 4 .u32 {SEQ_STATE_SYMBOL}[{SEQ_STATE_WORDS}];\n{}{}",
        seq.entries.len(),
        array(OFFSETS_SYMBOL, &offsets),
        array(ENTRIES_SYMBOL, &entries)
    )
}

/// Declarations and the thread's range of entries, in the kernel's prologue (after the
/// instrumenter's own, which sets the wait bound `%phck_b`). A thread outside the first
/// cluster, or past the model's threads, gets an empty range: it runs free.
pub fn prologue(seq: &Sequence) -> String {
    let mut s = String::from(
        "\t// phasecheck: sequencer state\n\
         \t.reg .b32 \t%phck_q0, %phck_q1, %phck_e, %phck_i, %phck_m2, %phck_pg, %phck_k;\n\
         \t.reg .b64 \t%phck_h0;\n\
         \t.reg .pred \t%phck_rec;\n\
         \tsetp.ne.u32 \t%phck_rec, 0, 0;\n",
    );
    if seq.groups > 0 {
        s += &format!("\t.reg .b32 \t%phck_g<{}>;\n", seq.groups);
    }
    for g in 0..seq.groups {
        s += &format!("\tmov.u32 \t%phck_g{g}, 0;\n");
    }
    s += &format!(
        "\tmov.u32 \t%phck_e, -1;\n\
         \tmov.u32 \t%phck_pg, -1;\n\
         \tmov.u32 \t%phck_q0, 0;\n\
         \tmov.u32 \t%phck_q1, 0;\n\
         \tmov.u32 \t%phck_t, %clusterid.x;\n\
         \tmov.u32 \t%phck_i, %clusterid.y;\n\
         \tor.b32 \t%phck_t, %phck_t, %phck_i;\n\
         \tmov.u32 \t%phck_i, %clusterid.z;\n\
         \tor.b32 \t%phck_t, %phck_t, %phck_i;\n\
         \tsetp.ne.u32 \t%phck_p, %phck_t, 0;\n\
         \t@%phck_p bra \t$phck_sq_free;\n\
         \tmov.u32 \t%phck_t, %tid.z;\n\
         \tmov.u32 \t%phck_i, %ntid.y;\n\
         \tmov.u32 \t%phck_q1, %tid.y;\n\
         \tmad.lo.u32 \t%phck_t, %phck_t, %phck_i, %phck_q1;\n\
         \tmov.u32 \t%phck_i, %ntid.x;\n\
         \tmov.u32 \t%phck_q1, %tid.x;\n\
         \tmad.lo.u32 \t%phck_t, %phck_t, %phck_i, %phck_q1;\n\
         \tmov.u32 \t%phck_q1, 0;\n\
         \tsetp.ge.u32 \t%phck_p, %phck_t, {block};\n\
         \t@%phck_p bra \t$phck_sq_free;\n\
         \tmov.u32 \t%phck_i, %cluster_ctarank;\n\
         \tsetp.ge.u32 \t%phck_p, %phck_i, {ctas};\n\
         \t@%phck_p bra \t$phck_sq_free;\n\
         \tmad.lo.u32 \t%phck_t, %phck_i, {block}, %phck_t;\n\
         \tmul.wide.u32 \t%phck_a, %phck_t, 4;\n\
         \tmov.u64 \t%phck_n, {OFFSETS_SYMBOL};\n\
         \tadd.u64 \t%phck_a, %phck_a, %phck_n;\n\
         \tld.global.u32 \t%phck_q0, [%phck_a];\n\
         \tld.global.u32 \t%phck_q1, [%phck_a+4];\n\
         $phck_sq_free:\n",
        block = seq.block,
        ctas = seq.ctas,
    );
    s
}

/// Before the instruction of point `id` (group `group`): each thread finds its entry for its
/// next occurrence of the group; if one is listed, the threads of the warp that are here
/// together hold until the ticket reaches the first of their turns (bounded: past the wait
/// bound, the divergence is recorded and every hold freed). `blocking`: the instruction
/// blocks until other threads arrive (`bar.sync`, ...): the turns end before it. `skip`: the
/// guard under which the instruction does not run.
///
/// The hold is per warp, not per thread: lanes that execute one instruction together cannot
/// be ordered apart (a `.aligned` instruction needs them converged), and a lane spinning for a
/// turn that another lane of its warp must end past a reconvergence point would never get it.
/// So the spin loops branch on warp votes only (uniform), and the turns of the lanes end in
/// turn order after the instruction ([`after`]).
pub fn hold(id: u32, group: u32, blocking: bool, skip: Option<&str>) -> String {
    let mut s = format!("\t// phasecheck: sequencer hold, point {id} (group {group})\n");
    if let Some(g) = skip {
        s += &format!("\t{g} bra \t$phck_sqb_{id};\n");
    }
    // The lanes here together (converged) are the ones that hold together: the lookup loop
    // may split them, `bar.warp.sync` joins them again before the votes.
    s += &format!(
        "\tactivemask.b32 \t%phck_m2;\n\
         \tmov.u32 \t%phck_e, -1;\n\
         \tmov.u32 \t%phck_i, %phck_q0;\n\
         $phck_sql_{id}:\n\
         \tsetp.ge.u32 \t%phck_p, %phck_i, %phck_q1;\n\
         \t@%phck_p bra \t$phck_sqf_{id};\n\
         \tmul.wide.u32 \t%phck_a, %phck_i, 12;\n\
         \tmov.u64 \t%phck_n, {ENTRIES_SYMBOL};\n\
         \tadd.u64 \t%phck_a, %phck_a, %phck_n;\n\
         \tadd.u32 \t%phck_i, %phck_i, 1;\n\
         \tld.global.u32 \t%phck_t, [%phck_a];\n\
         \tsetp.ne.u32 \t%phck_p, %phck_t, {group};\n\
         \t@%phck_p bra \t$phck_sql_{id};\n\
         \tld.global.u32 \t%phck_t, [%phck_a+4];\n\
         \tsetp.ne.u32 \t%phck_p, %phck_t, %phck_g{group};\n\
         \t@%phck_p bra \t$phck_sql_{id};\n\
         \tld.global.u32 \t%phck_e, [%phck_a+8];\n\
         $phck_sqf_{id}:\n\
         \tbar.warp.sync \t%phck_m2;\n\
         \tsetp.ne.u32 \t%phck_p, %phck_e, -1;\n\
         \tvote.sync.any.pred \t%phck_p, %phck_p, %phck_m2;\n\
         \t@!%phck_p bra \t$phck_sqb_{id};\n\
         \tredux.sync.min.u32 \t%phck_i, %phck_e, %phck_m2;\n\
         \tmov.u64 \t%phck_h0, %globaltimer;\n\
         $phck_sqh_{id}:\n\
         \tld.acquire.gpu.global.u32 \t%phck_t, [{SEQ_STATE_SYMBOL}];\n\
         \tsetp.ge.u32 \t%phck_p, %phck_t, %phck_i;\n\
         \tvote.sync.all.pred \t%phck_p, %phck_p, %phck_m2;\n\
         \t@%phck_p bra \t$phck_sqg_{id};\n\
         \tmov.u64 \t%phck_n, %globaltimer;\n\
         \tsub.u64 \t%phck_a, %phck_n, %phck_h0;\n\
         \tsetp.gt.u64 \t%phck_p, %phck_a, %phck_b;\n\
         \tvote.sync.any.pred \t%phck_p, %phck_p, %phck_m2;\n\
         \t@!%phck_p bra \t$phck_sqh_{id};\n"
    );
    // Gave up: the lane of the first turn records it.
    s += &give_up(&format!("h{id}"), id, "%phck_i");
    s += &format!("\tbra \t$phck_sqb_{id};\n$phck_sqg_{id}:\n");
    if blocking {
        s += &end_turns(&format!("b{id}"), id);
    }
    s += &format!("$phck_sqb_{id}:\n");
    s
}

/// The sequencer gave up at point `id` waiting for turn `turn` (a register, the same in every
/// lane here): the lane whose turn it is records it (a stuck record with [`SEQ_HELD`], its
/// seed word the ticket it saw, the turn that never ended, in the high half and its own turn
/// in the low half: [`crate::sequence::MAX_TURNS`] bounds both), the
/// state's word 1 keeps the first such turn, the ticket goes past every turn, and the lanes
/// here clear theirs. `tag` makes the labels unique.
fn give_up(tag: &str, id: u32, turn: &str) -> String {
    let mut s = format!(
        "\tsetp.ne.u32 \t%phck_p, %phck_e, {turn};\n\
         \t@%phck_p bra \t$phck_sqx_{tag};\n\
         \tld.acquire.gpu.global.u32 \t%phck_k, [{SEQ_STATE_SYMBOL}];\n\
         \tadd.u32 \t%phck_t, %phck_e, 1;\n\
         \tatom.global.cas.b32 \t%phck_t, [{SEQ_STATE_SYMBOL}+4], 0, %phck_t;\n\
         \tatom.global.exch.b32 \t%phck_t, [{SEQ_STATE_SYMBOL}], {TICKET_OFF};\n\
         \tatom.global.add.u32 \t%phck_t, [{STUCK_COUNT_SYMBOL}], 1;\n\
         \tsetp.ge.u32 \t%phck_p, %phck_t, {STUCK_CAPACITY};\n\
         \t@%phck_p bra \t$phck_sqx_{tag};\n\
         \tmul.wide.u32 \t%phck_a, %phck_t, {rec};\n\
         \tmov.u64 \t%phck_n, {STUCK_SYMBOL};\n\
         \tadd.u64 \t%phck_a, %phck_a, %phck_n;\n",
        rec = RECORD_WORDS * 4
    );
    s += &crate::snippet::store_coordinates();
    s += &format!(
        "\tmov.u32 \t%phck_t, {point};\n\
         \tst.global.u32 \t[%phck_a+24], %phck_t;\n\
         \tshl.b32 \t%phck_k, %phck_k, 16;\n\
         \tand.b32 \t%phck_t, %phck_e, 65535;\n\
         \tor.b32 \t%phck_k, %phck_k, %phck_t;\n\
         \tst.global.u32 \t[%phck_a+28], %phck_k;\n\
         \tmembar.gl;\n\
         $phck_sqx_{tag}:\n\
         \tmov.u32 \t%phck_e, -1;\n",
        point = SEQ_HELD | id
    );
    s
}

/// End the turns of the lanes here, in turn order: a lane whose turn `%phck_e` the ticket has
/// reached moves it on (lanes sharing a turn all try; one compare-and-swap wins), and a lane
/// whose turn the ticket has passed (ended by a lane sharing it, or the sequencer is off)
/// clears it; the loop branches on warp votes only, and is bounded like the hold.
fn end_turns(tag: &str, id: u32) -> String {
    let mut s = format!(
        "\tactivemask.b32 \t%phck_m2;\n\
         \tmov.u64 \t%phck_h0, %globaltimer;\n\
         $phck_sqe_{tag}:\n\
         \tsetp.ne.u32 \t%phck_p, %phck_e, -1;\n\
         \tvote.sync.any.pred \t%phck_p, %phck_p, %phck_m2;\n\
         \t@!%phck_p bra \t$phck_sqd_{tag};\n\
         \tld.acquire.gpu.global.u32 \t%phck_t, [{SEQ_STATE_SYMBOL}];\n\
         \tsetp.eq.u32 \t%phck_p, %phck_t, %phck_e;\n\
         \t@%phck_p add.u32 \t%phck_i, %phck_e, 1;\n\
         \t@%phck_p atom.release.gpu.global.cas.b32 \t%phck_i, [{SEQ_STATE_SYMBOL}], %phck_e, %phck_i;\n\
         \tsetp.le.u32 \t%phck_p, %phck_e, %phck_t;\n\
         \t@%phck_p mov.u32 \t%phck_e, -1;\n\
         \tmov.u64 \t%phck_n, %globaltimer;\n\
         \tsub.u64 \t%phck_a, %phck_n, %phck_h0;\n\
         \tsetp.gt.u64 \t%phck_p, %phck_a, %phck_b;\n\
         \tvote.sync.any.pred \t%phck_p, %phck_p, %phck_m2;\n\
         \t@!%phck_p bra \t$phck_sqe_{tag};\n\
         \tsetp.eq.u32 \t%phck_p, %phck_e, -1;\n\
         \tselp.u32 \t%phck_i, -1, %phck_e, %phck_p;\n\
         \tredux.sync.min.u32 \t%phck_i, %phck_i, %phck_m2;\n"
    );
    s += &give_up(tag, id, "%phck_i");
    s += &format!("$phck_sqd_{tag}:\n");
    s
}

/// After the instruction of point `id` ran (for a wait: succeeded): count the occurrence, and
/// end the turns held here. `skip`: the guard under which it did not run.
pub fn after(id: u32, group: u32, skip: Option<&str>) -> String {
    let mut s = format!("\t// phasecheck: sequencer, point {id} done\n");
    if let Some(g) = skip {
        s += &format!("\t{g} bra \t$phck_sqa_{id};\n");
    }
    s += &format!("\tadd.u32 \t%phck_g{group}, %phck_g{group}, 1;\n");
    s += &end_turns(&format!("a{id}"), id);
    s += &format!("$phck_sqa_{id}:\n");
    s
}

/// After a wait of group `group` failed: the thread's wait of that group is pending (it may
/// go on at another instruction: CUTLASS's `consumer_try_wait` then `consumer_wait` tries once,
/// then loops on a second `try_wait` of the same barrier and phase, which the PTX front end
/// takes as one wait at the first).
pub fn wait_failed(group: u32) -> String {
    format!(
        "\tsetp.eq.u32 \t%phck_p, %phck_pg, -1;\n\
         \t@%phck_p mov.u32 \t%phck_pg, {group};\n"
    )
}

/// After a wait at point `id` succeeded (`group`: its group, if listed): the pending wait (or
/// this one) is done: count its occurrence and end the turns held for it. `groups`: how many
/// groups there are (the pending group's counter is picked by comparison: registers cannot
/// be indexed).
pub fn wait_done(id: u32, group: Option<u32>, groups: u32) -> String {
    let mut s = format!("\t// phasecheck: sequencer, wait at point {id} done\n");
    if let Some(g) = group {
        s += &wait_failed(g);
    }
    s += &format!(
        "\tsetp.eq.u32 \t%phck_p, %phck_pg, -1;\n\
         \t@%phck_p bra \t$phck_sqc_{id};\n"
    );
    for k in 0..groups {
        s += &format!(
            "\tsetp.eq.u32 \t%phck_p, %phck_pg, {k};\n\
             \t@%phck_p add.u32 \t%phck_g{k}, %phck_g{k}, 1;\n"
        );
    }
    s += "\tmov.u32 \t%phck_pg, -1;\n";
    s += &end_turns(&format!("w{id}"), id);
    s += &format!("$phck_sqc_{id}:\n");
    s
}
