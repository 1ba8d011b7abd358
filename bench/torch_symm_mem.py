"""kiln's drop-in under PyTorch's symmetric memory (NCCL backend), checked exactly.

Run with torchrun (one process per GPU), LD_PRELOAD=kiln's libnccl.so.2 and TORCH_SYMMMEM=NCCL:
tensors from torch.distributed._symmetric_memory.empty() are registered as NCCL symmetric windows
at rendezvous (ncclCommWindowRegister), which kiln's libnccl.so.2 adds to its communicator, so
collectives whose output is such a tensor go zero copy from KILN_SYM_DIRECT_BYTES. Each rank draws
every rank's input from fixed seeds (small integers, exact in float32), runs allreduce in place,
allgather, alltoall and reducescatter into symmetric tensors at 4 KiB, 16 MiB and 64 MiB, and
compares with the sums and pieces it computes itself. Prints "rank R: K/N exact"; exit 1 on any
difference.
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    import torch.distributed._symmetric_memory as symm_mem

    # The NCCL backend's rendezvous looks the communicator up: make it exist first.
    dist.all_reduce(torch.ones(1, device=dev))
    try:
        symm_mem.set_backend("NCCL")
    except Exception as e:  # already chosen through TORCH_SYMMMEM
        print(f"rank {rank}: set_backend: {e}", flush=True)
    group = dist.group.WORLD.group_name
    checks = bad = 0

    def sym(numel):
        t = symm_mem.empty(numel, dtype=torch.float32, device=dev)
        symm_mem.rendezvous(t, group=group)
        return t

    for numel in (1 << 10, 1 << 22, 1 << 24):
        srcs = []
        for r in range(world):
            g = torch.Generator(device=dev)
            g.manual_seed(1000 + 7 * r + numel)
            srcs.append(torch.randint(-8, 8, (numel,), device=dev, generator=g, dtype=torch.int32).float())
        mine = srcs[rank]
        results = []
        t = sym(numel)
        t.copy_(mine)
        dist.all_reduce(t)
        results.append(("all_reduce", t, torch.stack(srcs).sum(0)))
        o = sym(numel * world)
        dist.all_gather_into_tensor(o, mine)
        results.append(("all_gather", o, torch.cat(srcs)))
        a = sym(numel)
        dist.all_to_all_single(a, mine)
        piece = numel // world
        results.append(("all_to_all", a, torch.cat([s[rank * piece:(rank + 1) * piece] for s in srcs])))
        rs = sym(piece)
        dist.reduce_scatter_tensor(rs, mine)
        results.append(("reduce_scatter", rs, torch.stack(srcs).sum(0)[rank * piece:(rank + 1) * piece]))
        torch.cuda.synchronize()
        for name, got, want in results:
            checks += 1
            if not torch.equal(got, want):
                bad += 1
                diff = (got != want).sum().item()
                print(f"rank {rank}: {name} of {numel} floats: {diff} elements differ", flush=True)
    print(f"rank {rank}: {checks - bad}/{checks} exact", flush=True)
    dist.destroy_process_group()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
