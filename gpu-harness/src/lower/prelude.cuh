// ---- phasecheck prelude: helpers shared by every generated stress kernel ----
// One block (one cluster when `cluster > 1`) is one independent trial. Every wait is bounded by
// a clock budget; an expired wait records an event and turns its thread into a "zombie" that
// skips every later operation except the hardware collectives (so that the rest of the block
// still finishes). Buffers carry stamps; readers and writers detect overlapping accesses.
typedef unsigned long long pc_u64;
typedef unsigned int pc_u32;

// Layout of the `out` array (indices into pc_u64 words); mirrored by gpu-harness/src/decode.rs.
#define PC_OUT_THREADS_DONE 0
#define PC_OUT_RUNAWAY 1
#define PC_OUT_EVENT_COUNT 2
#define PC_OUT_SEQ_DIVERGED 3
#define PC_OUT_SEQ_STUCK 4
#define PC_OUT_APART 5      // several kernels: blocks that gave up waiting for their trial's partners
#define PC_OUT_HEADER 8
#define PC_OUT_ARR (PC_OUT_HEADER)
#define PC_OUT_INIT (PC_OUT_ARR + 2 * PC_NOBJ)
#define PC_OUT_COUNT (PC_OUT_INIT + 2 * PC_NOBJ)
#define PC_OUT_FIRST (PC_OUT_COUNT + PC_NKIND * PC_NSTMT)
#define PC_OUT_TURN (PC_OUT_FIRST + PC_NKIND * PC_NSTMT)
#define PC_OUT_EVENTS (PC_OUT_TURN + PC_MAX_TRIALS)
#define PC_EVENT_WORDS 6
#define PC_MAX_EVENTS 4096

// Event kinds (also the rows of the per-statement counters).
#define PC_EV_HANG 0        // a bounded wait expired
#define PC_EV_RACE 1        // a buffer access overlapped a conflicting one (torn or stale stamp)
#define PC_EV_STALE_PHASE 2 // a wait passed on a phase completion this thread had already observed
#define PC_EV_FAULT 3       // a hardware anomaly seen at the statement (e.g. a stale-token wait passed)
#define PC_NKIND 4
#define PC_EV_DIVERGED 8    // confirm mode: the replay left the trace
#define PC_EV_SEQ_STUCK 9   // confirm mode: a traced step never got its turn
#define PC_EV_STEP_DONE 10  // confirm mode: the last traced step completed (a = 1 if its wait spun)

#define PC_BUSY (1ull << 63)

// Where each thread is (`pos`, one word per thread of the launch: block b, thread t of a kernel
// at b * (the threads of one block of every kernel) + the kernel's base + t). 0: the thread never started (its block was not
// resident); PC_POS_RUN: it runs, and bits 61..32 hold 1 + the statement of the last hardware
// collective it entered (0: none yet), bits 31..0 that statement's occurrence; PC_POS_DONE: it
// finished. Every other wait of the kernel is bounded, so a thread still running when the host
// gives a launch up is blocked in that collective. The host reads the words back while the
// kernel is stuck (gpu-harness/src/run.rs, `read_stuck`; decode.rs, `Positions`).
#define PC_POS_RUN (1ull << 62)
#define PC_POS_DONE (2ull << 62)

// Fuzz mode: delays aimed at some statements and threads (`confirm`'s aimed fuzz). The `seq`
// argument then holds PC_AIM_MAGIC, the aimed delay bound in ns, the number of statement words
// S and of thread words W, then S words of statement bits and W words of thread bits (bit
// cta * blockDim.x + tid of every trial). An aimed thread sleeps up to the bound before each
// aimed statement, besides the ordinary delays. Confirm mode uses `seq` for its trace instead.
#define PC_AIM_MAGIC 0x41494d31u

struct Pc {
  pc_u64* out;
  unsigned char* staging;    // this block's global staging area (TMA / cp.async sources)
  const pc_u32* seq;         // confirm mode: the trace to replay
  long long budget;          // clock cycles a wait may spin
  pc_u32 rng;
  pc_u32 delay_max_ns;
  pc_u32 delay_every;        // one delay in every `delay_every` delay points, at a random position
  pc_u32 delay_pos, delay_slot;
  pc_u32 spun;               // the last bounded wait did not pass at its first try
  pc_u32 tid, cta, trial;
  pc_u32 dead;               // 1 once a wait expired: skip everything but collectives
  pc_u32 cur;                // confirm mode: index of this thread's next trace entry
  pc_u32 free_run;           // confirm mode: past the trace, run unsequenced
  pc_u32 held;               // confirm mode: this step already advanced the turn
  pc_u32 trips;
  pc_u64 stored, published;  // globals: bit i = object i stored by this thread / seen published
  // `tma_store`s since the last `bulk_wait_read 0` (see pc_bulk_wait_read): how many, and
  // where they are recorded. The arrays live outside Pc: indexed at run time they must be in
  // local memory, and inside Pc they would take every field there with them (a load of
  // `pc.dead` from local memory between a store and a bulk copy waits for the store).
  pc_u32 st_n;
  struct PcStores* st;
  volatile pc_u64* pos;      // this thread's position word (PC_POS_*)
  pc_u32 aim;                // fuzz mode: aimed delay bound in ns for this thread (0: not aimed)
};
// Per `tma_store`: statement, staging offset, the stamp the generic proxy saw in the source
// when the store was issued, checked data words.
struct PcStores {
  pc_u32 stmt[PC_STORE_CHECKS], off[PC_STORE_CHECKS];
  pc_u64 seen[PC_STORE_CHECKS];
  pc_u32 words[PC_STORE_CHECKS];
  unsigned char* src[PC_STORE_CHECKS];  // PC_PROXY_WINDOW: the source, read after completion
};

