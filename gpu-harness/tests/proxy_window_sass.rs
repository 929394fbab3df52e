//! The property `LowerOptions::proxy_window` exists for, checked in the machine code: between
//! a write's last shared-memory store and the bulk copy (`UBLKCP`) that reads it, no
//! instruction waits on the store's read scoreboard (which would hold the warp until the store
//! has left its queue, and close the window in which a missing `fence_proxy_async` shows on
//! the hardware, docs/gpu.md "Proxy fences"). The plain fuzz kernel does wait there, which
//! shows the check can fail. Needs NVRTC, `ptxas` and `nvdisasm` of a CUDA toolkit (no GPU);
//! skipped with a message without them (CI). Set CUDA_HOME to point at a toolkit.

mod common;

use gpu_harness::cuda_env;
use gpu_harness::lower::{LowerOptions, Mode};
use gpu_harness::run::compile_ptx;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One SASS instruction and the scheduling fields of its control bits (Volta and later: bits
/// 105-125 of the 128-bit word; stall 4 bits, yield 1, write barrier 3, read barrier 3, wait
/// mask 6, reuse 4; barrier 7 = none).
struct Insn {
    text: String,
    read_barrier: Option<u32>,
    wait_mask: u32,
}

fn tool(name: &str) -> Option<PathBuf> {
    cuda_env::toolkit_roots()
        .into_iter()
        .map(|r| r.join("bin").join(name))
        .find(|p| p.is_file())
}

/// `nvdisasm -hex` prints each instruction with its first 64-bit word and the second word on
/// the next line.
fn disassemble(nvdisasm: &Path, cubin: &Path) -> Vec<Insn> {
    let out = Command::new(nvdisasm)
        .args(["-hex", "-c"])
        .arg(cubin)
        .output()
        .expect("run nvdisasm");
    assert!(
        out.status.success(),
        "nvdisasm failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let hex = |l: &str| -> Option<u64> {
        let at = l.rfind("/* 0x")?;
        let end = l[at..].find(" */")? + at;
        u64::from_str_radix(&l[at + 5..end], 16).ok()
    };
    let mut insns = Vec::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let Some(word) = hex(line) else { continue };
        match pending.take() {
            // The first line of an instruction carries its address (`/*0a40*/`) and its text.
            None if line.trim_start().starts_with("/*") && line.contains("*/ ") => {
                let text = line[..line.rfind("/* 0x").unwrap()].trim().to_string();
                pending = Some(text);
            }
            None => {}
            Some(text) => {
                let control = (word >> 41) & 0x1f_ffff;
                let rb = ((control >> 8) & 7) as u32;
                insns.push(Insn {
                    text,
                    read_barrier: (rb != 7).then_some(rb),
                    wait_mask: ((control >> 11) & 0x3f) as u32,
                });
            }
        }
    }
    insns
}

/// The instructions after the last shared store before the first bulk copy, up to that copy,
/// that wait on the store's read scoreboard (in code order: every path between them is laid
/// out there, the error paths included).
fn waits_between_last_store_and_copy(insns: &[Insn]) -> Vec<String> {
    let copy = insns
        .iter()
        .position(|i| i.text.contains("UBLKCP"))
        .expect("a bulk copy (UBLKCP) in the kernel");
    let store = insns[..copy]
        .iter()
        .rposition(|i| i.text.contains(" STS"))
        .expect("a shared store before the copy");
    let Some(rb) = insns[store].read_barrier else {
        return Vec::new(); // no scoreboard at all: nothing can wait on it
    };
    insns[store + 1..copy]
        .iter()
        .filter(|i| i.wait_mask & (1 << rb) != 0)
        .map(|i| i.text.clone())
        .collect()
}

fn sass(
    nvrtc: &Path,
    includes: &[PathBuf],
    ptxas: &Path,
    nvdisasm: &Path,
    proxy_window: bool,
) -> Vec<Insn> {
    let options = LowerOptions {
        mode: Mode::Fuzz,
        proxy_window,
        ..Default::default()
    };
    let l = common::lower_fixture("proxy_fence_store.phase", &options);
    let ptx = compile_ptx(nvrtc, includes, &l.source, &l.kernel_name).expect("NVRTC compiles");
    let dir = std::env::temp_dir().join(format!(
        "phasecheck-sass-{}-{}",
        std::process::id(),
        u8::from(proxy_window)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (ptx_path, cubin) = (dir.join("k.ptx"), dir.join("k.cubin"));
    std::fs::write(&ptx_path, ptx).expect("write PTX");
    // The driver compiles the PTX for the device it runs on; sm_90 is the H100/H200.
    let out = Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(&cubin)
        .arg(&ptx_path)
        .output()
        .expect("run ptxas");
    assert!(
        out.status.success(),
        "ptxas failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let insns = disassemble(nvdisasm, &cubin);
    let _ = std::fs::remove_dir_all(&dir);
    insns
}

#[test]
fn nothing_waits_for_the_writes_before_the_copy() {
    let Some((nvrtc, includes)) = cuda_env::probe_nvrtc() else {
        eprintln!("skipped: no NVRTC found (set CUDA_HOME to a CUDA toolkit to run this test)");
        return;
    };
    let (Some(ptxas), Some(nvdisasm)) = (tool("ptxas"), tool("nvdisasm")) else {
        eprintln!("skipped: no ptxas and nvdisasm found (set CUDA_HOME to a CUDA toolkit)");
        return;
    };
    let window = sass(&nvrtc, &includes, &ptxas, &nvdisasm, true);
    assert!(
        window.len() > 100,
        "disassembly not understood ({} instructions)",
        window.len()
    );
    let waits = waits_between_last_store_and_copy(&window);
    assert!(
        waits.is_empty(),
        "the proxy-window kernel waits for the write's stores before the copy: {waits:#?}"
    );
    let plain = sass(&nvrtc, &includes, &ptxas, &nvdisasm, false);
    assert!(
        !waits_between_last_store_and_copy(&plain).is_empty(),
        "the plain kernel was expected to wait for the write's last store (the check would \
         not see a regression)"
    );
}
