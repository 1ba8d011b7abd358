/* Plans with memory steps as passes (kiln/passes.h): the sweeps a runtime makes of them. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "kiln/passes.h"

/* Rank p's scratch region of source rank q (the sources in rank order, p skipped). */
static int region(int p, int q) { return q < p ? q : q - 1; }

static kilnStep* mem_step(kilnThreadblock* tb, kilnStepType_t type, kilnBuffer_t sb, int so, kilnBuffer_t db,
                          int dof, int cnt, int peer) {
  kilnStep* s = kilnPlanAddStep(tb, type, sb, so, db, dof, cnt);
  cr_assert(s != NULL);
  s->peer = peer;
  return s;
}

/* An n-rank one-shot allreduce of one chunk, out of place: every rank puts its input into every
 * peer's scratch (proto), then reduces in rank order into its output; Simple plans raise a signal
 * to every peer after the puts and wait for each peer right before its operand. */
static kilnPlan* oneshot(int n, kilnProto_t proto) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("oneshot", KILN_COLL_ALLREDUCE, n, &p), KILN_SUCCESS));
  p->proto = proto;
  p->nchunksperloop = 1;
  p->inplace = false;
  p->outofplace = true;
  for (int r = 0; r < n; r++) {
    p->gpus[r].i_chunks = p->gpus[r].o_chunks = 1;
    p->gpus[r].s_chunks = n - 1;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    for (int m = 1; m < n; m++) {
      const int q = (r + m) % n;
      mem_step(tb, KILN_STEP_PUT, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, region(q, r), 1, q);
    }
    if (proto == KILN_PROTO_SIMPLE)
      for (int m = 1; m < n; m++)
        mem_step(tb, KILN_STEP_SIGNAL, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0, (r + m) % n);
    for (int q = 0; q < n; q++) {
      if (proto == KILN_PROTO_SIMPLE && q != r)
        mem_step(tb, KILN_STEP_WAIT, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0, q);
      const kilnBuffer_t sb = q == r ? KILN_BUF_INPUT : KILN_BUF_SCRATCH;
      kilnPlanAddStep(tb, q == 0 ? KILN_STEP_COPY : KILN_STEP_REDUCE, sb, q == r ? 0 : region(r, q),
                      KILN_BUF_OUTPUT, 0, 1);
    }
  }
  return p;
}

/* LL: the puts are one pass of one source, the reduction one pass with every peer's lines. */
Test(passes, oneshot_ll_is_one_put_and_one_reduction) {
  kilnPlan* p = oneshot(4, KILN_PROTO_LL);
  for (int r = 0; r < 4; r++) {
    kilnRankPasses rp;
    cr_assert(eq(int, kilnPlanMemPasses(p, r, &rp), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, rp.npasses, 2), "rank %d", r);
    cr_expect(eq(int, rp.scratch[0], 0));
    cr_expect(eq(int, rp.scratch[1], 3));
    cr_expect(eq(int, rp.scratch[2], 0));
    cr_expect(eq(int, rp.lineProtos, 1 << KILN_PROTO_LL));
    const kilnPass* put = &rp.passes[0];
    cr_expect(eq(int, put->kind, KILN_PASS_PUT));
    cr_expect(eq(int, put->proto, KILN_PROTO_LL));
    cr_expect(eq(int, put->nops, 6));
    cr_expect(put->sameSrc && !put->barrier && !put->polls);
    for (int j = 0; j < 3; j++) {
      const int q = (r + 1 + j) % 4;
      const kilnPassOperand* d = &rp.ops[put->firstOp + 2 * j];
      const kilnPassOperand* s = &rp.ops[put->firstOp + 2 * j + 1];
      cr_expect(eq(int, d->kind, KILN_OPND_LINES), "rank %d pair %d", r, j);
      cr_expect(eq(int, d->rank, q));
      cr_expect(eq(int, d->buf, KILN_LINES_16));
      cr_expect(eq(int, d->off, region(q, r)));
      cr_expect(eq(int, s->kind, KILN_OPND_USER));
      cr_expect(eq(int, s->rank, r));
      cr_expect(eq(int, s->buf, KILN_BUF_INPUT));
    }
    const kilnPass* red = &rp.passes[1];
    cr_expect(eq(int, red->kind, KILN_PASS_REDUCE));
    cr_expect(eq(int, red->nops, 5), "rank %d: dst and 4 operands", r);
    cr_expect(eq(int, red->nsteps, 4));
    cr_expect(red->polls && !red->barrier);
    cr_expect(eq(int, red->last, 6));
    for (int q = 0; q < 4; q++) {
      const kilnPassOperand* o = &rp.ops[red->firstOp + 1 + q];
      cr_expect(eq(int, o->kind, q == r ? KILN_OPND_USER : KILN_OPND_LINES),
                "rank %d operand %d in rank order", r, q);
      if (q != r) cr_expect(eq(int, o->off, region(r, q)));
    }
    cr_expect(ne(u64, rp.hash, 0));
    kilnRankPassesFree(&rp);
  }
  kilnPlanFree(p);
}

