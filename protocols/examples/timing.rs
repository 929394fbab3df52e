//! Time `load` (and rendering) over every file of a directory: `cargo run --release -p
//! protocols --example timing -- DIR`.
use protocols::{SourceFile, load, render};
fn main() {
    let dir = std::env::args().nth(1).expect("DIR");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .map(|f| String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()).into_owned())
        .collect();
    let t = std::time::Instant::now();
    let mut errs = 0;
    for text in &texts {
        if let Err(e) = load(&SourceFile::new("t.phase", text), &[]) {
            errs += e.errors.len();
        }
    }
    let load_t = t.elapsed();
    let t = std::time::Instant::now();
    for text in &texts {
        if let Err(mut e) = load(&SourceFile::new("t.phase", text), &[]) {
            e.errors.truncate(8);
            let _ = render::render(&e, false, 80);
        }
    }
    println!(
        "{} files, {errs} errors: load {:?}, load+render {:?}",
        texts.len(),
        load_t,
        t.elapsed()
    );
}
