//! Arithmetic, logic, conversions and moves of one thread's registers (`Exec::alu`): concrete
//! integers and predicates; anything else (floats, clocks, global memory) becomes unknown with the
//! reason kept for the error that needs it.

use super::*;

impl<'a> Exec<'a> {
    pub(super) fn alu(&mut self, th: &mut Th, ins: &Instr) -> R<()> {
        let base = ins.base();
        let ops = &ins.operands;
        let ty = Self::ty(ins);
        if ty.is_some_and(|t| t.float) && !matches!(base, "mov" | "selp" | "cvt" | "setp") {
            self.clobber(th, ins, WHY_FLOAT);
            return Ok(());
        }
        let bits = ty.map_or(64, |t| t.bits);
        let signed = ty.is_some_and(|t| t.signed);
        let n = ops.len();
        macro_rules! src {
            ($i:expr, $b:expr) => {{
                let op = ops.get($i).cloned().unwrap_or(Operand::Sink);
                self.get(th, ins, &op, $b)
            }};
        }
        let d = ops.first().cloned().unwrap_or(Operand::Sink);
        match base {
            "mov" => {
                match (&d, ops.get(1)) {
                    (Operand::Vector(parts), Some(src)) => {
                        // Unpack: `mov.b64 {lo, hi}, x`.
                        let v = self.get(th, ins, src, bits);
                        let each = bits / parts.len().max(1) as u32;
                        for (k, p) in parts.iter().enumerate() {
                            let pv = match v {
                                Val::K(x) => Val::K((x >> (each * k as u32)) & mask(each)),
                                u => u,
                            };
                            self.set(th, p, pv, each);
                        }
                    }
                    (_, Some(Operand::Vector(parts))) => {
                        let each = bits / parts.len().max(1) as u32;
                        let mut acc = Val::K(0);
                        for (k, p) in parts.iter().enumerate() {
                            let pv = self.get(th, ins, p, each);
                            acc = match (acc, pv) {
                                (Val::K(a), Val::K(x)) => Val::K(a | (x << (each * k as u32))),
                                (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                            };
                        }
                        self.set(th, &d, acc, bits);
                    }
                    (_, Some(src)) => {
                        let src = src.clone();
                        // Floating-point moves copy bits (`0f3F800000` is known).
                        let v = self.get(th, ins, &src, bits);
                        self.set(th, &d, v, bits);
                    }
                    _ => {}
                }
                return Ok(());
            }
            "cvta" => {
                let a = src!(1, 64);
                let to = ins.has("to");
                let space = ins
                    .parts
                    .iter()
                    .find(|p| {
                        matches!(
                            p.as_str(),
                            "shared" | "local" | "global" | "param" | "const"
                        )
                    })
                    .map(String::as_str)
                    .unwrap_or("global");
                let v = match a {
                    Val::K(x) => Val::K(match (space, to) {
                        ("shared", false) => {
                            if (CLUSTER32..GEN_SHARED).contains(&x) {
                                GEN_CLUSTER + (x - CLUSTER32)
                            } else {
                                GEN_SHARED + x
                            }
                        }
                        ("shared", true) => match generic(x) {
                            Place::Shared { rank: None, off } => off,
                            Place::Shared { rank: Some(r), off } => {
                                CLUSTER32 + ((r as u64) << RANK_SHIFT) + off
                            }
                            _ => x,
                        },
                        // `mov.b32 %r, k_param_10` keeps the low 32 bits of the parameter's
                        // address (Triton passes tensor maps so): its generic address again.
                        ("param", false) if x >> 32 == 0 => GEN_PARAM + x,
                        ("local", false) => GEN_LOCAL + x,
                        ("local", true) => match generic(x) {
                            Place::Local(o) => o,
                            _ => x,
                        },
                        _ => x,
                    }),
                    u => u,
                };
                let dbits = if ins.has("u32") { 32 } else { 64 };
                self.set(th, &d, v, dbits);
                return Ok(());
            }
            "isspacep" => {
                let a = src!(1, 64);
                let want = ins.parts.get(1).map(String::as_str).unwrap_or("");
                let v = match a {
                    Val::K(x) => {
                        let p = generic(x);
                        Val::K(match (want, p) {
                            ("shared" | "shared::cta", Place::Shared { rank: None, .. }) => 1,
                            ("shared::cluster", Place::Shared { .. }) => 1,
                            ("local", Place::Local(_)) => 1,
                            ("param", Place::Param { .. }) => 1,
                            ("global", Place::Global) => 1,
                            _ => 0,
                        })
                    }
                    u => u,
                };
                self.set(th, &d, v, 1);
                return Ok(());
            }
            "mapa" => {
                let a = src!(1, 64);
                let r = src!(2, 32);
                let v = match (a, r) {
                    (Val::K(x), Val::K(rank)) => {
                        let off = match if ins.has("u32") {
                            shared_window(x)
                        } else {
                            generic(x)
                        } {
                            Place::Shared { off, .. } => off,
                            _ => {
                                return Err(self
                                    .err(
                                        ins,
                                        format!("mapa of {x:#x}, which is not shared memory"),
                                        None,
                                    )
                                    .into());
                            }
                        };
                        Val::K(if ins.has("u32") {
                            CLUSTER32 + (rank << RANK_SHIFT) + off
                        } else {
                            GEN_CLUSTER + (rank << RANK_SHIFT) + off
                        })
                    }
                    (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                };
                self.set(th, &d, v, 64);
                return Ok(());
            }
            "getctarank" => {
                let a = src!(1, 64);
                let v = match a {
                    Val::K(x) => {
                        let p = if ins.has("u32") || ins.has("shared::cluster") {
                            shared_window(x)
                        } else {
                            generic(x)
                        };
                        match p {
                            Place::Shared { rank, .. } => Val::K(rank.unwrap_or(th.rank) as u64),
                            _ => self
                                .why(ins, WHY_OP, || "getctarank of a non-shared address".into()),
                        }
                    }
                    u => u,
                };
                self.set(th, &d, v, 32);
                return Ok(());
            }
            "setp" => {
                let cmp = ins.parts.get(1).map(String::as_str).unwrap_or("");
                let a = src!(1, bits);
                let b = src!(2, bits);
                let float = ty.is_some_and(|t| t.float);
                let mut r = match (a, b) {
                    (Val::K(x), Val::K(y)) if !float => {
                        Val::K(compare(cmp, x, y, bits, signed) as u64)
                    }
                    (Val::K(x), Val::K(y)) => match compare_float(cmp, x, y, bits) {
                        Some(c) => Val::K(c as u64),
                        None => self.why(ins, WHY_FLOAT, || "a floating-point comparison".into()),
                    },
                    (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                };
                // `setp.cmp.and.type p, a, b, c`.
                let comb = ins
                    .parts
                    .iter()
                    .find(|p| matches!(p.as_str(), "and" | "or" | "xor"));
                if let Some(comb) = comb
                    && n >= 4
                {
                    let c = src!(3, 1);
                    r = match (r, c) {
                        (Val::K(x), Val::K(y)) => Val::K(match comb.as_str() {
                            "and" => x & y,
                            "or" => x | y,
                            _ => x ^ y,
                        }),
                        (Val::K(0), _) if comb == "and" => Val::K(0),
                        (Val::K(1), _) if comb == "or" => Val::K(1),
                        (Val::U(u), _) | (_, Val::U(u)) => Val::U(u),
                    };
                }
                match &d {
                    Operand::Pair(p, q) => {
                        let inv = match r {
                            Val::K(x) => Val::K(x ^ 1),
                            u => u,
                        };
                        self.set(th, p, r, 1);
                        self.set(th, q, inv, 1);
                    }
                    d => self.set(th, d, r, 1),
                }
                return Ok(());
            }
            "selp" => {
                let c = src!(3, 1);
                let v = match c {
                    Val::K(c) => {
                        if c != 0 {
                            src!(1, bits)
                        } else {
                            src!(2, bits)
                        }
                    }
                    u => u,
                };
                self.set(th, &d, v, bits);
                return Ok(());
            }
            "slct" => {
                let c = src!(3, 32);
                let v = match c {
                    Val::K(c) => {
                        if sext(c, 32) >= 0 {
                            src!(1, bits)
                        } else {
                            src!(2, bits)
                        }
                    }
                    u => u,
                };
                self.set(th, &d, v, bits);
                return Ok(());
            }
            "cvt" => {
                let tys: Vec<Ty> = ins.parts.iter().filter_map(|p| ty_of(p)).collect();
                let (dt, st) = match tys.as_slice() {
                    [dt, st, ..] => (*dt, *st),
                    [t] => (*t, *t),
                    [] => {
                        self.clobber(th, ins, WHY_OP);
                        return Ok(());
                    }
                };
                if dt.float || st.float {
                    self.clobber(th, ins, WHY_FLOAT);
                    return Ok(());
                }
                let v = match src!(1, st.bits) {
                    Val::K(x) => {
                        let wide = if st.signed {
                            sext(x, st.bits) as u64
                        } else {
                            x
                        };
                        Val::K(wide & mask(dt.bits))
                    }
                    u => u,
                };
                self.set(th, &d, v, dt.bits);
                return Ok(());
            }
            _ => {}
        }
        // Integer arithmetic on known values.
        let a = src!(1, bits);
        let b = if n > 2 { src!(2, bits) } else { Val::K(0) };
        let c_bits = if ins.has("wide") {
            (bits * 2).min(64)
        } else {
            bits
        };
        let c = if n > 3 { src!(3, c_bits) } else { Val::K(0) };
        let (x, y, z) = match (a, b, c) {
            (Val::K(x), Val::K(y), Val::K(z)) => (x, y, z),
            (Val::U(u), _, _) | (_, Val::U(u), _) | (_, _, Val::U(u)) => {
                let dbits = if ins.has("wide") {
                    (bits * 2).min(64)
                } else {
                    bits
                };
                match base {
                    "add" | "sub" | "mul" | "mad" | "shl" | "shr" | "and" | "or" | "xor"
                    | "not" | "neg" | "abs" | "min" | "max" | "div" | "rem" | "bfe" | "bfi"
                    | "popc" | "clz" | "brev" | "prmt" | "lop3" | "shf" | "mul24" | "mad24"
                    | "cnot" | "addc" | "subc" | "sad" | "bfind" | "fns" => {
                        self.set(th, &d, Val::U(u), dbits);
                        return Ok(());
                    }
                    _ => {
                        self.clobber(th, ins, WHY_OP);
                        return Ok(());
                    }
                }
            }
        };
        let sx = sext(x, bits);
        let sy = sext(y, bits);
        let m = mask(bits);
        let hi = ins.has("hi");
        let wide = ins.has("wide");
        let mulfull = |x: u64, y: u64| -> (u128, u32) {
            if signed {
                (
                    (sext(x, bits) as i128 * sext(y, bits) as i128) as u128,
                    bits * 2,
                )
            } else {
                ((x as u128) * (y as u128), bits * 2)
            }
        };
        let (val, dbits): (Option<u64>, u32) = match base {
            "add" => {
                let r = x.wrapping_add(y);
                if ins.has("cc") {
                    th.carry = ((x & m) + (y & m) > m || r & !m != 0) as u64;
                }
                (Some(r), bits)
            }
            "addc" => {
                let r = x.wrapping_add(y).wrapping_add(th.carry);
                if ins.has("cc") {
                    th.carry = ((x as u128 + y as u128 + th.carry as u128) > m as u128) as u64;
                }
                (Some(r), bits)
            }
            "sub" => {
                if ins.has("cc") {
                    th.carry = (y > x) as u64;
                }
                (Some(x.wrapping_sub(y)), bits)
            }
            "subc" => (Some(x.wrapping_sub(y).wrapping_sub(th.carry)), bits),
            "mul" | "mad" => {
                let (p, pb) = mulfull(x, y);
                let (r, rb) = if wide {
                    (p as u64, pb.min(64))
                } else if hi {
                    ((p >> bits) as u64, bits)
                } else {
                    (p as u64, bits)
                };
                let r = if base == "mad" { r.wrapping_add(z) } else { r };
                (Some(r), rb)
            }
            "mul24" | "mad24" => {
                if hi {
                    (None, bits)
                } else {
                    let a24 = if signed {
                        sext(x, 24) as u64
                    } else {
                        x & 0xff_ffff
                    };
                    let b24 = if signed {
                        sext(y, 24) as u64
                    } else {
                        y & 0xff_ffff
                    };
                    let r = a24.wrapping_mul(b24);
                    (
                        Some(if base == "mad24" {
                            r.wrapping_add(z)
                        } else {
                            r
                        }),
                        bits,
                    )
                }
            }
            "sad" => (
                Some(
                    (if signed {
                        (sx - sy).unsigned_abs()
                    } else {
                        x.abs_diff(y)
                    })
                    .wrapping_add(z),
                ),
                bits,
            ),
            "div" | "rem" => {
                if y & m == 0 {
                    (None, bits)
                } else if signed {
                    let r = if base == "div" {
                        sx.wrapping_div(sy)
                    } else {
                        sx.wrapping_rem(sy)
                    };
                    (Some(r as u64), bits)
                } else {
                    (Some(if base == "div" { x / y } else { x % y }), bits)
                }
            }
            "min" | "max" => {
                let less = if signed { sx < sy } else { x < y };
                let pick_x = (base == "min") == less;
                (Some(if pick_x { x } else { y }), bits)
            }
            "abs" => (Some(sx.unsigned_abs()), bits),
            "neg" => (Some((sx.wrapping_neg()) as u64), bits),
            "and" => (Some(x & y), bits),
            "or" => (Some(x | y), bits),
            "xor" => (Some(x ^ y), bits),
            "not" => (Some(!x), bits),
            "cnot" => (Some((x == 0) as u64), bits),
            "shl" => (Some(if y >= bits as u64 { 0 } else { x << y }), bits),
            "shr" => {
                let r = if signed {
                    let s = y.min(bits as u64 - 1) as u32;
                    (sx >> s) as u64
                } else if y >= bits as u64 {
                    0
                } else {
                    x >> y
                };
                (Some(r), bits)
            }
            "bfe" => {
                let pos = y & 0xff;
                let len = z & 0xff;
                let r = if len == 0 {
                    0
                } else {
                    let raw = if pos >= bits as u64 { 0 } else { x >> pos };
                    let raw = raw & mask(len.min(64) as u32);
                    if signed && len < 64 {
                        let sign_bit = if pos + len - 1 < bits as u64 {
                            (x >> (pos + len - 1)) & 1
                        } else {
                            (x >> (bits - 1)) & 1
                        };
                        if sign_bit == 1 {
                            raw | !mask(len as u32)
                        } else {
                            raw
                        }
                    } else {
                        raw
                    }
                };
                (Some(r), bits)
            }
            "bfi" => {
                // bfi d, f, b, pos, len: insert f into b.
                let pos = z & 0xff;
                let len = match src!(4, 32) {
                    Val::K(l) => l & 0xff,
                    u => {
                        self.set(th, &d, u, bits);
                        return Ok(());
                    }
                };
                let fm = mask(len.min(64) as u32);
                let r = if pos >= bits as u64 {
                    y
                } else {
                    (y & !(fm << pos)) | ((x & fm) << pos)
                };
                (Some(r), bits)
            }
            "popc" => (Some((x & m).count_ones() as u64), 32),
            "clz" => (Some(((x & m).leading_zeros() - (64 - bits)) as u64), 32),
            "brev" => (Some((x & m).reverse_bits() >> (64 - bits)), bits),
            "bfind" => {
                let v = if signed {
                    if sx < 0 { !x & m } else { x & m }
                } else {
                    x & m
                };
                // `.shiftamt`: the left shift that moves the most significant 1 to the top
                // (libcu++ finds a warp's lowest lane with `bfind.shiftamt(brev(mask))`).
                let msb = 63 - v.leading_zeros() as u64;
                (
                    Some(if v == 0 {
                        u64::MAX
                    } else if ins.has("shiftamt") {
                        bits as u64 - 1 - msb
                    } else {
                        msb
                    }),
                    32,
                )
            }
            "prmt" => {
                if ins.parts.len() > 2 && !ins.has("b32") {
                    (None, 32)
                } else {
                    let bytes = (((y & 0xffff_ffff) << 32) | (x & 0xffff_ffff)).to_le_bytes();
                    let mut r = 0u64;
                    for k in 0..4 {
                        let sel = (z >> (4 * k)) & 0xf;
                        let mut byte = bytes[(sel & 7) as usize] as u64;
                        if sel & 8 != 0 {
                            byte = if byte & 0x80 != 0 { 0xff } else { 0 };
                        }
                        r |= byte << (8 * k);
                    }
                    (Some(r), 32)
                }
            }
            "lop3" => {
                let lut = match src!(4, 32) {
                    Val::K(l) => l,
                    u => {
                        self.set(th, &d, u, bits);
                        return Ok(());
                    }
                };
                let mut r = 0u64;
                for bit in 0..bits {
                    let idx = (((x >> bit) & 1) << 2) | (((y >> bit) & 1) << 1) | ((z >> bit) & 1);
                    r |= ((lut >> idx) & 1) << bit;
                }
                (Some(r), bits)
            }
            "shf" => {
                let wrap = ins.has("wrap");
                let n = if wrap { z & 31 } else { z.min(32) };
                let cat = ((y & 0xffff_ffff) << 32) | (x & 0xffff_ffff);
                let r = if ins.has("l") {
                    (cat << n) >> 32
                } else {
                    cat >> n
                };
                (Some(r & 0xffff_ffff), 32)
            }
            _ => {
                self.clobber(th, ins, WHY_OP);
                return Ok(());
            }
        };
        let v = match val {
            Some(v) => Val::K(v & mask(dbits)),
            None => self.why(ins, WHY_OP, || {
                format!(
                    "the result of `{}` (division by zero or not modelled)",
                    ins.text
                )
            }),
        };
        self.set(th, &d, v, dbits);
        Ok(())
    }
}

/// An ordered floating-point comparison of known bits (`setp.lt.f32`); `None` for the
/// unordered forms and NaNs.
fn compare_float(cmp: &str, x: u64, y: u64, bits: u32) -> Option<bool> {
    let (a, b) = if bits == 64 {
        (f64::from_bits(x), f64::from_bits(y))
    } else {
        (
            f32::from_bits(x as u32) as f64,
            f32::from_bits(y as u32) as f64,
        )
    };
    if a.is_nan() || b.is_nan() {
        return None;
    }
    Some(match cmp {
        "eq" | "equ" => a == b,
        "ne" | "neu" => a != b,
        "lt" | "ltu" => a < b,
        "le" | "leu" => a <= b,
        "gt" | "gtu" => a > b,
        "ge" | "geu" => a >= b,
        "num" => true,
        "nan" => false,
        _ => return None,
    })
}

fn compare(cmp: &str, x: u64, y: u64, bits: u32, signed: bool) -> bool {
    let (sx, sy) = (sext(x, bits), sext(y, bits));
    match cmp {
        "eq" => x == y,
        "ne" => x != y,
        "lt" => {
            if signed {
                sx < sy
            } else {
                x < y
            }
        }
        "le" => {
            if signed {
                sx <= sy
            } else {
                x <= y
            }
        }
        "gt" => {
            if signed {
                sx > sy
            } else {
                x > y
            }
        }
        "ge" => {
            if signed {
                sx >= sy
            } else {
                x >= y
            }
        }
        "lo" => x < y,
        "ls" => x <= y,
        "hi" => x > y,
        "hs" => x >= y,
        _ => false,
    }
}
