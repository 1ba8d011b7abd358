#!/usr/bin/env python3
"""Times PyTorch's NCCL collectives, eager and under CUDA graphs, checking every result.

Run with torchrun, one process per GPU:
    torchrun --nproc-per-node 4 bench/torch_collectives.py [--json out.json]

Under kiln's libnccl.so.2 (LD_PRELOAD) the same script measures kiln; without it, NCCL. The
program is unchanged either way: that is the point of the drop-in.

Collectives: all_reduce (in place, sum), all_gather_into_tensor, reduce_scatter_tensor (sum),
all_to_all_single (equal splits), broadcast (root 0), barrier. Sizes are the collective's
reference bytes as docs/ARCHITECTURE.md (Measuring) counts them: all_reduce and broadcast: the tensor;
all_gather: the whole output; reduce_scatter and all_to_all: the whole input.

Check: every rank's input is a known function of (rank, index) with small integer values, so the
exact expected output is computed locally on each rank (no communication) and compared with
torch.equal; sums stay below 256, exact in every data type. A run that fails a check prints FAIL
in the table and exits 1.

Time: per call, the median over --repeats of (CUDA-event time of --iters back-to-back calls)/iters;
graph mode captures --iters calls in one torch.cuda.CUDAGraph and times its replay the same way.
Bus bandwidth as nccl-tests: allreduce x 2(n-1)/n, allgather/reducescatter/alltoall x (n-1)/n,
broadcast x 1.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

DTYPES = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float64": torch.float64,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
    # PyTorch sends bool as uint8 and turns sum into max; the expected any() is the same.
    "bool": torch.bool,
}
COLLS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "barrier"]


def parse_size(s):
    s = s.strip().upper().rstrip("B").rstrip("I")
    mult = 1
    for suffix, m in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if s.endswith(suffix):
            s, mult = s[:-1], m
    return int(s) * mult


def pattern(rank, n, dtype, device):
    """Rank `rank`'s input of n elements: small integers, exact in every dtype."""
    i = torch.arange(n, device=device, dtype=torch.int64)
    return (((rank + 1) * 3 + i % 13) % 32).to(dtype)


