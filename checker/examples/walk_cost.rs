//! What one step of a random schedule (`model::walk::Walk`) costs, without the search around
//! it: `cargo run --release -p checker --example walk_cost -- FILE.phase [STEPS] [WALKS]`
//! walks the unreduced model of FILE (as the portfolio does) with a fixed pseudo-random
//! schedule, calling `actions`, `check` and `step` at every step as `hunt::walk` does, and
//! prints the CPU time per step of each phase, and a digest of the schedule and findings (the
//! same digest before and after a change to the walk means the same walk). Numbers in
//! docs/performance.md ("What a walk step costs at 512 threads").

use checker::model::{PhaseModel, walk::Walk};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: walk_cost FILE.phase [STEPS] [WALKS]");
        std::process::exit(2);
    };
    let number = |i: usize, default: u64| {
        args.get(i).map_or(default, |s| {
            s.parse().unwrap_or_else(|_| {
                eprintln!("not a number: {s}");
                std::process::exit(2)
            })
        })
    };
    let (max_steps, walks) = (number(2, 20_000), number(3, 1));
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(2)
    });
    let f = protocols::SourceFile::new(path, &text);
    let p = protocols::load(&f, &[]).unwrap_or_else(|_| {
        eprintln!("{path}: does not load");
        std::process::exit(2)
    });
    let mut m = PhaseModel::new(&p, 1000, false);
    m.por = false;
    let (init, _, bound, stop) = m.initial();
    if bound.is_some() || stop {
        eprintln!("{path}: the first run stops");
        std::process::exit(2);
    }
    let (mut t_actions, mut t_check, mut t_step) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut hist = [(0u64, Duration::ZERO); 20];
    let (mut steps, mut findings, mut digest) = (0u64, 0u64, 0xCBF2_9CE4_8422_2325u64);
    let mut mix = |x: u64| {
        digest ^= x;
        digest = digest.wrapping_mul(0x0000_0100_0000_01B3);
    };
    for w in 0..walks {
        let mut rng = 0x2545_F491_4F6C_DD1Du64 ^ (w + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut walk = Walk::new(&m, init.clone());
        let (mut actions, mut found) = (Vec::new(), Vec::new());
        for _ in 0..max_steps {
            actions.clear();
            let t0 = Instant::now();
            walk.actions(&mut actions);
            let t1 = Instant::now();
            found.clear();
            walk.check(&actions, &mut found);
            let t2 = Instant::now();
            t_actions += t1 - t0;
            t_check += t2 - t1;
            for g in found.drain(..) {
                findings += 1;
                g.message.bytes().for_each(|b| mix(u64::from(b)));
            }
            if actions.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let a = actions[(rng % actions.len() as u64) as usize];
            mix(u64::from(a));
            let t3 = Instant::now();
            let goes_on = walk.step(a, &mut found);
            let took = t3.elapsed();
            t_step += took;
            let bucket = (took.as_micros() as u64).max(1).ilog2().min(19) as usize;
            hist[bucket].0 += 1;
            hist[bucket].1 += took;
            steps += 1;
            for g in found.drain(..) {
                findings += 1;
                g.message.bytes().for_each(|b| mix(u64::from(b)));
            }
            if !goes_on {
                break;
            }
        }
    }
    let per = |d: Duration| d.as_secs_f64() * 1e6 / steps.max(1) as f64;
    println!(
        "{} threads, {walks} walk(s), {steps} steps, {findings} findings, digest {digest:016x}",
        m.nthreads()
    );
    println!(
        "us/step: actions {:.1}, check {:.1}, step {:.1}, total {:.1}",
        per(t_actions),
        per(t_check),
        per(t_step),
        per(t_actions + t_check + t_step)
    );
    if std::env::var_os("WALK_COST_HIST").is_some() {
        for (b, (k, d)) in hist.iter().enumerate().filter(|(_, (k, _))| *k > 0) {
            println!(
                "step {:>6} us and up: {k} steps, {:.2} s",
                1u64 << b,
                d.as_secs_f64()
            );
        }
    }
}
