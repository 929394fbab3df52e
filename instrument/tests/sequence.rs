//! The sequencer's PTX on the double-buffer fixture: the instrumented text parses with our
//! own PTX parser, a hold sits right before each listed instruction and nowhere else, the
//! turn table is in the globals, and the whole assembles with `nvcc -arch=sm_90a -cubin`
//! (skipped with a message where no nvcc is found: set NVCC).

use instrument::sequence::{TraceStep, plan};
use instrument::{Options, PointKind, instrument, instrument_sequenced};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ptx/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC") {
        return Some(PathBuf::from(p));
    }
    let pip = PathBuf::from(
        "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc",
    );
    pip.is_file().then_some(pip)
}

fn step(tid: u32, line: u32) -> TraceStep {
    TraceStep {
        cta: 0,
        tid,
        ptx_lines: vec![line],
    }
}

/// The lines of `ptx` from the hold of point `id` on, up to the next instruction that is not
/// the instrumenter's (its own lines are tabbed instructions of `%phck_*`/`$phck_*`, comments
/// and labels).
fn instruction_after_hold(ptx: &str, id: u32) -> String {
    let mark = format!("sequencer hold, point {id} ");
    let lines: Vec<&str> = ptx.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(&mark))
        .unwrap_or_else(|| panic!("no hold for point {id}"));
    lines[at + 1..]
        .iter()
        .map(|l| l.trim())
        .find(|l| {
            !(l.is_empty()
                || l.starts_with("//")
                || l.starts_with("$phck_")
                || l.contains("%phck_")
                || l.contains("$phck_")
                || l.starts_with("membar.gl"))
        })
        .unwrap_or_default()
        .to_string()
}