__device__ __forceinline__ pc_u32 pc_smem(const void* p) { return (pc_u32)__cvta_generic_to_shared(p); }
__device__ __forceinline__ pc_u32 pc_rand(Pc& pc) {
  pc_u32 s = pc.rng; s ^= s << 13; s ^= s >> 17; s ^= s << 5; pc.rng = s; return s;
}
// A delay point. Delay points come in windows of `delay_every`; one random point of each
// window sleeps a random time below delay_max_ns (delay_every = 1: every point sleeps).
__device__ __forceinline__ void pc_delay(Pc& pc) {
  if (pc.delay_max_ns == 0 || pc.dead) return;
  if (pc.delay_pos == pc.delay_slot) __nanosleep(pc_rand(pc) % pc.delay_max_ns);
  if (++pc.delay_pos >= pc.delay_every) { pc.delay_pos = 0; pc.delay_slot = pc_rand(pc) % pc.delay_every; }
}
// Fuzz mode: is this thread aimed at (see PC_AIM_MAGIC)? Its aimed delay bound, or 0.
__device__ __forceinline__ pc_u32 pc_aim_of(const pc_u32* seq, pc_u32 cta, pc_u32 tid) {
  if (PC_CONFIRM || PC_PROXY_WINDOW || seq == 0 || seq[0] != PC_AIM_MAGIC) return 0;
  pc_u32 bit = cta * blockDim.x + tid;
  if (bit / 32 >= seq[3]) return 0;
  return (seq[4 + seq[2] + bit / 32] >> (bit % 32)) & 1u ? seq[1] : 0u;
}
// Before a statement: an aimed thread sleeps before an aimed statement.
__device__ __forceinline__ void pc_aim(Pc& pc, pc_u32 stmt) {
  if (PC_CONFIRM || PC_PROXY_WINDOW || pc.aim == 0 || pc.dead || stmt / 32 >= pc.seq[2]) return;
  if ((pc.seq[4 + stmt / 32] >> (stmt % 32)) & 1u) __nanosleep(pc_rand(pc) % pc.aim);
}
// Before a hardware collective, which cannot be bounded: record where this thread is.
__device__ __forceinline__ void pc_at(Pc& pc, pc_u32 stmt, pc_u32 occ) {
  *pc.pos = PC_POS_RUN | ((pc_u64)(stmt + 1) << 32) | (pc_u64)occ;
}
// `compute`: always a delay point.
__device__ __forceinline__ void pc_compute(Pc& pc) {
  if (pc.delay_max_ns == 0 || pc.dead) return;
  __nanosleep(pc_rand(pc) % pc.delay_max_ns);
}

__device__ void pc_event(Pc& pc, pc_u32 kind, pc_u32 stmt, pc_u64 a, pc_u64 b, pc_u64 c = 0) {
  if (kind < PC_NKIND && stmt < PC_NSTMT) {
    atomicAdd(&pc.out[PC_OUT_COUNT + kind * PC_NSTMT + stmt], 1ull);
    atomicMin(&pc.out[PC_OUT_FIRST + kind * PC_NSTMT + stmt], (pc_u64)blockIdx.x);
  }
  pc_u64 slot = atomicAdd(&pc.out[PC_OUT_EVENT_COUNT], 1ull);
  if (slot < PC_MAX_EVENTS) {
    pc_u64* e = &pc.out[PC_OUT_EVENTS + slot * PC_EVENT_WORDS];
    e[0] = (pc_u64)kind | ((pc_u64)stmt << 8) | ((pc_u64)pc.tid << 24) | ((pc_u64)pc.cta << 40);
    e[1] = (pc_u64)blockIdx.x;
    e[2] = a;
    e[3] = b;
    e[4] = c;
    e[5] = 0;
  }
}

// ---- confirm mode: the device-side sequencer ----
// seq[0] = number of entries (bit 31, PC_SEQ_STOP: every thread stops, as a zombie, once the
// trace is done, so a UB after the replayed race cannot fault the launch and lose what the
// trace showed), seq[1] = index of a held access (or ~0), seq[2] = index of the
// entry it races with (or ~0: hold for a fixed window), seq[3] = index of the last thread step
// (or ~0), entries from seq[4]: (cta, tid, stmt, occurrence), or (cta, PC_LAND, issue entry,
// request slot) for a deferred TMA landing. A shared turn counter per trial orders the
// entries; untraced threads park until the trace is done, then everybody runs free (with
// bounded waits).
#define PC_SEQ_STOP 0x80000000u
__device__ __forceinline__ pc_u32 pc_seq_len(const Pc& pc) { return pc.seq[0] & ~PC_SEQ_STOP; }
__device__ __forceinline__ volatile pc_u64* pc_turn(Pc& pc) { return (volatile pc_u64*)&pc.out[PC_OUT_TURN + pc.trial]; }
__device__ pc_u32 pc_next_entry(Pc& pc, pc_u32 from) {
  pc_u32 n = pc_seq_len(pc);
  for (pc_u32 i = from; i < n; i++) {
    const pc_u32* e = &pc.seq[4 + 4 * i];
    if (e[0] == pc.cta && e[1] == pc.tid) return i;
  }
  return n;
}

// ---- confirm mode: deferred TMA landings (the copy-engine proxy) ----
// The copy engine cannot be held: a 1 KiB cp.async.bulk lands about a microsecond after its
// issue. When the trace lands a TMA later than its issue, the issuing thread only records the
// request (pc_tma_seq); at the landing's turn, a thread of the block that waits for a turn
// (any: parked, waiting for its own step, or holding an access open) claims the entry, issues
// the copy onto the block's private mbarrier, waits for its bytes, then completes them on the
// protocol's barrier (mbarrier.complete_tx, the same byte count the copy would have completed)
// and advances the turn. The bytes thus land exactly at the trace's landing turn.
#define PC_LAND 0xffffffffu
#define PC_MAX_LAND 16
struct PcLandReq {
  unsigned char* dst;
  unsigned char* src;
  pc_u64* bar;
  long long bytes;
  pc_u32 size;
  pc_u32 valid;
};
__device__ __forceinline__ pc_u32 pc_mb_try_parity(pc_u64* b, pc_u32 par, bool cluster_scope);
#if PC_CONFIRM
__shared__ __align__(8) pc_u64 pc_land_bar;   // the proxy's private mbarrier (count 1)
__shared__ pc_u32 pc_land_claimed;            // 1 + the last landing entry claimed
__shared__ pc_u32 pc_land_parity;             // the private mbarrier's current phase parity
__shared__ PcLandReq pc_land_req[PC_MAX_LAND];
// Harness bootstrap (before the block's first synchronisation): thread 0 of each block.
__device__ void pc_land_init(Pc& pc) {
  if (pc.tid != 0) return;
  pc_u32 one = 1u + (pc_u32)((pc_u64)pc.budget >> 63);  // a run-time count (see pc_mb_init)
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(pc_smem(&pc_land_bar)), "r"(one) : "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the copy engine sees the init
  pc_land_claimed = 0;
  pc_land_parity = 0;
  for (int i = 0; i < PC_MAX_LAND; i++) pc_land_req[i].valid = 0;
}
// The request slot of a deferred landing whose issue is this thread's current entry, or -1.
__device__ int pc_land_slot(Pc& pc) {
  pc_u32 n = pc_seq_len(pc);
  for (pc_u32 i = pc.cur + 1; i < n; i++) {
    const pc_u32* e = &pc.seq[4 + 4 * i];
    if (e[1] == PC_LAND && e[2] == pc.cur) return (int)(e[3] % PC_MAX_LAND);
  }
  return -1;
}
// Called by every thread that waits for a turn: if the turn `cur` is a landing of this block
// and nobody claimed it yet, land it and advance the turn. True when it did.
__device__ bool pc_land_service(Pc& pc, pc_u64 cur) {
  if (cur >= pc_seq_len(pc)) return false;
  const pc_u32* e = &pc.seq[4 + 4 * cur];
  if (e[1] != PC_LAND || e[0] != pc.cta) return false;
  if (atomicMax(&pc_land_claimed, (pc_u32)cur + 1) > (pc_u32)cur) return false;  // claimed
  __threadfence();  // the issuer wrote the request before it advanced the turn
  volatile PcLandReq* r = &pc_land_req[e[3] % PC_MAX_LAND];
  if (r->valid) {
    unsigned char* dst = r->dst;
    unsigned char* src = r->src;
    pc_u64* bar = r->bar;
    long long bytes = r->bytes;
    pc_u32 size = r->size;
    pc_u32 pb = pc_smem(&pc_land_bar);
    asm volatile("fence.proxy.async.global;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(pb), "r"((pc_u32)bytes) : "memory");
    long long left = bytes;
    while (left > 0) {
      pc_u32 chunk = (pc_u32)(left > (long long)size ? size : left);
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   :: "r"(pc_smem(dst)), "l"(src), "r"(chunk), "r"(pb) : "memory");
      left -= chunk;
    }
    long long t0 = clock64();
    bool landed = true;
    while (!pc_mb_try_parity(&pc_land_bar, pc_land_parity, false)) {
      if (clock64() - t0 > pc.budget) { landed = false; break; }
    }
    pc_land_parity ^= 1;
    if (landed && bar) {
      // The bytes are visible to this thread (acquire above); release them with the
      // completion, which is relaxed only (PTX ISA 8.0): fence first.
      asm volatile("fence.acq_rel.cta;" ::: "memory");
      asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(pc_smem(bar)), "r"((pc_u32)bytes) : "memory");
    } else if (!landed) {
      pc_event(pc, PC_EV_SEQ_STUCK, pc.seq[4 + 4 * e[2] + 2], cur, bytes);  // at the `tma`
      atomicAdd(&pc.out[PC_OUT_SEQ_STUCK], 1ull);
    }
    r->valid = 0;
  }
  __threadfence();
  *pc_turn(pc) = cur + 1;
  return true;
}
#else
__device__ __forceinline__ bool pc_land_service(Pc&, pc_u64) { return false; }
#endif