/* Simple: the signals one pass; the waits before each peer's operand run first, all in one pass,
 * and the reduction is then one pass. */
Test(passes, oneshot_simple_waits_for_every_peer_then_reduces_once) {
  kilnPlan* p = oneshot(4, KILN_PROTO_SIMPLE);
  for (int r = 0; r < 4; r++) {
    kilnRankPasses rp;
    cr_assert(eq(int, kilnPlanMemPasses(p, r, &rp), KILN_SUCCESS), "%s", kilnLastError());
    const kilnPassKind_t want[] = {KILN_PASS_PUT, KILN_PASS_SIGNAL, KILN_PASS_WAIT, KILN_PASS_REDUCE};
    cr_assert(eq(int, rp.npasses, 4), "rank %d has %d passes", r, rp.npasses);
    for (int i = 0; i < 4; i++) cr_expect(eq(int, rp.passes[i].kind, want[i]), "rank %d pass %d", r, i);
    cr_expect(eq(int, rp.passes[0].proto, KILN_PROTO_SIMPLE));
    cr_expect(eq(int, rp.ops[rp.passes[0].firstOp].kind, KILN_OPND_SCRATCH));
    cr_expect(eq(int, rp.passes[2].nops, 3));
    for (int j = 0; j < 3; j++) {
      const kilnPassOperand* w = &rp.ops[rp.passes[2].firstOp + j];
      cr_expect(eq(int, w->kind, KILN_OPND_SIGNAL));
      cr_expect(eq(int, w->off, 0), "the first signal of each stream");
      cr_expect(ne(int, w->rank, r));
    }
    cr_expect(eq(int, rp.passes[3].nops, 5));
    cr_expect(not(rp.passes[3].polls));
    cr_expect(eq(int, rp.passes[3].last, 12), "the last step stays last");
    kilnRankPassesFree(&rp);
  }
  kilnPlanFree(p);
}

/* In place: a copy of this rank's operand into scratch, then the reduction into the input it read:
 * the block meets before the reduction overwrites what the copy read. */
Test(passes, in_place_reduction_meets_after_the_copy_it_overwrites) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("ip", KILN_COLL_ALLREDUCE, 2, &p), KILN_SUCCESS));
  p->proto = KILN_PROTO_LL;
  p->nchunksperloop = 1;
  p->inplace = true;
  p->outofplace = false;
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 0;
    p->gpus[r].s_chunks = 2;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    mem_step(tb, KILN_STEP_PUT, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0, 1, 1 - r);
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 1, 1);
    kilnPlanAddStep(tb, KILN_STEP_COPY, r == 0 ? KILN_BUF_SCRATCH : KILN_BUF_SCRATCH, r == 0 ? 1 : 0,
                    KILN_BUF_INPUT, 0, 1);
    kilnPlanAddStep(tb, KILN_STEP_REDUCE, KILN_BUF_SCRATCH, r == 0 ? 0 : 1, KILN_BUF_INPUT, 0, 1);
  }
  kilnRankPasses rp;
  cr_assert(eq(int, kilnPlanMemPasses(p, 0, &rp), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, rp.npasses, 3));
  cr_expect(eq(int, rp.passes[0].kind, KILN_PASS_PUT));
  cr_expect(eq(int, rp.passes[1].kind, KILN_PASS_COPY));
  cr_expect(not(rp.passes[1].barrier), "the copy only reads what the put read");
  cr_expect(eq(int, rp.passes[2].kind, KILN_PASS_REDUCE));
  cr_expect(rp.passes[2].barrier, "the reduction writes the input the copy read");
  cr_expect(eq(int, rp.scratch[0], 1));
  cr_expect(eq(int, rp.scratch[1], 1));
  kilnRankPassesFree(&rp);
  kilnPlanFree(p);
}

