#!/usr/bin/env python3
"""Writes a one-shot allreduce plan (MSCCL XML) for small sizes: every rank sends its whole input
to every peer at once, and reduces what it receives straight from the FIFOs into its output.

Per rank r and instance i (chunk i of the input), one threadblock per peer d = r+1+m (m = 0..n-2):
  step 0: s   input[i]                       (to peer d)
  step 1: rrc output[i] <- (m == 0 ? input[i] : output[i]) + received   (waits on tb m-1 step 1)
The dependency chain orders the reductions into output[i]; the transfers all run at once, so
the latency is one hop, where the two-shot direct plan needs two. reducescatter: the same with
input piece d (chunk d*I+i) sent to peer d and this rank's own piece starting the chain. On 2
ranks the chain is one block per instance that sends and then reduces (no scratch, no second
block to wait for); --inplace --form chain writes that form in place (2 ranks only).

--form gather (out of place; allreduce or reducescatter) and --inplace (allreduce, result in the
input buffer, o_chunks=0): the peer threadblocks receive into scratch; one more threadblock per
instance waits (nops) until every peer threadblock has sent and received, then reduces the scratch
slots into the result in one block (see scratch_rank).

usage: oneshot-plan.py --ranks N [--instances I] [--proto LL|Simple] [--inplace]
                       [--coll allreduce|reducescatter] [--form chain|gather] [--min B] [--max B] -o OUT.xml
Check the result with `kiln verify OUT.xml`."""
import argparse
import os
import sys