class Case:
    """One collective at one size and dtype: buffers, the call, the expected result."""

    def __init__(self, coll, nbytes, dtype, rank, world, device):
        esize = torch.tensor([], dtype=dtype).element_size()
        self.coll, self.dtype, self.rank, self.world = coll, dtype, rank, world
        n = world
        if coll in ("all_reduce", "broadcast"):
            k = max(1, nbytes // esize)
            self.inp = pattern(rank, k, dtype, device)
            self.out = self.inp
            self.nbytes = k * esize
        elif coll == "all_gather":
            k = max(1, nbytes // esize // n)
            self.inp = pattern(rank, k, dtype, device)
            self.out = torch.empty(n * k, dtype=dtype, device=device)
            self.nbytes = n * k * esize
        elif coll in ("reduce_scatter", "all_to_all"):
            k = max(1, nbytes // esize // n)
            self.inp = pattern(rank, n * k, dtype, device)
            self.out = torch.empty(k if coll == "reduce_scatter" else n * k, dtype=dtype,
                                   device=device)
            self.nbytes = n * k * esize
        else:  # barrier
            self.inp = self.out = None
            self.nbytes = 0
        self.fresh = self.inp.clone() if self.inp is not None else None

    def call(self):
        c = self.coll
        if c == "all_reduce":
            dist.all_reduce(self.inp)
        elif c == "all_gather":
            dist.all_gather_into_tensor(self.out, self.inp)
        elif c == "reduce_scatter":
            dist.reduce_scatter_tensor(self.out, self.inp)
        elif c == "all_to_all":
            dist.all_to_all_single(self.out, self.inp)
        elif c == "broadcast":
            dist.broadcast(self.inp, 0)
        else:
            dist.barrier()

    def reset(self):
        if self.fresh is not None:
            self.inp.copy_(self.fresh)

    def expected(self):
        n, dev, dt = self.world, self.inp.device, self.dtype
        c = self.coll
        if c == "all_reduce":
            k = self.inp.numel()
            acc = torch.zeros(k, dtype=torch.int64, device=dev)
            for r in range(n):
                acc += pattern(r, k, torch.int64, dev)
            return acc.to(dt)
        if c == "broadcast":
            return pattern(0, self.inp.numel(), dt, dev)
        if c == "all_gather":
            k = self.inp.numel()
            return torch.cat([pattern(r, k, dt, dev) for r in range(n)])
        if c == "reduce_scatter":
            k = self.out.numel()
            acc = torch.zeros(n * k, dtype=torch.int64, device=dev)
            for r in range(n):
                acc += pattern(r, n * k, torch.int64, dev)
            return acc[self.rank * k:(self.rank + 1) * k].to(dt)
        if c == "all_to_all":
            k = self.out.numel() // n
            return torch.cat([pattern(s, n * k, dt, dev)[self.rank * k:(self.rank + 1) * k]
                              for s in range(n)])
        return None

    def result(self):
        return self.inp if self.coll in ("all_reduce", "broadcast") else self.out

    def check(self):
        """Runs the call once on fresh inputs; True when this rank's result is exact."""
        if self.coll == "barrier":
            self.call()
            return True
        self.reset()
        if self.out is not None and self.out is not self.inp:
            self.out.fill_(0)
        self.call()
        torch.cuda.synchronize()
        return torch.equal(self.result(), self.expected())

    def busbw(self, us):
        if us <= 0 or self.nbytes == 0:
            return 0.0
        n = self.world
        factor = {"all_reduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(self.coll, (n - 1) / n)
        return self.nbytes / (us * 1e-6) / 1e9 * factor


def time_eager(case, iters, repeats):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(repeats):
        if case.coll == "barrier":
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(iters):
                case.call()
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) * 1e6 / iters)
            continue
        start.record()
        for _ in range(iters):
            case.call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(samples)


def time_graph(case, iters, repeats):
    """Captures iters calls in one graph; returns (us per call, result exact after a replay)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        case.call()  # warm up on the side stream, as torch's graph docs ask
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g1 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1):
        case.call()
    gn = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gn):
        for _ in range(iters):
            case.call()
    # Correctness of the captured call: one replay on fresh inputs.
    case.reset()
    if case.out is not None and case.out is not case.inp:
        case.out.fill_(0)
    g1.replay()
    torch.cuda.synchronize()
    ok = torch.equal(case.result(), case.expected())
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gn.replay()
    samples = []
    for _ in range(repeats):
        start.record()
        gn.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / iters)
    del g1, gn
    return statistics.median(samples), ok


def all_ok(ok, device):
    t = torch.tensor([1 if ok else 0], dtype=torch.int32, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--colls", default=",".join(COLLS))
    ap.add_argument("--sizes", default="1K,64K,1M,16M,64M")
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--no-graph", action="store_true", help="eager only")
    ap.add_argument("--label", default=os.environ.get("KILN_BENCH_LABEL", ""))
    ap.add_argument("--json", help="write the rows here (rank 0)")
    args = ap.parse_args()

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    colls = [c for c in args.colls.split(",") if c]
    for c in colls:
        if c not in COLLS:
            sys.exit(f"unknown collective {c}; known: {', '.join(COLLS)}")
    dtypes = []
    for d in args.dtypes.split(","):
        if d not in DTYPES:
            sys.exit(f"unknown dtype {d}; known: {', '.join(DTYPES)}")
        dtypes.append(d)
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]

    rows, failed = [], False
    for coll in colls:
        for dname in (dtypes if coll != "barrier" else ["-"]):
            dtype = DTYPES.get(dname, torch.float32)
            for nbytes in (sizes if coll != "barrier" else [0]):
                case = Case(coll, nbytes, dtype, rank, world, device)
                for _ in range(3):
                    case.call()
                ok = all_ok(case.check(), device)
                us = time_eager(case, args.iters, args.repeats)
                row = dict(coll=coll, dtype=dname, bytes=case.nbytes, mode="eager", us=us,
                           busbw=case.busbw(us), ok=ok, ranks=world, label=args.label)
                rows.append(row)
                if coll != "barrier" and not args.no_graph:
                    gus, gok = time_graph(case, args.iters, args.repeats)
                    gok = all_ok(gok, device)
                    rows.append(dict(row, mode="graph", us=gus, busbw=case.busbw(gus), ok=gok))
                failed |= not all(r["ok"] for r in rows[-2:])
                del case
    if rank == 0:
        print(f"{'collective':<15}{'dtype':<10}{'bytes':>12} {'mode':<6}{'time_us':>10}"
              f"{'busbw_GBps':>12}  check   [{world} ranks{', ' + args.label if args.label else ''}]")
        for r in rows:
            print(f"{r['coll']:<15}{r['dtype']:<10}{r['bytes']:>12} {r['mode']:<6}{r['us']:>10.2f}"
                  f"{r['busbw']:>12.1f}  {'ok' if r['ok'] else 'FAIL'}")
        if args.json:
            with open(args.json + ".tmp", "w") as f:
                json.dump(rows, f, indent=1)
            os.replace(args.json + ".tmp", args.json)
    dist.destroy_process_group()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
