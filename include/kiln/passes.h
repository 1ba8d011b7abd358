/*
 * Plans with memory steps as a GPU runtime runs them: passes.
 *
 * A pass is a run of consecutive steps of one threadblock that one sweep over their chunks
 * computes, every operand an address in this rank's memory or a peer's:
 * - PUT: consecutive put steps of one protocol and count (up to KILN_PASS_MAX_PAIRS): each line
 *   or 16-byte pack of their sources is loaded once per distinct source and stored to every
 *   target (the symmetric kernels' one-shot send: a rank's input to every peer in one pass).
 * - REDUCE: a cpy, get, re or gre and the re and gre steps right after it into the same chunks
 *   (up to KILN_PASS_MAX_OPS operands): dst = o0 op o1 op ..., in the steps' order (a plan that
 *   reduces in rank order gives every rank bitwise the same result), every operand's loads in
 *   flight at once, this rank's own operands loaded before the lines of its peers are polled.
 * - COPY: consecutive cpy and get steps into chunks apart from each other and from their sources
 *   (up to KILN_PASS_MAX_PAIRS): every source's lines polled at once, each stored to its chunks.
 * - SIGNAL, WAIT: consecutive sig or wait steps (up to KILN_PASS_MAX_PAIRS), one lane each.
 * - NOP: a nop step (its dependency, its publication).
 * A pass runs only steps that nothing else waits on in between (a step another waits on ends its
 * pass), and its first step carries the pass's dependency; every later step has none.
 * Steps run in the plan's order, but in a run of waits, local steps (cpy, re, get, gre) and Simple
 * puts with no dependency and no publication before its end, the waits before its last other step
 * move to its front: a plan that waits for each peer right before reading that peer's chunk or
 * writing its buffer (kiln classic's Simple forms) then waits for them all in one pass and
 * reduces, copies or puts in one. A wait only moves earlier, past steps that raise nothing a peer
 * waits for (no sig, no line put).
 *
 * Operands name memory as a runtime lays it out: user buffers by chunk; each rank's scratch
 * chunks split into plain chunks (KILN_OPND_SCRATCH, numbered among the rank's plain chunks) and
 * line chunks (KILN_OPND_LINES, numbered among that rank's chunks of the same line area: 16-byte
 * lines for LL and LL12, 128-byte lines for LL128), kilnPlanLineChunks' split. A put's target is
 * the peer's chunk in the peer's numbering. A pass's barrier flag says the block must meet before
 * it: it touches local data (or a peer's plain data) that an earlier pass since the last meeting
 * touched in another way (not both reads); sig and wait passes meet anyway, and so does every
 * pass with a dependency or a publication.
 *
 * kilnPlanMemPasses is the one analysis both the loader (host/exec.c, the interpreter's tables)
 * and the generator (gen/, the baked kernels' tables) use, so both run the same passes.
 * Ownership: kilnRankPasses holds arrays it owns; kilnRankPassesFree frees them.
 */
#ifndef KILN_PASSES_H
#define KILN_PASSES_H

#include "kiln/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most pairs of a PUT, COPY, SIGNAL or WAIT pass, and operands of a REDUCE pass (after its
 * dst). A plan's memory steps run with at most KILN_PASS_MAX_RANKS ranks. */
#define KILN_PASS_MAX_PAIRS 8
#define KILN_PASS_MAX_OPS 8
#define KILN_PASS_MAX_RANKS 8
/* A runtime's k-th sig of a stream in epoch e stores (e << KILN_PASS_SIG_BITS) + k + 1, so that the
 * values of every plan on a communicator grow with its epochs; a stream has fewer than
 * 2^KILN_PASS_SIG_BITS sigs an epoch. */
#define KILN_PASS_SIG_BITS 20

typedef enum {
  KILN_PASS_PUT = 0,
  KILN_PASS_REDUCE = 1,
  KILN_PASS_COPY = 2,
  KILN_PASS_SIGNAL = 3,
  KILN_PASS_WAIT = 4,
  KILN_PASS_NOP = 5
} kilnPassKind_t;

typedef enum {
  KILN_OPND_USER = 0,    /* a user buffer (buf: KILN_BUF_INPUT or KILN_BUF_OUTPUT), off: its chunk */
  KILN_OPND_SCRATCH = 1, /* off: index among the rank's plain scratch chunks */
  KILN_OPND_LINES = 2,   /* buf: KILN_LINES_16 or KILN_LINES_128; off: index among the rank's line
                          * chunks of that area */
  KILN_OPND_SIGNAL = 3   /* buf: the threadblock's channel; off: the sig's or wait's ordinal in its
                          * stream's steps of an epoch (kilnPlanSignalOrdinals); rank: the peer */
} kilnOperandKind_t;

