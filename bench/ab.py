#!/usr/bin/env python3
"""Two builds (or settings) of kiln side by side from coll_bench CSVs of the same call: per
collective and size, kiln's time (what it runs by default, as tables.py reads it) in every run of
A and of B, NCCL's in all of them, and B's median against A's; rows with any differing elements
are marked WRONG. Use it for A/B runs alternated in one device call (A, B, A, B ...). --col
compares one of coll_bench's kiln columns instead (kiln-baked, kiln-interp, kiln-sym); it is what
compares runs of coll_bench --shared, which have no NCCL column.

usage: ab.py [--col COLUMN] A1.csv [A2.csv ...] -- B1.csv [B2.csv ...]
"""
import csv
import statistics
import sys

from tables import kiln_us, size_name


def load(paths, col=None):
    """(coll, size) -> ([kiln us per run], [nccl us per run], wrong)."""
    cells = {}
    for p in paths:
        with open(p) as f:
            for row in csv.DictReader(f):
                try:
                    k = float(row[col + "_us"]) if col else kiln_us(row)
                except (KeyError, ValueError):
                    k = None
                if k is None:  # without --col: also when the row has no NCCL time (kiln_us)
                    continue
                key = (row["coll"] + (" in place" if row["inplace"] == "1" else ""), int(row["size"]))
                ks, ns, bad = cells.get(key, ([], [], False))
                errs = [row.get(c + "_err", "") for c in ("kiln-baked", "kiln-interp", "kiln-sym")]
                nccl = [float(row["nccl_us"])] if row.get("nccl_us") else []  # none: coll_bench --shared
                cells[key] = (ks + [k], ns + nccl, bad or any(e not in ("", "0") for e in errs))
    return cells


def main(argv):
    col = None
    if argv[:1] == ["--col"] and len(argv) > 1:
        col, argv = argv[1], argv[2:]
    if "--" not in argv or argv.index("--") in (0, len(argv) - 1):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    i = argv.index("--")
    a, b = load(argv[:i], col), load(argv[i + 1:], col)
    print("%-15s %8s  %-17s %-17s %-23s %s" % ("coll", "size", "A kiln us", "B kiln us", "NCCL us", "B/A"))
    for key in sorted(set(a) & set(b)):
        ka, na, bada = a[key]
        kb, nb, badb = b[key]
        fmt = lambda xs: " ".join("%.2f" % x for x in xs) or "-"
        ratio = statistics.median(kb) / statistics.median(ka)
        print("%-15s %8s  %-17s %-17s %-23s %.3f%s" % (key[0], size_name(key[1]), fmt(ka), fmt(kb), fmt(na + nb),
                                                      ratio, " WRONG" if bada or badb else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
