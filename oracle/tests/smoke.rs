use oracle::{Options, explore, prepare};

fn run(src: &str) -> oracle::Outcome {
    let file = protocols::SourceFile::new("t.phase", src);
    let p = protocols::load(&file, &[]).unwrap_or_else(|_| panic!("does not load"));
    let prog = prepare(&p).unwrap();
    for b in [Some(2), Some(3), None] {
        let t = std::time::Instant::now();
        let out = explore(&prog, &Options { preemption_bound: b, max_executions: Some(200_000), ..Options::default() });
        eprintln!("bound {b:?}: {:?} in {:?}", out, t.elapsed());
    }
    explore(&prog, &Options::default())
}

#[test]
fn smoke() {
    run("protocol p
block 2
mbarrier bar
buffer data[2]
if tid == 0 { init bar, 2 }
syncthreads
let ph = 0
for i in 0..2 {
  write data[tid]
  arrive bar
  wait bar parity ph
  ph = ph ^ 1
  read data[(tid + 1) % 2]
}
");
    run("protocol p
block 2
mbarrier bar
if tid == 0 { init bar, 3 }
syncthreads
arrive bar
wait bar parity 0
");
    run("protocol p
block 3
buffer data[3]
for k in 0..2 {
  write data[tid]
  bar_sync 1, 3
  read data[(tid + 1) % 3]
}
");
}