/* What the runtime does not run this way is refused naming the step. */
Test(passes, fifo_steps_beside_memory_steps_are_refused) {
  kilnPlan* p = oneshot(2, KILN_PROTO_LL);
  kilnThreadblock* tb = kilnPlanAddThreadblock(p, 0, 1, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_INPUT, 0, 1);
  tb = kilnPlanAddThreadblock(p, 1, -1, 0, 0);
  kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  kilnRankPasses rp;
  cr_expect(eq(int, kilnPlanMemPasses(p, 0, &rp), KILN_ERR_UNSUPPORTED));
  cr_expect(eq(
      str, (char*)kilnLastError(),
      "plan oneshot rank 0 tb 1 step 0: a send or receive step in a plan with memory steps (kiln's runtime "
      "runs a plan's FIFO steps or its memory steps, not both)"));
  cr_expect(eq(int, kilnPlanMemPasses(p, 5, &rp), KILN_ERR_INVALID_ARGUMENT));
  kilnPlanFree(p);
}

/* The same plan hashes alike; another plan otherwise. */
Test(passes, hash_tells_plans_apart) {
  kilnPlan* a = oneshot(4, KILN_PROTO_LL);
  kilnPlan* b = oneshot(4, KILN_PROTO_LL);
  kilnPlan* c = oneshot(4, KILN_PROTO_SIMPLE);
  kilnRankPasses ra, rb, rc;
  cr_assert(eq(int, kilnPlanMemPasses(a, 0, &ra), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanMemPasses(b, 1, &rb), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanMemPasses(c, 0, &rc), KILN_SUCCESS));
  cr_expect(eq(u64, ra.hash, rb.hash));
  cr_expect(ne(u64, ra.hash, rc.hash));
  kilnRankPassesFree(&ra);
  kilnRankPassesFree(&rb);
  kilnRankPassesFree(&rc);
  kilnPlanFree(a);
  kilnPlanFree(b);
  kilnPlanFree(c);
}

/* kiln classic's zerocopy allgather: the arrival signals, every peer's arrival awaited in one pass
 * (the waits move ahead of the own copy and the puts), the own piece copied, one put pass of the
 * one source to every peer's output, then the done signals and waits. */
Test(passes, zerocopy_waits_for_every_arrival_then_puts_once) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("zerocopy", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  for (int r = 0; r < 4; r++) {
    kilnRankPasses rp;
    cr_assert(eq(int, kilnPlanMemPasses(p, r, &rp), KILN_SUCCESS), "%s", kilnLastError());
    const kilnPassKind_t want[] = {KILN_PASS_SIGNAL, KILN_PASS_WAIT,   KILN_PASS_COPY,
                                   KILN_PASS_PUT,    KILN_PASS_SIGNAL, KILN_PASS_WAIT};
    cr_assert(eq(int, rp.npasses, 6), "rank %d has %d passes", r, rp.npasses);
    for (int i = 0; i < 6; i++) cr_expect(eq(int, rp.passes[i].kind, want[i]), "rank %d pass %d", r, i);
    const kilnPass* put = &rp.passes[3];
    cr_expect(eq(int, put->nops, 6));
    cr_expect(put->sameSrc && !put->barrier);
    for (int j = 0; j < 3; j++) {
      const kilnPassOperand* d = &rp.ops[put->firstOp + 2 * j];
      cr_expect(eq(int, d->kind, KILN_OPND_USER));
      cr_expect(eq(int, d->buf, KILN_BUF_OUTPUT));
      cr_expect(eq(int, d->rank, (r + 1 + j) % 4), "rank %d pair %d: peers in the order r+1, r+2, ...", r, j);
      cr_expect(eq(int, d->off, r), "rank %d pair %d: this rank's piece of the peer's output", r, j);
    }
    cr_expect(eq(int, rp.passes[1].nops, 3));
    kilnRankPassesFree(&rp);
  }
  kilnPlanFree(p);
}