__device__ bool pc_wait_turn(Pc& pc, pc_u64 turn, pc_u32 stmt) {
  long long t0 = clock64();
  pc_u64 cur;
  while ((cur = *pc_turn(pc)) < turn) {
    if (pc_land_service(pc, cur)) { t0 = clock64(); continue; }
    if (clock64() - t0 > 4 * pc.budget) {
      pc_event(pc, PC_EV_SEQ_STUCK, stmt, turn, *pc_turn(pc));
      atomicAdd(&pc.out[PC_OUT_SEQ_STUCK], 1ull);
      return false;
    }
  }
  return true;
}
// Before a statement: returns true when this step is a traced step that must advance the turn.
__device__ bool pc_step_begin(Pc& pc, pc_u32 stmt, pc_u32 occ, bool collective, bool modelled,
                              bool block_wide = false) {
  pc_aim(pc, stmt);
  if (!PC_CONFIRM || pc.free_run || pc.seq == 0) return false;
  pc_u32 n = pc_seq_len(pc);
  // A thread with no step left parks until the trace is done, except at a block-wide barrier
  // (`syncthreads`): every thread must arrive for it to complete, the traced ones too, so
  // parking there would hold the trace up; its next statement parks it.
  if (pc.cur >= n && block_wide) return false;
  if (pc.cur >= n) {
    pc_wait_turn(pc, n, stmt);
    pc.free_run = 1;
    if (pc.seq[0] & PC_SEQ_STOP) pc.dead = 1;
    return false;
  }
  const pc_u32* e = &pc.seq[4 + 4 * pc.cur];
  if (e[2] != stmt || e[3] != occ) {
    // `compute` is no step of the model; hardware collectives may be no step of their own
    // (the model completes them implicitly): run them unsequenced.
    if (!modelled || collective) return false;
    pc_event(pc, PC_EV_DIVERGED, stmt, ((pc_u64)e[2] << 32) | e[3], occ);
    atomicAdd(&pc.out[PC_OUT_SEQ_DIVERGED], 1ull);
    pc_wait_turn(pc, n, stmt);
    pc.free_run = 1;
    if (pc.seq[0] & PC_SEQ_STOP) pc.dead = 1;
    return false;
  }
  if (!pc_wait_turn(pc, pc.cur, stmt)) { pc.free_run = 1; return false; }
  pc.held = 0;
  if (collective) {  // a hardware collective blocks until the others arrive: hand over first
    __threadfence();
    *pc_turn(pc) = pc.cur + 1;
    pc.held = 1;
  }
  return true;
}
__device__ void pc_step_end(Pc& pc, bool traced, pc_u32 stmt) {
  if (!PC_CONFIRM || !traced) return;
  if (pc.cur == pc.seq[3]) pc_event(pc, PC_EV_STEP_DONE, stmt, pc.spun, pc.dead);
  if (!pc.held) { __threadfence(); *pc_turn(pc) = pc.cur + 1; }
  pc.cur = pc_next_entry(pc, pc.cur + 1);
}
// Inside a held access: let the trace go on until the conflicting access has happened.
__device__ void pc_hold_open(Pc& pc, pc_u32 stmt) {
  if (!PC_CONFIRM || pc.seq == 0 || pc.free_run || pc.cur != pc.seq[1]) return;
  __threadfence();
  *pc_turn(pc) = pc.cur + 1;
  pc.held = 1;
  if (pc.seq[2] == 0xffffffffu) {
    long long t0 = clock64();
    while (clock64() - t0 < 200000) pc_land_service(pc, *pc_turn(pc));
  } else {
    pc_wait_turn(pc, (pc_u64)pc.seq[2] + 1, stmt);
  }
  __threadfence();
}

// ---- bounded waits ----
__device__ __forceinline__ void pc_hang(Pc& pc, pc_u32 stmt, pc_u64 a, pc_u64 b, pc_u64 raw = 0) {
  pc_event(pc, PC_EV_HANG, stmt, a, b, raw);
  pc.dead = 1;
}
// Observed state of an mbarrier after a wait expired: the raw 64-bit word (layout undocumented)
// and the current phase parity (test_wait.parity 0 succeeds iff the current phase is odd).
__device__ __forceinline__ pc_u32 pc_mb_test_parity(pc_u64* b, pc_u32 par) {
  pc_u32 ok;
  asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
               : "=r"(ok) : "r"(pc_smem(b)), "r"(par) : "memory");
  return ok;
}
__device__ __forceinline__ pc_u64 pc_mb_observe(pc_u64* b, pc_u32 index) {
  pc_u32 cur = pc_mb_test_parity(b, 0);
  return ((pc_u64)cur << 63) | ((pc_u64)(index & 0x7fff) << 48);
}
__device__ __forceinline__ pc_u64 pc_mb_raw(pc_u64* b) { return *(volatile pc_u64*)b; }

