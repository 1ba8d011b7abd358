#!/usr/bin/env python3
"""Chooses the byte ranges of baked plans from coll_bench --sweep CSVs.

For every (collective, ranks, form) and size it takes the fastest baked plan whose results were
correct (errors 0), smooths single-size outliers, and turns runs of one plan into ranges whose
boundaries lie halfway (geometrically) between the measured sizes. Prints one `kiln bake` command
per chosen plan (files looked up by plan name in --plans), plus the winners per size.

usage: choose_ranges.py --plans DIR [--out plans/baked] [--kiln build/kiln] SWEEP.csv...
"""
import argparse
import csv
import glob
import math
import os
import re
import sys


def plan_files(d):
    names = {}
    for f in sorted(glob.glob(os.path.join(d, "*.xml"))):
        with open(f) as fh:
            m = re.search(r'<algo[^>]*\sname="([^"]+)"', fh.read(4096))
        if m:
            names[m.group(1)] = f
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plans", required=True, help="folder of the swept plans (XML)")
    ap.add_argument("--out", default="plans/baked")
    ap.add_argument("--kiln", default="build/kiln")
    ap.add_argument("csv", nargs="+")
    a = ap.parse_args()
    files = plan_files(a.plans)
    best = {}  # (coll, n, inplace) -> {size: (us, plan, nccl_us)}
    for path in a.csv:
        with open(path) as fh:
            for row in csv.DictReader(fh):
                us, err = row.get("kiln-baked_us", ""), row.get("kiln-baked_err", "")
                if not us or err not in ("0",):
                    continue
                key = (row["coll"], int(row["nranks"]), int(row["inplace"]))
                size = int(row["size"])
                cur = best.setdefault(key, {}).get(size)
                nccl = float(row["nccl_us"]) if row.get("nccl_us") else float("nan")
                if cur is None or float(us) < cur[0]:
                    best[key][size] = (float(us), row["plan"], nccl)
    for key in sorted(best):
        sizes = sorted(best[key])
        win = [best[key][s][1] for s in sizes]
        for i in range(1, len(win) - 1):  # a lone winner between two of another plan is noise
            if win[i - 1] == win[i + 1] != win[i]:
                win[i] = win[i - 1]
        print("# %s %d ranks %s" % (key[0], key[1], "in place" if key[2] else "out of place"))
        for s, w in zip(sizes, win):
            us, p, nccl = best[key][s]
            print("#   %12d  %-36s %9.2f us  nccl %9.2f us  %5.2fx" % (s, w, best[key][s][0], nccl,
                                                                       nccl / us if us > 0 else 0))
        runs = []
        for s, w in zip(sizes, win):
            if runs and runs[-1][0] == w:
                runs[-1][2] = s
            else:
                runs.append([w, s, s])
        for i, (w, lo, hi) in enumerate(runs):
            mn = 0 if i == 0 else int(math.sqrt(runs[i - 1][2] * lo)) + 1
            mx = "inf" if i == len(runs) - 1 else str(int(math.sqrt(hi * runs[i + 1][1])))
            f = files.get(w)
            if not f:
                print("# no file for plan %s in %s" % (w, a.plans))
                continue
            print("%s bake -d %s --min %d --max %s %s" % (a.kiln, a.out, mn, mx, f))


if __name__ == "__main__":
    sys.exit(main())
