//! Concrete values of the executor and the fake address spaces they point into.
//!
//! Every register holds either a known integer ([`Val::K`], the raw bits, masked to the width
//! of the instruction that wrote it) or an unknown ([`Val::U`]) with the reason it is unknown
//! (an index into the executor's table of [`Why`]s): a value loaded from global memory, a
//! kernel parameter without `--arg`, a clock, floating-point arithmetic, an instruction the
//! executor does not model. An unknown may flow anywhere except into a branch condition or an
//! address that matters, which is an error naming the reason.
//!
//! Addresses are known values in windows chosen here (the real ones do not matter, only
//! which symbol and offset an address points to): shared memory of the own block at small
//! offsets, and 64-bit generic windows for shared, peer-block shared, local and parameter
//! space (see the constants).

/// Reasons for unknown values, indexed by [`Val::U`].
#[derive(Clone, Debug)]
pub struct Why {
    /// "the value loaded from global memory", "kernel parameter 2 (`k_param_2`)", ...
    pub what: String,
    /// The PTX line of the instruction that produced it.
    pub line: u32,
    /// What to pass to give it a value: `--assume 120=VALUE`, `--arg 2=VALUE`.
    pub fix: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Val {
    K(u64),
    U(u32),
}

impl Val {
    pub fn known(self) -> Option<u64> {
        match self {
            Val::K(v) => Some(v),
            Val::U(_) => None,
        }
    }
}

/// Start of the own block's shared window: symbols are laid out from here.
pub const SHARED_START: u64 = 0x1000;
/// Own-block shared offsets are below this; `mapa` results (another block's shared memory,
/// 32-bit `.shared::cluster` addresses) are `CLUSTER32 + rank << RANK_SHIFT + offset`.
pub const CLUSTER32: u64 = 0x8000_0000;
pub const RANK_SHIFT: u32 = 26;
pub const OFF_MASK: u64 = (1 << RANK_SHIFT) - 1;
/// Generic address windows.
pub const GEN_SHARED: u64 = 1 << 44;
pub const GEN_CLUSTER: u64 = 2 << 44;
pub const GEN_LOCAL: u64 = 3 << 44;
pub const GEN_PARAM: u64 = 4 << 44;
pub const GEN_GLOBAL_SYM: u64 = 5 << 44;
pub const WINDOW: u64 = 1 << 44;
/// Local-space addresses (`__local_depot`, call parameter buffers).
pub const LOCAL_START: u64 = 0x10_0000;
/// Parameter `i` at byte `o`: `GEN_PARAM + i << PARAM_SHIFT + o`.
pub const PARAM_SHIFT: u32 = 24;
/// Phase tokens returned by `mbarrier.arrive`: `TOKEN + index of the arrive in the thread's
/// trace`.
pub const TOKEN: u64 = 0x7A00_0000_0000_0000;

/// Where an address points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Shared memory of block `rank` (`None`: the own block) at offset `off` of the window.
    Shared {
        rank: Option<u32>,
        off: u64,
    },
    Local(u64),
    /// Parameter `index` at byte `off`.
    Param {
        index: u32,
        off: u64,
    },
    Global,
}

/// Decode a generic address.
pub fn generic(v: u64) -> Place {
    match v / WINDOW {
        1 => Place::Shared {
            rank: None,
            off: v - GEN_SHARED,
        },
        2 => {
            let r = v - GEN_CLUSTER;
            Place::Shared {
                rank: Some((r >> RANK_SHIFT) as u32),
                off: r & OFF_MASK,
            }
        }
        3 => Place::Local(v - GEN_LOCAL),
        4 => {
            let r = v - GEN_PARAM;
            Place::Param {
                index: (r >> PARAM_SHIFT) as u32,
                off: r & ((1 << PARAM_SHIFT) - 1),
            }
        }
        _ => Place::Global,
    }
}

/// Decode an address of the `.shared::cluster` (or `.shared::cta`) window.
pub fn shared_window(v: u64) -> Place {
    if v >= GEN_SHARED {
        return generic(v);
    }
    if (CLUSTER32..CLUSTER32 + (16 << RANK_SHIFT)).contains(&v) {
        let r = v - CLUSTER32;
        return Place::Shared {
            rank: Some((r >> RANK_SHIFT) as u32),
            off: r & OFF_MASK,
        };
    }
    Place::Shared { rank: None, off: v }
}

pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        let s = 64 - bits;
        ((v << s) as i64) >> s
    }
}

/// The type of an instruction: width in bits, signed, floating point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ty {
    pub bits: u32,
    pub signed: bool,
    pub float: bool,
}

pub fn ty_of(part: &str) -> Option<Ty> {
    let (bits, signed, float) = match part {
        "pred" => (1, false, false),
        "b8" | "u8" => (8, false, false),
        "s8" => (8, true, false),
        "b16" | "u16" => (16, false, false),
        "s16" => (16, true, false),
        "b32" | "u32" => (32, false, false),
        "s32" => (32, true, false),
        "b64" | "u64" => (64, false, false),
        "s64" => (64, true, false),
        "b128" => (128, false, false),
        "f16" | "bf16" | "e4m3" | "e5m2" => (16, false, true),
        "f16x2" | "bf16x2" | "f32" | "tf32" => (32, false, true),
        "f64" => (64, false, true),
        _ => return None,
    };
    Some(Ty {
        bits: bits.min(64),
        signed,
        float,
    })
}
