use protocols::{SourceFile, load};
fn main() {
    let n = 100_000;
    let cases = [
        format!(
            "protocol p\nblock 32\nparam N = {}1{}",
            "(".repeat(n),
            ")".repeat(n)
        ),
        format!("protocol p\nblock 32\nparam N = {}1", "-".repeat(n)),
        format!("protocol p\nblock 32\nparam N = {}", "!(".repeat(n)),
        format!("protocol p\nblock 32\nparam N = 1{}", " + 1".repeat(n)),
        format!("protocol p\nblock 32\n{}", "if 1 {".repeat(n)),
        format!(
            "protocol p\nblock 32\n{}{}",
            "elect { ".repeat(n),
            "}".repeat(n)
        ),
        "{".repeat(n),
        "}".repeat(n),
        "[".repeat(n),
    ];
    for (i, text) in cases.iter().enumerate() {
        let t = std::time::Instant::now();
        let r = load(&SourceFile::new("deep.phase", text), &[]);
        println!(
            "{i}: {:?} {}",
            t.elapsed(),
            r.err().map_or(0, |e| e.errors.len())
        );
    }
}
