//! Integer sequences as expressions of one variable: the operands of a re-rolled loop body as
//! functions of the trip counter `k`, or the operands of a folded role as functions of `tid`.
//! Every fit is checked against every value, so a printed expression is never a guess.

/// An expression of one variable `x`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fit {
    Const(i64),
    /// `a + b * x`
    Affine(i64, i64),
    /// `(a + b * x) % m`
    Mod(i64, i64, i64),
    /// `a + b * (x / d)`
    Div(i64, i64, i64),
    /// `(x + c) / d % m`
    DivMod(i64, i64, i64),
    /// `c ^ (x / 2^b % 2) * v_b ^ ...` over the bits `b` of `x`: an affine map over GF(2),
    /// the shape of a swizzled shared-memory layout (CuTe's `Swizzle<B, M, S>`, whose offsets
    /// XOR some bits of the row into the column) as a function of the thread index. Terms with
    /// `v_b == 0` are left out.
    Xor(i64, Vec<(u32, i64)>),
}

impl Fit {
    pub fn eval(&self, x: i64) -> Option<i64> {
        Some(match *self {
            Fit::Const(c) => c,
            Fit::Affine(a, b) => a.checked_add(b.checked_mul(x)?)?,
            Fit::Mod(a, b, m) => (a.checked_add(b.checked_mul(x)?)?) % m,
            Fit::Div(a, b, d) => a.checked_add(b.checked_mul(x / d)?)?,
            Fit::DivMod(c, d, m) => ((x + c) / d) % m,
            Fit::Xor(c, ref terms) => {
                if x < 0 {
                    return None;
                }
                terms
                    .iter()
                    .filter(|&&(b, _)| b < 63 && (x >> b) & 1 == 1)
                    .fold(c, |acc, &(_, v)| acc ^ v)
            }
        })
    }

    /// The expression with `x` printed as `var`. `div32` names `var / 32` (`warp` for `tid`)
    /// and `mod32` names `var % 32` (`lane`).
    pub fn text(&self, var: &str, div32: Option<&str>, mod32: Option<&str>) -> String {
        let times = |b: i64, v: &str| -> String {
            if b == 1 {
                v.to_string()
            } else {
                format!("{b} * {v}")
            }
        };
        let plus = |a: i64, t: String| -> String {
            if a == 0 {
                t
            } else if t.starts_with('-') {
                format!("{a} {t}")
            } else {
                format!("{a} + {t}")
            }
        };
        match *self {
            Fit::Const(c) => c.to_string(),
            Fit::Affine(a, b) => {
                if b < 0 {
                    format!("{a} - {}", times(-b, var))
                } else if a < 0 {
                    format!("{} - {}", times(b, var), -a)
                } else {
                    plus(a, times(b, var))
                }
            }
            Fit::Mod(a, b, m) => {
                if m == 32
                    && a == 0
                    && b == 1
                    && let Some(l) = mod32
                {
                    return l.to_string();
                }
                let inner = plus(a, times(b, var));
                if inner == var {
                    format!("{var} % {m}")
                } else {
                    format!("({inner}) % {m}")
                }
            }
            Fit::Div(a, b, d) => {
                let q = match (d, div32) {
                    (32, Some(w)) => w.to_string(),
                    _ => format!("{var} / {d}"),
                };
                if b < 0 {
                    format!("{a} - {}", times(-b, &paren(&q)))
                } else if a < 0 {
                    format!("{} - {}", times(b, &paren(&q)), -a)
                } else {
                    plus(a, times(b, &paren(&q)))
                }
            }
            Fit::Xor(c, ref terms) => {
                // `x / 2^b % 2 * v` binds tighter than `^` (language.md, operators); the whole
                // is parenthesized so that it can stand inside any larger expression.
                let mut s = c.to_string();
                for &(b, v) in terms {
                    let bit = if b == 0 {
                        format!("{var} % 2")
                    } else {
                        format!("{var} / {} % 2", 1i64 << b)
                    };
                    s.push_str(&format!(" ^ {bit} * {v}"));
                }
                format!("({s})")
            }
            Fit::DivMod(c, d, m) => {
                let base = if c == 0 {
                    var.to_string()
                } else {
                    format!("({var} + {c})")
                };
                if d == 1 {
                    format!("{base} % {m}")
                } else if d == 32
                    && c == 0
                    && let Some(w) = div32
                {
                    format!("{w} % {m}")
                } else {
                    format!("{base} / {d} % {m}")
                }
            }
        }
    }
}

fn paren(s: &str) -> String {
    if s.contains(' ') {
        format!("({s})")
    } else {
        s.to_string()
    }
}

