//! The mutation operators: each one a small, plausible mistake in a barrier protocol, made on
//! the source text at the place an IR span names, so that every mutant is a `.phase` file a
//! person can read (and `phasecheck verify` can check on its own) and differs from the original
//! in one line (two for `arrive-before-access`, which swaps two statements).
//!
//! [`mutants`] walks the loaded program's statements and proposes every edit; it does not load
//! them (the caller does, skipping and counting the ones that do not load).

use protocols::SourceFile;
use protocols::ir::{Expr, Op, Program, Stmt, StmtKind};
use serde::Serialize;

/// One mutation operator (docs/ci.md, "phasecheck mutate", lists them with examples).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// `wait B parity E` -> `wait B parity (E) ^ 1` (also `test_wait`).
    FlipParity,
    /// An `init`, `arrive` or named-barrier (`bar_sync`, `bar_arrive`) count plus one.
    CountPlusOne,
    /// An `init`, `arrive` or named-barrier count minus one.
    CountMinusOne,
    /// `arrive_drop B` -> `arrive B`.
    DropToArrive,
    /// `arrive B` -> `arrive_drop B`.
    ArriveToDrop,
    /// Delete a wait: `wait` (parity or token), `consumer_wait`, `consumer_wait_prior`,
    /// `producer_acquire`, `wait_group`, `bulk_wait_read`.
    RemoveWait,
    /// An array index `x[s]` of a barrier or buffer -> `x[(s + 1) % N]` (arrays of 2 or more).
    SwapStage,
    /// Delete a `fence_proxy_async` or `fence scope S`.
    RemoveFence,
    /// The bytes of an `arrive_expect_tx` or `expect_tx` plus 16.
    TxPlus16,
    /// The bytes of an `arrive_expect_tx` or `expect_tx` minus 16.
    TxMinus16,
    /// The bytes of an `arrive_expect_tx` or `expect_tx` times 2.
    TxTimes2,
    /// `if k == T { exit }` at the top of a role's loop body: the role's threads leave early
    /// without `arrive_drop`.
    ExitEarly,
    /// The bound of one role's loop plus one (`for k in 0..K` -> `0..K + 1`).
    TripsPlusOne,
    /// The bound of one role's loop minus one.
    TripsMinusOne,
    /// An arrive (`arrive`, `arrive_drop`, `consumer_release`, `bar_arrive`) swapped with the
    /// buffer access just before it, which it was meant to publish.
    ArriveBeforeAccess,
    /// `write X value N` -> `write X`: the threads' stores are no longer known to store the
    /// same bytes (a code generator that stores something thread-dependent).
    DropValue,
    /// `bar_sync ID[, N] unaligned` -> `bar_sync ID[, N]`: the aligned barrier, whose threads
    /// must all reach it at the same statement.
    DropUnaligned,
}

impl Operator {
    pub const ALL: [Operator; 17] = [
        Operator::FlipParity,
        Operator::CountPlusOne,
        Operator::CountMinusOne,
        Operator::DropToArrive,
        Operator::ArriveToDrop,
        Operator::RemoveWait,
        Operator::SwapStage,
        Operator::RemoveFence,
        Operator::TxPlus16,
        Operator::TxMinus16,
        Operator::TxTimes2,
        Operator::ExitEarly,
        Operator::TripsPlusOne,
        Operator::TripsMinusOne,
        Operator::ArriveBeforeAccess,
        Operator::DropValue,
        Operator::DropUnaligned,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Operator::FlipParity => "flip-parity",
            Operator::CountPlusOne => "count-plus-one",
            Operator::CountMinusOne => "count-minus-one",
            Operator::DropToArrive => "drop-to-arrive",
            Operator::ArriveToDrop => "arrive-to-drop",
            Operator::RemoveWait => "remove-wait",
            Operator::SwapStage => "swap-stage",
            Operator::RemoveFence => "remove-fence",
            Operator::TxPlus16 => "tx-plus-16",
            Operator::TxMinus16 => "tx-minus-16",
            Operator::TxTimes2 => "tx-times-2",
            Operator::ExitEarly => "exit-early",
            Operator::TripsPlusOne => "trips-plus-one",
            Operator::TripsMinusOne => "trips-minus-one",
            Operator::ArriveBeforeAccess => "arrive-before-access",
            Operator::DropValue => "drop-value",
            Operator::DropUnaligned => "drop-unaligned",
        }
    }

    pub fn parse(s: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|o| o.name() == s.trim())
    }
}