def scratch_rank(out, n, I, r, coll, inplace):
    """One rank of the forms that receive into scratch (--form gather, and --inplace): per instance
    i, one threadblock per peer sends this rank's piece for that peer and receives the peer's
    piece for this rank into its own scratch slot, all at once; one more threadblock waits (nops)
    for all of them, then reduces the scratch slots into the result - the output, after copying
    this rank's own piece there (gather), or this rank's own piece of the input (in place). The
    reduction happens in one block, without a block-to-block chain. Appends the threadblocks and
    closes <gpu>."""
    res = "i" if inplace else "o"
    t = 0
    for i in range(I):
        first = t
        for m in range(n - 1):
            d = (r + 1 + m) % n
            src = i if coll == "allreduce" else d * I + i
            back = (r - d - 1) % n  # the slot rank d uses for what it receives from this rank
            out.append('    <tb id="%d" send="%d" recv="%d" chan="%d">' % (t, d, d, i))
            out.append('      <step s="0" type="s" srcbuf="i" srcoff="%d" dstbuf="s" dstoff="%d" cnt="1" '
                       'depid="-1" deps="-1" hasdep="0"/>' % (src, i * (n - 1) + back))
            out.append('      <step s="1" type="r" srcbuf="s" srcoff="%d" dstbuf="s" dstoff="%d" cnt="1" '
                       'depid="-1" deps="-1" hasdep="1"/>' % (i * (n - 1) + m, i * (n - 1) + m))
            out.append('    </tb>')
            t += 1
        out.append('    <tb id="%d" send="-1" recv="-1" chan="%d">' % (t, i))
        s = 0
        for m in range(n - 1):
            out.append('      <step s="%d" type="nop" srcbuf="i" srcoff="0" dstbuf="i" dstoff="0" cnt="0" '
                       'depid="%d" deps="1" hasdep="0"/>' % (s, first + m))
            s += 1
        if not inplace:
            own = i if coll == "allreduce" else r * I + i
            out.append('      <step s="%d" type="cpy" srcbuf="i" srcoff="%d" dstbuf="o" dstoff="%d" cnt="1" '
                       'depid="-1" deps="-1" hasdep="0"/>' % (s, own, i))
            s += 1
        for m in range(n - 1):
            out.append('      <step s="%d" type="re" srcbuf="s" srcoff="%d" dstbuf="%s" dstoff="%d" cnt="1" '
                       'depid="-1" deps="-1" hasdep="0"/>' % (s, i * (n - 1) + m, res, i))
            s += 1
        out.append('    </tb>')
        t += 1
    out.append('  </gpu>')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--instances", type=int, default=1)
    ap.add_argument("--proto", default="LL", choices=["LL", "Simple", "LL128"])
    ap.add_argument("--inplace", action="store_true")
    ap.add_argument("--coll", default="allreduce", choices=["allreduce", "reducescatter"])
    ap.add_argument("--form", default=None, choices=["chain", "gather"],
                    help="out of place: reduce through a chain of blocks, or gather into scratch "
                         "and reduce in one block")
    ap.add_argument("--min", type=int, default=0)
    ap.add_argument("--max", type=int, default=9223372036854775807)
    ap.add_argument("-o", required=True)
    a = ap.parse_args()
    n, I = a.ranks, a.instances
    if n < 2 or I < 1 or a.min < 0 or a.min > a.max:
        ap.error("need --ranks >= 2, --instances >= 1, 0 <= --min <= --max")
    if a.coll == "reducescatter" and a.inplace:
        ap.error("reducescatter: out of place only")
    if a.inplace and a.form == "gather":
        ap.error("--inplace has its own form (scratch, then one reducing block)")
    # In place with --form chain: only on 2 ranks (the one peer block of an instance sends the
    # input before reducing into it; with more peers another block could still be sending it).
    if a.inplace and a.form == "chain" and n != 2:
        ap.error("--inplace --form chain: 2 ranks only")
    # The form written: chain, gather, or (in place without --form) scratch.
    form = a.form or ("scratch" if a.inplace else "chain")
    name = "oneshot-%s-n%d-i%d%s%s%s" % (a.coll, n, I, "-inplace" if a.inplace else "",
                                         "-gather" if form == "gather" else
                                         "-chain" if form == "chain" and a.inplace else "",
                                         "" if a.proto == "Simple" else "-" + a.proto)
    nck = I * n if a.coll == "reducescatter" else I
    out = ['<algo name="%s" proto="%s" nchannels="%d" nchunksperloop="%d" ngpus="%d" coll="%s" '
           'inplace="%d" outofplace="%d" minBytes="%d" maxBytes="%d">'
           % (name, a.proto, I, nck, n, a.coll, a.inplace, not a.inplace, a.min, a.max)]
    for r in range(n):
        if form != "chain":
            out.append('  <gpu id="%d" i_chunks="%d" o_chunks="%d" s_chunks="%d">'
                       % (r, nck, 0 if a.inplace else I, I * (n - 1)))
            scratch_rank(out, n, I, r, a.coll, a.inplace)
            continue
        out.append('  <gpu id="%d" i_chunks="%d" o_chunks="%d" s_chunks="0">' % (r, nck, 0 if a.inplace else I))
        res = "i" if a.inplace else "o"
        t = 0
        for i in range(I):
            for m in range(n - 1):
                d = (r + 1 + m) % n
                out.append('    <tb id="%d" send="%d" recv="%d" chan="%d">' % (t, d, d, i))
                # reducescatter: peer d's piece goes to d; this rank's own piece starts the chain
                sent = d * I + i if a.coll == "reducescatter" else i
                own = r * I + i if a.coll == "reducescatter" else i
                out.append('      <step s="0" type="s" srcbuf="i" srcoff="%d" dstbuf="%s" dstoff="%d" cnt="1" '
                           'depid="-1" deps="-1" hasdep="0"/>' % (sent, res, i))
                dep = (t - 1, 1) if m > 0 else (-1, -1)
                last = m == n - 2
                out.append('      <step s="1" type="rrc" srcbuf="%s" srcoff="%d" dstbuf="%s" dstoff="%d" cnt="1" '
                           'depid="%d" deps="%d" hasdep="%d"/>' % ("i" if m == 0 else res, own if m == 0 else i,
                                                                   res, i, dep[0], dep[1], 0 if last else 1))
                out.append('    </tb>')
                t += 1
        out.append('  </gpu>')
    out.append('</algo>')
    tmp = a.o + ".tmp%d" % os.getpid()
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, a.o)


if __name__ == "__main__":
    sys.exit(main())