/// The simplest expression `f` with `f(x) == v` for every pair, if one of the forms fits.
/// `periodic`: prefer the periodic forms (`(x + c) / d % m`, trip counters: ring positions and
/// parities) over `a + b * (x / d)` (thread indices: warps); without it, thread indices, a
/// GF(2) map ([`Fit::Xor`]) is tried last.
pub fn fit(points: &[(i64, i64)], periodic: bool) -> Option<Fit> {
    let (x0, v0) = *points.first()?;
    if points.iter().all(|&(_, v)| v == v0) {
        return Some(Fit::Const(v0));
    }
    let holds = |f: &Fit| points.iter().all(|&(x, v)| f.eval(x) == Some(v));
    if points.len() >= 2 {
        let (x1, v1) = points[1];
        let dx = x1 - x0;
        if dx != 0 && (v1 - v0) % dx == 0 {
            let b = (v1 - v0) / dx;
            let f = Fit::Affine(v0 - b * x0, b);
            if holds(&f) {
                return Some(f);
            }
        }
    }
    let nonneg = points.iter().all(|&(x, v)| x >= 0 && v >= 0);
    if !nonneg {
        return None;
    }
    let vmax = points.iter().map(|&(_, v)| v).max().unwrap_or(0);
    if periodic && let Some(f) = div_mod(points, vmax) {
        return Some(f);
    }
    // a + b * (x / d): warp-indexed values.
    for d in [2, 4, 8, 16, 32, 64, 128, 256] {
        let pts: Vec<(i64, i64)> = points.iter().map(|&(x, v)| (x / d, v)).collect();
        if let Some((q0, w0)) = pts.first().copied()
            && let Some(&(q1, w1)) = pts.iter().find(|p| p.0 != q0)
            && (w1 - w0) % (q1 - q0) == 0
        {
            let b = (w1 - w0) / (q1 - q0);
            let f = Fit::Div(w0 - b * q0, b, d);
            if holds(&f) {
                return Some(f);
            }
        }
    }
    if !periodic && let Some(f) = div_mod(points, vmax) {
        return Some(f);
    }
    // (a + b * x) % m: ring positions.
    for m in (vmax + 1).max(2)..=1024 {
        for b in 1..m.min(64) {
            let a = (v0 - b * x0).rem_euclid(m);
            let f = Fit::Mod(a, b, m);
            if holds(&f) {
                return Some(f);
            }
        }
    }
    // Thread indices only: swizzled layouts. A trip counter's values that fit nothing else
    // stay unrolled, which reads better than a GF(2) map of `k`.
    if periodic {
        return None;
    }
    xor(points).filter(holds)
}

/// `c ^ XOR of v_b over the set bits b of x`, solved over GF(2) by Gaussian elimination on
/// the points (each a row: bit 0 stands for `c`, bit `1 + b` for bit `b` of `x`); `None` when
/// the points admit no such map. The caller checks the result against every point.
fn xor(points: &[(i64, i64)]) -> Option<Fit> {
    let xmax = points.iter().map(|&(x, _)| x).max()?;
    let bits = (64 - xmax.leading_zeros()).min(16);
    if xmax >= 1 << bits {
        return None;
    }
    // Reduced rows: (pivot column, coefficient mask, value).
    let mut rows: Vec<(u32, u64, i64)> = Vec::new();
    for &(x, v) in points {
        let mut mask = 1u64 | ((x as u64) << 1);
        let mut val = v;
        for &(p, m, w) in &rows {
            if mask >> p & 1 == 1 {
                mask ^= m;
                val ^= w;
            }
        }
        if mask == 0 {
            if val != 0 {
                return None; // inconsistent
            }
            continue;
        }
        let p = mask.trailing_zeros();
        // Keep the rows reduced: clear the new pivot from the others.
        for r in rows.iter_mut() {
            if r.1 >> p & 1 == 1 {
                r.1 ^= mask;
                r.2 ^= val;
            }
        }
        rows.push((p, mask, val));
    }
    // Free columns are 0: each pivot's unknown is its row's value.
    let mut c = 0;
    let mut terms = Vec::new();
    for &(p, _, w) in &rows {
        if p == 0 {
            c = w;
        } else if w != 0 {
            terms.push((p - 1, w));
        }
    }
    terms.sort_unstable();
    Some(Fit::Xor(c, terms))
}