impl Serialize for Operator {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Replace bytes `start..end` of the original text by `text` (an insertion when empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// A proposed mutant: the operator, where, and the edits that make it.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub operator: Operator,
    /// Non-overlapping edits of the original text.
    pub edits: Vec<Edit>,
}

/// The lines a mutant changes: the first changed line (1-based) and the lines before and after.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    pub line: u32,
    pub before: Vec<String>,
    pub after: Vec<String>,
}

impl Proposal {
    /// The mutant's text.
    pub fn apply(&self, original: &str) -> String {
        let mut edits = self.edits.clone();
        edits.sort_by_key(|e| std::cmp::Reverse(e.start));
        let mut out = original.to_string();
        for e in edits {
            out.replace_range(e.start..e.end, &e.text);
        }
        out
    }
}

/// The lines that differ between the original and a mutant: everything between their common
/// first lines and their common last lines, trimmed.
pub fn change(original: &str, mutant: &str) -> Change {
    let a: Vec<&str> = original.lines().collect();
    let b: Vec<&str> = mutant.lines().collect();
    let mut head = 0;
    while head < a.len() && head < b.len() && a[head] == b[head] {
        head += 1;
    }
    let mut tail = 0;
    while tail < a.len() - head
        && tail < b.len() - head
        && a[a.len() - 1 - tail] == b[b.len() - 1 - tail]
    {
        tail += 1;
    }
    let trim = |l: &[&str]| l.iter().map(|s| s.trim().to_string()).collect();
    Change {
        line: head as u32 + 1,
        before: trim(&a[head..a.len() - tail]),
        after: trim(&b[head..b.len() - tail]),
    }
}

/// Every mutant the operators in `only` (all when empty) propose for `program` (loaded from
/// `file`), in source order of the place they change, then operator order.
pub fn mutants(file: &SourceFile, program: &Program, only: &[Operator]) -> Vec<Proposal> {
    let mut g = Gen {
        file,
        program,
        out: Vec::new(),
    };
    for k in &program.kernels {
        g.block(&k.body, false, false);
    }
    let mut out = g.out;
    out.retain(|p| only.is_empty() || only.contains(&p.operator));
    // Stable: proposals of one place keep the walk's order.
    out.sort_by_key(|p| {
        (
            p.edits.iter().map(|e| e.start).min().unwrap_or(0),
            p.operator,
        )
    });
    out
}

struct Gen<'a> {
    file: &'a SourceFile,
    program: &'a Program,
    out: Vec<Proposal>,
}

/// `E` alone when it is one word or number or already in parentheses, else `(E)`: safe to put
/// an operator after it.
fn wrap(text: &str) -> String {
    let t = text.trim();
    let atom = !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if atom || enclosed(t) {
        t.to_string()
    } else {
        format!("({t})")
    }
}

