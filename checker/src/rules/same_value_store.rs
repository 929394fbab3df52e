//! `same-value-store` (PC405).

super::declare_rule! {
    /// # What
    ///
    /// Two writes of one buffer instance by different threads that nothing orders, both
    /// `write X value N` with the same `N`: they store the same bytes. By PTX's definition that
    /// is a data race (two conflicting accesses, neither ordered before the other), and it is
    /// reported once per statement, with both statements. It is a warning, not `data-race`:
    /// PTX's memory model does not require data-race freedom, so the instance holds those
    /// bytes afterwards whichever store lands last. Everything else stays `data-race`: a `read`
    /// (or an `mma`, a TMA store of it) that is not ordered after both writes may see the old
    /// bytes, and two unordered writes of different values, or a write without a value (its
    /// bytes are unknown), a `write part`, a TMA or `cp_async` landing, leave bytes that depend
    /// on the order.
    ///
    /// The PTX front end writes `value N` on a store whose every byte it knows (a constant, or
    /// a register it computed) when every run of the instruction stores the same bytes at the
    /// same address, numbering each distinct (address, store size, bytes): equal numbers are
    /// equal bytes at equal addresses.
    ///
    /// # Why
    ///
    /// Generated code does this on purpose. Triton's warp specialization (3.9, sm_90) has all
    /// 128 threads of its default partition store the same dispatch bytes for the worker warps
    /// (`st.shared.v2.b32 [global_smem+106648], {0, 16843009}`) right after a `bar.sync 0, 128`,
    /// and the workers read them after a block-wide `barrier.sync 1`. That is correct on the
    /// hardware and under the PTX memory model, and a `data-race` error on it would hide the
    /// findings behind it. It is still worth knowing: one store would do, and a reader that is
    /// not ordered after all of the stores (a missing barrier) is a real race.
    ///
    /// # Example
    ///
    /// `corpus/hazards/same-value-store/fail.phase`:
    ///
    /// ```phase
    /// protocol same_value_store_fail
    ///
    /// block 4
    ///
    /// buffer flag
    ///
    /// if tid < 2 {
    ///   write flag value 1
    /// }
    /// syncthreads
    /// read flag
    ///
    /// expect warning same-value-store
    /// expect ok
    /// ```
    ///
    /// # Fix
    ///
    /// Nothing is broken. To state who owns the bytes, let one thread store them (or order the
    /// stores); silence the warning with `# phasecheck: allow(same-value-store) reason` where
    /// the redundant stores are what the code generator emits.
    ///
    /// `corpus/hazards/same-value-store/pass.phase` (one line differs):
    ///
    /// ```phase
    /// protocol same_value_store_pass
    ///
    /// block 4
    ///
    /// buffer flag
    ///
    /// if tid == 0 {
    ///   write flag value 1
    /// }
    /// syncthreads
    /// read flag
    ///
    /// expect ok
    /// ```
    ///
    /// # Source
    ///
    /// PTX ISA 9.1, §8 *Memory Consistency Model*:
    ///
    /// > "In the absence of any constraint, each read operation returns the value committed by some
    /// > write operation to the same memory location, including the initial write to that memory
    /// > location."
    ///
    /// PTX ISA 9.1, §8.7.2 *Limitations on Mixed-size Data-races*:
    ///
    /// > "The axioms in the memory consistency model do not apply if a PTX program contains one or
    /// > more mixed-size data-races. But these axioms are sufficient to describe the behavior of a
    /// > PTX program with only uniform-size data-races."
    ///
    /// PTX ISA 9.1, §8.7.1 *Conflict and Data-races*:
    ///
    /// > "Two conflicting memory operations are said to be in a data-race if they are not related
    /// > in causality order and they are not morally strong."
    ///
    /// Also: semantics.md §6.1 ("Same-value stores"); D. Lustig, S. Sahasrabuddhe, O. Giroux, *A
    /// Formal Analysis of the NVIDIA PTX Memory Consistency Model*, ASPLOS 2019 (PTX, unlike C++,
    /// gives racy programs defined semantics).
    code: "PC405",
    name: "same-value-store",
    class: Perf,
    severity: Warning,
    summary: "unordered writes of one buffer that store the same value: a data race by definition, defined by PTX (the bytes are the value whichever lands last)",
}