/* The instances of a classic plan are one class: the same passes, offsets moved by the instance
 * (signals by a channel each). */
Test(passes, instances_are_one_class) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.instances = 4;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("oneshot", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnRankPasses rp;
  cr_assert(eq(int, kilnPlanMemPasses(p, 2, &rp), KILN_SUCCESS), "%s", kilnLastError());
  int tmpl[4], shift[4], chan[4];
  kilnPlanMemRowClasses(&rp, 4, tmpl, shift, chan);
  for (int t = 0; t < 4; t++) {
    cr_expect(eq(int, tmpl[t], 0), "tb %d", t);
    cr_expect(eq(int, shift[t], t), "tb %d", t);
    cr_expect(eq(int, chan[t], t), "tb %d", t);
  }
  kilnRankPassesFree(&rp);
  kilnPlanFree(p);
}

/* A put of lines after other passes of its block meets first (its peer takes the lines as word that
 * the block is done with what it read): the two-shot allreduce's LL put of the reduced piece comes
 * after the reduction, with a barrier; a block's first pass does not meet. */
Test(passes, line_put_after_reads_meets_first) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = KILN_PROTO_LL;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("twoshot", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  for (int r = 0; r < 4; r++) {
    kilnRankPasses rp;
    cr_assert(eq(int, kilnPlanMemPasses(p, r, &rp), KILN_SUCCESS), "%s", kilnLastError());
    int puts = 0, late = 0;
    for (int i = 0; i < rp.npasses; i++) {
      const kilnPass* ps = &rp.passes[i];
      if (ps->kind != KILN_PASS_PUT || ps->proto == KILN_PROTO_SIMPLE) continue;
      puts++;
      if (i == 0) {
        cr_expect(not(ps->barrier), "rank %d: the first pass", r);
      } else if (rp.passes[i - 1].kind != KILN_PASS_SIGNAL && rp.passes[i - 1].kind != KILN_PASS_WAIT &&
                 !rp.passes[i - 1].publishes) {
        late++;
        cr_expect(ps->barrier, "rank %d pass %d: a line put after a pass that read", r, i);
      }
    }
    cr_expect(eq(int, puts, 2), "rank %d: the scatter's put and the gather's", r);
    cr_expect(eq(int, late, 1), "rank %d", r);
    kilnRankPassesFree(&rp);
  }
  kilnPlanFree(p);
}

/* Two signals of one stream are two passes: in one, two lanes would store the stream's two values
 * at once, and the lower could land last. Signals to different peers share a pass. */
Test(passes, signals_of_one_stream_are_passes_of_their_own) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("sigs", KILN_COLL_ALLGATHER, 3, &p), KILN_SUCCESS));
  p->proto = KILN_PROTO_SIMPLE;
  p->nchunksperloop = 3;
  p->outofplace = true;
  for (int r = 0; r < 3; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 3;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    const int a = (r + 1) % 3, b = (r + 2) % 3;
    for (int twice = 0; twice < 2; twice++) {
      mem_step(tb, KILN_STEP_SIGNAL, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0, a);
      mem_step(tb, KILN_STEP_SIGNAL, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0, b);
    }
    for (int twice = 0; twice < 2; twice++) {
      mem_step(tb, KILN_STEP_WAIT, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0, a);
      mem_step(tb, KILN_STEP_WAIT, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0, b);
    }
  }
  for (int r = 0; r < 3; r++) {
    kilnRankPasses rp;
    cr_assert(eq(int, kilnPlanMemPasses(p, r, &rp), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, rp.npasses, 3), "rank %d has %d passes", r, rp.npasses);
    cr_expect(eq(int, rp.passes[0].kind, KILN_PASS_SIGNAL));
    cr_expect(eq(int, rp.passes[0].nops, 2), "rank %d: the signals to two peers in one pass", r);
    cr_expect(eq(int, rp.passes[1].kind, KILN_PASS_SIGNAL));
    cr_expect(eq(int, rp.passes[1].nops, 2), "rank %d: the second signal to each peer in a pass after it", r);
    cr_expect(eq(int, rp.passes[2].kind, KILN_PASS_WAIT));
    cr_expect(eq(int, rp.passes[2].nops, 4), "rank %d: waits for one stream share a pass", r);
    kilnRankPassesFree(&rp);
  }
  kilnPlanFree(p);
}