/// `(x + c) / d % m` with small `m`: phase parities.
fn div_mod(points: &[(i64, i64)], vmax: i64) -> Option<Fit> {
    let holds = |f: &Fit| points.iter().all(|&(x, v)| f.eval(x) == Some(v));
    for m in 2..=4i64 {
        if vmax >= m {
            continue;
        }
        for d in 1..=64i64 {
            for c in 0..d * m {
                let f = Fit::DivMod(c, d, m);
                if holds(&f) {
                    return Some(f);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit_k(p: &[(i64, i64)]) -> Option<Fit> {
        fit(p, true)
    }

    fn seq(v: &[i64]) -> Vec<(i64, i64)> {
        v.iter().enumerate().map(|(i, &v)| (i as i64, v)).collect()
    }

    #[test]
    fn fits_ring_positions_and_parities() {
        assert_eq!(fit_k(&seq(&[3, 3, 3])), Some(Fit::Const(3)));
        assert_eq!(fit_k(&seq(&[0, 1, 0, 1, 0])), Some(Fit::DivMod(0, 1, 2)));
        let ph = fit_k(&seq(&[0, 0, 1, 1, 0, 0, 1])).unwrap();
        assert_eq!(ph.text("k", None, None), "k / 2 % 2");
        let ph1 = fit_k(&seq(&[1, 1, 0, 0, 1, 1])).unwrap();
        assert_eq!(ph1.text("k", None, None), "(k + 2) / 2 % 2");
        assert_eq!(
            fit_k(&seq(&[5, 7, 9])).unwrap().text("k", None, None),
            "5 + 2 * k"
        );
        let ring = fit_k(&seq(&[1, 2, 0, 1, 2, 0])).unwrap();
        for (x, v) in seq(&[1, 2, 0, 1, 2, 0]) {
            assert_eq!(ring.eval(x), Some(v));
        }
        let pts: Vec<(i64, i64)> = (32..160).map(|t| (t, (t + 1) % 160)).collect();
        let f = fit(&pts, false).unwrap();
        assert_eq!(f.text("tid", Some("warp"), Some("lane")), "(1 + tid) % 160");
        let warps: Vec<(i64, i64)> = (32..160).map(|t| (t, t / 32 - 1)).collect();
        assert_eq!(
            fit(&warps, false)
                .unwrap()
                .text("tid", Some("warp"), Some("lane")),
            "warp - 1"
        );
        assert_eq!(fit_k(&seq(&[3, 1, 4, 1, 5, 9, 2, 6])), None);
    }

    /// A swizzled tile (CuTe `Swizzle<3, 4, 3>`-like: the row's low bits XORed into the 16-byte
    /// column) as a function of the thread: not affine, but an affine map over GF(2), written
    /// with `^` and checked against every thread.
    #[test]
    fn fits_swizzled_offsets_over_gf2() {
        let off = |t: i64| (t % 8) * 128 + ((t / 8 % 8) ^ (t % 8)) * 16 + 4096;
        let pts: Vec<(i64, i64)> = (0..128).map(|t| (t, off(t))).collect();
        let f = fit(&pts, false).expect("a GF(2) fit");
        assert!(matches!(f, Fit::Xor(..)), "{f:?}");
        for &(t, v) in &pts {
            assert_eq!(f.eval(t), Some(v), "tid {t}");
        }
        let text = f.text("tid", Some("warp"), Some("lane"));
        assert!(text.starts_with("(4096 ^ tid % 2 * 144 ^ "), "{text}");
        // Squares are no GF(2) map, and one wrong point spoils a fit.
        let sq: Vec<(i64, i64)> = (0..16).map(|t| (t, t * t)).collect();
        assert_eq!(fit(&sq, false), None);
        let mut bent = pts.clone();
        bent[77].1 ^= 16;
        assert!(fit(&bent, false).is_none_or(|f| bent.iter().all(|&(x, v)| f.eval(x) == Some(v))));
    }

    /// A fit that does not reproduce every sampled offset is refused, so that the instruction
    /// falls back to the whole region: one thread's offset moved by a byte, or by one 16-byte
    /// row, admits no GF(2) map (nor any other form) of the 128 threads; and trip counters
    /// (`periodic`) never get one.
    #[test]
    fn refuses_offsets_that_no_gf2_map_reproduces() {
        let off = |t: i64| (t % 8) * 128 + ((t / 8 % 8) ^ (t % 8)) * 16;
        let pts: Vec<(i64, i64)> = (0..128).map(|t| (t, off(t))).collect();
        for (i, delta) in [(77, 16), (5, 1), (127, 2048)] {
            let mut bent = pts.clone();
            bent[i].1 ^= delta;
            assert_eq!(fit(&bent, false), None, "thread {i} moved by {delta}");
        }
        assert!(!matches!(fit(&pts, true), Some(Fit::Xor(..))));
        // Points off a GF(2) map in the constant: f(0) ^ f(1) ^ f(2) ^ f(3) must be 0.
        assert_eq!(fit(&[(0, 0), (1, 16), (2, 32), (3, 64)], false), None);
    }
}