// ---- mbarrier (inline PTX) ----
__device__ __forceinline__ void pc_mb_init(Pc& pc, pc_u64* b, long long count, pc_u32 obj) {
  if (pc.dead) return;
  // NVRTC 13.0 crashes (SIGSEGV) compiling `mbarrier.init` with a count it can prove is 0:
  // add a run-time zero (the budget is positive) so the count is never a known constant.
  pc_u32 c = (pc_u32)count + (pc_u32)((pc_u64)pc.budget >> 63);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(pc_smem(b)), "r"(c) : "memory");
  pc.out[PC_OUT_INIT + 2 * obj] = (pc_u64)count;
}
__device__ __forceinline__ void pc_mb_inval(Pc& pc, pc_u64* b) {
  if (pc.dead) return;
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(pc_smem(b)) : "memory");
}
__device__ __forceinline__ pc_u64 pc_mb_arrive(Pc& pc, pc_u64* b, long long count, pc_u64& arrivals) {
  pc_u64 st = 0;
  if (pc.dead) return st;
  arrivals += (pc_u64)count;
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 %0, [%1], %2;"
               : "=l"(st) : "r"(pc_smem(b)), "r"((pc_u32)count) : "memory");
  return st;
}
// Remote arrive into the same barrier of cluster rank `rank` (`NAME @ r`).
__device__ __forceinline__ void pc_mb_arrive_remote(Pc& pc, pc_u64* b, long long rank, long long count, bool cluster_scope, pc_u64& arrivals) {
  if (pc.dead) return;
  arrivals += (pc_u64)count;
  pc_u32 ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(pc_smem(b)), "r"((pc_u32)rank));
  if (cluster_scope)
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(ra), "r"((pc_u32)count) : "memory");
  else
    asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0], %1;" :: "r"(ra), "r"((pc_u32)count) : "memory");
}
__device__ __forceinline__ pc_u64 pc_mb_arrive_drop(Pc& pc, pc_u64* b, pc_u64& arrivals) {
  pc_u64 st = 0;
  if (pc.dead) return st;
  arrivals += 1;
  asm volatile("mbarrier.arrive_drop.release.cta.shared::cta.b64 %0, [%1];" : "=l"(st) : "r"(pc_smem(b)) : "memory");
  return st;
}
__device__ __forceinline__ void pc_mb_arrive_drop_remote(Pc& pc, pc_u64* b, long long rank, pc_u64& arrivals) {
  if (pc.dead) return;
  arrivals += 1;
  pc_u32 ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(pc_smem(b)), "r"((pc_u32)rank));
  asm volatile("mbarrier.arrive_drop.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(ra) : "memory");
}
__device__ __forceinline__ pc_u64 pc_mb_arrive_expect_tx(Pc& pc, pc_u64* b, long long bytes, pc_u64& arrivals) {
  pc_u64 st = 0;
  if (pc.dead) return st;
  arrivals += 1;
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %0, [%1], %2;"
               : "=l"(st) : "r"(pc_smem(b)), "r"((pc_u32)bytes) : "memory");
  return st;
}
__device__ __forceinline__ void pc_mb_arrive_expect_tx_remote(Pc& pc, pc_u64* b, long long rank, long long bytes, pc_u64& arrivals) {
  if (pc.dead) return;
  arrivals += 1;
  pc_u32 ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(pc_smem(b)), "r"((pc_u32)rank));
  asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;" :: "r"(ra), "r"((pc_u32)bytes) : "memory");
}
__device__ __forceinline__ void pc_mb_expect_tx(Pc& pc, pc_u64* b, long long bytes) {
  if (pc.dead) return;
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(pc_smem(b)), "r"((pc_u32)bytes) : "memory");
}
__device__ __forceinline__ void pc_mb_complete_tx(Pc& pc, pc_u64* b, long long bytes) {
  if (pc.dead) return;
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(pc_smem(b)), "r"((pc_u32)bytes) : "memory");
}
__device__ __forceinline__ void pc_mb_expect_tx_remote(Pc& pc, pc_u64* b, long long rank, long long bytes) {
  if (pc.dead) return;
  pc_u32 ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(pc_smem(b)), "r"((pc_u32)rank));
  asm volatile("mbarrier.expect_tx.relaxed.cluster.shared::cluster.b64 [%0], %1;" :: "r"(ra), "r"((pc_u32)bytes) : "memory");
}
__device__ __forceinline__ void pc_mb_complete_tx_remote(Pc& pc, pc_u64* b, long long rank, long long bytes) {
  if (pc.dead) return;
  pc_u32 ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(pc_smem(b)), "r"((pc_u32)rank));
  asm volatile("mbarrier.complete_tx.relaxed.cluster.shared::cluster.b64 [%0], %1;" :: "r"(ra), "r"((pc_u32)bytes) : "memory");
}
// A peer block's copy of a shared object (`NAME @ r`), as a generic pointer.
template <class T> __device__ __forceinline__ T* pc_map_rank(T* p, long long rank) {
  T* r;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"((pc_u32)rank));
  return r;
}
__device__ __forceinline__ void pc_note_init(Pc& pc, pc_u32 obj, long long count) {
  if (!pc.dead) pc.out[PC_OUT_INIT + 2 * obj] = (pc_u64)count;
}
__device__ __forceinline__ pc_u32 pc_mb_try_parity(pc_u64* b, pc_u32 par, bool cluster_scope) {
  pc_u32 ok;
  if (cluster_scope)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(pc_smem(b)), "r"(par) : "memory");
  else
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(pc_smem(b)), "r"(par) : "memory");
  return ok;
}
__device__ __forceinline__ pc_u32 pc_mb_try_token(pc_u64* b, pc_u64 token, bool cluster_scope) {
  pc_u32 ok;
  if (cluster_scope)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(pc_smem(b)), "l"(token) : "memory");
  else
    asm volatile("{ .reg .pred p; mbarrier.try_wait.acquire.cta.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(pc_smem(b)), "l"(token) : "memory");
  return ok;
}
__device__ __forceinline__ void pc_mb_wait_parity(Pc& pc, pc_u64* b, long long par, bool cluster_scope, pc_u32 stmt, pc_u32 index) {
  if (pc.dead) return;
  pc_u32 p = (pc_u32)(par & 1);
  pc.spun = 0;
  if (pc_mb_try_parity(b, p, cluster_scope)) return;
  pc.spun = 1;
  long long t0 = clock64();
  while (!pc_mb_try_parity(b, p, cluster_scope)) {
    if (clock64() - t0 > pc.budget) { pc_hang(pc, stmt, pc_mb_observe(b, index), p, pc_mb_raw(b)); return; }
  }
}
__device__ __forceinline__ void pc_mb_wait_token(Pc& pc, pc_u64* b, pc_u64 token, bool cluster_scope, pc_u32 stmt, pc_u32 index) {
  if (pc.dead) return;
  pc.spun = 0;
  if (pc_mb_try_token(b, token, cluster_scope)) return;
  pc.spun = 1;
  long long t0 = clock64();
  while (!pc_mb_try_token(b, token, cluster_scope)) {
    if (clock64() - t0 > pc.budget) { pc_hang(pc, stmt, pc_mb_observe(b, index), token, pc_mb_raw(b)); return; }
  }
}
__device__ __forceinline__ long long pc_mb_test_wait(Pc& pc, pc_u64* b, long long par) {
  if (pc.dead) return 1;  // a zombie must not spin in `while test_wait` loops
  return pc_mb_test_parity(b, (pc_u32)(par & 1));
}

