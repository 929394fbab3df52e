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
mod tests;
