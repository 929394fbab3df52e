//! Launches: one kernel with a host-side deadline, several copies of it at once (the
//! concurrent mode of `fuzz`), and the baseline stress kernel; every argument list matches
//! the signature the lowering writes (the `// SAFETY:` notes say why each launch is sound).

use super::*;
use cudarc::driver::CudaEvent;

impl Gpu {
    /// Two events for timing a launch on the main stream, the first already recorded.
    fn timing_events(&self) -> Result<(CudaEvent, CudaEvent), RunError> {
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .ctx
            .new_event(flags)
            .map_err(driver("creating an event"))?;
        let end = self
            .ctx
            .new_event(flags)
            .map_err(driver("creating an event"))?;
        start
            .record(&self.stream)
            .map_err(driver("recording an event"))?;
        Ok((start, end))
    }

    /// Wait for the stream with a host-side deadline.
    fn finish(&self, timeout: Duration) -> Result<(), RunError> {
        let ev = self
            .stream
            .record_event(None)
            .map_err(driver("recording an event"))?;
        let t0 = Instant::now();
        loop {
            match ev.try_is_complete() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    return Err(RunError::Driver {
                        what: "running the kernel".into(),
                        error: driver_error_text(&e),
                    });
                }
            }
            if t0.elapsed() > timeout {
                self.stuck.store(true, std::sync::atomic::Ordering::SeqCst);
                return Err(RunError::Stuck(Box::new(StuckLaunch::bare(
                    t0.elapsed().as_secs_f64(),
                    0,
                    0,
                ))));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Launch a lowered kernel once; `seq` is the confirm-mode trace table (or empty).
    pub fn launch(
        &self,
        kernel: &LoadedKernel,
        lowered: &Lowered,
        params: &LaunchParams,
        seq: &[u32],
    ) -> Result<(LaunchResult, f64), RunError> {
        let layout = OutLayout::new(lowered);
        let init = layout.initial(lowered);
        let out = self
            .stream
            .clone_htod(&init)
            .map_err(driver("copying the result buffer"))?;
        let per_block = lowered.staging_bytes as usize;
        let staging = self
            .stream
            .alloc_zeros::<u8>(per_block * params.blocks as usize)
            .map_err(driver("allocating the staging area"))?;
        let mut seq_host = seq.to_vec();
        if seq_host.len() < 4 {
            seq_host = vec![0, u32::MAX, u32::MAX, u32::MAX];
        }
        let seq_dev = self
            .stream
            .clone_htod(&seq_host)
            .map_err(driver("copying the trace"))?;
        let pos_words = lowered.pos_words(params.blocks);
        let pos = self
            .stream
            .alloc_zeros::<u64>(pos_words.max(1))
            .map_err(driver("allocating the position words"))?;
        self.ensure_pinned(layout.total_words() + pos_words)?;
        let buffers = {
            use cudarc::driver::DevicePtr;
            let (o, _g) = out.device_ptr(&self.stream);
            let (q, _h) = pos.device_ptr(&self.stream);
            StuckBuffers {
                out: (o, layout.total_words()),
                pos: (q, pos_words),
            }
        };
        let cfg = LaunchConfig {
            grid_dim: (params.blocks, 1, 1),
            block_dim: (lowered.block, 1, 1),
            shared_mem_bytes: 0,
        };
        let (start, end) = self.timing_events()?;
        let mut sides = Vec::new();
        if lowered.kernels.len() > 1 {
            sides =
                self.launch_concurrent(kernel, lowered, params, &out, &staging, &seq_dev, &pos)?;
        } else {
            let mut b = self.stream.launch_builder(&kernel.func);
            b.arg(&params.seed)
                .arg(&params.delay_max_ns)
                .arg(&params.delay_every)
                .arg(&params.budget_cycles)
                .arg(&out)
                .arg(&staging)
                .arg(&seq_dev)
                .arg(&pos);
            // SAFETY: the argument list matches the signature the lowering writes:
            // (u64 seed, u32 delay_max_ns, u32 delay_every, i64 budget, u64* out, u8* staging,
            // const u32* seq, u64* pos); `out` has `OutLayout::total_words()` words, `staging`
            // has `per_block` bytes per block, `seq` at least its 4-word header, and `pos` one
            // word per thread of the launch (`Lowered::pos_words`).
            unsafe { b.launch(cfg) }.map_err(driver("launching the kernel"))?;
        }
        end.record(&self.stream)
            .map_err(driver("recording an event"))?;
        if let Err(e) = self.finish(params.timeout) {
            std::mem::forget(sides);
            // A stuck kernel holds the buffers: they must not be freed (their drop would wait).
            std::mem::forget(out);
            std::mem::forget(staging);
            std::mem::forget(seq_dev);
            std::mem::forget(pos);
            return Err(match e {
                RunError::Stuck(s) => RunError::Stuck(Box::new(StuckLaunch {
                    seconds: s.seconds,
                    blocks: params.blocks,
                    seed: params.seed,
                    buffers: Some(buffers),
                })),
                e => e,
            });
        }
        let ms = start
            .elapsed_ms(&end)
            .map_err(driver("timing the launch"))?;
        let host = self
            .stream
            .clone_dtoh(&out)
            .map_err(driver("copying results back"))?;
        Ok((LaunchResult::decode(&layout, &host), f64::from(ms) / 1e3))
    }

    /// Several kernels (language.md §6): launch each on a stream of its own, all in flight at
    /// once, with its memory synchronization domain as a launch attribute
    /// (`cuLaunchKernelEx`, `CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN`). Block `i` of every kernel is
    /// trial `i`: they share that trial's staging area (globals). The side streams (non-blocking)
    /// start after the main stream's copies; the main stream waits for them, so `finish` covers
    /// them all.
    /// The streams are returned so that a stuck launch can leak them with its buffers.
    #[allow(clippy::too_many_arguments)]
    fn launch_concurrent(
        &self,
        kernel: &LoadedKernel,
        lowered: &Lowered,
        params: &LaunchParams,
        out: &cudarc::driver::CudaSlice<u64>,
        staging: &cudarc::driver::CudaSlice<u8>,
        seq: &cudarc::driver::CudaSlice<u32>,
        pos: &cudarc::driver::CudaSlice<u64>,
    ) -> Result<Vec<Arc<CudaStream>>, RunError> {
        use cudarc::driver::DevicePtr;
        use cudarc::driver::sys;
        use std::ffi::c_void;
        // Raw pointers taken on the main stream: the side streams are ordered after it by
        // `join` below (taking them on a side stream would make it wait for the other kernel).
        let (out_ptr, _g_out) = out.device_ptr(&self.stream);
        let (staging_ptr, _g_staging) = staging.device_ptr(&self.stream);
        let (seq_ptr, _g_seq) = seq.device_ptr(&self.stream);
        let (pos_ptr, _g_pos) = pos.device_ptr(&self.stream);
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the CUDA context"))?;
        // One event for all side streams, recorded before any launch, so that no side stream
        // waits for work of another one.
        let sides = lowered
            .kernels
            .iter()
            .map(|_| self.ctx.new_stream().map_err(driver("creating a stream")))
            .collect::<Result<Vec<_>, _>>()?;
        let ready = self
            .stream
            .record_event(None)
            .map_err(driver("recording an event"))?;
        for side in &sides {
            side.wait(&ready)
                .map_err(driver("ordering a stream after the copies"))?;
        }
        for ((info, func), side) in lowered.kernels.iter().zip(&kernel.funcs).zip(&sides) {
            let domain = match info.domain {
                crate::lower::MemSyncDomain::Default => {
                    sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT
                }
                crate::lower::MemSyncDomain::Remote => {
                    sys::CUlaunchMemSyncDomain::CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
                }
            };
            let mut attr = sys::CUlaunchAttribute {
                id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN,
                pad: [0; 4],
                value: sys::CUlaunchAttributeValue {
                    memSyncDomain: domain,
                },
            };
            let config = sys::CUlaunchConfig {
                gridDimX: params.blocks,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: info.block,
                blockDimY: 1,
                blockDimZ: 1,
                sharedMemBytes: 0,
                hStream: side.cu_stream(),
                attrs: &mut attr,
                numAttrs: 1,
            };
            let mut args: [*mut c_void; 8] = [
                &params.seed as *const u64 as *mut c_void,
                &params.delay_max_ns as *const u32 as *mut c_void,
                &params.delay_every as *const u32 as *mut c_void,
                &params.budget_cycles as *const i64 as *mut c_void,
                &out_ptr as *const sys::CUdeviceptr as *mut c_void,
                &staging_ptr as *const sys::CUdeviceptr as *mut c_void,
                &seq_ptr as *const sys::CUdeviceptr as *mut c_void,
                &pos_ptr as *const sys::CUdeviceptr as *mut c_void,
            ];
            // SAFETY: `args` points at eight live values in the order and with the types of the
            // signature the lowering writes for every kernel of the file (u64 seed, u32
            // delay_max_ns, u32 delay_every, i64 budget, u64* out, u8* staging, const u32* seq,
            // u64* pos); the driver copies them before returning. `out` has
            // `OutLayout::total_words()` words, `staging` `staging_bytes` per block for
            // `params.blocks` blocks (the grid of every kernel), `seq` its 4-word header, `pos`
            // one word per thread of every kernel's grid. `config` and `attr` outlive the call, the
            // context is bound to this thread, `func` belongs to a module loaded in it, and the
            // buffers are freed only after the main stream (which joins `side`) has finished.
            unsafe {
                sys::cuLaunchKernelEx(
                    &config,
                    func.cu_function(),
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(driver(
                "launching a kernel with a memory synchronization domain",
            ))?;
        }
        for side in &sides {
            self.stream
                .join(side)
                .map_err(driver("waiting for the kernels"))?;
        }
        Ok(sides)
    }

    /// Run the hand-written baseline kernel of `bench/gpu/baseline.cuh` (signature
    /// `(unsigned iters, unsigned seed, long long budget, unsigned maxdelay_ns, unsigned* hangs,
    /// unsigned* races, unsigned long long* done)`) and count its barrier phases.
    pub fn run_baseline(
        &self,
        kernel: &LoadedKernel,
        threads: u32,
        iters: u32,
        params: &LaunchParams,
    ) -> Result<BaselineResult, RunError> {
        let hangs = self
            .stream
            .alloc_zeros::<u32>(1)
            .map_err(driver("allocating"))?;
        let races = self
            .stream
            .alloc_zeros::<u32>(1)
            .map_err(driver("allocating"))?;
        let done = self
            .stream
            .alloc_zeros::<u64>(1)
            .map_err(driver("allocating"))?;
        let cfg = LaunchConfig {
            grid_dim: (params.blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let seed = params.seed as u32;
        let (start, end) = self.timing_events()?;
        let mut b = self.stream.launch_builder(&kernel.func);
        b.arg(&iters)
            .arg(&seed)
            .arg(&params.budget_cycles)
            .arg(&params.delay_max_ns)
            .arg(&hangs)
            .arg(&races)
            .arg(&done);
        // SAFETY: matches the baseline kernel's signature given above.
        unsafe { b.launch(cfg) }.map_err(driver("launching the baseline"))?;
        end.record(&self.stream)
            .map_err(driver("recording an event"))?;
        self.finish(params.timeout)?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(driver("timing the launch"))?;
        let h = self.stream.clone_dtoh(&hangs).map_err(driver("copying"))?[0];
        let r = self.stream.clone_dtoh(&races).map_err(driver("copying"))?[0];
        let d = self.stream.clone_dtoh(&done).map_err(driver("copying"))?[0];
        Ok(BaselineResult {
            seconds: f64::from(ms) / 1e3,
            hangs: u64::from(h),
            races: u64::from(r),
            threads_done: d,
            // Two barriers (full, empty), one phase each per trip, in every block.
            phases: 2 * u64::from(iters) * u64::from(params.blocks),
        })
    }
}