// ---- cuda::barrier (libcu++) with bounded waits through try_wait_*_for ----
#define PC_BOUNDED_LIBCU_WAIT(pc, stmt, index, expr)                                   \
  do {                                                                                 \
    if (!(pc).dead) {                                                                  \
      long long pc_t0_ = clock64();                                                    \
      (pc).spun = 0;                                                                   \
      while (!(expr)) {                                                                \
        (pc).spun = 1;                                                                 \
        if (clock64() - pc_t0_ > (pc).budget) { pc_hang((pc), (stmt), (index), 0); break; } \
      }                                                                                \
    }                                                                                  \
  } while (0)

// ---- CTA, warp and cluster collectives (hardware; not boundable: zombies still take part) ----
__device__ __forceinline__ pc_u32 pc_warp_mask() {
  pc_u32 first = (threadIdx.x / 32) * 32;
  pc_u32 n = blockDim.x - first;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}
__device__ __forceinline__ void pc_bar_sync(long long id, long long count) {
  asm volatile("bar.sync %0, %1;" :: "r"((pc_u32)id), "r"((pc_u32)count) : "memory");
}
__device__ __forceinline__ void pc_bar_sync_all(long long id) {
  asm volatile("bar.sync %0;" :: "r"((pc_u32)id) : "memory");
}
__device__ __forceinline__ void pc_bar_arrive(long long id, long long count) {
  asm volatile("bar.arrive %0, %1;" :: "r"((pc_u32)id), "r"((pc_u32)count) : "memory");
}
// `bar_sync ... unaligned`: the forms without `.aligned` (threads may reach them through
// different instructions).
__device__ __forceinline__ void pc_barrier_sync(long long id, long long count) {
  asm volatile("barrier.sync %0, %1;" :: "r"((pc_u32)id), "r"((pc_u32)count) : "memory");
}
__device__ __forceinline__ void pc_barrier_sync_all(long long id) {
  asm volatile("barrier.sync %0;" :: "r"((pc_u32)id) : "memory");
}
__device__ __forceinline__ void pc_barrier_arrive(long long id, long long count) {
  asm volatile("barrier.arrive %0, %1;" :: "r"((pc_u32)id), "r"((pc_u32)count) : "memory");
}
__device__ __forceinline__ bool pc_elect(pc_u32 mask) {
  pc_u32 is;
  asm volatile("{ .reg .pred p; elect.sync _|p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(is) : "r"(mask));
  return is != 0;
}
__device__ __forceinline__ void pc_cluster_arrive() { asm volatile("barrier.cluster.arrive;" ::: "memory"); }
__device__ __forceinline__ void pc_cluster_wait() { asm volatile("barrier.cluster.wait;" ::: "memory"); }
__device__ __forceinline__ void pc_fence_mbarrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void pc_fence_proxy_async(Pc& pc) {
  if (pc.dead) return;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ pc_u32 pc_cluster_rank() {
  pc_u32 r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}

// ---- stamped buffers ----
// A buffer instance: [stamp u64][parts u32][pad u32][data words...]. A stamp names its writer:
// statement, occurrence (iteration) and thread; the busy bit is set while a thread's write is
// in flight. Data words hold a hash of the stamp, so a torn fill is visible.
// Cooperative tiles (`write part X`): a part write leaves a stamp with PC_PART (bit 5 of the
// cta field, free: a cluster has at most 16 blocks) and writes only its own data word, so the
// words of a part-written instance are not checked against its stamp. The `parts` word counts
// the part writes in flight; it exists (is cleared by the bootstrap and checked by readers and
// whole writers, their `part` argument) only in buffers that some statement writes in parts.
// Part writes do not check each other.
#define PC_PART (1ull << 15)
__device__ __forceinline__ pc_u64 pc_stamp(Pc& pc, pc_u32 stmt, pc_u32 occ) {
  return ((pc_u64)(stmt + 1) << 48) | ((pc_u64)(occ & 0xffffffffu) << 16) | ((pc_u64)pc.cta << 10) | (pc_u64)pc.tid;
}
__device__ __forceinline__ pc_u32 pc_hash(pc_u64 s) { return (pc_u32)(s ^ (s >> 29) ^ 0x9E3779B9u); }
__device__ __forceinline__ pc_u32* pc_parts(unsigned char* buf) { return (pc_u32*)(buf + 8); }
__device__ __forceinline__ pc_u32 pc_parts_now(unsigned char* buf, bool part) {
  return part ? *(volatile pc_u32*)pc_parts(buf) : 0u;
}
__device__ void pc_read(Pc& pc, unsigned char* buf, pc_u32 words, pc_u32 stmt, pc_u32 index, bool part = false) {
  if (pc.dead) return;
  volatile pc_u64* st = (volatile pc_u64*)buf;
  volatile pc_u32* data = (volatile pc_u32*)(buf + 16);
  pc_u64 s1 = *st;
  pc_u32 p1 = pc_parts_now(buf, part);
  pc_u32 d = words ? data[pc.tid % words] : 0;
  pc_hold_open(pc, stmt);
  pc_delay(pc);
  pc_u64 s2 = *st;
  pc_u32 p2 = pc_parts_now(buf, part);
  bool bad = (s1 & PC_BUSY) || s2 != s1 || p1 || p2
             || (words && s1 != 0 && !(s1 & PC_PART) && d != pc_hash(s1));
  if (bad) pc_event(pc, PC_EV_RACE, stmt, (s1 & PC_BUSY) ? s1 : s2, ((pc_u64)index << 32) | (p1 || p2 ? 4u : 0u));
}
// A whole write stamped `mine`. `shared`: every writer of the statement stamps the same (a
// value write, below), so another write in flight with the same stamp is no race.
__device__ void pc_write_stamped(Pc& pc, unsigned char* buf, pc_u32 words, pc_u32 stmt, pc_u64 mine,
                                 pc_u32 index, bool part, bool shared) {
  if (pc.dead) return;
  volatile pc_u64* st = (volatile pc_u64*)buf;
  volatile pc_u32* data = (volatile pc_u32*)(buf + 16);
  pc_u64 old = *st;
  bool other = shared ? (old & ~PC_BUSY) != mine : true;
  if (((old & PC_BUSY) && other) || pc_parts_now(buf, part))
    pc_event(pc, PC_EV_RACE, stmt, old, ((pc_u64)index << 32) | 1u);
  *st = mine | PC_BUSY;
  pc_u32 h = pc_hash(mine);
  for (pc_u32 w = 0; w < words; w++) data[w] = h;
  pc_hold_open(pc, stmt);
  pc_delay(pc);
  pc_u64 now = *st;
  bool changed = shared ? (now & ~PC_BUSY) != mine : now != (mine | PC_BUSY);
  if (changed || pc_parts_now(buf, part)) pc_event(pc, PC_EV_RACE, stmt, now, ((pc_u64)index << 32) | 2u);
  *st = mine;
}
__device__ void pc_write(Pc& pc, unsigned char* buf, pc_u32 words, pc_u32 stmt, pc_u32 occ, pc_u32 index,
                         bool part = false) {
  pc_write_stamped(pc, buf, words, stmt, pc_stamp(pc, stmt, occ), index, part, false);
}
// `write X value N`: every thread that runs a statement stores the same bytes, so the stamp
// names the statement and the value (in the occurrence field; thread and block 0), not the
// writer, and the data words are the same for all of them: two overlapping stores of one value
// leave the instance as either would. Another write in flight is a race only if its stamp
// differs (another statement or value); a read that overlaps any of them still is. The first
// of two overlapping same-value writers to finish clears the busy bit for both (a reader may
// then miss the second: the GPU may see less than the checker, never more).
__device__ void pc_write_value(Pc& pc, unsigned char* buf, pc_u32 words, pc_u32 stmt, pc_u32 value,
                               pc_u32 index, bool part = false) {
  pc_u64 mine = ((pc_u64)(stmt + 1) << 48) | ((pc_u64)value << 16);
  pc_write_stamped(pc, buf, words, stmt, mine, index, part, true);
}
// `write part X`: this thread's part. Counted in flight (readers and whole writers of the
// instance see it), its stamp published with PC_PART, its own data word written; a whole write
// in flight (a busy stamp) at its start or end is a race. Other part writes are not.
__device__ void pc_write_part(Pc& pc, unsigned char* buf, pc_u32 words, pc_u32 stmt, pc_u32 occ, pc_u32 index) {
  if (pc.dead) return;
  volatile pc_u64* st = (volatile pc_u64*)buf;
  volatile pc_u32* data = (volatile pc_u32*)(buf + 16);
  pc_u64 mine = pc_stamp(pc, stmt, occ) | PC_PART;
  atomicAdd(pc_parts(buf), 1u);
  pc_u64 old = *st;
  if (old & PC_BUSY) pc_event(pc, PC_EV_RACE, stmt, old, ((pc_u64)index << 32) | 1u);
  *st = mine;
  if (words) data[pc.tid % words] = pc_hash(mine);
  pc_hold_open(pc, stmt);
  pc_delay(pc);
  pc_u64 now = *st;
  if (now & PC_BUSY) pc_event(pc, PC_EV_RACE, stmt, now, ((pc_u64)index << 32) | 2u);
  __threadfence_block();
  atomicSub(pc_parts(buf), 1u);
}
// A copy of `v` that the compiler can neither fold nor recompute: `v` goes through a shuffle
// from the thread itself, mixed with the lane id so that it differs between lanes (the
// assembler drops the shuffle of a value that it knows to be the same in every lane, e.g. a
// constant). Kept live, the copy stays in its register.
__device__ __forceinline__ pc_u32 pc_opaque(pc_u32 v) {
  pc_u32 r;
  asm volatile("{ .reg .u32 m, l, t; activemask.b32 m; mov.u32 l, %%laneid; xor.b32 t, %1, l;\n\t"
               "shfl.sync.idx.b32 t, t, l, 31, m; xor.b32 %0, t, l; }"
               : "=r"(r) : "r"(v));
  return r;
}
// The operands of a window write's stores (LowerOptions::proxy_window).
struct PcKeep { pc_u32 a, lo, busy_hi, h, hi; };
// At a thread's end: a use of the operands that the assembler cannot drop (a volatile store of
// their combination), which keeps them live, and so in their registers, up to here.
__shared__ pc_u32 pc_keep_sink;
__device__ __forceinline__ void pc_keep_live(const PcKeep& k) {
  asm volatile("{ .reg .u32 t; xor.b32 t, %1, %2; xor.b32 t, t, %3; xor.b32 t, t, %4; xor.b32 t, t, %5;\n\t"
               "st.volatile.shared.u32 [%0], t; }"
               :: "r"(pc_smem(&pc_keep_sink)), "r"(k.a), "r"(k.lo), "r"(k.busy_hi), "r"(k.h), "r"(k.hi) : "memory");
}
// `write X` lowered for a proxy window: the same stores (busy stamp, data words, final stamp)
// without the overlap checks, as 32-bit stores whose operands are opaque copies that the
// kernel keeps live to its end (`keep`, used in pc_finish). The register allocator can then
// neither reuse nor recompute them, so no later instruction waits for these stores to leave
// the warp (in straight-line code: a loop carries them, and ptxas may move them and reuse
// their registers). The final store writes only the stamp's upper word (it clears the busy
// bit).
// A `write part` in the proxy-window kernel is the same, with a part stamp.
__device__ __forceinline__ void pc_write_window(Pc& pc, unsigned char* buf, pc_u32 words, pc_u32 stmt, pc_u32 occ,
                                                PcKeep& keep, bool part = false) {
  if (pc.dead) return;
  pc_u64 mine = pc_stamp(pc, stmt, occ) | (part ? PC_PART : 0ull);
  keep.a = pc_opaque(pc_smem(buf));
  keep.lo = pc_opaque((pc_u32)mine);
  keep.busy_hi = pc_opaque((pc_u32)((mine | PC_BUSY) >> 32));
  keep.h = pc_opaque(pc_hash(mine));
  keep.hi = pc_opaque((pc_u32)(mine >> 32));
  asm volatile("st.shared.u32 [%0], %1;" :: "r"(keep.a), "r"(keep.lo) : "memory");
  asm volatile("st.shared.u32 [%0+4], %1;" :: "r"(keep.a), "r"(keep.busy_hi) : "memory");
  for (pc_u32 w = 0; w < words; w++)
    asm volatile("st.shared.u32 [%0], %1;" :: "r"(keep.a + 16 + 4 * w), "r"(keep.h) : "memory");
  asm volatile("st.shared.u32 [%0+4], %1;" :: "r"(keep.a), "r"(keep.hi) : "memory");
}
// Prepare the global source of an async fill: stamp + hashed data words.
__device__ unsigned char* pc_stage(Pc& pc, pc_u32 offset, pc_u32 words, pc_u32 stmt, pc_u32 occ) {
  unsigned char* src = pc.staging + offset;
  pc_u64 mine = pc_stamp(pc, stmt, occ);
  *(pc_u64*)src = mine;
  *(pc_u64*)(src + 8) = 0;
  pc_u32 h = pc_hash(mine);
  for (pc_u32 w = 0; w < words; w++) ((pc_u32*)(src + 16))[w] = h;
  return src;
}
// `tma X -> B, bytes [multicast mask]`: cp.async.bulk from the staging area, `bytes` in chunks
// of at most the buffer's size, each completing its bytes on B.
__device__ void pc_tma(Pc& pc, unsigned char* dst, pc_u32 size, pc_u32 words, pc_u64* bar, long long bytes,
                       long long mask, bool multicast, pc_u32 offset, pc_u32 stmt, pc_u32 occ) {
  if (pc.dead) return;
  unsigned char* src = pc_stage(pc, offset, words, stmt, occ);
  asm volatile("fence.proxy.async.global;" ::: "memory");
  long long left = bytes;
  while (left > 0) {
    pc_u32 chunk = (pc_u32)(left > (long long)size ? size : left);
    if (multicast)
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                   :: "r"(pc_smem(dst)), "l"(src), "r"(chunk), "r"(pc_smem(bar)), "h"((unsigned short)mask) : "memory");
    else
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   :: "r"(pc_smem(dst)), "l"(src), "r"(chunk), "r"(pc_smem(bar)) : "memory");
    left -= chunk;
  }
}
// Confirm mode: when the trace lands this copy later than its issue (a landing entry names
// this step), stage the source and record the request for the proxy (pc_land_service), which
// copies it at the landing turn and completes `bar` (if any) with `bytes`. False: no landing
// entry (or no free slot): the caller issues the copy now, as in fuzz mode.
__device__ bool pc_land_record(Pc& pc, bool traced, unsigned char* dst, pc_u32 size, pc_u32 words,
                               pc_u64* bar, long long bytes, pc_u32 offset, pc_u32 stmt, pc_u32 occ) {
#if PC_CONFIRM
  int slot = (traced && !pc.dead) ? pc_land_slot(pc) : -1;
  if (slot >= 0) {
    unsigned char* src = pc_stage(pc, offset, words, stmt, occ);
    asm volatile("fence.proxy.async.global;" ::: "memory");
    volatile PcLandReq* r = &pc_land_req[slot];
    r->dst = dst;
    r->src = src;
    r->bar = bar;
    r->bytes = bytes;
    r->size = size;
    __threadfence_block();
    r->valid = 1;
    return true;  // pc_step_end advances the turn after the request is visible (__threadfence)
  }
#endif
  return false;
}
// A `tma` with one destination, in confirm mode: deferred to its landing turn, or issued now.
__device__ void pc_tma_seq(Pc& pc, bool traced, unsigned char* dst, pc_u32 size, pc_u32 words, pc_u64* bar,
                           long long bytes, pc_u32 offset, pc_u32 stmt, pc_u32 occ) {
  if (!pc_land_record(pc, traced, dst, size, words, bar, bytes, offset, stmt, occ))
    pc_tma(pc, dst, size, words, bar, bytes, 0, false, offset, stmt, occ);
}
// A `cp_async` or `memcpy_async`, in confirm mode: deferred with no barrier to complete (`bar`
// null), so the thread issues no copy now and a later commit or arrive-on binds none of it.
// False: the caller issues the copy now, as in fuzz mode.
__device__ bool pc_fill_seq(Pc& pc, bool traced, unsigned char* dst, pc_u32 size, pc_u32 words,
                            pc_u32 offset, pc_u32 stmt, pc_u32 occ) {
  return pc_land_record(pc, traced, dst, size, words, nullptr, size, offset, stmt, occ);
}
// `tma_store X`: a bulk copy reading X (async proxy) into the staging area. The stamp that
// the generic proxy sees in X now is remembered: what the copy engine read is compared with it
// once the group has completed (pc_bulk_wait_read), which is how a missing
// `fence_proxy_async` (the async proxy reading older contents) or a source rewritten while the
// copy still reads it shows up as a stale read at the `tma_store`.
__device__ void pc_tma_store(Pc& pc, unsigned char* src, pc_u32 size, pc_u32 words, pc_u32 offset, pc_u32 stmt) {
  if (pc.dead) return;
  // The raw stamp, busy bit included: a writer's last store is its final stamp (the busy bit
  // cleared), so an async proxy that missed that store lands the busy stamp. Loaded before the
  // copy is issued, needed only after it; but the compiler may schedule the bookkeeping below,
  // and so the wait for this load, before the copy, and waiting for a load waits for every
  // store the warp queued before it: the window in which a missing `fence_proxy_async` shows
  // (docs/gpu.md "Proxy fences"). So the proxy-window kernel reads the source once the group
  // has completed instead.
  pc_u64 seen = PC_PROXY_WINDOW ? 0 : *(volatile pc_u64*)src;
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
               :: "l"(pc.staging + offset), "r"(pc_smem(src)), "r"(size) : "memory");
  // A later store into the same staging slot overwrites what an earlier one landed: the
  // earlier one can no longer be checked, so it is forgotten (no false stale read).
  PcStores& r = *pc.st;
  for (pc_u32 i = 0; i < pc.st_n; i++) {
    if (r.off[i] == offset) {
      pc.st_n--;
      r.stmt[i] = r.stmt[pc.st_n];
      r.off[i] = r.off[pc.st_n];
      r.seen[i] = r.seen[pc.st_n];
      r.words[i] = r.words[pc.st_n];
      r.src[i] = r.src[pc.st_n];
      break;
    }
  }
  if (pc.st_n < PC_STORE_CHECKS) {
    r.stmt[pc.st_n] = stmt;
    r.off[pc.st_n] = offset;
    r.seen[pc.st_n] = seen;
    r.words[pc.st_n] = words;
    r.src[pc.st_n] = src;
    pc.st_n++;
  }
}
// After `bulk_wait_read 0` every store of this thread has finished reading its source; wait
// for the writes too (a stricter wait, which only delays the thread) and compare what landed
// with what the generic proxy saw at the issue.
__device__ void pc_check_stores(Pc& pc) {
  if (pc.st_n == 0) return;
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  PcStores& r = *pc.st;
  for (pc_u32 i = 0; i < pc.st_n; i++) {
    const unsigned char* at = pc.staging + r.off[i];
    pc_u64 landed = *(volatile pc_u64*)at;
    // A landed stamp other than the one the generic proxy saw, or data words that do not
    // belong to the landed stamp (a torn read: the stamp landed, some words did not).
    // PC_PROXY_WINDOW: what the source holds now that the copy is done; nothing orders a
    // write of the source between the issue and here, which would be a race of its own.
    pc_u64 seen = PC_PROXY_WINDOW ? *(volatile pc_u64*)r.src[i] : r.seen[i];
    bool stale = landed != seen;
    // A part-written source (PC_PART) has words of several writers: only its stamp is checked.
    if (!stale && landed != 0 && !(landed & (PC_BUSY | PC_PART))) {
      pc_u32 h = pc_hash(landed);
      for (pc_u32 w = 0; w < r.words[i] && !stale; w++)
        stale = ((const volatile pc_u32*)(at + 16))[w] != h;
    }
    if (stale) pc_event(pc, PC_EV_RACE, r.stmt[i], landed, 3u);
  }
  pc.st_n = 0;
}
__device__ __forceinline__ void pc_bulk_commit(Pc& pc) {
  if (pc.dead) return;
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void pc_bulk_wait_read(Pc& pc, long long n) {
  if (pc.dead) return;
  switch (n) {  // the group count is an immediate
    case 0: asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.bulk.wait_group.read 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.bulk.wait_group.read 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.bulk.wait_group.read 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.bulk.wait_group.read 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.bulk.wait_group.read 6;" ::: "memory"); break;
    default: asm volatile("cp.async.bulk.wait_group.read 7;" ::: "memory"); break;
  }
  if (n == 0) pc_check_stores(pc);  // every store of this thread has read its source
}
// Ampere `cp_async X`: 16-byte cp.async copies of the whole instance from the staging area.
__device__ void pc_cp_async(Pc& pc, unsigned char* dst, pc_u32 size, pc_u32 words, pc_u32 offset, pc_u32 stmt, pc_u32 occ) {
  if (pc.dead) return;
  unsigned char* src = pc_stage(pc, offset, words, stmt, occ);
  for (pc_u32 o = 0; o < size; o += 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(pc_smem(dst + o)), "l"(src + o) : "memory");
}
__device__ __forceinline__ void pc_commit_group(Pc& pc) {
  if (pc.dead) return;
  asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void pc_wait_group(Pc& pc, long long n) {
  if (pc.dead) return;
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;" ::: "memory"); break;
  }
}
__device__ __forceinline__ void pc_cp_async_arrive(Pc& pc, pc_u64* b, bool noinc) {
  if (pc.dead) return;
  if (noinc) asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(pc_smem(b)) : "memory");
  else asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" :: "r"(pc_smem(b)) : "memory");
}

