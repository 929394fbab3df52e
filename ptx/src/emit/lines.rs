//! The two forms a statement takes while the builder works: a thread's `Stmt` with concrete
//! integers (what roles are compared by), and a role's `Line` with integers as functions of `tid`
//! (what loops are re-rolled from and what is printed).

use super::*;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Piece {
    T(String),
    I(i64),
}

#[derive(Clone, Debug)]
pub(super) struct Stmt {
    pub(super) pieces: Vec<Piece>,
    /// Instructions it came from (one per unrolled copy).
    pub(super) instrs: Vec<u32>,
    /// What makes two statements "the same statement" for folding and re-rolling: the CUDA
    /// source position when known, else the instruction.
    pub(super) key: (Option<(u32, u32, u32)>, u32),
    /// `let tN = arrive ...`: the token it defines (printed name is by position).
    pub(super) token_def: bool,
    /// `wait ... token tN`: the statement (index in the list) whose token it waits on.
    pub(super) token_use: Option<usize>,
}

impl Stmt {
    pub(super) fn shape_eq(&self, other: &Stmt) -> bool {
        self.key == other.key
            && self.token_def == other.token_def
            && self.pieces.len() == other.pieces.len()
            && self
                .pieces
                .iter()
                .zip(&other.pieces)
                .all(|(a, b)| match (a, b) {
                    (Piece::T(x), Piece::T(y)) => x == y,
                    (Piece::I(_), Piece::I(_)) => true,
                    _ => false,
                })
    }
    pub(super) fn ints(&self) -> impl Iterator<Item = i64> + '_ {
        self.pieces.iter().filter_map(|p| match p {
            Piece::I(v) => Some(*v),
            _ => None,
        })
    }
}

/// The threads of one role in one segment, with their statements.
pub(super) struct Group {
    pub(super) members: Vec<(u32, u32)>,
    /// Statements as expressions (after folding across members and re-rolling).
    pub(super) lines: Vec<Line>,
    /// The members' runs end in this segment, and later segments exist: they exit here.
    pub(super) exit_here: bool,
    pub(super) name: String,
}

/// A statement with every integer either constant or an expression.
#[derive(Clone, Debug)]
pub(super) struct Line {
    pub(super) pieces: Vec<LPiece>,
    pub(super) instrs: Vec<u32>,
    pub(super) src: Option<SrcLoc>,
    pub(super) token_def: bool,
    pub(super) token_use: Option<usize>,
    pub(super) key: (Option<(u32, u32, u32)>, u32),
    /// The members that run it, when not all of the role's members do (a role merged across a
    /// warp, `merge_warp_roles`): printed as `if COND { ... }` around it.
    pub(super) guard: Option<Vec<(u32, u32)>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum LPiece {
    T(String),
    /// An integer as a function of `tid` (members) — constant for most.
    E(Fit),
}

impl Line {
    pub(super) fn shape_eq(&self, o: &Line) -> bool {
        self.key == o.key
            && self.guard == o.guard
            && self.token_def == o.token_def
            && self.pieces.len() == o.pieces.len()
            && self
                .pieces
                .iter()
                .zip(&o.pieces)
                .all(|(a, b)| match (a, b) {
                    (LPiece::T(x), LPiece::T(y)) => x == y,
                    (LPiece::E(Fit::Const(_)), LPiece::E(Fit::Const(_))) => true,
                    (LPiece::E(x), LPiece::E(y)) => x == y,
                    _ => false,
                })
    }
    pub(super) fn consts(&self) -> Vec<Option<i64>> {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                LPiece::E(Fit::Const(c)) => Some(Some(*c)),
                LPiece::E(_) => Some(None),
                _ => None,
            })
            .collect()
    }
}
