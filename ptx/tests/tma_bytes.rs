//! TMA copies keep their bytes (issue 23): a copy whose box is known writes `tma X bytes OFF ..
//! +LEN`, so two copies that fill the halves of one tile do not race, and copies whose bytes
//! meet still do, at the line of the copy. Fixture `tma_halves.cu` (two 8 KiB boxes of one
//! 16 KiB tile; `-DOVERLAP`: the second one box row early).

mod common;
use checker::{CheckOptions, Severity, Verdict};
use common::*;
use protocols::SourceFile;

fn opts(args: &[(&str, i64)], whole_buffers: bool) -> ptx::Options {
    ptx::Options {
        block: Some([128, 1, 1]),
        args: args.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        whole_buffers,
        ..Default::default()
    }
}

/// The extracted text, the verdict, and the CUDA lines of the error findings (statement and
/// labels) with their rules.
fn check(name: &str, o: &ptx::Options) -> (String, Verdict, Vec<(u32, &'static str)>) {
    let ex = ptx::extract(&read(name), name, o).unwrap_or_else(|e| panic!("{name}: {e}"));
    let file = SourceFile::new(name, &ex.text);
    let program = protocols::load(&file, &[])
        .unwrap_or_else(|e| panic!("{name}: does not load: {e:?}\n{}", ex.text));
    let report = checker::check(&program, &CheckOptions::default());
    let mut lines = Vec::new();
    for f in report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
    {
        for span in std::iter::once(f.span).chain(f.labels.iter().map(|l| l.span)) {
            if let Some((_, line)) = ex.source_of_line(file.line_of(span)) {
                lines.push((line, f.rule.name));
            }
        }
    }
    (ex.text, report.verdict, lines)
}

/// The box of one copy: 32 columns x 64 rows of floats.
const BOX: (&str, i64) = ("0", 8192);

#[test]
fn two_halves_of_one_tile_keep_their_bytes_and_verify() {
    let (text, verdict, lines) = check("tma_halves.ptx", &opts(&[BOX], false));
    assert!(
        text.contains("tma tile bytes 0 .. +8192 -> full, 8192")
            && text.contains("tma tile bytes 8192 .. +8192 -> full, 8192"),
        "{text}"
    );
    assert_eq!(verdict, Verdict::Ok, "{lines:?}\n{text}");
}

#[test]
fn halves_that_overlap_by_one_row_race_at_the_second_copy() {
    let (text, verdict, lines) = check("tma_halves_overlap.ptx", &opts(&[BOX], false));
    assert!(
        text.contains("tma tile bytes 8064 .. +8192"),
        "the second half lands 128 bytes early: {text}"
    );
    assert_eq!(verdict, Verdict::Hazard);
    let second = line_of("tma_halves.cu", "// second half");
    assert!(
        lines.contains(&(second, "data-race")),
        "no data-race at tma_halves.cu:{second}: {lines:?}"
    );
}

/// Without the box, a copy's byte count is its share of the expect_tx: right for the barrier,
/// but no evidence of where its bytes end, so each copy keeps the whole tile (and the halves
/// race, as before byte ranges) rather than a guessed range.
#[test]
fn a_copy_whose_box_is_a_share_of_the_expect_tx_keeps_the_whole_buffer() {
    let (text, verdict, lines) = check("tma_halves.ptx", &opts(&[], false));
    assert!(text.contains("tma tile -> full, 8192"), "{text}");
    assert!(!text.contains("tma tile bytes"), "{text}");
    assert_eq!(verdict, Verdict::Hazard);
    assert!(lines.iter().any(|&(_, r)| r == "data-race"), "{lines:?}");
}

#[test]
fn whole_buffers_give_copies_no_bytes() {
    let (text, _, _) = check("tma_halves.ptx", &opts(&[BOX], true));
    assert!(text.contains("tma tile -> full, 8192"), "{text}");
    assert!(!text.contains(" bytes 0 .."), "{text}");
}

/// A tensor copy in another load mode than `.tile` (`.tile::gather4`, `.im2col`) writes what
/// its mode says, which the byte count does not place: it keeps its whole buffer.
#[test]
fn a_gather4_copy_keeps_the_whole_buffer() {
    let text = read("tma_halves.ptx").replace(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier",
    );
    assert!(text.contains("tile::gather4"));
    let ex = ptx::extract(&text, "t.ptx", &opts(&[BOX], false)).unwrap_or_else(|e| panic!("{e}"));
    assert!(ex.text.contains("tma tile -> full, 8192"), "{}", ex.text);
    assert!(!ex.text.contains("tma tile bytes"), "{}", ex.text);
}