/* Line areas. */
enum { KILN_LINES_16 = 0, KILN_LINES_128 = 1 };

typedef struct kilnPassOperand {
  kilnOperandKind_t kind;
  int rank; /* whose memory (a signal: the peer) */
  int buf;
  int off;
} kilnPassOperand;

typedef struct kilnPass {
  kilnPassKind_t kind;
  kilnProto_t proto; /* the protocol of the lines it reads or writes; KILN_PROTO_SIMPLE: none */
  int tb;            /* threadblock */
  int first, nsteps; /* its steps: positions first .. first + nsteps - 1 of the threadblock's steps in
                       * the order the runtime runs them (below) */
  int last;          /* the index of its last step in the threadblock (what a publication counts) */
  int cnt;           /* chunks every operand covers */
  int firstOp, nops; /* operands: PUT, COPY pairs (dst, src); REDUCE dst, then o0, o1, ...;
                       * SIGNAL, WAIT one per step */
  int depid, deps;   /* the first step's dependency (-1, -1: none) */
  bool publishes;    /* some step waits on its last step (or it has hasdep) */
  bool barrier;      /* the block meets before it */
  bool sameSrc;      /* PUT: every pair reads the same source */
  bool polls;        /* it waits for a peer: reads lines, or waits for a signal */
} kilnPass;

/* One rank's passes, threadblock by threadblock in order. */
typedef struct kilnRankPasses {
  int npasses, nops;
  kilnPass* passes;
  kilnPassOperand* ops;
  int scratch[3]; /* this rank's scratch chunks: plain, 16-byte line, LL128 line */
  int lineProtos; /* bit p: some put of the plan writes lines of protocol p (any rank) */
  uint64_t hash;  /* the plan's hash (the same on every rank; never 0) */
} kilnRankPasses;

/* Rank r's passes. The plan must pass kilnPlanVerify (its memory steps' rules). KILN_ERR_UNSUPPORTED
 * with a message naming the step for what the runtime does not run this way: a send or receive
 * step (a plan mixes FIFO steps and memory steps), a put whose source holds lines of another
 * protocol than it writes, more than KILN_PASS_MAX_RANKS ranks, or a stream of more than
 * 2^20 - 1 signals an epoch. */
KILN_API kilnResult_t kilnPlanMemPasses(const kilnPlan* p, int r, kilnRankPasses* out);
/* Threadblocks of a rank that run the same passes but for their chunks (a plan's instances, as
 * kiln classic writes them): tmpl[t] is the first threadblock t0 <= t whose passes equal t's in
 * everything (kinds, protocols, flags, counts, steps, dependencies, operands' kinds, ranks and
 * buffers) but the operands' offsets, which all differ by shift[t] (a signal's channel by
 * chanShift[t] instead, its ordinal not at all); tmpl[t] = t, shifts 0, for the first of each
 * class. A runtime can then run one code path per class with the shift added at run time (gen/'s
 * baked kernels do). rp holds the rank's passes (kilnPlanMemPasses), ntbs its threadblocks. */
KILN_API void kilnPlanMemRowClasses(const kilnRankPasses* rp, int ntbs, int* tmpl, int* shift,
                                    int* chanShift);
KILN_API void kilnRankPassesFree(kilnRankPasses* rp);

/* Pass ps's flags as the kernels read them (kernels/kiln_dev.h KILN_DEV_PASS_*): 1 the block meets
 * before it, 2 it publishes progress, 4 every pair reads the same source, 8 it waits for a peer. */
static inline unsigned kilnPassFlags(const kilnPass* ps) {
  return (ps->barrier ? 1u : 0u) | (ps->publishes ? 2u : 0u) | (ps->sameSrc ? 4u : 0u) |
         (ps->polls ? 8u : 0u);
}
/* Which of pass ps's operands (of rp's) are lines, as the kernels read the mask: bit i for a
 * reduction's operand i + 1 (its sources), for a put's or copy's pair i its destination. */
static inline uint32_t kilnPassLineMask(const kilnRankPasses* rp, const kilnPass* ps) {
  uint32_t mask = 0;
  for (int o = 0; o < ps->nops; o++) {
    if (rp->ops[ps->firstOp + o].kind != KILN_OPND_LINES) continue;
    if (ps->kind == KILN_PASS_REDUCE && o > 0) mask |= 1u << (o - 1);
    if ((ps->kind == KILN_PASS_PUT || ps->kind == KILN_PASS_COPY) && o % 2 == 1) mask |= 1u << (o / 2);
  }
  return mask;
}

#ifdef __cplusplus
}
#endif
#endif /* KILN_PASSES_H */