// ---- globals (language.md §6) ----
// A global word holds the stamp of its last `store` (busy bit while the store is in flight) or,
// after `store_release`, PC_PUBLISHED | the set of globals the releasing thread had stored or
// seen published (bit i = object i, i < 62). `load_acquire` spins (bounded) until the word is
// non-zero and adds that set to the thread's `published`; a `load` of a global in the set that
// still reads 0 ("never written") is a stale read: the release/acquire pair did not make the
// store visible. `load` is a weak `ld.global` (it may hit L1), as a plain C++ read would be.
#define PC_PUBLISHED (1ull << 62)
__device__ __forceinline__ pc_u64 pc_bit(pc_u32 obj) { return obj < 62 ? (1ull << obj) : 0ull; }
__device__ __forceinline__ pc_u64 pc_ld_weak(volatile pc_u64* g) {
  pc_u64 v;
  asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(g) : "memory");
  return v;
}
__device__ void pc_store(Pc& pc, volatile pc_u64* g, pc_u32 obj, int scope, bool release, pc_u32 stmt, pc_u32 occ) {
  if (pc.dead) return;
  if (!release) {
    pc_u64 mine = pc_stamp(pc, stmt, occ);
    pc_u64 old = *g;
    if (old & PC_BUSY) pc_event(pc, PC_EV_RACE, stmt, old, 1u);
    *g = mine | PC_BUSY;
    pc_hold_open(pc, stmt);
    pc_delay(pc);
    pc_u64 now = *g;
    if (now != (mine | PC_BUSY)) pc_event(pc, PC_EV_RACE, stmt, now, 2u);
    *g = mine;
    pc.stored |= pc_bit(obj);
    return;
  }
  pc_u64 v = PC_PUBLISHED | ((pc.stored | pc.published) & (PC_PUBLISHED - 1));
  if (scope == 0) asm volatile("st.release.cta.global.u64 [%0], %1;" :: "l"(g), "l"(v) : "memory");
  else if (scope == 1) asm volatile("st.release.cluster.global.u64 [%0], %1;" :: "l"(g), "l"(v) : "memory");
  else if (scope == 2) asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(g), "l"(v) : "memory");
  else asm volatile("st.release.sys.global.u64 [%0], %1;" :: "l"(g), "l"(v) : "memory");
}
// `load X`: detector 0 = the stamp changed under the read (or a store was in flight),
// 3 = stale (never written although published to this thread).
__device__ void pc_load(Pc& pc, volatile pc_u64* g, pc_u32 obj, pc_u32 stmt) {
  if (pc.dead) return;
  pc_u64 s1 = pc_ld_weak(g);
  pc_hold_open(pc, stmt);
  pc_delay(pc);
  pc_u64 s2 = pc_ld_weak(g);
  if ((s1 & PC_BUSY) || s2 != s1) pc_event(pc, PC_EV_RACE, stmt, (s1 & PC_BUSY) ? s1 : s2, 0u);
  else if (s1 == 0 && (pc.published & pc_bit(obj))) pc_event(pc, PC_EV_RACE, stmt, 0, 3u);
}
__device__ __forceinline__ pc_u64 pc_ld_acquire(volatile pc_u64* g, int scope) {
  pc_u64 v;
  if (scope == 0) asm volatile("ld.acquire.cta.global.u64 %0, [%1];" : "=l"(v) : "l"(g) : "memory");
  else if (scope == 1) asm volatile("ld.acquire.cluster.global.u64 %0, [%1];" : "=l"(v) : "l"(g) : "memory");
  else if (scope == 2) asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(g) : "memory");
  else asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(g) : "memory");
  return v;
}
__device__ void pc_load_acquire(Pc& pc, volatile pc_u64* g, int scope, pc_u32 stmt) {
  if (pc.dead) return;
  long long t0 = clock64();
  pc_u64 v;
  while ((v = pc_ld_acquire(g, scope)) == 0) {
    if (clock64() - t0 > pc.budget) { pc_hang(pc, stmt, 0, 0); return; }
  }
  if ((v & PC_BUSY) == 0 && (v & PC_PUBLISHED)) pc.published |= v & (PC_PUBLISHED - 1);
}
// Several kernels: thread 0 of each kernel's block of a trial checks in and waits (bounded by
// 64 wait budgets) until every kernel's block has; otherwise a wait could expire before the
// partner kernel is even scheduled. A block that gives up counts in PC_OUT_APART and runs on.
__device__ void pc_rendezvous(Pc& pc, volatile pc_u64* word, pc_u32 kernels) {
  atomicAdd((pc_u64*)word, 1ull);
  long long t0 = clock64();
  while (*word < kernels) {
    if (clock64() - t0 > 64 * pc.budget) { atomicAdd(&pc.out[PC_OUT_APART], 1ull); return; }
  }
}
__device__ __forceinline__ void pc_fence(Pc& pc, int scope) {
  if (pc.dead) return;
  if (scope == 0) asm volatile("fence.acq_rel.cta;" ::: "memory");
  else if (scope == 1) asm volatile("fence.acq_rel.cluster;" ::: "memory");
  else if (scope == 2) asm volatile("fence.acq_rel.gpu;" ::: "memory");
  else asm volatile("fence.acq_rel.sys;" ::: "memory");
}
// ---- end of prelude ----
