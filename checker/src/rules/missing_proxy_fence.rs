//! `missing-proxy-fence` (PC301).

super::declare_rule! {
    /// # What
    ///
    /// A buffer written through the generic proxy (ordinary stores, cp.async) and then read through
    /// the async proxy (a TMA store's source, a WGMMA operand), or read by the generic proxy and
    /// then written by the async proxy (a TMA refill), without a `fence_proxy_async` between them
    /// in the generic-side thread before the synchronisation that hands the buffer over. A
    /// cp.async write is a generic-proxy write of its issuing thread: that thread's
    /// `fence_proxy_async` after the copy's issue, followed by a release that the async-proxy
    /// reader acquires, is what orders it (an arrive-on of `cp_async_arrive ... noinc` alone
    /// publishes the copy, not the fence).
    ///
    /// # Why
    ///
    /// The generic and async proxies are different paths to shared memory; PTX orders them only
    /// through `fence.proxy.async`. Without it the TMA store can read stale shared memory although
    /// every barrier is right, a bug that shows up only under load. Completion of a TMA load or a
    /// WGMMA includes the fence, so async writes followed by generic reads after the mbarrier wait
    /// need none, and async-to-async needs none either.
    ///
    /// # Example
    ///
    /// `corpus/hazards/missing-proxy-fence/fail.phase`:
    ///
    /// ```phase
    /// protocol missing_proxy_fence_fail
    ///
    /// param NT = 2
    /// block NT
    ///
    /// buffer c_smem[NT]
    ///
    /// write c_smem[tid]
    /// syncthreads
    /// if tid == 0 {
    ///   for j in 0..NT {
    ///     tma_store c_smem[j]
    ///   }
    ///   bulk_commit
    ///   bulk_wait_read 0
    /// }
    ///
    /// expect race missing-proxy-fence
    /// ```
    ///
    /// # Fix
    ///
    /// Every generic-proxy writer executes `fence_proxy_async` (CUTLASS
    /// `fence_view_async_shared()`) before the barrier that hands the buffer to the thread issuing
    /// the async operation.
    ///
    /// `corpus/hazards/missing-proxy-fence/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol missing_proxy_fence_pass
    ///
    /// param NT = 2
    /// block NT
    ///
    /// buffer c_smem[NT]
    ///
    /// write c_smem[tid]
    /// fence_proxy_async
    /// syncthreads
    /// if tid == 0 {
    ///   for j in 0..NT {
    ///     tma_store c_smem[j]
    ///   }
    ///   bulk_commit
    ///   bulk_wait_read 0
    /// }
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §8.6 *Proxies*:
    ///
    /// > "A proxy fence is required to synchronize memory operations across different proxies."
    ///
    /// PTX ISA 9.1, §9.7.9.25.2 *Async Proxy*:
    ///
    /// > "Accessing the same memory location across multiple proxies needs a cross-proxy fence. For
    /// > the async proxy, `fence.proxy.async` should be used to synchronize memory between generic
    /// > proxy and the async proxy."
    ///
    /// > "The completion of a `cp{.reduce}.async.bulk` operation is followed by an implicit
    /// > generic-async proxy fence."
    ///
    /// Also: semantics.md §6.3; PTX ISA, *membar / fence* (`fence.proxy.async`); CUTLASS
    /// `sm90_epilogue_tma_warpspecialized.hpp` (`fence_view_async_shared(); synchronize();`).
    code: "PC301",
    name: "missing-proxy-fence",
    class: Race,
    severity: Error,
    summary: "generic and async-proxy accesses to one buffer without fence_proxy_async between them",
}
