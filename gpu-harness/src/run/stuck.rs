//! A launch that did not finish in time: where its buffers are, and how they are read back
//! while its kernel still runs (a non-blocking stream of our own copying into page-locked
//! memory, so that no call waits for the stuck kernel).

use super::{Gpu, RunError, driver, driver_error_text};
use cudarc::driver::CudaContext;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A launch given up after its deadline: where its buffers are, to read them back while the
/// kernel is still stuck (the buffers are leaked: the kernel may still write them).
#[derive(Debug, Clone)]
pub struct StuckLaunch {
    /// How long the host waited.
    pub seconds: f64,
    pub blocks: u32,
    pub seed: u64,
    /// Device address and length in words of the result buffer (`out`) and of the position
    /// words (`pos`, see `PC_POS_RUN` in the prelude); none for the baseline kernel.
    pub(super) buffers: Option<StuckBuffers>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct StuckBuffers {
    pub(super) out: (cudarc::driver::sys::CUdeviceptr, usize),
    pub(super) pos: (cudarc::driver::sys::CUdeviceptr, usize),
}

impl StuckLaunch {
    /// A stuck launch with nothing to read back (for tests and the baseline kernel).
    pub fn bare(seconds: f64, blocks: u32, seed: u64) -> StuckLaunch {
        StuckLaunch {
            seconds,
            blocks,
            seed,
            buffers: None,
        }
    }
}

/// What [`Gpu::read_stuck`] read of a stuck launch: the result buffer as the finished (and
/// the stuck) blocks left it, and one position word per thread.
#[derive(Debug, Clone)]
pub struct StuckReadback {
    pub out: Vec<u64>,
    pub positions: Vec<u64>,
}

/// Page-locked host memory for reading a stuck launch back (allocated before launches: a
/// page-locked allocation may synchronize with the device).
pub(super) struct Pinned {
    pub(super) ptr: *mut std::ffi::c_void,
    words: usize,
}

// SAFETY: the pointer is page-locked host memory owned by this value and used only under the
// `Mutex` that holds it.
unsafe impl Send for Pinned {}

impl Gpu {
    pub(super) fn side_stream(
        ctx: &Arc<CudaContext>,
    ) -> Result<cudarc::driver::sys::CUstream, RunError> {
        use cudarc::driver::sys;
        ctx.bind_to_thread()
            .map_err(driver("binding the CUDA context"))?;
        let mut side: sys::CUstream = std::ptr::null_mut();
        // SAFETY: `side` receives a new stream of the current context.
        unsafe {
            sys::cuStreamCreate(
                &mut side,
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as std::ffi::c_uint,
            )
        }
        .result()
        .map_err(driver("creating the read-back stream"))?;
        // SAFETY: a query of the stream just created; it also resolves the driver entry
        // points the read-back uses, so a stuck launch needs no lookup.
        let _ = unsafe { sys::cuStreamQuery(side) };
        Ok(side)
    }

    /// Make the page-locked read-back buffer hold `words` words (before a launch).
    pub(super) fn ensure_pinned(&self, words: usize) -> Result<(), RunError> {
        use cudarc::driver::sys;
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.as_ref().is_some_and(|p| p.words >= words) {
            return Ok(());
        }
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the CUDA context"))?;
        if let Some(old) = pinned.take() {
            // SAFETY: allocated by cuMemAllocHost below, not in use (no launch is stuck:
            // after a stuck launch the process ends without another one).
            let _ = unsafe { sys::cuMemFreeHost(old.ptr) };
        }
        let words = words.next_power_of_two();
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` receives `words * 8` bytes of page-locked host memory.
        unsafe { sys::cuMemAllocHost_v2(&mut ptr, words * 8) }
            .result()
            .map_err(driver("allocating page-locked memory for the read-back"))?;
        *pinned = Some(Pinned { ptr, words });
        Ok(())
    }

    /// Read a stuck launch's result buffer and position words back while its kernel still
    /// runs: copies on the non-blocking side stream (which does not wait for the kernel's
    /// stream) into page-locked memory, polled until `timeout`. Only non-blocking driver
    /// calls are made. Err: why nothing could be read.
    pub fn read_stuck(
        &self,
        stuck: &StuckLaunch,
        timeout: Duration,
    ) -> Result<StuckReadback, String> {
        use cudarc::driver::sys;
        let Some(b) = stuck.buffers else {
            return Err("the launch left nothing to read back".into());
        };
        let pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = pinned.as_ref().filter(|p| p.words >= b.out.1 + b.pos.1) else {
            return Err("no page-locked read-back buffer".into());
        };
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("binding the CUDA context: {}", driver_error_text(&e)))?;
        let out_host = p.ptr;
        // SAFETY: `p` holds at least out + pos words; the source addresses are the stuck
        // launch's buffers, leaked so that they stay allocated.
        let pos_host = unsafe { (p.ptr as *mut u64).add(b.out.1) } as *mut std::ffi::c_void;
        for (dst, (src, words)) in [(out_host, b.out), (pos_host, b.pos)] {
            if words == 0 {
                continue;
            }
            // SAFETY: see above; page-locked destination, so the copy is asynchronous.
            unsafe { sys::cuMemcpyDtoHAsync_v2(dst, src, words * 8, self.side) }
                .result()
                .map_err(|e| format!("copying back: {}", driver_error_text(&e)))?;
        }
        let t0 = Instant::now();
        loop {
            // SAFETY: a query of our own stream.
            match unsafe { sys::cuStreamQuery(self.side) } {
                sys::CUresult::CUDA_SUCCESS => break,
                sys::CUresult::CUDA_ERROR_NOT_READY => {}
                e => {
                    return Err(format!(
                        "copying back: {}",
                        driver_error_text(&cudarc::driver::DriverError(e))
                    ));
                }
            }
            if t0.elapsed() > timeout {
                return Err(format!(
                    "the copy did not complete within {:.1} s",
                    timeout.as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // SAFETY: the copies into `p` have completed; `p` holds out + pos words.
        let all = unsafe { std::slice::from_raw_parts(p.ptr as *const u64, b.out.1 + b.pos.1) };
        Ok(StuckReadback {
            out: all[..b.out.1].to_vec(),
            positions: all[b.out.1..].to_vec(),
        })
    }
}
