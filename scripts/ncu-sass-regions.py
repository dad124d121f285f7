#!/usr/bin/env python3
"""Where a kernel's instructions and stalls go, phase by phase.

    ncu ... --section SourceCounters -o REP CMD            (scripts/device-session.sh s8)
    ncu --import REP.ncu-rep --page source --csv --print-source sass > K.csv
    scripts/ncu-sass-regions.py K.csv [BLOCKS]

Splits the SASS listing at its barriers (BAR.SYNC: the phases of a kernel
that stages data in shared memory) and prints, per region, the warp
instructions executed (per block when BLOCKS, the launch's grid size, is
given), their share, the share of stall samples, and the region's most
frequent opcodes. Session 8 found k_tb_xfused's run-time bit reversal this
way (docs/gpu-notes.md)."""
import collections
import csv
import re
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = list(csv.reader(open(sys.argv[1], newline="")))
    blocks = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    head = next(i for i, r in enumerate(rows) if "Source" in r and "Address" in r)
    hdr = rows[head]
    col = {k: hdr.index(k) for k in ("Address", "Source", "Instructions Executed",
                                     "Warp Stall Sampling (All Samples)")}
    regions, cur = [], None
    tot_i = tot_s = 0
    for r in rows[head + 1:]:
        if len(r) <= max(col.values()):
            continue
        src = r[col["Source"]].strip()
        n = int(r[col["Instructions Executed"]] or 0) / blocks
        st = int(r[col["Warp Stall Sampling (All Samples)"]] or 0)
        if cur is None:
            cur = [r[col["Address"]], 0.0, 0, collections.Counter()]
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split()[0] if src else "?"
        cur[1] += n
        cur[2] += st
        cur[3][op] += n
        tot_i += n
        tot_s += st
        if op.startswith("BAR.SYNC") or op == "EXIT":
            regions.append(cur + [r[col["Address"]]])
            cur = None
    if cur:
        regions.append(cur + ["end"])
    unit = "per block" if blocks != 1.0 else "total"
    print(f"warp instructions {unit}: {tot_i:.0f}")
    for a, n, st, ops, b in regions:
        if n == 0:
            continue
        top = ", ".join(f"{o} {c:.0f}" for o, c in ops.most_common(5))
        print(f"{a[-6:]}..{b[-6:]}  {n:10.0f} ({100 * n / tot_i:4.1f} %)  stalls {100 * st / max(tot_s, 1):4.1f} %  {top}")


if __name__ == "__main__":
    main()
