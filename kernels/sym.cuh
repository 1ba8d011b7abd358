/*
 * The symmetric-memory kernels (kilnSymArgs in kiln_dev.h; host/sym.c chooses and launches).
 *
 * A plan moves data through FIFO slots, one handshake per slot and step. These kernels move a
 * whole call through a staging area in every rank's NCCL window instead: block j of every rank
 * owns range j of the data; it stores its range of what each peer needs straight into that peer's
 * staging area (NVLink stores, 16 bytes per thread, several in flight), then, after a barrier,
 * publishes one flag per peer (st.release.sys: cumulative over the block's stores, as in
 * interp.cuh's publishStep). Once it has seen the flag of block j of every peer (ld.acquire.sys,
 * then a barrier) it combines the staged ranges with its own input locally. One flag round trip
 * per phase and round (a round: as much as a staging half holds), not per FIFO slot; no receive
 * copies, no scratch.
 *
 * Staging: two halves in each window, used by alternate sequence numbers. A call takes one number,
 * or, in the flag form, one per round when its pieces are larger than a rank's region of a half
 * (body: round r + 1 is stored while round r is combined). A rank writes half h at number s only
 * after every peer has finished with number s - 2 in that half, which it knows from the flags of
 * s - 1 it waited for (see body; between single-round calls: the peer set them in call s - 1,
 * after its call s - 2 had ended, kernels of one rank running in stream order and host/exec.c
 * ordering them across streams). Flags hold the number that set them and only grow; a wait passes
 * at `>= s` (a peer may already have set s + 1's flag, whose data goes to the other half).
 *
 * The sequence number lives in device memory, one copy per block: block j reads slot j at its
 * start and stores the call's last number there once every thread of it has read the slot (the LL
 * forms: once their lines are out; the others: at the end), and block 0 also stores it into the
 * slots of the blocks this call does not have, so all slots agree after every call (the next
 * kernel on the stream reads them only after this one has ended, and starts one past) and CUDA
 * graph replays need no host help. No block waits for another at the end (a shared counter and its
 * atomic cost every call the latency of an atomic). Reductions run in rank order 0..n-1 on every
 * rank, so every rank gets bitwise the same allreduce result.
 */
#ifndef KILN_KERNELS_SYM_CUH
#define KILN_KERNELS_SYM_CUH

#include <type_traits>

#include "primitives.cuh"
#include "sym_ce.h"

