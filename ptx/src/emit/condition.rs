//! The `when` and `if` conditions of a set of threads. Kept short and shallow because the loader
//! parses them recursively: ranges, warp-lane products and balanced `||` trees instead of one
//! test per thread.

use super::*;

/// The condition selecting exactly `members` (pairs of block rank and tid).
pub(super) fn condition(members: &[(u32, u32)], nthreads: u32, cluster: u32) -> String {
    let mut by_rank: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &(r, t) in members {
        by_rank.entry(r).or_default().push(t);
    }
    let sets: Vec<&Vec<u32>> = by_rank.values().collect();
    let same = sets.windows(2).all(|w| w[0] == w[1]);
    if same {
        let tc = tid_condition(sets[0], nthreads);
        if by_rank.len() as u32 == cluster {
            return tc;
        }
        let ranks: Vec<String> = by_rank.keys().map(|r| format!("cta == {r}")).collect();
        let rc = if ranks.len() == 1 {
            ranks[0].clone()
        } else {
            format!("({})", ranks.join(" || "))
        };
        return if tc == "tid >= 0" {
            rc
        } else {
            format!("{rc} && {}", paren_or(&tc))
        };
    }
    by_rank
        .iter()
        .map(|(r, ts)| {
            let tc = tid_condition(ts, nthreads);
            if tc == "tid >= 0" {
                format!("cta == {r}")
            } else {
                format!("(cta == {r} && {})", paren_or(&tc))
            }
        })
        .collect::<Vec<_>>()
        .join(" || ")
}

fn paren_or(s: &str) -> String {
    if s.contains("||") {
        format!("({s})")
    } else {
        s.to_string()
    }
}

fn tid_condition(tids: &[u32], n: u32) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &t in tids {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == t => r.1 = t,
            _ => runs.push((t, t)),
        }
    }
    let run = |(a, b): (u32, u32)| -> String {
        if a == 0 && b + 1 == n {
            "tid >= 0".into()
        } else if a == b {
            format!("tid == {a}")
        } else if a % 32 == 0 && (b + 1) % 32 == 0 {
            let (w1, w2) = (a / 32, b / 32);
            if w1 == w2 {
                format!("warp == {w1}")
            } else if b + 1 == n {
                format!("warp >= {w1}")
            } else {
                format!("warp >= {w1} && warp <= {w2}")
            }
        } else if b + 1 == n {
            format!("tid >= {a}")
        } else if a == 0 {
            format!("tid <= {b}")
        } else {
            format!("tid >= {a} && tid <= {b}")
        }
    };
    if runs.len() == 1 {
        return run(runs[0]);
    }
    // One lane of several consecutive warps: `lane == l && warp >= a && warp <= b`.
    if runs.iter().all(|r| r.0 == r.1) {
        let l = tids[0] % 32;
        let warps: Vec<u32> = tids.iter().map(|t| t / 32).collect();
        if tids.iter().all(|t| t % 32 == l) && warps.windows(2).all(|w| w[1] == w[0] + 1) {
            let (w1, w2) = (warps[0], *warps.last().expect("non-empty"));
            let last_warp = (n - 1) / 32;
            let lane_ok_in_last = l <= (n - 1) % 32 || w2 < last_warp;
            return if w1 == 0 && w2 == last_warp && lane_ok_in_last {
                format!("lane == {l}")
            } else {
                format!("lane == {l} && warp >= {w1} && warp <= {w2}")
            };
        }
    }
    if let Some(c) = warp_lane_product(tids, n) {
        return c;
    }
    or_tree(runs.into_iter().map(run).collect())
}

/// `terms` joined with `||` as a balanced tree: a long chain `a || b || c || ...` nests one
/// level per term, and the loader refuses an expression nested more than 64 deep (E0103),
/// so a role of many thread ranges (ThunderKittens' 512-thread attention kernel had 72)
/// must not be written as one.
fn or_tree(terms: Vec<String>) -> String {
    const FLAT: usize = 8;
    if terms.len() <= FLAT {
        return terms.join(" || ");
    }
    let right = terms[terms.len() / 2..].to_vec();
    let mut left = terms;
    left.truncate(left.len() - right.len());
    format!("({}) || ({})", or_tree(left), or_tree(right))
}

