//! IR -> CUDA C++: a pure function from a loaded [`Program`] to the text of one stress kernel.
//!
//! The generated file reads like the protocol: each role is a branch, loops stay loops, params
//! are `constexpr` constants. mbarriers, named and cluster barriers, TMA, `cp.async` and fences
//! are inline PTX (helpers in `prelude.cuh`); `barrier` and `pipeline` objects go through libcu++.
//! Seams: [`expr`] (expressions), [`stmt`] (statements), [`layout`] (shared memory, buffers,
//! the statement table), `prelude.cuh` (device helpers).

mod expr;
mod layout;
mod stmt;

pub use layout::{BufferInfo, StmtInfo};

use protocols::SourceFile;
use protocols::ir::{ObjectKind, PipelineKind, Program};
use serde::Serialize;
use std::fmt::Write;

/// The device helpers every kernel starts with.
pub const PRELUDE: &str = include_str!("prelude.cuh");

/// Trials per launch the turn-counter area is sized for (confirm mode launches fewer).
pub const MAX_TRIALS: u32 = 4096;

/// What the kernel is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Random delays, free running.
    Fuzz,
    /// Random delays plus the device-side sequencer that replays a trace.
    Confirm,
}

#[derive(Clone, Debug)]
pub struct LowerOptions {
    pub mode: Mode,
    /// Lower the protocol's `syncthreads` as the non-aligned `barrier.sync 0` instead of
    /// `__syncthreads()` (`barrier.sync.aligned 0`). Same meaning where every thread reaches
    /// the same statement; where they do not (a divergent `syncthreads`, UB for the aligned
    /// form, which the compiler may assume convergent and hang on) the non-aligned form counts
    /// each thread's arrival wherever it is, which is what the checker models past that UB.
    /// `confirm` uses it to replay a race that lies behind a divergent `syncthreads`.
    pub non_aligned_syncthreads: bool,
    /// Lower for the unsequenced replay of a `missing-proxy-fence` race before a `tma_store`:
    /// keep open the window in which the bulk copy (async proxy) can read shared memory before
    /// the generic stores that the protocol orders before it reach it. On an H100 the copy
    /// overtakes only stores that still wait in their warp's queue, and any instruction between
    /// the last store and the copy that waits for that store closes the window: a load whose
    /// value is used, or the reuse of a register the store reads (docs/gpu.md "Proxy fences").
    /// So a `write` stores its stamp and words without its overlap checks, from opaque copies
    /// of its operands that stay live to the thread's end (the register allocator can neither
    /// reuse nor recompute them), and a `tma_store` issues its copy before its bookkeeping and
    /// compares what the copy read, once the group has completed, with what the source holds
    /// then (the writers' final stamps).
    pub proxy_window: bool,
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions {
            mode: Mode::Fuzz,
            non_aligned_syncthreads: false,
            proxy_window: false,
        }
    }
}

/// The generated kernel and what the host needs to launch it and decode its results.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The CUDA C++ source (compiles with NVRTC and with nvcc, `-arch=sm_90`).
    pub source: String,
    /// The `extern "C"` kernel name.
    pub kernel_name: String,
    /// Threads per block.
    pub block: u32,
    /// Blocks per cluster (one trial = one cluster).
    pub cluster: u32,
    /// Every operation statement, indexed by the id the kernel reports.
    pub stmts: Vec<StmtInfo>,
    /// Every buffer object (stamped shared memory).
    pub buffers: Vec<BufferInfo>,
    /// Number of objects (size of the per-object arrival counters).
    pub objects: u32,
    /// Global staging bytes each block needs (fills, stores, globals), 128-aligned: the
    /// distance between two blocks' staging areas.
    pub staging_bytes: u32,
    /// Static arrival counts of pipeline stage barriers, `(object, produced, consumed)`; the
    /// host writes them into the init-count slots (libcu++ initialises those barriers).
    pub pipeline_counts: Vec<(u32, u32, u32)>,
    /// Shared-memory bytes the kernel declares (approximate, for the launch check).
    pub shared_bytes: u32,
    /// Every kernel of the file, in file order (one for a file without `kernel` blocks; the
    /// first one is `kernel_name`/`block`/`cluster`).
    pub kernels: Vec<KernelInfo>,
}

