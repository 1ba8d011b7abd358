/*
 * Plain-data structs shared by the host runtime (C11) and the device code (CUDA C++): a plan as
 * the interpreter kernel reads it, and the launch arguments. Sizes and offsets are checked with
 * static asserts so host and device cannot drift.
 *
 * Transport model (see docs/ARCHITECTURE.md, Runtime): each rank owns one symmetric NCCL window; the
 * FIFO of connection (src -> dst, chan) lives in dst's window, with a `head` counter (slots filled,
 * written by src) next to it; the `tail` counter (slots drained, written by dst) lives in src's
 * window. Counters only grow, across calls, so CUDA graph replays need no host help.
 */
#ifndef KILN_KERNELS_DEV_H
#define KILN_KERNELS_DEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define KILN_ALIGN16 alignas(16)
#define KILN_STATIC_ASSERT static_assert
extern "C" {
#else
#define KILN_ALIGN16 _Alignas(16)
#define KILN_STATIC_ASSERT _Static_assert
#endif

/* Buffer ids as in plan.h (input, output, scratch). */
enum { KILN_DEV_BUF_INPUT = 0, KILN_DEV_BUF_OUTPUT = 1, KILN_DEV_BUF_SCRATCH = 2, KILN_DEV_NBUFS = 3 };
/* Protocols the kernels implement (kernels/protocols.cuh), numbered as kilnProto_t: the FIFO steps
 * have Simple, LL and LL128, the plans' puts and the symmetric kernels LL12 too. */
enum { KILN_DEV_PROTO_SIMPLE = 0, KILN_DEV_PROTO_LL = 1, KILN_DEV_PROTO_LL128 = 2, KILN_DEV_PROTO_LL12 = 3 };
/* Line geometry of the line protocols: LL carries 8 data bytes per 16-byte line, LL128 120 per
 * 128-byte line, the symmetric kernels' LL12 12 per 16-byte line. */
enum {
  KILN_DEV_LL_LINE_BYTES = 16,
  KILN_DEV_LL_DATA_BYTES = 8,
  KILN_DEV_LL128_LINE_BYTES = 128,
  KILN_DEV_LL128_DATA_BYTES = 120,
  KILN_DEV_LL12_DATA_BYTES = 12
};
/* Error codes the kernel leaves in the communicator's error word. */
enum { KILN_DEV_OK = 0, KILN_DEV_ERR_TIMEOUT = 1 };

/* Most steps one folded pass runs (plan.h's KILN_FUSE_MAX; checked in host/exec.c). */
#define KILN_DEV_FOLD_MAX 8
/* Steps of a threadblock the interpreter keeps in shared memory (longer ones read global). */
#define KILN_DEV_SMEM_STEPS 64

/* One plan step, as plan.h's kilnStep with the dependency target's length resolved. */
typedef struct kilnDevStep {
  KILN_ALIGN16 uint8_t type; /* kilnStepType_t */
  uint8_t srcbuf;            /* KILN_DEV_BUF_* */
  uint8_t dstbuf;
  uint8_t hasdep; /* 1: publish progress after this step */
  int32_t cnt;    /* chunks */
  int32_t srcoff, dstoff;
  int32_t depid;     /* threadblock index of the same rank, or -1 */
  int32_t deps;      /* its step index */
  int32_t depNsteps; /* its number of steps (progress counts steps across iterations) */
  int32_t fold;      /* steps right after this one that it runs in the same pass
                        * (kilnStepFoldable); they are skipped */
} kilnDevStep;
KILN_STATIC_ASSERT(sizeof(kilnDevStep) == 32, "kilnDevStep is 32 bytes");
KILN_STATIC_ASSERT(offsetof(kilnDevStep, cnt) == 4, "kilnDevStep.cnt at 4");

/* One threadblock of this rank's part of a plan, with its connections resolved to pointers. */
typedef struct kilnDevTb {
  KILN_ALIGN16 char* sendFifo; /* peer's FIFO for (this rank -> send peer, chan): remote memory */
  uint64_t* sendHead;          /* next to it, in the peer's window: slots filled */
  uint64_t* sendTail;          /* in this rank's window: slots the peer has drained */
  uint64_t* sendCount;         /* this rank's private state: slots sent so far */
  char* recvFifo;              /* this rank's FIFO for (recv peer -> this rank, chan) */
  uint64_t* recvHead;          /* local: slots the peer has filled */
  uint64_t* recvTail;          /* in the peer's window: slots drained (written by us) */
  uint64_t* recvCount;         /* private state: slots received so far */
  int32_t firstStep;           /* index into the step array */
  int32_t nsteps;
  int32_t sendPeer, recvPeer; /* -1: none */
  int32_t firstPass;          /* plans with memory steps: index into the pass array (kilnDevPass) */
  int32_t npasses;
  int32_t firstOp; /* ... and into the operand array (kilnDevOpnd): its passes' operands */
  int32_t nops;
  int32_t tmpl; /* the threadblock whose passes it runs with its operands' offsets moved
                          * by shift (channels by chanShift): kiln/passes.h kilnPlanMemRowClasses
                          * (a baked kernel has code for those threadblocks only) */
  int32_t shift, chanShift;
  int32_t pad;
} kilnDevTb;
KILN_STATIC_ASSERT(sizeof(kilnDevTb) == 112, "kilnDevTb is 112 bytes");
KILN_STATIC_ASSERT(offsetof(kilnDevTb, firstStep) == 64, "kilnDevTb.firstStep at 64");
KILN_STATIC_ASSERT(offsetof(kilnDevTb, firstPass) == 80, "kilnDevTb.firstPass at 80");

/* ---- Plans with memory steps (put, get, gre, sig, wait; kernels/mem.cuh) ----
 * Such a plan runs as passes (kiln/passes.h): consecutive steps of a threadblock that one sweep
 * over their chunks runs, every operand an address in this rank's or a peer's memory. */

/* The most ranks a plan with memory steps has (kilnDevMem's arrays), and the most operands of a
 * pass (kiln/passes.h KILN_PASS_MAX_OPS: a reduction's dst and 8 operands, or 8 pairs). */
#define KILN_DEV_MEM_MAX_RANKS 8
#define KILN_DEV_PASS_MAX_OPS 16
/* Per-block words of a communicator's plans with memory steps (kilnDevMem.slots): a plan's
 * threadblocks are at most this many. */
#define KILN_DEV_MEM_SLOTS 256
/* The most threads a block of a plan with lines takes in the interpreter (kernels/mem.cuh
 * memKernel's launch bounds; host/memplan.c sizes blocks within it). */
#define KILN_DEV_MEM_LINE_THREADS 256
/* The signal value of a plan's k-th sig of a stream in epoch e: (e << KILN_DEV_SIG_SHIFT) + k + 1
 * (at most 2^KILN_DEV_SIG_SHIFT - 1 sigs a stream and epoch), so that the values of every plan on
 * a communicator grow with its epochs. */
#define KILN_DEV_SIG_SHIFT 20

/* Where an operand lives: a user buffer (input or output) of some rank, a plain scratch chunk in
 * some rank's window, line chunks in some rank's window (the pass's protocol), or a signal word. */
enum { KILN_DEV_OPND_USER = 0, KILN_DEV_OPND_SCRATCH = 1, KILN_DEV_OPND_LINES = 2, KILN_DEV_OPND_SIGNAL = 3 };
/* Line areas of the window: 16-byte lines (LL and LL12 chunks) and LL128 lines. */
enum { KILN_DEV_LINES16 = 0, KILN_DEV_LINES128 = 1, KILN_DEV_NLINEAREAS = 2 };
typedef struct kilnDevOpnd {
  uint8_t kind; /* KILN_DEV_OPND_* */
  uint8_t rank; /* whose memory: this rank or a peer */
  uint8_t
      buf; /* USER: KILN_DEV_BUF_INPUT or _OUTPUT; LINES: KILN_DEV_LINES16 or _LINES128; SIGNAL: channel */
  uint8_t pad;
  int32_t off; /* USER: chunk of the buffer; SCRATCH, LINES: index among that rank's plain / line chunks
                   * of that area (kiln/passes.h); SIGNAL: the sig's or wait's ordinal in its epoch */
} kilnDevOpnd;
KILN_STATIC_ASSERT(sizeof(kilnDevOpnd) == 8, "kilnDevOpnd is 8 bytes");

/* What a pass does (kiln/passes.h kilnPassKind_t, the same numbers). */
enum {
  KILN_DEV_PASS_PUT = 0,    /* pairs (dst in a peer's memory, src): stores */
  KILN_DEV_PASS_REDUCE = 1, /* dst, then operands: dst <- o0 op o1 op ... */
  KILN_DEV_PASS_COPY = 2,   /* pairs (dst, src): copies */
  KILN_DEV_PASS_SIGNAL = 3, /* signal words: raise */
  KILN_DEV_PASS_WAIT = 4,   /* signal words: wait */
  KILN_DEV_PASS_NOP = 5     /* only a dependency or a publication */
};
/* kilnDevPass.flags */
enum {
  KILN_DEV_PASS_BARRIER = 1,  /* the block meets before it (local data an earlier pass touched) */
  KILN_DEV_PASS_PUBLISH = 2,  /* publishes progress after it (a step waits on its last step) */
  KILN_DEV_PASS_SAME_SRC = 4, /* PUT: every pair reads the same source */
  KILN_DEV_PASS_POLLS = 8     /* it waits for a peer (lines or a signal) */
};
typedef struct kilnDevPass {
  KILN_ALIGN16 uint8_t kind; /* KILN_DEV_PASS_* */
  uint8_t proto;             /* KILN_DEV_PROTO_* of the lines it reads or writes (Simple: none) */
  uint8_t nops;              /* operands: kilnDevOpnd[firstOp .. firstOp + nops) */
  uint8_t flags;             /* KILN_DEV_PASS_* flags */
  int32_t cnt;               /* chunks every operand covers */
  int32_t firstOp;           /* into the rank's operand array */
  int32_t lastStep;          /* the threadblock's index of its last step (progress: lastStep + 1 done) */
  int32_t depid, deps;       /* its first step's dependency (depid -1: none) */
  int32_t depNsteps;         /* the steps of threadblock depid */
  uint32_t lineMask; /* REDUCE: bit q: operand q (after dst) is lines; PUT, COPY: bit j: pair j's source */
} kilnDevPass;
KILN_STATIC_ASSERT(sizeof(kilnDevPass) == 32, "kilnDevPass is 32 bytes");

/* A call's memory: every rank's window and user buffers as mapped here, and where the plans'
 * areas lie in a window (the same offsets on every rank). */
typedef struct kilnDevMem {
  KILN_ALIGN16 char* win[KILN_DEV_MEM_MAX_RANKS]; /* every rank's window base as mapped here */
  char* user[KILN_DEV_MEM_MAX_RANKS][2];          /* every rank's input and output as mapped here
                                                          * (NULL where the plan does not reach it) */
  uint64_t* slots; /* device, [KILN_DEV_MEM_SLOTS][2]: per block, the communicator's next epoch and
                             * the hash of the plan that last ran (kernels/mem.cuh) */
  uint64_t plainOff, plainHalf; /* plain scratch: half 0's offset, bytes of a half */
  uint64_t lineOff[KILN_DEV_NLINEAREAS], lineHalf[KILN_DEV_NLINEAREAS];
  uint64_t lineChunk[KILN_DEV_NLINEAREAS]; /* bytes of one chunk's slice as lines of that area */
  uint64_t sigOff;                         /* signal words [source rank][channel], 8 bytes each */
  uint64_t arriveOff;                      /* arrival words [source rank], 8 bytes each */
  uint64_t planHash; /* the plan's hash (kiln/passes.h): a new plan meets its peers first */
  int32_t maxChannels;
  int32_t earlyTrigger; /* the next kernel may launch once this one first waits for a peer */
  int32_t hasDeps;      /* the plan has dependencies (progress words, the call's number) */
  int32_t pdl;          /* launched with programmatic stream serialization (a baked kernel's launch
                             * reads it; kilnMemLaunch takes it as an argument) */
} kilnDevMem;
KILN_STATIC_ASSERT(sizeof(kilnDevMem) % 16 == 0, "kilnDevMem is a multiple of 16 bytes");

/* Kernel argument block (passed by value). Element counts are in elements of the call's type. */
typedef struct kilnDevArgs {
  KILN_ALIGN16 const kilnDevTb* tbs;
  const kilnDevStep* steps;
  uint64_t* progress;         /* [ntbs] (call sequence << 32) | steps done this call, modulo 2^64 */
  uint64_t* callSeq;          /* [ntbs] calls started by each block */
  unsigned long long* done;   /* blocks finished, summed over calls (avg's grid barrier) */
  int* abortFlag;             /* device word: some block of this communicator gave up */
  int* errWord;               /* mapped host word: first error code */
  char* bufs[KILN_DEV_NBUFS]; /* input, output, scratch */
  uint64_t count;             /* elements per block of a user buffer (NCCL's count) */
  uint64_t chunkElems;        /* L: elements per chunk (count / chunks per block, rounded up) */
  uint64_t sliceElems;        /* S: elements per chunk per iteration (fits the FIFO slot) */
  uint64_t timeoutNs;         /* bounded spin */
  char* avgBuf;               /* avg: this rank's result, divided by nranks at the end */
  uint64_t avgElems;
  uint64_t slotBytes; /* bytes of one FIFO slot */
  int32_t nslots;
  int32_t chunksPerBlock; /* k */
  int32_t niter;          /* ceil(L / S) */
  int32_t op;             /* kilnRedOp_t */
  int32_t nranks, rank;
  int32_t proto; /* KILN_DEV_PROTO_* */
  int32_t ntbs;
  const kilnDevPass* passes; /* plans with memory steps: the rank's passes and their operands */
  const kilnDevOpnd* opnds;
  kilnDevMem mem;
} kilnDevArgs;
KILN_STATIC_ASSERT(sizeof(kilnDevArgs) % 16 == 0, "kilnDevArgs is a multiple of 16 bytes");

/* Symmetric-memory kernels (kernels/sym.cuh, host/sym.c): a collective moved through a staging
 * area in every rank's window instead of FIFO slots. Each rank stores its contribution straight
 * into its peers' staging areas (NVLink stores), then signals one flag per (phase, block) to each
 * peer; a rank that has seen every peer's flag for a block combines the staged data locally. Two
 * staging halves alternate between calls, or between the rounds of a call larger than a half (the
 * sequence number's parity: every round takes one). */
enum { KILN_SYM_MAX_RANKS = 8, KILN_SYM_MAX_BLOCKS = 128, KILN_SYM_PHASES = 2 };
/* What the kernel does (host/sym.c chooses). */
enum {
  KILN_SYM_AR_ONESHOT = 0, /* allreduce: every input to every peer, each rank reduces all */
  KILN_SYM_AR_TWOSHOT = 1, /* allreduce: rank q reduces share q, then sends it to every peer */
  KILN_SYM_RS = 2,         /* reducescatter: piece q to rank q, which reduces */
  KILN_SYM_AG = 3,         /* allgather */
  KILN_SYM_A2A = 4         /* alltoall */
};
/* kilnSymArgs.ll: how the data travels. LL: a 16-byte line per 8 data bytes, the flag in each
 * 4-byte half's upper word (kernels/primitives.cuh llStore). LL128: a 128-byte line
 * per 120 data bytes, 15 data words and the flag word, stored by 8 lanes of a warp at once
 * (kernels/sym.cuh bodyLL128, bodyLL128x2). LL12: a 16-byte line per 12 data bytes, three data
 * words and the flag word, one thread's store (kernels/sym.cuh bodyLL, LinesLL12; one-shot,
 * elements of at most 4 bytes). */
enum { KILN_SYM_LINES_NONE = 0, KILN_SYM_LINES_LL = 1, KILN_SYM_LINES_LL128 = 2, KILN_SYM_LINES_LL12 = 3 };
/* Flags in a window: [phase][src rank][block], one word each (written by src with the call's
 * sequence number; they only grow). */
#define KILN_SYM_FLAG_WORDS (KILN_SYM_PHASES * KILN_SYM_MAX_RANKS * KILN_SYM_MAX_BLOCKS)
typedef struct kilnSymArgs {
  KILN_ALIGN16 const char* in;
  char* out;
  char* stage[KILN_SYM_MAX_RANKS];     /* rank p's staging area (both halves) as mapped here */
  uint64_t* flags[KILN_SYM_MAX_RANKS]; /* rank p's flag words as mapped here */
  uint64_t* seq;                       /* device, [KILN_SYM_MAX_BLOCKS]: the last sequence number used on
                              * this communicator, one copy per block (kernels/sym.cuh) */
  int* abortFlag;
  int* errWord;
  uint64_t timeoutNs;
  uint64_t count;     /* elements per rank segment: allreduce count, reducescatter
                              * recvcount, allgather sendcount, alltoall count per peer */
  uint64_t seg;       /* elements a block range is cut from: the window of one round (flag
                              * form) or the whole piece (LL lines) */
  uint64_t total;     /* elements of a piece over all rounds: count, or the two-shot share */
  uint64_t region;    /* bytes between two ranks' regions of a staging half */
  uint64_t halfBytes; /* bytes of one staging half */
  int32_t algo;       /* KILN_SYM_* */
  int32_t op;         /* kilnRedOp_t */
  int32_t nranks, rank;
  int32_t nblocks;
  int32_t ll;           /* KILN_SYM_LINES_*: the data travels as lines that carry the call's
                              * flag (from its sequence number), no fence, no flag words: small
                              * calls (host/sym.c); 0: the flag form */
  int32_t rounds;       /* flag form: windows of seg elements, one staging half each (LL: 1) */
  int32_t direct;       /* non-zero (sym_ce.h): the outputs are in the caller's symmetric
                              * windows (peerOut: every rank's output as mapped here); SM:
                              * allgather and alltoall store straight into them (one round, no
                              * staging), two-shot allreduce stores its reduced shares there
                              * instead of a second staging phase; ARRIVE / DONE: the meetings
                              * of the copy-engine form (the host copies between them) */
  int32_t preload;      /* direct allgather and alltoall (SM): each thread loads its first
                              * pack before the wait for the peers' arrival (kernels/sym.cuh
                              * bodyDirect) */
  int32_t earlyTrigger; /* LL forms: the trigger for the next kernel (programmatic launch) as
                              * soon as the block's lines are out, not at the kernel's end
                              * (kernels/sym.cuh LLStart::sent; host/sym.c KILN_SYM_PDL_TRIGGER);
                              * also keeps peerOut 8-byte aligned, the struct a multiple of 16 */
  char* peerOut[KILN_SYM_MAX_RANKS];
} kilnSymArgs;
KILN_STATIC_ASSERT(sizeof(kilnSymArgs) % 16 == 0, "kilnSymArgs is a multiple of 16 bytes");
#ifdef __CUDACC__
#define KILN_HOST_DEVICE __host__ __device__
#else
#define KILN_HOST_DEVICE
#endif
/* The 32-bit flag of LL lines: of a plan's slot use (kernels/primitives.cuh llFlag; its fourth word
 * carries it ^ KILN_DEV_LL_FLAG_PAIR, llFlagPair), and of a symmetric call's sequence number, with
 * the low bit set so that it is never 0 (kernels/sym.cuh symFlag). Here so that tests can plant
 * them. */
#define KILN_DEV_LL_FLAG_PAIR 0x6A09E667u
static inline KILN_HOST_DEVICE uint32_t kilnDevLLFlag(uint64_t use) { return (uint32_t)use * 0x9E3779B1u; }
static inline KILN_HOST_DEVICE uint32_t kilnDevSymFlag(uint64_t seq) { return kilnDevLLFlag(seq) | 1u; }
/* Elements of a segment of `seg` elements (of `esize` bytes) that each of `nblocks` blocks takes:
 * an even share in whole 16-byte packs (kernels/sym.cuh blockRange; the last ranges may be short
 * or empty; host/sym.c sizes the LL blocks' threads by it). */
static inline KILN_HOST_DEVICE uint64_t kilnSymBlockElems(uint64_t seg, int nblocks, uint64_t esize) {
  const uint64_t e16 = 16 / esize, per = (seg + (uint64_t)nblocks - 1) / (uint64_t)nblocks;
  return (per + e16 - 1) / e16 * e16;
}
/* LL128 lines of a segment of `seg` elements of `esize` bytes (120 data bytes each), and how many
 * of them each of `nblocks` blocks takes: an even share in whole warps' stores (4 lines; the last
 * blocks' shares may be short or empty; a block takes 8 threads per line). */
static inline KILN_HOST_DEVICE uint64_t kilnSymLines128(uint64_t seg, uint64_t esize) {
  return (seg * esize + KILN_DEV_LL128_DATA_BYTES - 1) / KILN_DEV_LL128_DATA_BYTES;
}
static inline KILN_HOST_DEVICE uint64_t kilnSymBlockLines128(uint64_t seg, int nblocks, uint64_t esize) {
  const uint64_t per = (kilnSymLines128(seg, esize) + (uint64_t)nblocks - 1) / (uint64_t)nblocks;
  return (per + 3) / 4 * 4;
}
/* LL12 lines of a segment of `seg` elements of `esize` bytes (12 data bytes each), and how many of
 * them each of `nblocks` blocks takes: an even share (the last blocks' shares may be short or
 * empty; a block takes a thread per line). */
static inline KILN_HOST_DEVICE uint64_t kilnSymLines12(uint64_t seg, uint64_t esize) {
  return (seg * esize + KILN_DEV_LL12_DATA_BYTES - 1) / KILN_DEV_LL12_DATA_BYTES;
}
static inline KILN_HOST_DEVICE uint64_t kilnSymBlockLines12(uint64_t seg, int nblocks, uint64_t esize) {
  return (kilnSymLines12(seg, esize) + (uint64_t)nblocks - 1) / (uint64_t)nblocks;
}
/* Bytes `seg` elements of `esize` bytes take as lines of form ll (KILN_SYM_LINES_LL, _LL128 or
 * _LL12), before a region rounds them up to 256. */
static inline uint64_t kilnSymLineBytes(int ll, uint64_t seg, uint64_t esize) {
  if (ll == KILN_SYM_LINES_LL128) return kilnSymLines128(seg, esize) * KILN_DEV_LL128_LINE_BYTES;
  if (ll == KILN_SYM_LINES_LL12) return kilnSymLines12(seg, esize) * KILN_DEV_LL_LINE_BYTES;
  return (seg * esize + KILN_DEV_LL_DATA_BYTES - 1) / KILN_DEV_LL_DATA_BYTES * KILN_DEV_LL_LINE_BYTES;
}
/* Threads a block of a call in lines takes (args: seg, nblocks, ll): one per LL or LL12 line of
 * its range rounded up to a warp, 8 per LL128 line; at most maxThreads. */
static inline int kilnSymLineThreads(const kilnSymArgs* a, uint64_t esize, int maxThreads) {
  const uint64_t t =
      a->ll == KILN_SYM_LINES_LL128 ? kilnSymBlockLines128(a->seg, a->nblocks, esize) * 8
      : a->ll == KILN_SYM_LINES_LL12
          ? (kilnSymBlockLines12(a->seg, a->nblocks, esize) + 31) / 32 * 32
          : ((kilnSymBlockElems(a->seg, a->nblocks, esize) * esize + KILN_DEV_LL_DATA_BYTES - 1) /
                 KILN_DEV_LL_DATA_BYTES +
             31) /
                32 * 32;
  return t < (uint64_t)maxThreads ? (int)t : maxThreads;
}
/* Launches the symmetric-memory kernel of args' form and kind of op (kernels/sym.cuh
 * kernelIndexOf) for `dtype` with args->nblocks blocks. pdl: with programmatic stream
 * serialization (the kernel may be scheduled while the kernel before it on the stream still runs;
 * it waits for that kernel's end and memory before anything else, see kernels/sym.cuh). Returns a
 * cudaError_t value. */
int kilnSymLaunch(int dtype, const kilnSymArgs* args, int threads, void* stream, int pdl);
/* 1 where kilnSymLaunch has a kernel for such a call (its form and kind of op, kernels/sym.cuh
 * kernelIndexOf; no GPU needed), else 0: the launch would fail with cudaErrorInvalidDeviceFunction. */
int kilnSymHasKernel(int dtype, const kilnSymArgs* args);
/* Launches the interpreter for `dtype` (kilnDataType_t) with args->ntbs blocks of `threads`
 * threads on `stream` (a cudaStream_t). Returns a cudaError_t value (0: launched). */
int kilnInterpLaunch(int dtype, const kilnDevArgs* args, int threads, void* stream);
/* Loads every interpreter kernel on the current device (see interp_dtype.cu.in: lazy loading
 * during a spinning kernel can deadlock). Returns a cudaError_t value. */
int kilnInterpPreload(void);
/* Launches the interpreter of plans with memory steps (kernels/mem.cuh) for `dtype` with
 * args->ntbs blocks of `threads` threads on `stream`, lines of protocol `lines` (KILN_DEV_PROTO_LL,
 * _LL12 or _LL128; Simple: none), through the driver with programmatic stream serialization when
 * pdl (as kilnSymLaunch). Returns a cudaError_t value. */
int kilnMemLaunch(int dtype, int lines, const kilnDevArgs* args, int threads, void* stream, int pdl);

/* Elements of `esize` bytes a piece of one step may hold in `bytes` of a slot under protocol
 * `proto` (the host's side of primitives.cuh's pieceBytes: the bytes a piece takes). */
static inline uint64_t kilnDevPieceElems(int proto, uint64_t bytes, uint64_t esize) {
  if (proto == KILN_DEV_PROTO_LL) return bytes / (KILN_DEV_LL_LINE_BYTES / KILN_DEV_LL_DATA_BYTES) / esize;
  if (proto == KILN_DEV_PROTO_LL128)
    return bytes / KILN_DEV_LL128_LINE_BYTES * KILN_DEV_LL128_DATA_BYTES / esize;
  return bytes / esize;
}

#ifdef __cplusplus
}
#endif
#endif /* KILN_KERNELS_DEV_H */
