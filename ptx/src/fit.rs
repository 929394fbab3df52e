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
}

impl Fit {
    pub fn eval(&self, x: i64) -> Option<i64> {
        Some(match *self {
            Fit::Const(c) => c,
            Fit::Affine(a, b) => a.checked_add(b.checked_mul(x)?)?,
            Fit::Mod(a, b, m) => (a.checked_add(b.checked_mul(x)?)?) % m,
            Fit::Div(a, b, d) => a.checked_add(b.checked_mul(x / d)?)?,
            Fit::DivMod(c, d, m) => ((x + c) / d) % m,
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
/// parities) over `a + b * (x / d)` (thread indices: warps).
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
    None
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
}