impl Lowered {
    /// Size of the `out` array in 64-bit words, for `trials` trials per launch.
    pub fn out_words(&self) -> usize {
        crate::decode::OutLayout::new(self).total_words()
    }

    /// Threads of one trial: one cluster of each kernel.
    pub fn threads_per_trial(&self) -> u32 {
        self.kernels.iter().map(|k| k.block * k.cluster).sum()
    }

    /// Position words (`pos`, one per thread) of a launch of `blocks` blocks of every kernel:
    /// block `b` of each kernel at `b * stride`, the kernels one after the other.
    pub fn pos_words(&self, blocks: u32) -> usize {
        blocks as usize * self.pos_stride() as usize
    }

    /// Position words per block index: the threads of one block of every kernel.
    pub fn pos_stride(&self) -> u32 {
        self.kernels.iter().map(|k| k.block).sum()
    }
}

/// Why a program cannot be lowered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError {
    pub message: String,
    pub span: Option<protocols::Span>,
}

impl std::fmt::Display for LowerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LowerError {}

pub(crate) fn unsupported(message: impl Into<String>, span: Option<protocols::Span>) -> LowerError {
    LowerError {
        message: message.into(),
        span,
    }
}

/// A memory synchronization domain (CUDA has two per launch: `default` and `remote`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemSyncDomain {
    Default,
    Remote,
}

/// One `extern "C"` kernel of the generated translation unit.
#[derive(Clone, Debug, Serialize)]
pub struct KernelInfo {
    /// The `kernel` name in the file (the protocol's name for a file without `kernel` blocks).
    pub name: String,
    /// The `extern "C"` function name.
    pub function: String,
    pub block: u32,
    pub cluster: u32,
    /// Launch attribute `CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN`.
    pub domain: MemSyncDomain,
    /// Ids of this kernel's statements in [`Lowered::stmts`].
    pub stmts: std::ops::Range<u32>,
}

/// Lower one program. `source` (optional) is used for the `// line N: ...` comments.
///
/// A file with several `kernel` blocks (language.md §6) becomes one translation unit with one
/// `extern "C"` function per kernel; the host launches them concurrently, block `i` of every
/// kernel forming trial `i` (they share that trial's globals).
pub fn lower(
    program: &Program,
    source: Option<&SourceFile>,
    options: &LowerOptions,
) -> Result<Lowered, LowerError> {
    let several = program.kernels.len() > 1;
    if several && options.mode == Mode::Confirm {
        return Err(unsupported(
            format!(
                "`{}` has {} kernels: confirm mode replays a trace inside one kernel and cannot \
                 sequence several concurrent launches; run `phasecheck fuzz` on it instead",
                program.name,
                program.kernels.len()
            ),
            program.kernels.get(1).map(|k| k.span),
        ));
    }
    let mut infos = Vec::new();
    for k in &program.kernels {
        let domain = match k.domain.as_str() {
            "default" => MemSyncDomain::Default,
            "remote" => MemSyncDomain::Remote,
            other => {
                return Err(unsupported(
                    format!(
                        "kernel `{}` is in domain `{other}`: a GPU launch has two memory \
                         synchronization domains, `default` and `remote`",
                        k.name
                    ),
                    Some(k.span),
                ));
            }
        };
        if several && k.cluster > 1 {
            return Err(unsupported(
                format!(
                    "kernel `{}` has clusters of {}: with several kernels the GPU harness pairs \
                     single blocks (one block of each kernel per trial); clusters are not lowered",
                    k.name, k.cluster
                ),
                Some(k.span),
            ));
        }
        let function = if several {
            format!(
                "pc_{}_{}",
                expr::sanitize(&program.name),
                expr::sanitize(&k.name)
            )
        } else {
            format!("pc_{}", expr::sanitize(&program.name))
        };
        infos.push(KernelInfo {
            name: k.name.clone(),
            function,
            block: k.block,
            cluster: k.cluster,
            domain,
            stmts: 0..0,
        });
    }
    let layout = layout::Layout::build(program, &program.kernels)?;
    for (info, range) in infos.iter_mut().zip(&layout.kernel_stmts) {
        info.stmts = range.clone();
    }
    let mut out = String::new();
    header(&mut out, program, &infos, &layout, options);
    let mut writer = stmt::Gen::new(program, source, &layout, options);
    for (kernel, info) in program.kernels.iter().zip(&infos) {
        writer.kernel(&mut out, kernel, &info.function)?;
    }
    let pipeline_counts = program
        .objects
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match &o.kind {
            ObjectKind::Pipeline(PipelineKind::Block {
                producers,
                consumers,
                ..
            }) => Some((i as u32, *producers, *consumers)),
            _ => None,
        })
        .collect();
    let first = &infos[0];
    Ok(Lowered {
        source: out,
        kernel_name: first.function.clone(),
        block: first.block,
        cluster: first.cluster,
        stmts: layout.stmts.clone(),
        buffers: layout.buffers.clone(),
        objects: program.objects.len() as u32,
        staging_bytes: layout.staging_stride(program.objects.len()),
        pipeline_counts,
        shared_bytes: layout.shared_bytes,
        kernels: infos,
    })
}

