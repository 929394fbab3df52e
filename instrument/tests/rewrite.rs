//! The instrumenter on the PTX front end's fixtures and the CUTLASS GEMM: the rewritten PTX
//! parses, keeps every kernel's parameters, puts a point at each synchronization instruction
//! with its source line, and assembles with `nvcc -arch=sm_90a -cubin` (skipped with a message
//! where no nvcc is found: set NVCC).

use instrument::{Options, PointKind, instrument};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ptx/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn params(ptx: &str) -> Vec<(String, Vec<(String, u64)>)> {
    let m = ptx::parse::parse(ptx).expect("parses");
    m.functions
        .iter()
        .filter(|f| f.entry)
        .map(|f| {
            (
                f.name.clone(),
                f.params.iter().map(|p| (p.name.clone(), p.size)).collect(),
            )
        })
        .collect()
}

fn nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC") {
        return Some(PathBuf::from(p));
    }
    let pip = PathBuf::from(
        "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/bin/nvcc",
    );
    if pip.is_file() {
        return Some(pip);
    }
    std::process::Command::new("nvcc")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("nvcc"))
}

/// Assemble with nvcc; `false` (and a message) when there is none.
fn assembles(name: &str, ptx: &str) -> bool {
    let Some(nvcc) = nvcc() else {
        eprintln!("skipped: no nvcc (set NVCC) to assemble the instrumented {name}");
        return false;
    };
    let dir = std::env::temp_dir().join(format!("phasecheck-instrument-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.ptx"));
    std::fs::write(&src, ptx).unwrap();
    let out = std::process::Command::new(&nvcc)
        .args(["-arch=sm_90a", "-cubin"])
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{name}.cubin")))
        .output()
        .expect("nvcc runs");
    assert!(
        out.status.success(),
        "nvcc rejects the instrumented {name}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

#[test]
fn double_buffer_gets_a_point_at_each_sync_instruction() {
    let ptx = fixture("double_buffer.ptx");
    let inst = instrument(&ptx, &Options::default()).expect("instruments");
    assert_eq!(params(&inst.ptx), params(&ptx), "parameters are kept");
    let m = ptx::parse::parse(&ptx).unwrap();
    let syncs = m.functions[0]
        .instrs
        .iter()
        .filter(|i| matches!(i.base(), "mbarrier" | "bar" | "barrier" | "cp" | "fence"))
        .count();
    assert_eq!(inst.points.len(), syncs);
    let waits: Vec<_> = inst
        .points
        .iter()
        .filter(|p| p.kind == PointKind::BoundedWait)
        .collect();
    assert!(!waits.is_empty());
    assert!(
        waits
            .iter()
            .all(|p| p.text.starts_with("mbarrier.try_wait"))
    );
    // The first wait is the producer's empty-slot wait at double_buffer.cu:71 (inlined from
    // line 29), as the PTX's .loc says.
    assert_eq!(
        waits[0].source.as_deref(),
        Some("double_buffer.cu:71 (via line 29)")
    );
    assert_eq!(
        waits[0].stack,
        ["double_buffer.cu:71", "double_buffer.cu:29"]
    );
    // The instrumented text has one bound per wait and a delay per side of each point.
    assert_eq!(inst.ptx.matches("bounded wait, point").count(), waits.len());
    assert_eq!(
        inst.ptx.matches("phasecheck: delay").count(),
        2 * inst.points.len() - waits.len()
    );
    assembles("double_buffer", &inst.ptx);
}

#[test]
fn the_cutlass_gemm_keeps_its_parameters_and_assembles() {
    let ptx = fixture("cutlass/gemm_tma_ws.ptx");
    let inst = instrument(&ptx, &Options::default()).expect("instruments");
    assert_eq!(params(&inst.ptx), params(&ptx));
    assert!(inst.bounded_waits() >= 10, "{}", inst.bounded_waits());
    assert!(
        inst.points
            .iter()
            .any(|p| p.text.starts_with("cp.async.bulk.tensor")),
        "the TMA loads are points"
    );
    // Every point is inlined into `device_kernel`'s call of the kernel (a trampoline): the
    // source shown is the frame inside it, in the kernel or its collectives.
    let waits: Vec<&str> = inst
        .points
        .iter()
        .filter(|p| p.kind == PointKind::BoundedWait)
        .filter_map(|p| p.source.as_deref())
        .collect();
    assert!(!waits.is_empty());
    assert!(
        waits.iter().all(|s| !s.starts_with("device_kernel.h")),
        "{waits:?}"
    );
    assert_eq!(
        instrument::find_kernel(&inst, Some("device_kernel")).map(|k| k.len() > 100),
        Ok(true)
    );
    assembles("gemm_tma_ws", &inst.ptx);
}

#[test]
fn a_line_with_two_statements_is_refused_by_name() {
    let ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n\
               .visible .entry k()\n{\n\t.reg .pred p;\n\t.shared .b64 bar;\n\
               W: mbarrier.try_wait.parity.shared::cta.b64 p, [bar], 0; @!p bra W;\n\tret;\n}\n";
    let e = instrument(ptx, &Options::default()).unwrap_err();
    assert!(
        e.contains("PTX line 8") && e.contains("one statement a line"),
        "{e}"
    );
}

#[test]
fn bad_options_are_errors() {
    let ptx = fixture("double_buffer.ptx");
    let o = Options {
        delay_chance: 300,
        ..Options::default()
    };
    assert!(instrument(&ptx, &o).unwrap_err().contains("256ths"));
    assert!(instrument("not ptx {", &Options::default()).is_err());
}