/// Whether the whole text is one parenthesized expression (`(a) + (b)` is not).
fn enclosed(t: &str) -> bool {
    if !t.starts_with('(') || !t.ends_with(')') {
        return false;
    }
    let mut depth = 0i32;
    for (i, c) in t.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 && i + 1 < t.len() {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

/// A plain decimal literal's value.
fn literal(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

impl Gen<'_> {
    fn text(&self, start: u32, end: u32) -> &str {
        self.file
            .text
            .get(start as usize..end as usize)
            .unwrap_or("")
    }

    fn expr_text(&self, e: &Expr) -> &str {
        self.text(e.span.start, e.span.end)
    }

    fn push(&mut self, operator: Operator, edits: Vec<Edit>) {
        self.out.push(Proposal { operator, edits });
    }

    fn replace(&mut self, operator: Operator, e: &Expr, text: String) {
        self.push(
            operator,
            vec![Edit {
                start: e.span.start as usize,
                end: e.span.end as usize,
                text,
            }],
        );
    }

    /// `E + d` (a literal is computed: `128` -> `129`).
    fn adjusted(&self, e: &Expr, delta: i64) -> String {
        let t = self.expr_text(e);
        match literal(t) {
            Some(v) => (v + delta).to_string(),
            None if delta >= 0 => format!("{} + {delta}", wrap(t)),
            None => format!("{} - {}", wrap(t), -delta),
        }
    }

    fn count_pm(&mut self, e: &Expr) {
        let plus = self.adjusted(e, 1);
        let minus = self.adjusted(e, -1);
        self.replace(Operator::CountPlusOne, e, plus);
        self.replace(Operator::CountMinusOne, e, minus);
    }

    /// Delete a statement (and the `;` that separates it from a neighbour on its line).
    fn delete(&mut self, operator: Operator, s: &Stmt) {
        let text = self.file.text.as_bytes();
        let (mut start, mut end) = (s.span.start as usize, s.span.end as usize);
        let mut after = end;
        while after < text.len() && (text[after] == b' ' || text[after] == b'\t') {
            after += 1;
        }
        if after < text.len() && text[after] == b';' {
            end = after + 1;
            while end < text.len() && (text[end] == b' ' || text[end] == b'\t') {
                end += 1;
            }
        } else {
            let mut before = start;
            while before > 0 && (text[before - 1] == b' ' || text[before - 1] == b'\t') {
                before -= 1;
            }
            if before > 0 && text[before - 1] == b';' {
                start = before - 1;
            }
        }
        self.erase(operator, start, end);
    }

    /// A mutant that deletes bytes `start..end` of the original.
    fn erase(&mut self, operator: Operator, start: usize, end: usize) {
        self.push(
            operator,
            vec![Edit {
                start,
                end,
                text: String::new(),
            }],
        );
    }

    /// Delete the last ` word` of statement `s` (`text` is its text): with what follows it to
    /// the end of the statement when `to_end` (the word takes an operand, `value N`).
    fn drop_word(&mut self, operator: Operator, s: &Stmt, text: &str, word: &str, to_end: bool) {
        let Some(at) = text.rfind(word) else {
            return;
        };
        let start = s.span.start as usize + at;
        let end = if to_end {
            s.span.end as usize
        } else {
            start + word.len()
        };
        self.erase(operator, start, end);
    }

    /// The length of an array object as its declaration writes it (`STAGES`), else its value.
    fn len_text(&self, object: protocols::ir::ObjectId) -> String {
        let o = self.program.object(object);
        let decl = self.text(o.span.start, o.span.end);
        let n = o.len.unwrap_or(1);
        match (decl.find('['), decl.rfind(']')) {
            (Some(a), Some(b)) if a < b => {
                let t = decl[a + 1..b].trim();
                if t.is_empty() { n.to_string() } else { wrap(t) }
            }
            _ => n.to_string(),
        }
    }

    /// The value of an expression that does not depend on the thread.
    fn value(&self, e: &Expr) -> Option<i64> {
        protocols::eval::eval(self.program, e, &mut |_| None, &mut |_| None)
            .ok()
            .flatten()
    }

    fn block(&mut self, body: &[Stmt], in_role: bool, in_loop: bool) {
        for (i, s) in body.iter().enumerate() {
            match &s.kind {
                StmtKind::Op(op) => {
                    self.op(s, op);
                    if arrive_like(op) {
                        self.arrive_before_access(&body[..i], s);
                    }
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    self.block(then_body, in_role, in_loop);
                    self.block(else_body, in_role, in_loop);
                }
                StmtKind::While { body, .. } => self.block(body, in_role, true),
                StmtKind::Elect { body } => self.block(body, in_role, in_loop),
                StmtKind::Role { body, .. } => self.block(body, true, false),
                StmtKind::For {
                    var,
                    start,
                    end,
                    body: inner,
                } => {
                    if in_role && !in_loop {
                        self.role_loop(var, start, end);
                    }
                    self.block(inner, in_role, true);
                }
                StmtKind::Let { .. } | StmtKind::Assign { .. } | StmtKind::Exit => {}
            }
        }
    }

    /// `exit-early` and `trips-plus-one`/`trips-minus-one` on the outermost loop of a role.
    fn role_loop(&mut self, var: &protocols::ir::LocalId, start: &Expr, end: &Expr) {
        let trips = match (self.value(start), self.value(end)) {
            (Some(a), Some(b)) => Some((a, b - a)),
            _ => None,
        };
        // Which trip the threads leave in: the second when there are two or more (the first
        // hand-off happened), the first of a one-trip loop; none when the loop never runs.
        let at = match trips {
            Some((_, n)) if n <= 0 => None,
            Some((a, 1)) => Some(a.to_string()),
            Some((a, _)) => Some((a + 1).to_string()),
            None => Some(wrap(self.expr_text(start))),
        };
        let text = self.file.text.as_bytes();
        let mut brace = end.span.end as usize;
        while brace < text.len() && text[brace] != b'{' {
            brace += 1;
        }
        if let Some(at) = at
            && brace < text.len()
        {
            let name = &self.program.local(*var).name;
            self.push(
                Operator::ExitEarly,
                vec![Edit {
                    start: brace + 1,
                    end: brace + 1,
                    text: format!(" if {name} == {at} {{ exit }}"),
                }],
            );
        }
        let plus = self.adjusted(end, 1);
        let minus = self.adjusted(end, -1);
        self.replace(Operator::TripsPlusOne, end, plus);
        self.replace(Operator::TripsMinusOne, end, minus);
    }

    /// `arrive-before-access`: the arrive `s` swapped with the buffer access before it in the
    /// same block (only `let`, assignments and `compute` may stand between them).
    fn arrive_before_access(&mut self, before: &[Stmt], s: &Stmt) {
        for p in before.iter().rev() {
            match &p.kind {
                StmtKind::Op(op) if access(op) => {
                    let a = self.text(p.span.start, p.span.end).to_string();
                    let b = self.text(s.span.start, s.span.end).to_string();
                    self.push(
                        Operator::ArriveBeforeAccess,
                        vec![
                            Edit {
                                start: p.span.start as usize,
                                end: p.span.end as usize,
                                text: b,
                            },
                            Edit {
                                start: s.span.start as usize,
                                end: s.span.end as usize,
                                text: a,
                            },
                        ],
                    );
                    return;
                }
                StmtKind::Op(Op::Compute) | StmtKind::Let { .. } | StmtKind::Assign { .. } => {}
                _ => return,
            }
        }
    }

    fn op(&mut self, s: &Stmt, op: &Op) {
        let stmt_text = self.text(s.span.start, s.span.end).to_string();
        match op {
            Op::WaitParity { parity, .. } | Op::TestWait { parity, .. } => {
                let t = self.expr_text(parity);
                let flipped = match literal(t) {
                    Some(v @ (0 | 1)) => (1 - v).to_string(),
                    _ => format!("{} ^ 1", wrap(t)),
                };
                self.replace(Operator::FlipParity, parity, flipped);
            }
            Op::Init { count, .. } => self.count_pm(count),
            Op::Arrive { bar, count, .. } => match count {
                Some(c) => self.count_pm(c),
                None => {
                    // `arrive B` counts 1: plus one is `arrive B, 2`; minus one (0) is no
                    // arrival at all, and is left out.
                    self.push(
                        Operator::CountPlusOne,
                        vec![Edit {
                            start: bar.span.end as usize,
                            end: bar.span.end as usize,
                            text: ", 2".into(),
                        }],
                    );
                }
            },
            Op::BarSync { count: Some(c), .. } | Op::BarArrive { count: Some(c), .. } => {
                self.count_pm(c)
            }
            _ => {}
        }
        // arrive <-> arrive_drop: plain arrives only (a token or a count has no drop form).
        match op {
            Op::Arrive {
                count: None,
                token: None,
                ..
            } if stmt_text.starts_with("arrive") && !stmt_text.starts_with("arrive_") => {
                self.push(
                    Operator::ArriveToDrop,
                    vec![Edit {
                        start: s.span.start as usize,
                        end: s.span.start as usize + "arrive".len(),
                        text: "arrive_drop".into(),
                    }],
                );
            }
            Op::ArriveDrop { .. } if stmt_text.starts_with("arrive_drop") => {
                self.push(
                    Operator::DropToArrive,
                    vec![Edit {
                        start: s.span.start as usize,
                        end: s.span.start as usize + "arrive_drop".len(),
                        text: "arrive".into(),
                    }],
                );
            }
            _ => {}
        }
        match op {
            Op::WaitParity { .. }
            | Op::WaitToken { .. }
            | Op::ConsumerWait { .. }
            | Op::ConsumerWaitPrior { .. }
            | Op::ProducerAcquire { .. }
            | Op::WaitGroup { .. }
            | Op::BulkWaitRead { .. } => self.delete(Operator::RemoveWait, s),
            Op::FenceProxyAsync | Op::Fence { .. } => self.delete(Operator::RemoveFence, s),
            Op::Write { value: Some(_), .. } => {
                self.drop_word(Operator::DropValue, s, &stmt_text, " value ", true)
            }
            Op::BarSync {
                unaligned: true, ..
            } => self.drop_word(Operator::DropUnaligned, s, &stmt_text, " unaligned", false),
            Op::ArriveExpectTx { bytes, .. } | Op::ExpectTx { bytes, .. } => {
                let t = self.expr_text(bytes);
                let (plus, minus, times) = match literal(t) {
                    Some(v) => (
                        (v + 16).to_string(),
                        (v - 16).to_string(),
                        (v * 2).to_string(),
                    ),
                    None => (
                        format!("{} + 16", wrap(t)),
                        format!("{} - 16", wrap(t)),
                        format!("{} * 2", wrap(t)),
                    ),
                };
                self.replace(Operator::TxPlus16, bytes, plus);
                self.replace(Operator::TxMinus16, bytes, minus);
                self.replace(Operator::TxTimes2, bytes, times);
            }
            _ => {}
        }
        if !matches!(op, Op::Init { .. } | Op::Inval { .. }) {
            for r in op.object_refs() {
                let (Some(index), Some(len)) = (&r.index, self.program.object(r.object).len) else {
                    continue;
                };
                if len < 2 {
                    continue;
                }
                let t = self.expr_text(index);
                let swapped = match literal(t) {
                    Some(v) => ((v + 1) % i64::from(len)).to_string(),
                    None => format!("({} + 1) % {}", wrap(t), self.len_text(r.object)),
                };
                self.replace(Operator::SwapStage, index, swapped);
            }
        }
    }
}

/// Operations that publish earlier work by arriving.
fn arrive_like(op: &Op) -> bool {
    matches!(
        op,
        Op::Arrive { .. }
            | Op::ArriveDrop { .. }
            | Op::ConsumerRelease { .. }
            | Op::BarArrive { .. }
    )
}

/// Buffer and global accesses an arrive may publish.
fn access(op: &Op) -> bool {
    matches!(
        op,
        Op::Read { .. } | Op::Write { .. } | Op::Mma { .. } | Op::Store { .. } | Op::Load { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixture with one of everything the operators change.
    const FIXTURE: &str = "protocol fixture
param STAGES = 2
param K = 3
param BYTES = 64
block 3
mbarrier full[STAGES]
mbarrier empty[STAGES]
mbarrier done
buffer slot[STAGES]
if tid == 0 {
  for s in 0..STAGES {
    init full[s], 1
    init empty[s], 2
  }
  init done, 3
}
syncthreads
role producer when tid == 0 {
  for k in 0..K {
    let s = k % STAGES
    wait empty[s] parity ((k / STAGES) % 2) ^ 1
    write slot[s]
    fence_proxy_async
    arrive_expect_tx full[s], BYTES
    complete_tx full[s], 32
    expect_tx full[s], 32
    complete_tx full[s], BYTES
  }
  arrive done
}
role consumer when tid >= 1 {
  for k in 0..K {
    let s = k % STAGES
    wait full[s] parity (k / STAGES) % 2
    read slot[s]
    arrive empty[s]
  }
  arrive_drop done
}
bar_sync 1, 3
";

    fn proposals(op: Operator) -> Vec<Change> {
        let file = SourceFile::new("fixture.phase", FIXTURE);
        let program = protocols::load(&file, &[]).expect("the fixture loads");
        mutants(&file, &program, &[op])
            .iter()
            .map(|p| {
                let text = p.apply(FIXTURE);
                let mutant = SourceFile::new("m.phase", &text);
                if let Err(e) = protocols::load(&mutant, &[]) {
                    panic!("{} does not load: {:?}\n{text}", op.name(), e.errors);
                }
                change(FIXTURE, &text)
            })
            .collect()
    }

    fn one(line: u32, before: &str, after: &str) -> Change {
        Change {
            line,
            before: vec![before.into()],
            after: vec![after.into()],
        }
    }

    #[test]
    fn flip_parity() {
        assert_eq!(
            proposals(Operator::FlipParity),
            vec![
                one(
                    21,
                    "wait empty[s] parity ((k / STAGES) % 2) ^ 1",
                    "wait empty[s] parity (((k / STAGES) % 2) ^ 1) ^ 1"
                ),
                one(
                    34,
                    "wait full[s] parity (k / STAGES) % 2",
                    "wait full[s] parity ((k / STAGES) % 2) ^ 1"
                ),
            ]
        );
    }

    #[test]
    fn counts_plus_and_minus_one() {
        assert_eq!(
            proposals(Operator::CountPlusOne),
            vec![
                one(12, "init full[s], 1", "init full[s], 2"),
                one(13, "init empty[s], 2", "init empty[s], 3"),
                one(15, "init done, 3", "init done, 4"),
                one(29, "arrive done", "arrive done, 2"),
                one(36, "arrive empty[s]", "arrive empty[s], 2"),
                one(40, "bar_sync 1, 3", "bar_sync 1, 4"),
            ]
        );
        assert_eq!(
            proposals(Operator::CountMinusOne),
            vec![
                one(12, "init full[s], 1", "init full[s], 0"),
                one(13, "init empty[s], 2", "init empty[s], 1"),
                one(15, "init done, 3", "init done, 2"),
                one(40, "bar_sync 1, 3", "bar_sync 1, 2"),
            ]
        );
    }

    #[test]
    fn arrive_and_arrive_drop() {
        assert_eq!(
            proposals(Operator::ArriveToDrop),
            vec![
                one(29, "arrive done", "arrive_drop done"),
                one(36, "arrive empty[s]", "arrive_drop empty[s]"),
            ]
        );
        assert_eq!(
            proposals(Operator::DropToArrive),
            vec![one(38, "arrive_drop done", "arrive done")]
        );
    }

    #[test]
    fn remove_wait_and_fence() {
        assert_eq!(
            proposals(Operator::RemoveWait),
            vec![
                one(21, "wait empty[s] parity ((k / STAGES) % 2) ^ 1", ""),
                one(34, "wait full[s] parity (k / STAGES) % 2", ""),
            ]
        );
        assert_eq!(
            proposals(Operator::RemoveFence),
            vec![one(23, "fence_proxy_async", "")]
        );
    }

    #[test]
    fn swap_stage() {
        let got = proposals(Operator::SwapStage);
        assert_eq!(got.len(), 9, "{got:#?}");
        assert_eq!(
            got[0],
            one(
                21,
                "wait empty[s] parity ((k / STAGES) % 2) ^ 1",
                "wait empty[(s + 1) % STAGES] parity ((k / STAGES) % 2) ^ 1"
            )
        );
        assert_eq!(
            got[1],
            one(22, "write slot[s]", "write slot[(s + 1) % STAGES]")
        );
        // `init` is left alone (the inits of a loop over the stages are a permutation).
        assert!(got.iter().all(|c| !c.before[0].starts_with("init")));
    }

    #[test]
    fn expect_tx_bytes() {
        assert_eq!(
            proposals(Operator::TxPlus16),
            vec![
                one(
                    24,
                    "arrive_expect_tx full[s], BYTES",
                    "arrive_expect_tx full[s], BYTES + 16"
                ),
                one(26, "expect_tx full[s], 32", "expect_tx full[s], 48"),
            ]
        );
        assert_eq!(
            proposals(Operator::TxMinus16)[1],
            one(26, "expect_tx full[s], 32", "expect_tx full[s], 16")
        );
        assert_eq!(
            proposals(Operator::TxTimes2),
            vec![
                one(
                    24,
                    "arrive_expect_tx full[s], BYTES",
                    "arrive_expect_tx full[s], BYTES * 2"
                ),
                one(26, "expect_tx full[s], 32", "expect_tx full[s], 64"),
            ]
        );
    }

    #[test]
    fn exit_early_in_one_role() {
        assert_eq!(
            proposals(Operator::ExitEarly),
            vec![
                one(19, "for k in 0..K {", "for k in 0..K { if k == 1 { exit }"),
                one(32, "for k in 0..K {", "for k in 0..K { if k == 1 { exit }"),
            ]
        );
    }

    #[test]
    fn trip_count_of_one_role() {
        assert_eq!(
            proposals(Operator::TripsPlusOne),
            vec![
                one(19, "for k in 0..K {", "for k in 0..K + 1 {"),
                one(32, "for k in 0..K {", "for k in 0..K + 1 {"),
            ]
        );
        assert_eq!(
            proposals(Operator::TripsMinusOne)[0],
            one(19, "for k in 0..K {", "for k in 0..K - 1 {")
        );
    }

    #[test]
    fn arrive_before_access_swaps_two_lines() {
        assert_eq!(
            proposals(Operator::ArriveBeforeAccess),
            vec![Change {
                line: 35,
                before: vec!["read slot[s]".into(), "arrive empty[s]".into()],
                after: vec!["arrive empty[s]".into(), "read slot[s]".into()],
            }]
        );
    }

    #[test]
    fn literals_and_neighbours() {
        let text = "protocol p\nblock 2\nmbarrier b\nbuffer x\nif tid == 0 { init b, 2 }\n\
                    syncthreads\nread x; wait b parity 0\narrive b; wait b parity 0; read x\n";
        let file = SourceFile::new("p.phase", text);
        let program = protocols::load(&file, &[]).expect("loads");
        let changes: Vec<(Operator, Change)> = mutants(&file, &program, &[])
            .iter()
            .map(|p| (p.operator, change(text, &p.apply(text))))
            .collect();
        let find = |op: Operator, line: u32| {
            changes
                .iter()
                .filter(|(o, c)| *o == op && c.line == line)
                .map(|(_, c)| c.after[0].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            find(Operator::FlipParity, 7),
            vec!["read x; wait b parity 1"]
        );
        assert_eq!(find(Operator::RemoveWait, 7), vec!["read x"]);
        assert_eq!(find(Operator::RemoveWait, 8), vec!["arrive b; read x"]);
        assert!(find(Operator::ArriveBeforeAccess, 8).is_empty());
    }

    #[test]
    fn value_and_unaligned_are_dropped() {
        let text = "protocol p\nblock 4\nbuffer x\nif tid < 2 { write x value 1 }\n\
                    bar_sync 1 unaligned\nbar_sync 2, 4 unaligned\nwrite x\nbar_sync 3\nread x\n";
        let file = SourceFile::new("p.phase", text);
        let program = protocols::load(&file, &[]).expect("loads");
        let got = |op: Operator| -> Vec<Change> {
            mutants(&file, &program, &[op])
                .iter()
                .map(|p| change(text, &p.apply(text)))
                .collect()
        };
        assert_eq!(
            got(Operator::DropValue),
            vec![one(
                4,
                "if tid < 2 { write x value 1 }",
                "if tid < 2 { write x }"
            )]
        );
        assert_eq!(
            got(Operator::DropUnaligned),
            vec![
                one(5, "bar_sync 1 unaligned", "bar_sync 1"),
                one(6, "bar_sync 2, 4 unaligned", "bar_sync 2, 4"),
            ]
        );
        // Every mutant loads.
        for p in mutants(
            &file,
            &program,
            &[Operator::DropValue, Operator::DropUnaligned],
        ) {
            let m = p.apply(text);
            let f = SourceFile::new("m.phase", &m);
            assert!(protocols::load(&f, &[]).is_ok(), "{m}");
        }
    }

    #[test]
    fn wrapping() {
        assert_eq!(wrap("K"), "K");
        assert_eq!(wrap("(a + b)"), "(a + b)");
        assert_eq!(wrap("(a) + (b)"), "((a) + (b))");
        assert_eq!(wrap("a + b"), "(a + b)");
        assert_eq!(literal("128"), Some(128));
        assert_eq!(literal("0x10"), None);
    }

    #[test]
    fn operator_names_round_trip() {
        for op in Operator::ALL {
            assert_eq!(Operator::parse(op.name()), Some(op));
            let json = serde_json::to_value(op).expect("serializes");
            assert_eq!(json, op.name());
        }
    }
}