fn header(
    out: &mut String,
    program: &Program,
    kernels: &[KernelInfo],
    layout: &layout::Layout,
    options: &LowerOptions,
) {
    let _ = writeln!(
        out,
        "// Stress kernel for protocol `{}`, generated by phasecheck (gpu-harness). Do not edit.",
        program.name
    );
    if let [kernel] = kernels {
        let _ = writeln!(
            out,
            "// {} threads per block, {} block(s) per cluster; one cluster = one trial.",
            kernel.block, kernel.cluster
        );
        let _ = writeln!(out, "// Kernel: {}", kernel.function);
    } else {
        let _ = writeln!(
            out,
            "// {} kernels launched concurrently; block i of each kernel = trial i.",
            kernels.len()
        );
        for k in kernels {
            let _ = writeln!(
                out,
                "// Kernel: {} (`{}`, domain {}, {} threads per block)",
                k.function,
                k.name,
                match k.domain {
                    MemSyncDomain::Default => "default",
                    MemSyncDomain::Remote => "remote",
                },
                k.block
            );
        }
    }
    if layout.uses_barrier || layout.uses_pipeline {
        out.push_str("#include <cuda/barrier>\n");
    }
    if layout.uses_pipeline {
        out.push_str("#include <cuda/pipeline>\n#include <cooperative_groups.h>\n");
    }
    let _ = writeln!(
        out,
        "#define PC_CONFIRM {}",
        u8::from(options.mode == Mode::Confirm)
    );
    let _ = writeln!(
        out,
        "#define PC_PROXY_WINDOW {}",
        u8::from(options.proxy_window)
    );
    let _ = writeln!(out, "#define PC_NSTMT {}", layout.stmts.len().max(1));
    let _ = writeln!(out, "#define PC_NOBJ {}", program.objects.len().max(1));
    let _ = writeln!(out, "#define PC_MAX_TRIALS {MAX_TRIALS}");
    let _ = writeln!(
        out,
        "#define PC_STORE_CHECKS {}",
        if layout.uses_tma_store { 8 } else { 1 }
    );
    out.push_str(PRELUDE);
    if layout.uses_barrier || layout.uses_pipeline {
        out.push_str(
            "typedef cuda::barrier<cuda::thread_scope_block> pc_bar_t;  // an mbarrier underneath\n\
             struct PcCompletion { __device__ void operator()() noexcept {} };\n\
             typedef cuda::barrier<cuda::thread_scope_block, PcCompletion> pc_cbar_t;  // software barrier (B9)\n",
        );
    }
    out.push('\n');
    if !program.params.is_empty() {
        out.push_str("// ---- parameters ----\n");
        for p in &program.params {
            let _ = writeln!(
                out,
                "[[maybe_unused]] constexpr long long {} = {};",
                expr::ident(&p.name),
                p.value
            );
        }
        out.push('\n');
    }
}
