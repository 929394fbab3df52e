#!/usr/bin/env python3
"""Inject one of a few bugs into the PTX of the Pingpong GEMM (pingpong_gemm.cu) for the
agreement matrix on a real kernel (issue 27 point 4): the checker's verdict on the bugged PTX
against what `phasecheck fuzz --app` shows when the same PTX runs, instrumented, in the app.

Each bug is found by the `.loc` of the CUTLASS source line it belongs to, not by PTX line
numbers (CUTLASS: NVIDIA/cutlass, include/cutlass/pipeline/sm90_pipeline.hpp and
include/cutlass/arch/barrier.h, as in the nvidia-cutlass 4.2.0 package):

  count        the mainloop pipeline's empty barriers expect one consumer arrival more
               (PipelineTmaAsync's constructor, sm90_pipeline.hpp:320 > barrier.h:394, the
               second mbarrier.init of the first group of inits)
  bytes        the producer's arrive.expect_tx announces 8 192 bytes more than the TMA
               loads deliver (TmaTransactionBytes, sm90_pipeline.hpp:516 > barrier.h:583)
  release      the consumers never release a stage: the arrives of PipelineTmaAsync's
               consumer_release (sm90_pipeline.hpp:491 > :630 > barrier.h:483/485) removed
  exit         the producer's elected thread returns just before its first arrive.expect_tx
               (an early exit: it never announces the bytes of a stage)
  order-wrong  the math order barrier starts warp group 1 (a starting parity), as
               inject_order_bug.py --start wrong
  order-none   the math order barrier starts no warp group, as inject_order_bug.py --start none

  fi-vbytes    (FlashInfer's sm90 prefill, flashinfer_prefill_sm90.ptx) the producer's
               arrive.expect_tx for each V tile announces 8 192 bytes more than the V loads
               deliver (FlashInfer mainloop.cuh:237-238, pipeline_v.producer_acquire, from
               prefill_sm90.cuh:197)

               (the 4x-unrolled copy of the K/V loop; the captured launch, 4 KV tiles, runs
               another copy of it, so this bug is not on its path: a negative control)
  fi-allbytes  (FlashInfer) every arrive.expect_tx (Q, K and V) announces 8 192 bytes more

  inject_bugs.py BUG IN.ptx OUT.ptx
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def file_index(lines, suffix):
    idx = [m.group(1) for l in lines if (m := re.match(r'\s*\.file\s+(\d+)\s+"[^"]*%s"' % re.escape(suffix), l))]
    if len(idx) != 1:
        sys.exit(f"no single .file entry for {suffix}")
    return idx[0]


def with_more_bytes(prefix, reg):
    """The `mbarrier.arrive.expect_tx` whose operands start with `prefix`, announcing 8192
    bytes more than register `reg` holds."""
    return (f"\t.reg .b32 %pc_tx; add.u32 %pc_tx, {reg}, 8192;  // phasecheck test: 8192 bytes more\n"
            f"{prefix}%pc_tx;")


def count(lines):
    inits = [i for i, l in enumerate(lines) if re.match(r"\s*mbarrier\.init\.shared::cta\.b64\s", l)]
    reg = re.search(r"\],\s*(%r\d+);", lines[inits[1]]).group(1)
    for j in range(inits[1], 0, -1):
        m = re.match(r"(\s*mov\.u32\s+%s,\s*)(\d+);" % re.escape(reg), lines[j])
        if m:
            n = int(m.group(2))
            lines[j] = f"{m.group(1)}{n + 1};  // phasecheck test: {n} -> {n + 1} arrivals"
            return [j]
    sys.exit("no mov of the empty barriers' arrival count")


def expect_tx_line(lines):
    hits = [i for i, l in enumerate(lines) if re.match(r"\s*mbarrier\.arrive\.expect_tx\.shared::cta\.b64\s", l)]
    if len(hits) != 1:
        sys.exit(f"expected one arrive.expect_tx, found {len(hits)}")
    return hits[0]


def bytes_(lines):
    i = expect_tx_line(lines)
    m = re.match(r"(\s*mbarrier\.arrive\.expect_tx\.shared::cta\.b64\s+_,\s*\[%r\d+\],\s*)(%r\d+);", lines[i])
    lines[i] = with_more_bytes(m.group(1), m.group(2))
    return [i]


def release(lines):
    f12 = file_index(lines, "cutlass/pipeline/sm90_pipeline.hpp")
    rel = re.compile(r"\s*\.loc\s+%s\s+630\s.*inlined_at\s+%s\s+491\s" % (f12, f12))
    changed = []
    last_rel = -10**9
    for i, l in enumerate(lines):
        if rel.match(l):
            last_rel = i
        elif re.match(r"\s*mbarrier\.arrive\.shared::cluster\.b64\s", l) and i - last_rel < 30:
            lines[i] = "\t// phasecheck test: consumer_release's arrive removed"
            changed.append(i)
    if not changed:
        sys.exit("no consumer_release arrive found")
    return changed


def exit_(lines):
    i = expect_tx_line(lines)
    for j in range(i, i - 10, -1):
        if lines[j].strip() == "// begin inline asm":
            lines.insert(j, "\tret;  // phasecheck test: the producer returns before its arrive.expect_tx")
            return [j]
    sys.exit("no inline asm block around the arrive.expect_tx")


def fi_vbytes(lines):
    f5 = file_index(lines, "hopper/mainloop.cuh")
    vloc = re.compile(r"\s*\.loc\s+%s\s+23[78]\s.*inlined_at\s+1\s+197\s" % f5)
    anyloc = re.compile(r"\s*\.loc\s+\d+\s+\d+\s.*inlined_at\s+1\s+\d+\s")
    tx = re.compile(r"(\s*mbarrier\.arrive\.expect_tx\.shared::cta\.b64\s+_,\s*\[%r\d+\],\s*)(%r\d+);")
    in_v, changed = False, []
    for i, l in enumerate(lines):
        if anyloc.match(l):
            in_v = bool(vloc.match(l))
        m = tx.match(l)
        if m and in_v:
            lines[i] = with_more_bytes(m.group(1), m.group(2))
            changed.append(i)
    if not changed:
        sys.exit("no V expect_tx found")
    return changed


def fi_vbytes_by_offset(lines):
    tx = re.compile(r"(\s*mbarrier\.arrive\.expect_tx\.shared::cta\.b64\s+_,\s*\[(%r\d+)\],\s*)(%r\d+);")
    changed = []
    for i, l in enumerate(lines):
        m = tx.match(l)
        if not m:
            continue
        addr = re.compile(r"\s*add\.s32\s+%s,\s*%%r\d+,\s*(\d+);" % re.escape(m.group(2)))
        off = next((int(a.group(1)) for j in range(i, max(i - 200, 0), -1)
                    if (a := addr.match(lines[j]))), None)
        if off in (229424, 229432):
            lines[i] = with_more_bytes(m.group(1), m.group(3))
            changed.append(i)
    if not changed:
        sys.exit("no arrive.expect_tx on a V full barrier found")
    return changed


def fi_allbytes(lines):
    tx = re.compile(r"(\s*mbarrier\.arrive\.expect_tx\.shared::cta\.b64\s+_,\s*\[%r\d+\],\s*)(%r\d+);")
    changed = []
    for i, l in enumerate(lines):
        m = tx.match(l)
        if m:
            lines[i] = with_more_bytes(m.group(1), m.group(2))
            changed.append(i)
    if not changed:
        sys.exit("no arrive.expect_tx found")
    return changed


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    bug, src, dst = argv
    if bug in ("order-wrong", "order-none"):
        subprocess.run([sys.executable, os.path.join(HERE, "inject_order_bug.py"), "--start",
                        bug.split("-")[1], src, dst], check=True)
        return
    fns = {"count": count, "bytes": bytes_, "release": release, "exit": exit_, "fi-unrolled": fi_vbytes, "fi-vbytes": fi_vbytes_by_offset, "fi-allbytes": fi_allbytes}
    if bug not in fns:
        sys.exit(__doc__)
    lines = open(src).read().split("\n")
    changed = fns[bug](lines)
    open(dst, "w").write("\n".join(lines))
    print(f"{dst}: {bug}: PTX line(s) {', '.join(str(c + 1) for c in changed)} changed")


if __name__ == "__main__":
    main(sys.argv[1:])
