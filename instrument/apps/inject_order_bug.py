#!/usr/bin/env python3
"""Inject a bug into the PTX of the Pingpong GEMM (pingpong_gemm.cu): the math warp groups'
order barrier starts the wrong warp group (issue 27's test of `phasecheck fuzz --app`).

CUTLASS's OrderedSequenceBarrier gives group 0 the opposite phase so that it passes first
(`stage_({0, params.group_id == 0, 0})`, cutlass/pipeline/sm90_pipeline.hpp, the constructor;
NVIDIA/cutlass, include/cutlass/pipeline/sm90_pipeline.hpp). nvcc compiles that comparison to
`setp.eq.s32 %p, %group_id, 0` under the `.loc` of that line. This script changes the compared
value in the PTX:

  --start wrong   group 1 starts (compare with 1): the two consumer groups run in the wrong order
  --start none    no group starts (compare with 2): both wait for each other

  inject_order_bug.py [--start wrong|none] IN.ptx OUT.ptx
"""
import re
import sys


def main(argv):
    start = "wrong"
    if len(argv) >= 2 and argv[0] == "--start":
        start, argv = argv[1], argv[2:]
    if start not in ("wrong", "none") or len(argv) != 2:
        sys.exit(__doc__)
    src, dst = argv
    lines = open(src).read().split("\n")
    files = [m.group(1) for l in lines
             if (m := re.match(r'\s*\.file\s+(\d+)\s+"[^"]*sm90_pipeline\.hpp"', l))]
    if len(files) != 1:
        sys.exit(f"{src}: no single .file entry for sm90_pipeline.hpp")
    loc = re.compile(r"\s*\.loc\s+%s\s+1299\s" % files[0])
    setp = re.compile(r"(\s*setp\.eq\.s32\s+%p\d+,\s*%r\d+,\s*)0;")
    changed = []
    for i, l in enumerate(lines):
        if not loc.match(l):
            continue
        for j in range(i + 1, min(i + 4, len(lines))):
            m = setp.match(lines[j])
            if m:
                lines[j] = m.group(1) + ("1;" if start == "wrong" else "2;") + \
                    "  // phasecheck test: the order barrier starts the " + \
                    ("wrong warp group" if start == "wrong" else "no warp group")
                changed.append(j + 1)
                break
    if len(changed) != 1:
        sys.exit(f"{src}: expected one order-barrier phase comparison, found {changed}")
    open(dst, "w").write("\n".join(lines))
    print(f"{dst}: PTX line {changed[0]} changed")


if __name__ == "__main__":
    main(sys.argv[1:])
