//! Time `load` on large adversarial files (many names, many errors): `cargo run --release -p
//! protocols --example adversarial`. Loading must stay roughly linear.
use protocols::{SourceFile, load};

fn main() {
    let n = 20_000;
    let mut cases: Vec<(&str, String)> = Vec::new();
    let mut s = String::from("protocol p\nblock 32\n");
    for i in 0..n {
        s.push_str(&format!("let x{i} = {i}\n"));
    }
    for i in 0..n {
        s.push_str(&format!("let y{i} = zz{i}\n"));
    }
    cases.push(("locals + unknown names", s));
    let mut s = String::from("protocol p\nblock 32\n");
    for i in 0..n {
        s.push_str(&format!("buffer b{i}\n"));
    }
    for i in 0..n {
        s.push_str(&format!("read c{i}\narrive b{i}\n"));
    }
    cases.push(("objects + unknown/wrong refs", s));
    let mut s = String::from("protocol p\nblock 32\n");
    for i in 0..n {
        s.push_str(&format!("role r{i} when tid == 0 {{ compute }}\n"));
    }
    cases.push(("roles", s));
    let mut s = String::from("protocol p\nglobal g\n");
    for i in 0..n {
        s.push_str(&format!("kernel k{} block 32 {{ store g }}\n", i % 2));
    }
    cases.push(("duplicate kernels", s));
    let mut s = String::from("protocol p\n");
    for i in 0..n {
        s.push_str(&format!("param P{i} = {i}\n"));
    }
    s.push_str("block 32\n");
    for i in 0..n {
        s.push_str(&format!("let q{i} = Q{i}\n"));
    }
    cases.push(("params + unknown names", s));
    for (name, text) in &cases {
        let t = std::time::Instant::now();
        let r = load(&SourceFile::new("adv.phase", text), &[]);
        println!(
            "{name}: {} bytes, {:?}, {} errors",
            text.len(),
            t.elapsed(),
            r.err().map_or(0, |e| e.errors.len())
        );
    }
}