/// Ranges of `values` (sorted, distinct) as conditions on `var`, `||`-joined as a tree.
fn value_runs(var: &str, values: &[u32], top: u32) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &v in values {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == v => r.1 = v,
            _ => runs.push((v, v)),
        }
    }
    or_tree(
        runs.into_iter()
            .map(|(a, b)| match (a == b, a == 0, b == top) {
                (true, _, _) => format!("{var} == {a}"),
                (false, _, true) => format!("{var} >= {a}"),
                (false, true, false) => format!("{var} <= {b}"),
                _ => format!("{var} >= {a} && {var} <= {b}"),
            })
            .collect(),
    )
}

/// The threads as a set of warps times a set of lanes (`warp <= 11 && lane % 4 == 0`), when
/// they are one: every listed warp has the same lanes (the last warp of a block that is no
/// multiple of 32 those of them it has).
fn warp_lane_product(tids: &[u32], n: u32) -> Option<String> {
    let mut by_warp: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &t in tids {
        by_warp.entry(t / 32).or_default().push(t % 32);
    }
    let lanes = by_warp.values().next()?.clone();
    let last_warp = (n - 1) / 32;
    for (&w, ls) in &by_warp {
        let expect: Vec<u32> = lanes.iter().copied().filter(|&l| w * 32 + l < n).collect();
        if *ls != expect {
            return None;
        }
    }
    let warps: Vec<u32> = by_warp.keys().copied().collect();
    if warps.len() < 2 || lanes.len() < 2 {
        return None;
    }
    let warp_c =
        (warps.len() as u32 != last_warp + 1).then(|| value_runs("warp", &warps, last_warp));
    // Every `step`-th lane from `first`: `lane % step == first`.
    let progression = |ls: &[u32]| -> Option<(u32, u32)> {
        let step = ls.get(1)? - ls[0];
        (32 % step == 0
            && ls[0] < step
            && ls.len() as u32 == 32 / step
            && ls.windows(2).all(|p| p[1] - p[0] == step))
        .then_some((step, ls[0]))
    };
    let others: Vec<u32> = (0..32).filter(|l| !lanes.contains(l)).collect();
    let lane_c = if lanes.len() == 32 {
        None
    } else if let Some((step, first)) = progression(&lanes) {
        Some(format!("lane % {step} == {first}"))
    } else if let Some((step, first)) = progression(&others) {
        Some(format!("lane % {step} != {first}"))
    } else {
        Some(value_runs("lane", &lanes, 31))
    };
    let paren = |c: String| {
        if c.contains("||") {
            format!("({c})")
        } else {
            c
        }
    };
    Some(match (warp_c, lane_c) {
        (Some(w), Some(l)) => format!("{} && {}", paren(w), paren(l)),
        (Some(w), None) => w,
        (None, Some(l)) => l,
        (None, None) => "tid >= 0".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How deep the loader's parser nests `c`: one level per operator of a left-leaning
    /// chain, one per parenthesis.
    fn nesting(c: &str) -> usize {
        let (mut depth, mut max, mut chain) = (0usize, 0usize, vec![0usize]);
        for tok in c.split_whitespace() {
            for ch in tok.chars() {
                match ch {
                    '(' => {
                        depth += 1;
                        chain.push(0);
                    }
                    ')' => {
                        depth -= 1;
                        chain.pop();
                    }
                    _ => {}
                }
            }
            if tok == "||" || tok == "&&" {
                *chain.last_mut().expect("a level") += 1;
            }
            max = max.max(depth + chain.iter().sum::<usize>());
        }
        max
    }

    #[test]
    fn many_thread_ranges_are_a_balanced_condition() {
        // Every third thread of 1024: 342 ranges of one thread, no warp-lane product.
        let tids: Vec<u32> = (0..1024).filter(|t| t % 3 == 0).collect();
        let c = tid_condition(&tids, 1024);
        assert_eq!(c.matches("tid ==").count(), 342, "{c}");
        assert!(nesting(&c) < 40, "nested {} deep: {c}", nesting(&c));
        // The chain it replaces nests once per range.
        assert!(nesting(&c.replace(['(', ')'], "")) > 300);
    }

    #[test]
    fn lanes_of_warps_are_a_product() {
        let every_fourth: Vec<u32> = (0..384).filter(|t| t % 4 == 0).collect();
        assert_eq!(
            tid_condition(&every_fourth, 512),
            "warp <= 11 && lane % 4 == 0"
        );
        let the_others: Vec<u32> = (0..384).filter(|t| t % 4 != 0).collect();
        assert_eq!(tid_condition(&the_others, 384), "lane % 4 != 0");
        let two_lanes: Vec<u32> = (0..512).filter(|t| t % 32 == 3 || t % 32 == 4).collect();
        assert_eq!(tid_condition(&two_lanes, 512), "lane >= 3 && lane <= 4");
    }
}