namespace kiln {
namespace sym {

enum : int { MAXR = KILN_SYM_MAX_RANKS, MAXB = KILN_SYM_MAX_BLOCKS };
static_assert(MAXR <= 8, "publish and await give each phase 8 lanes of a warp");

struct Shared {
  uint64_t seq;
  int abort;
};

/* The LL flag of call seq (protocols.cuh lineFlag: never 0, different for calls s and s - 2k that
 * share a half) and the LL128 flag word (lineFlag128: it in both halves). */
__device__ __forceinline__ uint32_t symFlag(uint64_t seq) { return lineFlag(seq); }
__device__ __forceinline__ uint64_t symFlag128(uint64_t seq) { return lineFlag128(seq); }

/* The line forms of kilnSymArgs.ll are the protocols of kiln_dev.h by number (LineData takes them). */
static_assert((int)KILN_SYM_LINES_LL == (int)KILN_DEV_PROTO_LL &&
                  (int)KILN_SYM_LINES_LL12 == (int)KILN_DEV_PROTO_LL12 &&
                  (int)KILN_SYM_LINES_LL128 == (int)KILN_DEV_PROTO_LL128,
              "line forms numbered as the protocols");

/* This block's range [lo, hi) of a segment of a.seg elements: ranges start at 16-byte multiples,
 * the last ones may be empty. */
template <typename T>
__device__ __forceinline__ void blockRange(const kilnSymArgs& a, uint64_t* lo, uint64_t* hi) {
  const uint64_t per = kilnSymBlockElems(a.seg, a.nblocks, sizeof(T));
  *lo = min(a.seg, (uint64_t)blockIdx.x * per);
  *hi = min(a.seg, *lo + per);
}

/* The LL lines [l0, l1) of the block's range (8 data bytes each). An empty range has none (else it
 * would take the last partial line of the block before). */
template <typename T>
__device__ __forceinline__ void blockLines(const kilnSymArgs& a, uint64_t* l0, uint64_t* l1) {
  constexpr int E8 = 8 / sizeof(T);
  uint64_t lo, hi;
  blockRange<T>(a, &lo, &hi);
  *l0 = lo / E8;
  *l1 = lo == hi ? *l0 : (hi + E8 - 1) / E8;
}

/* The LL128 lines [l0, l1) of the block (kilnSymBlockLines128). */
template <typename T>
__device__ __forceinline__ void blockLines128(const kilnSymArgs& a, uint64_t* l0, uint64_t* l1) {
  const uint64_t nl = kilnSymLines128(a.seg, sizeof(T)),
                 per = kilnSymBlockLines128(a.seg, a.nblocks, sizeof(T));
  *l0 = min(nl, (uint64_t)blockIdx.x * per);
  *l1 = min(nl, *l0 + per);
}

/* The LL12 lines [l0, l1) of the block (kilnSymBlockLines12). */
template <typename T>
__device__ __forceinline__ void blockLines12(const kilnSymArgs& a, uint64_t* l0, uint64_t* l1) {
  const uint64_t nl = kilnSymLines12(a.seg, sizeof(T)),
                 per = kilnSymBlockLines12(a.seg, a.nblocks, sizeof(T));
  *l0 = min(nl, (uint64_t)blockIdx.x * per);
  *l1 = min(nl, *l0 + per);
}

/* Rank p's staging region `idx` (phase * nranks + source rank) in the half of call seq. */
__device__ __forceinline__ char* region(const kilnSymArgs& a, uint64_t seq, int p, int idx) {
  return a.stage[p] + (seq & 1) * a.halfBytes + (uint64_t)idx * a.region;
}

/* The op a body reduces with, from the call's op id: OpDyn and OpSel carry the id, a fixed op
 * nothing. */
template <class Op> __device__ __forceinline__ Op opOf(int id) {
  if constexpr (std::is_same<Op, OpDyn>::value || std::is_same<Op, OpSel>::value)
    return Op{id};
  else
    return Op{};
}

/* What every line body (bodyLL of both its forms, bodyLL2, bodyLL128, bodyLL128x2) starts from: the
 * rank count (R at compile time for 2 and 4 ranks, MAXR: a.nranks), this rank, the thread and the block's
 * threads (the LL bodies' stride; the LL128 bodies take their lanes, Lane128, after the start),
 * the op, the buffers and the sizes, the block's lines [l0, l1) (of the form L's size),
 * whether to go on past the sends (st.begin: false once the abort flag is up) and the call's
 * sequence number. L: the lines' form (KILN_SYM_LINES_*). */
template <typename T, int R, int L, class Op> struct LineCall {
  static constexpr bool L128 = L == KILN_SYM_LINES_LL128;
  int n, me, tid, nthr;
  Op op;
  const T* in;
  T* out;
  uint64_t count, seg, l0, l1, seq;
  bool go;
  typename std::conditional<L128, uint64_t, uint32_t>::type flag; /* the call's LL, LL12 or LL128 flag */
  template <class Start> __device__ __forceinline__ LineCall(const kilnSymArgs& a, Start& st)
      : n(R == MAXR ? a.nranks : R),
        me(a.rank),
        tid(threadIdx.x),
        nthr(blockDim.x),
        op(opOf<Op>(a.op)),
        in((const T*)a.in),
        out((T*)a.out),
        count(a.count),
        seg(a.seg) {
    if constexpr (L128)
      blockLines128<T>(a, &l0, &l1);
    else if constexpr (L == KILN_SYM_LINES_LL12)
      blockLines12<T>(a, &l0, &l1);
    else
      blockLines<T>(a, &l0, &l1);
    go = st.begin(l0, l1);
    seq = st.seq;
    if constexpr (L128)
      flag = symFlag128(seq);
    else
      flag = symFlag(seq);
  }
};

/* Line l of every peer p's part (part(p): its line's data, D::P) into this rank's region of peer
 * p (protocols.cuh putLines: every part loaded before the first line goes out). Alltoall does not
 * use it (bodyLL says why). */
template <int R, class D = LinesLL, class Part>
__device__ __forceinline__ void sendLines(const kilnSymArgs& a, uint64_t seq, uint64_t l, uint32_t flag,
                                          const Part& part) {
  const int n = R == MAXR ? a.nranks : R, me = a.rank;
  putLines<R, D>(n, me, flag, part, [&](int p) { return (uint4*)region(a, seq, p, me) + l; });
}

/* The peers of this rank (q < n but me) as a mask of sources. */
template <int R> __device__ __forceinline__ unsigned peerMask(const kilnSymArgs& a) {
  const int n = R == MAXR ? a.nranks : R, me = a.rank;
  unsigned pend = 0;
#pragma unroll
  for (int q = 0; q < R; q++)
    if (q < n && q != me) pend |= 1u << q;
  return pend;
}

/* Line l of every peer q's region (idx0 + q) of this rank, into v[q] (protocols.cuh pollLines:
 * all loads in flight at once). false: timeout or abort. */
template <int R> __device__ __forceinline__ bool recvLines(const kilnSymArgs& a, uint64_t seq, int idx0,
                                                           uint64_t l, uint32_t flag, Spin& spin,
                                                           uint64_t* v) {
  return pollLines<R>(
      peerMask<R>(a), [&](int q) { return (const uint4*)region(a, seq, a.rank, idx0 + q) + l; }, flag, spin,
      v);
}

/* The reduction of one line in rank order: v[q] from peer q, mine in this rank's place (P: the
 * line's data, 8 bytes for LL and LL128 words, Pack12 for LL12). */
template <typename T, int R, typename P = uint64_t, class Op>
__device__ __forceinline__ P reduceLine(const kilnSymArgs& a, const Op& op, const P* v, P mine) {
  const int n = R == MAXR ? a.nranks : R, me = a.rank;
  P acc = me == 0 ? mine : v[0];
#pragma unroll
  for (int q = 1; q < R; q++)
    if (q < n) acc = opPack<T>(op, acc, q == me ? mine : v[q]);
  return a.op == OP_AVG ? dividePack<T, P>(acc, n) : acc;
}

/* combine over the n sources of a reduction: NR of them (MAXR: n, known at run time only). */
template <typename T, int NR, int ND, class Op>
__device__ __forceinline__ void reduceOp(int n, T* const* dsts, const T* const* srcs, uint64_t m,
                                         const Op& op, int avgN) {
  if constexpr (NR != MAXR) {
    combine<T, NR, Op, ND>(dsts, srcs, m, op, avgN);
  } else {
    switch (n) {
      case 2: combine<T, 2, Op, ND>(dsts, srcs, m, op, avgN); break;
      case 3: combine<T, 3, Op, ND>(dsts, srcs, m, op, avgN); break;
      case 4: combine<T, 4, Op, ND>(dsts, srcs, m, op, avgN); break;
      case 5: combine<T, 5, Op, ND>(dsts, srcs, m, op, avgN); break;
      case 6: combine<T, 6, Op, ND>(dsts, srcs, m, op, avgN); break;
      case 7: combine<T, 7, Op, ND>(dsts, srcs, m, op, avgN); break;
      case 8: combine<T, 8, Op, ND>(dsts, srcs, m, op, avgN); break;
      default: combine<T, 1, Op, ND>(dsts, srcs, m, op, avgN); break;
    }
  }
}

/* Types of 4 bytes and more sum (and avg: a sum divided at the end) with the op fixed at compile
 * time, no choice per element, and choose their other ops per element (OpDyn); the smaller types
 * pick every op by selects (OpSel), which costs the 4-byte types time and the 16-bit ones none.
 * NR and ND: reduceOp's.
 * 4x H100, graphs, sum fixed vs chosen: float reducescatter 16 MiB 47.3 vs 50.3 us (2026-11-26).
 * 2 ranks sharing one H200, selects vs OpDyn: 16-bit 0.94-1.01x, float max 1.04-1.05x the time (2026-11-29). */
template <typename T, int NR, int ND = NR>
__device__ __forceinline__ void reduceN(int n, T* const* dsts, const T* const* srcs, uint64_t m,
                                        const OpDyn& op, int avgN) {
  if constexpr (sizeof(T) >= 4) {
    if (opSums(op.op))
      reduceOp<T, NR, ND>(n, dsts, srcs, m, OpSum(), avgN);
    else
      reduceOp<T, NR, ND>(n, dsts, srcs, m, op, avgN);
  } else {
    reduceOp<T, NR, ND>(n, dsts, srcs, m, OpSel{op.op}, avgN);
  }
}

/* One copy src -> dst (m elements). */
template <typename T>
__device__ __forceinline__ void copy1(T* dst, const T* src, uint64_t m, const OpDyn& op) {
  T* d[1] = {dst};
  const T* s[1] = {src};
  combine<T, 1, OpDyn, 1>(d, s, m, op, 0);
}

/* After a barrier (every store of the block to the peers' staging areas comes first), publishes
 * this block's flag of phase 0 with seq0 and of phase 1 with seq1 to every peer (0: not that
 * phase). */
__device__ __forceinline__ void publish(const kilnSymArgs& a, uint64_t seq0, uint64_t seq1) {
  const int tid = threadIdx.x, n = a.nranks, me = a.rank, j = blockIdx.x;
  __syncthreads();
  const int phase = tid >> 3, p = tid & 7; /* warp 0: lanes 0-7 phase 0, 8-15 phase 1 */
  const uint64_t seq = phase == 0 ? seq0 : phase == 1 ? seq1 : 0;
  if (seq && p < n && p != me) stReleaseSys(a.flags[p] + ((size_t)(phase * MAXR + me) * MAXB + j), seq);
}

/* Waits until every peer's flag of this block is at least seq0 in phase 0 and seq1 in phase 1 (0:
 * not that phase), then a barrier. Warp 1 waits: lanes 0-7 for phase 0, 8-15 for phase 1. false:
 * timeout or abort. */
__device__ __forceinline__ bool await(const kilnSymArgs& a, uint64_t seq0, uint64_t seq1, Shared* sh) {
  const int tid = threadIdx.x, n = a.nranks, me = a.rank, j = blockIdx.x;
  const int phase = tid >= 32 && tid < 64 ? (tid - 32) >> 3 : -1, q = tid & 7;
  const uint64_t seq = phase == 0 ? seq0 : phase == 1 ? seq1 : 0;
  if (seq && q < n && q != me) {
    const uint64_t* f = a.flags[me] + ((size_t)(phase * MAXR + q) * MAXB + j);
    Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
    while (ldAcquireSys(f) < seq)
      if (spin.tick()) {
        sh->abort = 1;
        break;
      }
  }
  __syncthreads();
  return !sh->abort;
}

/* What the bodies compute from the arguments alone (the block's range or lines, lo and hi) and the
 * arguments they read first, made ready before the wait for the kernel before (their Start's begin
 * calls it first): kernel parameters never change, so none of this waits for that kernel's end. */
__device__ __forceinline__ void prologue(const kilnSymArgs& a, uint64_t lo, uint64_t hi) {
  asm volatile("" ::"l"(lo), "l"(hi), "l"(a.in), "l"(a.out), "l"(a.stage[0]), "l"(a.halfBytes), "l"(a.region),
               "l"(a.seq), "l"(a.abortFlag));
}

/* The flag form, in rounds: round r moves window r (a.seg elements from r * a.seg) of every piece
 * (the input, the part for a peer, a two-shot share: a.total elements each) through the staging
 * half of its sequence number seq0 + r; block j owns the same range of every window. Rounds
 * overlap: a block stores round r + 1 into its peers' staging before it combines round r.
 *
 * Why the halves are safe to reuse: a rank stores into the half of round r only after it has seen,
 * for its block, the flag of round r - 1 (the same phase) of the peer's block; that flag is
 * published after the peer's block has combined round r - 2, which used the same half. Across
 * calls it holds for the whole call, whatever the block counts: every block of the previous call
 * saw its peer block's flag of the last round, published after that block had finished with the
 * round before, so once this rank's call begins every peer is done with that half ("call s - 2
 * ended on every peer" is the single-round case; a direct or LL call in between shows the same:
 * a peer that arrived at it had ended its call before).
 *
 * One phase (one-shot allreduce, reducescatter, allgather, alltoall), round r: wait for the
 * peers' flags of r; store round r + 1; combine round r; publish round r + 1 (its flag also says
 * round r is combined). Two-shot allreduce: phase 0 carries the shares, phase 1 the reduced shares;
 * round r: wait for phase 0 of r and phase 1 of r - 1; reduce share r into the output and the
 * peers' phase-1 staging; store round r + 1's shares; copy the reduced shares of round r - 1 into
 * place; publish phase 0 of r + 1 and phase 1 of r.
 *
 * Direct (kilnSymArgs.direct, two-shot only): every rank's output is in the caller's symmetric
 * windows, so reduceShare stores the reduced share r straight into the peers' outputs instead of
 * their phase-1 staging, and nothing is copied into place; the phase-1 flags still say "stored"
 * (the last wait covers every round, each round's flag being published after its stores). A peer's
 * output is first written after that peer's flag of round r, so after its call began; in place,
 * after it pushed that part of its input (phase 0 of round r), which it reads nowhere else.
 *
 * Forced inline: for bfloat16 the compiler otherwise makes it a function of its own (kilnSymArgs
 * copied to the stack, 384 bytes of frame); inlined, bfloat16 is level with half.
 * 4x H100, bfloat16 inlined vs not: reducescatter 1 MiB 9.9 vs 13.3 us, allreduce 16 MiB 96.4 vs 108.9 (2026-11-26).
 *
 * NR: the rank count at compile time (2 or 4; MAXR: any count to MAXR, a.nranks). */
template <typename T, int NR, class Start>
__device__ __forceinline__ void body(const kilnSymArgs& a, Start& st) {
  const int n = NR == MAXR ? a.nranks : NR, me = a.rank, R = a.rounds;
  const OpDyn op{a.op};
  const int avgN = a.op == OP_AVG ? n : 0;
  const T* in = (const T*)a.in;
  T* out = (T*)a.out;
  const uint64_t count = a.count, w = a.seg, total = a.total;
  const bool two = a.algo == KILN_SYM_AR_TWOSHOT;
  /* Pieces in the input lie `stride` apart; piece p holds pieceLen(p) elements. */
  const uint64_t stride = two ? total : count;
  uint64_t lo, hi;
  blockRange<T>(a, &lo, &hi);
  if (!st.begin(lo, hi)) return;
  const uint64_t seq0 = st.seq;
  Shared* const sh = st.sh;
  auto pieceLen = [&](int p) -> uint64_t {
    if (!two) return count;
    const uint64_t st = (uint64_t)p * total;
    return st >= count ? 0 : min(total, count - st);
  };
  /* Elements of this block's range in round r of piece p, which starts at window offset `at`. */
  auto part = [&](int p, int r) -> uint64_t {
    const uint64_t at = (uint64_t)r * w + lo, L = pieceLen(p);
    return at >= L ? 0 : min(hi - lo, L - at);
  };
  /* This block's range in rank p's staging region (phase, src) of round r. */
  auto stage = [&](int r, int p, int phase, int src) -> T* {
    return (T*)region(a, seq0 + r, p, phase * n + src) + lo;
  };
  T* dsts[NR];
  const T* srcs[NR];
  auto clear = [&]() {
#pragma unroll
    for (int q = 0; q < NR; q++) dsts[q] = nullptr, srcs[q] = nullptr;
  };
  /* Round r of this rank's pieces into the peers' staging (and its own part into place). */
  auto push = [&](int r) {
    const uint64_t at = (uint64_t)r * w + lo;
    if (a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG) {
      clear();
#pragma unroll
      for (int p = 0; p < NR; p++)
        if (p < n && p != me) dsts[p] = stage(r, p, 0, me);
      if (a.algo == KILN_SYM_AG && in != out + (uint64_t)me * count)
        dsts[me] = out + (uint64_t)me * count + at;
      srcs[0] = in + at;
      combine<T, 1, OpDyn, NR>(dsts, srcs, part(me, r), op, 0);
    } else {
      /* Peers in the order me + 1, me + 2, ...: at any moment every rank stores to a different
       * peer (in the order 0, 1, ... all ranks store to rank 0 first, sharing its links).
       * 4x H100, reducescatter 256 MiB: 634 us staggered, 736 in order, 702 in one pass (2026-11-26). */
      for (int k = 1; k < n; k++) {
        const int p = (me + k) % n;
        copy1<T>(stage(r, p, 0, me), in + (uint64_t)p * stride + at, part(p, r), op);
      }
      if (a.algo == KILN_SYM_A2A && in + (uint64_t)me * count != out + (uint64_t)me * count)
        copy1<T>(out + (uint64_t)me * count + at, in + (uint64_t)me * count + at, part(me, r), op);
    }
  };
  /* The peers' pieces of round r in this rank's staging region `phase` copied into place:
   * allgather and alltoall (phase 0), two-shot's reduced shares (phase 1). */
  auto place = [&](int r, int phase) {
    for (int q = 0; q < n; q++)
      if (q != me)
        copy1<T>(out + (uint64_t)q * stride + (uint64_t)r * w + lo, stage(r, me, phase, q), part(q, r), op);
  };
  /* One phase: round r of the peers' staging, reduced with this rank's own piece or copied into
   * place. */
  auto consume = [&](int r) {
    const uint64_t at = (uint64_t)r * w + lo;
    if (a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_RS) {
      const uint64_t own = a.algo == KILN_SYM_RS ? (uint64_t)me * count : 0;
      clear();
#pragma unroll
      for (int q = 0; q < NR; q++)
        if (q < n) srcs[q] = q == me ? in + own + at : stage(r, me, 0, q);
      dsts[0] = out + at;
      reduceN<T, NR, 1>(n, dsts, srcs, part(me, r), op, avgN);
    } else {
      place(r, 0);
    }
  };
  /* Two-shot: share `me` of round r reduced into the output and every peer's phase-1 region. */
  auto reduceShare = [&](int r) {
    const uint64_t start = (uint64_t)me * total + (uint64_t)r * w + lo;
    clear();
#pragma unroll
    for (int q = 0; q < NR; q++)
      if (q < n) {
        srcs[q] = q == me ? in + start : stage(r, me, 0, q);
        dsts[q] = q == me ? out + start : a.direct ? (T*)a.peerOut[q] + start : stage(r, q, 1, me);
      }
    reduceN<T, NR>(n, dsts, srcs, part(me, r), op, avgN);
  };

  push(0);
  publish(a, seq0, 0);
  for (int r = 0; r < R; r++) {
    const uint64_t s = seq0 + r;
    const bool more = r + 1 < R;
    if (!two) {
      if (!await(a, s, 0, sh)) return;
      if (more) push(r + 1);
      consume(r);
      if (more) publish(a, s + 1, 0);
    } else {
      if (!await(a, s, r > 0 ? s - 1 : 0, sh)) return;
      reduceShare(r);
      if (more) push(r + 1);
      if (r > 0 && !a.direct) place(r - 1, 1);
      publish(a, more ? s + 1 : 0, s);
    }
  }
  if (two) {
    if (!await(a, 0, seq0 + R - 1, sh)) return;
    if (!a.direct) place(R - 1, 1);
  }
}

/* The direct form of allgather and alltoall (kilnSymArgs.direct): every rank's output lies in the
 * caller's symmetric windows (the same offset on every rank, NCCL_WIN_COLL_SYMMETRIC's rule), so
 * block j of every rank stores range j of each of its pieces straight into the output of the rank
 * it is for (NVLink stores, piece `me` there): no staging, no copy out of it, one round. Two flags
 * per block and peer: phase 0 (arrived: this rank's earlier work on the stream is done, its output
 * may be written) before any remote store, phase 1 (done: this block's stores are over) before the
 * kernel ends, so no rank's output is touched outside its call (unless a wait times out: then
 * the communicator is broken and a peer may still be storing). One sequence number per call and
 * no staging half; a staged call after it still finds every peer done with the half it reuses
 * (the peer arrived at this call, so its call before had ended). The copy-engine form splits the
 * two meetings into two kernels of one block, each with a sequence number of its own, and the
 * copies between them are the engine's (host/sym.c). */
template <typename T, class Start>
__device__ __forceinline__ void bodyDirect(const kilnSymArgs& a, Start& st) {
  const int n = a.nranks, me = a.rank;
  const OpDyn op{a.op};
  const T* in = (const T*)a.in;
  const uint64_t count = a.count;
  uint64_t lo, hi;
  blockRange<T>(a, &lo, &hi);
  if (!st.begin(lo, hi)) return;
  const uint64_t seq = st.seq;
  Shared* const sh = st.sh;
  /* The copy-engine form (sym_ce.h, host/sym.c issue_copy_engine): a kernel of one block
   * for each meeting (ARRIVE: phase 0, DONE: phase 1), the engine's copies between them. */
  if (a.direct == KILN_SYM_DIRECT_DONE) {
    publish(a, 0, seq);
    await(a, 0, seq, sh);
    return;
  }
  publish(a, seq, 0);
  const bool ag = a.algo == KILN_SYM_AG;
  /* Block j's k-th piece goes to rank me + k + j: at any moment every rank stores to a different
   * peer (see push in body), and the blocks copying this rank's own piece (locally) are spread
   * over the call instead of all coming last. */
  auto peerAt = [&](int k) { return (me + k + (int)(blockIdx.x % n)) % n; };
  auto dstOf = [&](int p) { return (T*)a.peerOut[p] + (uint64_t)me * count + lo; };
  auto srcOf = [&](int p) { return in + (ag ? 0 : (uint64_t)p * count) + lo; };
  /* The first pack of this thread's first piece is loaded while the peers' arrival is awaited
   * (a.preload, set by the host for SM stores only; the input is this rank's own, ready since the
   * kernel began): the load's latency overlaps the flags' flight instead of following it. Where
   * the block's range holds a pack for every thread and the piece is 16-byte aligned. */
  constexpr int E = 16 / sizeof(T);
  const uint64_t m = hi - lo, skip = (uint64_t)blockDim.x * E;
  T* const dst1 = dstOf(peerAt(1));
  const T* const src1 = srcOf(peerAt(1));
  const bool pre = a.preload && dst1 != src1 && m >= skip && ((uintptr_t)dst1 | (uintptr_t)src1) % 16 == 0;
  uint4 first = make_uint4(0, 0, 0, 0);
  if (pre) first = __ldcg((const uint4*)src1 + threadIdx.x);
  if (!await(a, seq, 0, sh) || a.direct == KILN_SYM_DIRECT_ARRIVE) return;
  for (int k = 1; k <= n; k++) {
    const int p = peerAt(k);
    T* dst = dstOf(p);
    const T* src = srcOf(p);
    if (dst == src) continue;
    if (k == 1 && pre) {
      ((uint4*)dst)[threadIdx.x] = first;
      copy1<T>(dst + skip, src + skip, m - skip, op);
    } else {
      copy1<T>(dst, src, m, op);
    }
  }
  publish(a, 0, seq);
  await(a, 0, seq, sh);
}

/* Line l of every peer q's region q of this rank as lines of form L (LL or LL12; LineData's
 * poll), into v[q]. */
template <int L, int R, class P>
__device__ __forceinline__ bool recvLinesOf(const kilnSymArgs& a, uint64_t seq, uint64_t l, uint32_t flag,
                                            Spin& spin, P* v) {
  return LineData<uint32_t, L>::template poll<R>(
      peerMask<R>(a), [&](int q) { return (const uint4*)region(a, seq, a.rank, q) + l; }, flag, spin, v);
}

/* Small calls (kilnSymArgs.ll): the same exchange with the data as LL lines (primitives.cuh:
 * 8 data bytes and the flag twice per 16-byte line, the flag made from the call's sequence
 * number), so a line is its own signal: no fence, no flag words, one NVLink flight from the
 * sender's store to the receiver's use. Region (rank p's, from src) holds one line per 8 bytes of
 * the segment (LL12: per 12). The staging halves alternate as above: in call s - 1 every rank read
 * lines of every peer, stored after that peer's call s - 2 had ended. One-shot allreduce, reducescatter,
 * allgather and alltoall (two-shot is for large calls). L: the lines' form, LL or LL12 (LineData:
 * the same exchange with 12 data bytes a line). */
template <typename T, int R, int L, class Op, class Start>
__device__ void bodyLL(const kilnSymArgs& a, Start& st) {
  using D = LineData<T, L>;
  using P = typename D::P;
  constexpr int E = D::E;
  const LineCall<T, R, L, Op> c(a, st);
  const int n = c.n, me = c.me, tid = c.tid, nthr = c.nthr;
  auto lines = [&](int p, int src) -> uint4* { return (uint4*)region(a, c.seq, p, src); };
  const bool toAll = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG;
  /* Whether whole lines of every piece p of the input (c.in + p * count) and of the output (c.out
   * + q * count) lie at the lines' alignment (LINE_WHOLE). Reducescatter's sends read only the
   * input; alltoall's also copy this rank's own piece into the output. */
  const bool inAligned = D::aligned(c.in) && D::aligned(c.in + c.count);
  const bool outAligned = D::aligned(c.out) && D::aligned(c.out + c.count);
  const bool sendAligned = inAligned && (a.algo == KILN_SYM_RS || outAligned);
  /* Reducescatter's and alltoall's line l of every piece p, to peer p, loaded as `how` says. */
  auto sendPieces = [&](auto how, uint64_t l, uint64_t e0, int nv) {
    constexpr int H = decltype(how)::value;
    if (a.algo == KILN_SYM_A2A) {
      /* A load, then its line, peer after peer.
       * 4x H200, against every part first: 3-7% slower at 64 B-4 KiB, up to 5% faster above (2026-11-27). */
#pragma unroll
      for (int p = 0; p < R; p++)
        if (p < n && p != me)
          D::put(lines(p, me) + l, D::template loadBy<H>(c.in + (uint64_t)p * c.count + e0, nv), c.flag);
      const uint64_t mine = (uint64_t)me * c.count + e0;
      if (c.in != c.out) D::template storeBy<H>(c.out + mine, D::template loadBy<H>(c.in + mine, nv), nv);
    } else { /* reducescatter */
      sendLines<R, D>(a, c.seq, l, c.flag,
                      [&](int p) { return D::template loadBy<H>(c.in + (uint64_t)p * c.count + e0, nv); });
    }
  };
  /* Send: line l of this rank's data (or of piece p) to every peer p. */
  for (uint64_t l = c.l0 + tid; l < c.l1; l += nthr) {
    const uint64_t e0 = l * E;
    const int nv = (int)min((uint64_t)E, c.seg - e0);
    if (toAll) {
      const P v = D::load(c.in + e0, nv);
#pragma unroll
      for (int p = 0; p < R; p++)
        if (p < n && p != me) D::put(lines(p, me) + l, v, c.flag);
      if (a.algo == KILN_SYM_AG && c.in != c.out + (uint64_t)me * c.count)
        D::store(c.out + (uint64_t)me * c.count + e0, v, nv);
    } else if (L == KILN_SYM_LINES_LL12 && a.algo == KILN_SYM_A2A) {
      /* LL12 alltoall keeps a load behind its own branch per peer.
       * 2x H200, the kernel alone, 32-64 KiB: 0.98x the time this way, 1.06-1.11x via sendPieces (2026-11-28). */
#pragma unroll
      for (int p = 0; p < R; p++)
        if (p < n && p != me)
          D::put(lines(p, me) + l, D::load(c.in + (uint64_t)p * c.count + e0, nv), c.flag);
      const uint64_t mine = (uint64_t)me * c.count + e0;
      if (c.in != c.out) D::store(c.out + mine, D::load(c.in + mine, nv), nv);
    } else if (nv == E && sendAligned) {
      sendPieces(LineHowT<LINE_WHOLE>(), l, e0, nv);
    } else {
      sendPieces(LineHowT<LINE_ANY>(), l, e0, nv);
    }
  }
  st.sent();
  if (!c.go) return;
  /* Receive: every peer's line l, then reduce in rank order or copy into place. */
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  const bool reduces = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_RS;
  const uint64_t own = a.algo == KILN_SYM_RS ? (uint64_t)me * c.count : 0;
  for (uint64_t l = c.l0 + tid; l < c.l1; l += nthr) {
    const uint64_t e0 = l * E;
    const int nv = (int)min((uint64_t)E, c.seg - e0);
    /* This rank's own operand is loaded before the wait, so its latency hides in the flight of
     * the peers' lines instead of following it. */
    const P mine = reduces ? D::load(c.in + own + e0, nv) : P{};
    P v[MAXR];
    if (!recvLinesOf<L, R>(a, c.seq, l, c.flag, spin, v)) return;
    if (reduces) {
      D::store(c.out + e0, reduceLine<T, R, P>(a, c.op, v, mine), nv);
    } else {
      auto storePieces = [&](auto how) {
#pragma unroll
        for (int q = 0; q < R; q++)
          if (q < n && q != me)
            D::template storeBy<decltype(how)::value>(c.out + (uint64_t)q * c.count + e0, v[q], nv);
      };
      if (nv == E && outAligned)
        storePieces(LineHowT<LINE_WHOLE>());
      else
        storePieces(LineHowT<LINE_ANY>());
    }
  }
}

/* Two-shot allreduce as LL lines (kilnSymArgs.ll with KILN_SYM_AR_TWOSHOT): share p of this
 * rank's input to rank p (regions 0..n-1); rank q reduces share q from the lines it received and
 * its own input, stores the result into its output and, as lines, into every peer's region n + q;
 * then copies the peers' shares from those lines into place. Lines past the input's end carry
 * zeros (the receiver reads every line of its range). */
template <typename T, int R, class Op, class Start> __device__ void bodyLL2(const kilnSymArgs& a, Start& st) {
  constexpr int E8 = 8 / sizeof(T);
  const LineCall<T, R, KILN_SYM_LINES_LL, Op> c(a, st);
  const int n = c.n, me = c.me, tid = c.tid, nthr = c.nthr;
  auto lines = [&](int p, int idx) -> uint4* { return (uint4*)region(a, c.seq, p, idx); };
  /* Valid elements of share p's line at share offset e0. */
  auto valid = [&](int p, uint64_t e0) -> int {
    const uint64_t start = (uint64_t)p * c.seg + e0;
    return start >= c.count ? 0 : (int)min((uint64_t)E8, c.count - start);
  };
  for (uint64_t l = c.l0 + tid; l < c.l1; l += nthr) {
    const uint64_t e0 = l * E8;
    sendLines<R>(a, c.seq, l, c.flag,
                 [&](int p) { return loadPart<T, uint64_t>(c.in + (uint64_t)p * c.seg + e0, valid(p, e0)); });
  }
  st.sent();
  if (!c.go) return;
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  for (int phase = 0; phase < 2; phase++) {
    for (uint64_t l = c.l0 + tid; l < c.l1; l += nthr) {
      const uint64_t e0 = l * E8;
      const int nv = valid(me, e0);
      const uint64_t mine = phase == 0 ? loadPart<T, uint64_t>(c.in + (uint64_t)me * c.seg + e0, nv) : 0;
      uint64_t v[MAXR];
      if (!recvLines<R>(a, c.seq, phase * n, l, c.flag, spin, v)) return;
      if (phase == 0) {
        const uint64_t acc = reduceLine<T, R>(a, c.op, v, mine);
        storePart<T, uint64_t>(c.out + (uint64_t)me * c.seg + e0, acc, nv);
#pragma unroll
        for (int p = 0; p < R; p++)
          if (p < n && p != me) llStore(lines(p, n + me) + l, acc, c.flag);
      } else {
#pragma unroll
        for (int q = 0; q < R; q++)
          if (q < n && q != me) storePart<T, uint64_t>(c.out + (uint64_t)q * c.seg + e0, v[q], valid(q, e0));
      }
    }
  }
}

/* LL128 lines (kilnSymArgs.ll == KILN_SYM_LINES_LL128; bodyLL128, bodyLL128x2): line l of a region
 * holds bytes [120 l, 120 l + 120) of the segment as words 0-14 and the call's flag as word 15.
 * Lane j (0-7) of each 8-lane group of a warp holds words 2j and 2j + 1 of one line (lane 7: word
 * 14 and the flag); a warp moves 4 lines per 16-byte store or load. An LL line carries 8 data
 * bytes in 16, this 120 in 128: one-shot allreduce 64 KiB on 4 ranks sends 3 x 70 KiB of lines per
 * GPU instead of 3 x 128 KiB. What makes it correct is the property protocols.cuh's LL128 names
 * (the 128 bytes one warp-wide store writes reach the peer together, the flag word with the
 * data), and the receiver takes the data from a load after the one that saw every flag
 * (pollLines128; the poll's own load may hold older data in a line's lower sectors).
 *
 * LL128 takes more time than LL up to 64 KiB of segment, the same at 128 KiB, less above, so
 * host/sym.c sends only the larger one-shot segments this way. The second load costs 0.15-0.4 us
 * a call and no run without it has read a stale element; it stays, as in every LL128 line, until
 * a reason to trust the poll's data is stronger than runs without a failure. The kernel's code
 * size is not what costs the extra time (built for one rank count, 30 KB of code instead of 104,
 * it takes as long).
 * 4x H200, the kernel alone (sym_probe), LL128 vs LL: allreduce 256 KiB 5.73 vs 7.14 us (2026-11-27).
 *
 * The flag word of call s is symFlag(s) in both halves. LL128 lines have staging of their own
 * (host/sym.c sym_line_areas), so a reader polls only what LL128 calls left there, each line with
 * its own call's flag word: the flags of calls s and s - 2k differ. (Were the flag form's data
 * and the lines to share bytes, data equal to the flag would pass for a line:
 * gpu_sym/sym_lines_apart.) */
/* This lane's 16 bytes of line l of every peer q's region idx0 + q of this rank, into r0[q] and
 * r1[q] (has: the lane's line is one of the block's; protocols.cuh pollLines128). Every lane of
 * the warp calls it. false (the whole warp): timeout or abort. */
template <int R> __device__ __forceinline__ bool recvLines128(const kilnSymArgs& a, uint64_t seq, int idx0,
                                                              uint64_t l, bool has, uint64_t flag, Spin& spin,
                                                              uint64_t* r0, uint64_t* r1) {
  const int n = R == MAXR ? a.nranks : R, me = a.rank, lane = threadIdx.x & 31;
  unsigned pend = 0;
#pragma unroll
  for (int q = 0; q < R; q++)
    if (has && q < n && q != me) pend |= 1u << q;
  return pollLines128<R>(
      pend, [&](int q) { return (const uint64_t*)region(a, seq, me, idx0 + q) + l * 16 + 2 * (lane & 7); },
      flag, spin, r0, r1);
}

/* One-shot allreduce, reducescatter, allgather and alltoall as LL128 lines: bodyLL's exchange, a
 * line per 120 bytes. Every lane of a warp runs the same iterations (the warp's stores, polls and
 * votes need all of it); a lane past the block's lines takes part without data. */
template <typename T, int R, class Op, class Start>
__device__ void bodyLL128(const kilnSymArgs& a, Start& st) {
  constexpr int E8 = 8 / sizeof(T);
  const LineCall<T, R, KILN_SYM_LINES_LL128, Op> c(a, st);
  const int n = c.n, me = c.me;
  const Lane128 ln;
  const int lane = ln.lane, j = ln.j, warp = ln.warp, nwarps = ln.nwarps;
  const bool flagLane = ln.flagLane;
  /* Valid elements of data word w (E8 per word) of the segment. */
  auto valid = [&](uint64_t w) -> int {
    const uint64_t e = w * E8;
    return e < c.seg ? (int)min((uint64_t)E8, c.seg - e) : 0;
  };
  const bool toAll = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG;
  for (uint64_t base = c.l0 + (uint64_t)warp * 4; base < c.l1; base += (uint64_t)nwarps * 4) {
    const uint64_t l = base + (lane >> 3), w = l * 15 + 2 * j, e0 = w * E8;
    const bool has = l < c.l1;
    const int nv0 = has ? valid(w) : 0, nv1 = has && !flagLane ? valid(w + 1) : 0;
    auto load2 = [&](const T* src, uint64_t* v0, uint64_t* v1) {
      *v0 = nv0 > 0 ? loadPart<T, uint64_t>(src + e0, nv0) : 0;
      *v1 = nv1 > 0 ? loadPart<T, uint64_t>(src + e0 + E8, nv1) : 0;
    };
    if (toAll) {
      uint64_t v0, v1;
      load2(c.in, &v0, &v1);
      __syncwarp();
#pragma unroll
      for (int p = 0; p < R; p++)
        if (has && p < n && p != me)
          ll128Store(ln.word(region(a, c.seq, p, me), l), v0, flagLane ? c.flag : v1);
      if (a.algo == KILN_SYM_AG && c.in != c.out + (uint64_t)me * c.count) {
        storeWords128<T>(c.out + (uint64_t)me * c.count + e0, v0, v1, nv0, nv1);
      }
    } else {
      /* Alltoall and reducescatter: peer p's piece; every piece loaded before the first store. */
      uint64_t v0[R], v1[R];
#pragma unroll
      for (int p = 0; p < R; p++)
        if (p < n && p != me) load2(c.in + (uint64_t)p * c.count, &v0[p], &v1[p]);
      __syncwarp();
#pragma unroll
      for (int p = 0; p < R; p++)
        if (has && p < n && p != me)
          ll128Store(ln.word(region(a, c.seq, p, me), l), v0[p], flagLane ? c.flag : v1[p]);
      if (a.algo == KILN_SYM_A2A && c.in != c.out) {
        uint64_t m0, m1;
        const uint64_t mine = (uint64_t)me * c.count;
        load2(c.in + mine, &m0, &m1);
        storeWords128<T>(c.out + mine + e0, m0, m1, nv0, nv1);
      }
    }
  }
  st.sent();
  if (!c.go) return;
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  const bool reduces = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_RS;
  const uint64_t own = a.algo == KILN_SYM_RS ? (uint64_t)me * c.count : 0;
  for (uint64_t base = c.l0 + (uint64_t)warp * 4; base < c.l1; base += (uint64_t)nwarps * 4) {
    const uint64_t l = base + (lane >> 3), w = l * 15 + 2 * j, e0 = w * E8;
    const bool has = l < c.l1;
    const int nv0 = has ? valid(w) : 0, nv1 = has && !flagLane ? valid(w + 1) : 0;
    uint64_t m0 = 0, m1 = 0;
    if (reduces) {
      if (nv0 > 0) m0 = loadPart<T, uint64_t>(c.in + own + e0, nv0);
      if (nv1 > 0) m1 = loadPart<T, uint64_t>(c.in + own + e0 + E8, nv1);
    }
    uint64_t r0[R], r1[R];
    if (!recvLines128<R>(a, c.seq, 0, l, has, c.flag, spin, r0, r1)) return;
    if (reduces) {
      if (nv0 > 0) storePart<T, uint64_t>(c.out + e0, reduceLine<T, R>(a, c.op, r0, m0), nv0);
      if (nv1 > 0) storePart<T, uint64_t>(c.out + e0 + E8, reduceLine<T, R>(a, c.op, r1, m1), nv1);
    } else {
#pragma unroll
      for (int q = 0; q < R; q++)
        if (q < n && q != me) storeWords128<T>(c.out + (uint64_t)q * c.count + e0, r0[q], r1[q], nv0, nv1);
    }
  }
}

/* Two-shot allreduce as LL128 lines (KILN_SYM_AR_TWOSHOT with KILN_SYM_LINES_LL128): bodyLL2's
 * exchange, a line per 120 bytes of a share. Share p of this rank's input goes to rank p (regions
 * 0..n-1); rank q reduces share q from the lines it received and its own input, stores the result
 * into its output and, as lines, into every peer's region n + q; then copies the peers' reduced
 * shares into place. A share's last line may reach past it: its words there carry zeros, as do
 * those past the input's end (the receiver reads every line of its range). */
template <typename T, int R, class Op, class Start>
__device__ void bodyLL128x2(const kilnSymArgs& a, Start& st) {
  constexpr int E8 = 8 / sizeof(T);
  const LineCall<T, R, KILN_SYM_LINES_LL128, Op> c(a, st);
  const int n = c.n, me = c.me;
  const Lane128 ln;
  const int lane = ln.lane, j = ln.j, warp = ln.warp, nwarps = ln.nwarps;
  const bool flagLane = ln.flagLane;
  /* Valid elements of data word w (E8 per word) of share p: within the share and the input. */
  auto valid = [&](int p, uint64_t w) -> int {
    const uint64_t e = w * E8;
    if (e >= c.seg) return 0;
    const uint64_t start = (uint64_t)p * c.seg + e;
    return start >= c.count ? 0 : (int)min((uint64_t)E8, min(c.seg - e, c.count - start));
  };
  /* This lane's two words of share p (zeros where not valid). */
  auto load2 = [&](int p, uint64_t w, bool has, uint64_t* v0, uint64_t* v1) {
    const int nv0 = has ? valid(p, w) : 0, nv1 = has && !flagLane ? valid(p, w + 1) : 0;
    const T* src = c.in + (uint64_t)p * c.seg + w * E8;
    *v0 = nv0 > 0 ? loadPart<T, uint64_t>(src, nv0) : 0;
    *v1 = nv1 > 0 ? loadPart<T, uint64_t>(src + E8, nv1) : 0;
  };
  for (uint64_t base = c.l0 + (uint64_t)warp * 4; base < c.l1; base += (uint64_t)nwarps * 4) {
    const uint64_t l = base + (lane >> 3), w = l * 15 + 2 * j;
    const bool has = l < c.l1;
    uint64_t v0[R], v1[R];
#pragma unroll
    for (int p = 0; p < R; p++)
      if (p < n && p != me) load2(p, w, has, &v0[p], &v1[p]);
    __syncwarp();
#pragma unroll
    for (int p = 0; p < R; p++)
      if (has && p < n && p != me)
        ll128Store(ln.word(region(a, c.seq, p, me), l), v0[p], flagLane ? c.flag : v1[p]);
  }
  st.sent();
  if (!c.go) return;
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  for (int phase = 0; phase < 2; phase++) {
    for (uint64_t base = c.l0 + (uint64_t)warp * 4; base < c.l1; base += (uint64_t)nwarps * 4) {
      const uint64_t l = base + (lane >> 3), w = l * 15 + 2 * j;
      const bool has = l < c.l1;
      uint64_t m0 = 0, m1 = 0;
      if (phase == 0) load2(me, w, has, &m0, &m1);
      uint64_t r0[R], r1[R];
      if (!recvLines128<R>(a, c.seq, phase * n, l, has, c.flag, spin, r0, r1)) return;
      if (phase == 0) {
        /* The flag lane's second word is the flag, not data: it stores the flag again. */
        const uint64_t acc0 = reduceLine<T, R>(a, c.op, r0, m0), acc1 = reduceLine<T, R>(a, c.op, r1, m1);
        const int nv0 = has ? valid(me, w) : 0, nv1 = has && !flagLane ? valid(me, w + 1) : 0;
        storeWords128<T>(c.out + (uint64_t)me * c.seg + w * E8, acc0, acc1, nv0, nv1);
        __syncwarp();
#pragma unroll
        for (int p = 0; p < R; p++)
          if (has && p < n && p != me)
            ll128Store(ln.word(region(a, c.seq, p, n + me), l), acc0, flagLane ? c.flag : acc1);
      } else {
#pragma unroll
        for (int q = 0; q < R; q++)
          if (q < n && q != me) {
            const int nv0 = has ? valid(q, w) : 0, nv1 = has && !flagLane ? valid(q, w + 1) : 0;
            storeWords128<T>(c.out + (uint64_t)q * c.seg + w * E8, r0[q], r1[q], nv0, nv1);
          }
      }
    }
  }
}

/* The kernel's forms, each with kernels of its own (kernel<T, F, S>, below; the host launches
 * kernelIndexOf's: the form and, for the line forms, the kind of op): one kernel holding every
 * body takes 128 registers and spills (160-byte stack frame, float), and every call would pay for
 * the largest body's registers and code. */
enum : int { FORM_STAGED, FORM_LL, FORM_LL2, FORM_DIRECT, FORM_LL128, FORM_LL2_128, FORM_LL12, NFORMS };
__host__ __device__ __forceinline__ int formOf(const kilnSymArgs& a) {
  if (a.direct && a.algo != KILN_SYM_AR_TWOSHOT) return FORM_DIRECT;
  if (a.ll == KILN_SYM_LINES_LL128) return a.algo == KILN_SYM_AR_TWOSHOT ? FORM_LL2_128 : FORM_LL128;
  if (a.ll == KILN_SYM_LINES_LL12) return FORM_LL12; /* one-shot only (host/sym.c geometry) */
  if (a.ll) return a.algo == KILN_SYM_AR_TWOSHOT ? FORM_LL2 : FORM_LL;
  return FORM_STAGED;
}

/* The sequence past the call's last round, in this block's slot, and block 0's in those of the
 * blocks the call does not have, so all slots agree after every call. After every thread of the
 * block has read its slot. */
__device__ __forceinline__ void storeSeq(const kilnSymArgs& a, uint64_t last) {
  if (threadIdx.x == 0) ((volatile uint64_t*)a.seq)[blockIdx.x] = last;
  if (blockIdx.x == 0)
    for (int k = a.nblocks + threadIdx.x; k < MAXB; k += blockDim.x) ((volatile uint64_t*)a.seq)[k] = last;
}

/* Programmatic dependent launch (host/sym.c, KILN_SYM_PDL): the kernel may have been scheduled
 * while the kernel before it on the stream still ran; griddepcontrol.wait returns once that kernel
 * has ended and its memory is visible (at once when it was launched without it), before anything
 * is read from global memory, the sequence number included (the bodies' prologue reads only the
 * kernel's parameters). The trigger for the next kernel comes at the kernel's end, after the
 * body's last wait for a peer. */
__device__ __forceinline__ void depWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* The LL forms' start, which has no barrier: begin(l0, l1) makes the block's lines and the
 * arguments ready (prologue), waits for the kernel before (depWait), then
 * every thread reads the sequence number and the abort flag itself, and its first loads of the
 * input go out right behind them (the bodies send whatever the flag says, and only then stop when
 * it is up: a branch on it would hold the loads back until it arrived). sent(), once the block's
 * lines are out (every thread has its number): a barrier, then the slot stores (the next kernel
 * reads them only after this one ends), so the kernel ends without a barrier or a store.
 * 2x H200, graphs, against thread 0's read and a barrier first: 8-18% less time at 16 B-256 KiB (2026-11-27).
 *
 * sent() also lets the next kernel on the stream be scheduled (a.earlyTrigger, host/sym.c
 * KILN_SYM_PDL_TRIGGER): its launch overlaps this kernel's wait for the peers' lines instead of
 * following it (2x H200, the kernel alone: allreduce 256 B 1.62 us, 1.94 at the end; 2026-11-27).
 * What it risks: the next kernel's blocks, resident and waiting in
 * depWait, hold SMs while this one waits for its peers. Every block of this kernel is resident by
 * then (the next kernel is scheduled only once every block has triggered), has stored its lines
 * (two-shot: those of its first phase; the second's need only the peers' first), and needs only
 * the peers' kernels of the same call; those hold back only where a peer's kernel
 * of this call waits behind another communicator's kernel on that GPU which in turn waits for a
 * kernel here that finds no SM left: calls of several communicators running at once on several
 * streams, which NCCL's documentation leaves to work only while they fit on the GPU together (an
 * LL kernel takes at most 64 blocks; a kiln kernel after it at most 128, under the 132 SMs of an
 * H100 or H200; a user's kernel launched with programmatic serialization can take every SM). For
 * such programs KILN_SYM_PDL_TRIGGER=end keeps the trigger at the kernel's end. */
struct LLStart {
  const kilnSymArgs& a;
  uint64_t seq;
  __device__ __forceinline__ bool begin(uint64_t l0, uint64_t l1) {
    prologue(a, l0, l1);
    depWait();
    seq = ((volatile uint64_t*)a.seq)[blockIdx.x] + 1;
    return !*(volatile int*)a.abortFlag;
  }
  __device__ __forceinline__ void sent() {
    __syncthreads();
    storeSeq(a, seq + a.rounds - 1);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (a.earlyTrigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  }
};

/* The flag and direct forms' start: begin(lo, hi) makes the block's range and the arguments ready
 * (prologue), waits for the kernel before (depWait); thread 0 reads
 * the sequence number and the abort flag into shared memory for the block, then a barrier; false:
 * the abort flag is up. */
struct FlagStart {
  const kilnSymArgs& a;
  Shared* sh;
  uint64_t seq;
  __device__ __forceinline__ bool begin(uint64_t lo, uint64_t hi) {
    prologue(a, lo, hi);
    depWait();
    if (threadIdx.x == 0) {
      sh->seq = ((volatile uint64_t*)a.seq)[blockIdx.x] + 1;
      sh->abort = *(volatile int*)a.abortFlag;
    }
    __syncthreads();
    seq = sh->seq;
    return !sh->abort;
  }
};

/* An LL form's body with its loops over the peers sized at compile time for 2 and 4 ranks (R;
 * MAXR: any count, the loops run to MAXR and test each peer against a.nranks): the loops' tests and
 * the code between a call's loads and its stores are a large part of a small call.
 * 2x H200, graphs, sized vs not: allgather 16 B 2.04 vs 2.45 us, 12-20% less at every LL size (2026-11-27). */
template <typename T, int F, int R, class Op, class Start>
__device__ __forceinline__ void lineBodyOf(const kilnSymArgs& a, Start& st) {
  if constexpr (F == FORM_LL2)
    bodyLL2<T, R, Op>(a, st);
  else if constexpr (F == FORM_LL128)
    bodyLL128<T, R, Op>(a, st);
  else if constexpr (F == FORM_LL2_128)
    bodyLL128x2<T, R, Op>(a, st);
  else if constexpr (F == FORM_LL12)
    bodyLL<T, R, KILN_SYM_LINES_LL12, Op>(a, st);
  else
    bodyLL<T, R, KILN_SYM_LINES_LL, Op>(a, st);
}
template <typename T, int F, class Op, class Start>
__device__ __forceinline__ void lineBodyRanks(const kilnSymArgs& a, Start& st) {
  if (a.nranks == 2)
    lineBodyOf<T, F, 2, Op>(a, st);
  else if (a.nranks == 4)
    lineBodyOf<T, F, 4, Op>(a, st);
  else
    lineBodyOf<T, F, MAXR, Op>(a, st);
}
__host__ __device__ __forceinline__ constexpr bool lineForm(int f) {
  return f == FORM_LL || f == FORM_LL2 || f == FORM_LL128 || f == FORM_LL2_128 || f == FORM_LL12;
}

/* The kernels: a form's (formOf), and for the line forms one per kind of op: sum and avg (a sum
 * divided at the end) with the op fixed at compile time (OpSum; S true), the other ops picked by
 * selects (OpSel): an op chosen by a branch per element (OpDyn) costs a third of the one-shot
 * allreduce's time past its fixed part. A kernel per kind rather than a branch on the op at the
 * start of one: the branch takes the two-shot LL128 kernel past 128 registers (spills, float 36
 * bytes). The staged form has two kernels too, split by rank count: S true for 2 and 4 ranks
 * (body's loops and arrays sized at compile time), false for any count to MAXR; one kernel for
 * every count takes 128 registers and spills (float: 56 bytes of spill stores, 344 of loads),
 * sized for 2 and 4 ranks it takes 108, no spills. Index 2 f + S (kernelIndexOf); NKERNELS of them.
 * 4x H200, the kernel alone, op fixed vs a branch: allreduce 64 KiB (LL12) 3.02 vs 3.65 us (2026-11-28). */
enum : int { NKERNELS = 2 * NFORMS };
__host__ __device__ __forceinline__ int kernelIndexOf(const kilnSymArgs& a) {
  const int f = formOf(a);
  const bool s = lineForm(f) ? opSums(a.op) : f == FORM_STAGED && (a.nranks == 2 || a.nranks == 4);
  return 2 * f + (s ? 1 : 0);
}

template <typename T, int F, bool S> __global__ void __launch_bounds__(512) kernel(kilnSymArgs a) {
  static_assert(F >= 0 && F < NFORMS, "a form of formOf");
  constexpr bool lines = lineForm(F);
  static_assert(lines || F == FORM_STAGED || !S, "only the line forms and the staged form have two kernels");
  uint64_t seq = 0;
  if constexpr (lines) {
    LLStart st{a, 0};
    lineBodyRanks<T, F, typename std::conditional<S, OpSum, OpSel>::type>(a, st);
  } else {
    __shared__ Shared sh;
    FlagStart st{a, &sh, 0};
    if constexpr (F == FORM_DIRECT)
      bodyDirect<T>(a, st);
    else if constexpr (!S)
      body<T, MAXR>(a, st);
    else if (a.nranks == 2)
      body<T, 2>(a, st);
    else
      body<T, 4>(a, st);
    seq = st.seq;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  /* The next kernel on the stream may be scheduled now (it waits in depWait): its launch overlaps
   * this kernel's end instead of following it. The flag and direct forms (and the LL forms with
   * KILN_SYM_PDL_TRIGGER=end) trigger only here, after this block's last wait for a peer: the
   * next kernel's blocks, resident and waiting, take SMs (one block of these kernels fills one),
   * and by then this kernel needs nothing but its own end, so they can never hold back a kernel
   * that this one, or a peer's, waits for (triggered at the start, they could: a second
   * communicator's kernel left without SMs on one GPU while its peers wait for it). The LL forms
   * trigger earlier by default, once their lines are out (LLStart says why); here again it does
   * nothing. */
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  if constexpr (!lines) storeSeq(a, seq + a.rounds - 1);
}

/* The host stub of kernel k (kernelIndexOf) for T (what the host launches and preloads); null for
 * no kernel: an index past NKERNELS, S set for a form other than the line forms and the staged one, LL12 of
 * 8-byte elements (the launch then fails; the preload skips it). */
template <typename T, int F> inline const void* kernelOfForm(bool s) {
  if constexpr (F == FORM_LL12 && sizeof(T) > 4) return nullptr;
  /* 8-byte elements' two-shot LL128 form keeps one kernel (OpSel) for every op: with the sum
   * fixed it takes 128 registers and spills (24-32 bytes; 108-110 registers with the op chosen). */
  else if constexpr (F == FORM_LL2_128 && sizeof(T) == 8)
    return (const void*)kernel<T, F, false>;
  else if constexpr (lineForm(F) || F == FORM_STAGED)
    return s ? (const void*)kernel<T, F, true> : (const void*)kernel<T, F, false>;
  else
    return s ? nullptr : (const void*)kernel<T, F, false>;
}
template <typename T> inline const void* kernelOf(int k) {
  static_assert(NFORMS == 7, "a case below for every form");
  const bool s = k & 1;
  switch (k < 0 ? -1 : k / 2) {
    case FORM_STAGED: return kernelOfForm<T, FORM_STAGED>(s);
    case FORM_LL: return kernelOfForm<T, FORM_LL>(s);
    case FORM_LL2: return kernelOfForm<T, FORM_LL2>(s);
    case FORM_DIRECT: return kernelOfForm<T, FORM_DIRECT>(s);
    case FORM_LL128: return kernelOfForm<T, FORM_LL128>(s);
    case FORM_LL2_128: return kernelOfForm<T, FORM_LL2_128>(s);
    case FORM_LL12: return kernelOfForm<T, FORM_LL12>(s);
    default: return nullptr;
  }
}

} /* namespace sym */
} /* namespace kiln */

#endif /* KILN_KERNELS_SYM_CUH */
