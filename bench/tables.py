#!/usr/bin/env python3
"""Markdown tables from coll_bench CSVs: one row per size, one column per collective (and the
in-place allreduce), each cell "kiln µs / NCCL µs (speed-up)", where kiln is what kiln runs by
default (the speedup column's choice: the sym kernel where marked with '*', else the plan's
default kernel); a cell is bold where kiln is slower than NCCL.

usage: tables.py [--title TEXT] [--min BYTES] [--max BYTES] OUT_OF_PLACE.csv [IN_PLACE.csv]
"""
import argparse
import csv
import sys

COLLS = ["allgather", "alltoall", "reducescatter", "allreduce"]


def size_name(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d %s" % (b // div, unit)
    return "%d B" % b


def kiln_us(row):
    """The time of what kiln runs by default for this row: the kiln column that coll_bench's
    speedup column was taken from (the sym kernel where the sym column is marked '*', else the
    baked or interpreted plan, whichever gives that speed-up), as measured (NCCL's time over the
    rounded speed-up would be off by up to 0.05%)."""
    try:
        nccl, speedup = float(row["nccl_us"]), float(row["speedup"])
    except (KeyError, ValueError):
        return None
    if speedup <= 0:
        return None
    cols = ["kiln-sym_us"] if row.get("sym", "").endswith("*") else ["kiln-baked_us", "kiln-interp_us"]
    best = None
    for c in cols:
        try:
            us = float(row[c])
        except (KeyError, ValueError):
            continue
        if us > 0 and (best is None or abs(nccl / us - speedup) < abs(nccl / best - speedup)):
            best = us
    return best if best is not None else nccl / speedup


def load(path, inplace_only=False):
    cells = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            k = kiln_us(row)
            if k is None or not row.get("nccl_us"):
                continue
            coll = row["coll"] + (" in place" if row["inplace"] == "1" else "")
            if inplace_only and row["inplace"] != "1":
                continue
            errs = [row.get(c + "_err", "") for c in ("kiln-baked", "kiln-interp", "kiln-sym")]
            bad = any(e not in ("", "0") for e in errs)
            cells[(coll, int(row["size"]))] = (k, float(row["nccl_us"]), bad)
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--title", default="")
    ap.add_argument("--min", type=int, default=0)
    ap.add_argument("--max", type=int, default=1 << 62)
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args()
    cells = {}
    for i, p in enumerate(a.csv):
        cells.update(load(p, inplace_only=i > 0))
    cols = [c for c in COLLS + ["allreduce in place"] if any(k[0] == c for k in cells)]
    sizes = sorted({k[1] for k in cells if a.min <= k[1] <= a.max})
    if a.title:
        print("**%s** — kiln µs / NCCL µs (speed-up = NCCL / kiln; bold: kiln slower)\n" % a.title)
    print("| size | " + " | ".join(cols) + " |")
    print("| --- |" + " --- |" * len(cols))
    for s in sizes:
        out = []
        for c in cols:
            v = cells.get((c, s))
            if not v:
                out.append("")
                continue
            k, n, bad = v
            txt = "%.2f / %.2f (%.2f×)" % (k, n, n / k)
            if bad:
                txt += " WRONG"
            out.append("**%s**" % txt if n / k < 1 else txt)
        print("| %s | %s |" % (size_name(s), " | ".join(out)))


if __name__ == "__main__":
    sys.exit(main())