#[test]
fn holds_sit_before_the_listed_instructions_and_the_text_parses_and_assembles() {
    let ptx = fixture("double_buffer.ptx");
    let opts = Options {
        delay_chance: 0,
        ..Options::default()
    };
    let plain = instrument(&ptx, &opts).expect("instruments");
    let kernel = plain.kernels[0].clone();
    let bar = plain
        .points
        .iter()
        .find(|p| p.text.starts_with("bar.sync"))
        .expect("a bar.sync point");
    let wait = plain
        .points
        .iter()
        .find(|p| p.kind == PointKind::BoundedWait)
        .expect("a wait point");
    let arrive = plain
        .points
        .iter()
        .find(|p| p.text.starts_with("mbarrier.arrive.expect_tx"))
        .expect("an arrive point");
    // Both threads pass the bar.sync, then thread 32 waits, thread 0 arrives, thread 32
    // waits again; a step at a line with no point (line 1) is not sequenced.
    let steps = [
        step(0, bar.ptx_line),
        step(32, bar.ptx_line),
        step(32, wait.ptx_line),
        step(0, 1),
        step(0, arrive.ptx_line),
        step(32, wait.ptx_line),
    ];
    let seq = plan(&plain.points, &kernel, 64, 1, 32, &steps).expect("plans");
    assert_eq!(seq.entries.len(), 5);
    assert_eq!(seq.unmapped, 1);
    assert_eq!(seq.step_of_turn(3), Some(4), "turn 3 is the arrive, step 4");
    let inst = instrument_sequenced(&ptx, &opts, &seq).expect("instruments");
    assert_eq!(inst.points, plain.points, "the same points, the same ids");
    // Our own parser reads the result, and the kernel keeps its parameters.
    let m = ptx::parse::parse(&inst.ptx).expect("the sequenced PTX parses");
    let orig = ptx::parse::parse(&ptx).unwrap();
    assert_eq!(
        m.functions
            .iter()
            .map(|f| f.params.len())
            .collect::<Vec<_>>(),
        orig.functions
            .iter()
            .map(|f| f.params.len())
            .collect::<Vec<_>>()
    );
    // One hold per listed point, right before its instruction; none elsewhere.
    let listed: Vec<u32> = seq.group_of_point.keys().copied().collect();
    assert_eq!(listed, [bar.id, wait.id, arrive.id]);
    assert_eq!(
        inst.ptx.matches("sequencer hold, point").count(),
        listed.len()
    );
    for p in [bar, wait, arrive] {
        assert_eq!(
            instruction_after_hold(&inst.ptx, p.id).trim_end_matches(';'),
            p.text,
            "point {}",
            p.id
        );
    }
    // The bar.sync ends its turn before the instruction (its parties follow in the trace);
    // the others after it; the wait only on success.
    let hold_bar = &inst.ptx[inst.ptx.find(&format!("point {} (group", bar.id)).unwrap()..];
    let before_bar = &hold_bar[..hold_bar.find(&bar.text).unwrap()];
    assert!(before_bar.contains("atom.release.gpu.global.cas.b32"));
    let hold_arrive = &inst.ptx[inst
        .ptx
        .find(&format!("point {} (group", arrive.id))
        .unwrap()..];
    let before_arrive = &hold_arrive[..hold_arrive.find(&arrive.text).unwrap()];
    assert!(!before_arrive.contains("atom.release.gpu.global.cas.b32"));
    let ok = inst.ptx.find(&format!("$phck_ok_{}:", wait.id)).unwrap();
    let done = inst.ptx.find(&format!("$phck_done_{}:", wait.id)).unwrap();
    assert!(inst.ptx[ok..done].contains(&format!("sequencer, wait at point {} done", wait.id)));
    // A failed try leaves the wait pending (it may finish at another wait instruction); every
    // wait of the kernel, listed or not, can finish a pending one.
    let bound = inst
        .ptx
        .find(&format!("bounded wait, point {}", wait.id))
        .unwrap();
    assert!(inst.ptx[bound..ok].contains("mov.u32 \t%phck_pg, "));
    // A replay's bounded wait records once (with the pending group) and keeps waiting.
    assert!(inst.ptx[bound..ok].contains("@%phck_rec bra"));
    assert!(inst.ptx[bound..ok].contains("mov.u32 \t%phck_t, %phck_pg;"));
    assert!(!inst.ptx[bound..ok].contains("exit;"));
    assert_eq!(
        inst.ptx.matches("sequencer, wait at point").count(),
        plain.bounded_waits()
    );
    // The table: thread 0's entries start at 0, thread 32's at 2 (thread 0 has two).
    let offsets_at = inst.ptx.find(instrument::OFFSETS_SYMBOL).unwrap();
    let decl = &inst.ptx[offsets_at..offsets_at + 40];
    assert!(decl.contains("[65]"), "{decl}");
    let (offsets, _) = seq.tables();
    assert_eq!(offsets[0..2], [0, 2]);
    assert_eq!(offsets[33], 5);
    assert!(inst.ptx.contains(instrument::SEQ_STATE_SYMBOL));
    let Some(nvcc) = nvcc() else {
        eprintln!("skipped: no nvcc (set NVCC) to assemble the sequenced double buffer");
        return;
    };
    let dir = std::env::temp_dir().join(format!("phasecheck-seq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("seq.ptx");
    std::fs::write(&src, &inst.ptx).unwrap();
    let out = std::process::Command::new(&nvcc)
        .args(["-arch=sm_90a", "-cubin"])
        .arg(&src)
        .arg("-o")
        .arg(dir.join("seq.cubin"))
        .output()
        .expect("nvcc runs");
    assert!(
        out.status.success(),
        "nvcc rejects the sequenced PTX:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_empty_plan_leaves_the_points_free() {
    let ptx = fixture("double_buffer.ptx");
    let plain = instrument(&ptx, &Options::default()).expect("instruments");
    let seq = plan(&plain.points, &plain.kernels[0], 64, 1, 32, &[step(0, 1)]).expect("plans");
    assert!(seq.entries.is_empty());
    let inst = instrument_sequenced(&ptx, &Options::default(), &seq).expect("instruments");
    assert!(!inst.ptx.contains("sequencer hold"));
    ptx::parse::parse(&inst.ptx).expect("parses");
}
