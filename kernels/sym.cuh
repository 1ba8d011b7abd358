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
 * per phase, for the whole range: no per-slot waits, no receive copies, no scratch.
 *
 * Staging: two halves in each window, used by alternate calls (parity of the call sequence). A
 * rank writes half h at call s only after every peer has finished call s - 2, which it knows: in
 * call s - 1 it waited for a flag from every peer, set after that peer's call s - 2 had ended
 * (kernels of one rank run in stream order, host/exec.c orders them across streams). Flags hold
 * the sequence number of the call that set them and only grow; a wait passes at `>= seq` (a peer
 * may already have set call s + 1's flag, whose data goes to the other half).
 *
 * The sequence number lives in device memory: every block reads it at its start, the last block
 * of the call to finish stores it incremented (the next kernel on the stream sees it), so CUDA
 * graph replays need no host help. Reductions run in rank order 0..n-1 on every rank, so every
 * rank gets bitwise the same allreduce result.
 */
#ifndef KILN_KERNELS_SYM_CUH
#define KILN_KERNELS_SYM_CUH

#include "primitives.cuh"

namespace kiln {
namespace sym {

enum : int { MAXR = KILN_SYM_MAX_RANKS, MAXB = KILN_SYM_MAX_BLOCKS };

struct Shared {
  uint64_t seq;
  int abort;
};

/* The LL flag of call seq: llFlag with the low bit set, so never 0 (zeroed staging, or zeros a
 * flag-form call left, never pass for a line), and still different for calls s and s - 2k that
 * share a half (llFlag's values for them differ by an even multiple of an odd constant). */
__device__ __forceinline__ uint32_t symFlag(uint64_t seq) { return llFlag(seq) | 1u; }

template <typename T, typename P = uint4> __device__ __forceinline__ P dividePack(P v, int n) {
  constexpr int E = sizeof(P) / sizeof(T);
  T x[E];
  memcpy(x, &v, sizeof(P));
#pragma unroll
  for (int e = 0; e < E; e++) x[e] = divide(x[e], n);
  memcpy(&v, x, sizeof(P));
  return v;
}

/* This block's range [lo, hi) of a segment of a.seg elements: ranges start at 16-byte multiples,
 * the last ones may be empty. */
template <typename T>
__device__ __forceinline__ void blockRange(const kilnSymArgs& a, uint64_t* lo, uint64_t* hi) {
  constexpr int E = 16 / sizeof(T);
  uint64_t per = (a.seg + a.nblocks - 1) / a.nblocks;
  per = (per + E - 1) / E * E;
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

/* Rank p's staging region `idx` (phase * nranks + source rank) in the half of call seq. */
__device__ __forceinline__ char* region(const kilnSymArgs& a, uint64_t seq, int p, int idx) {
  return a.stage[p] + (seq & 1) * a.halfBytes + (uint64_t)idx * a.region;
}

/* Line l of every peer q's region (idx0 + q) of this rank, into v[q]: all loads in flight at once,
 * then a spin on those whose flags were not there yet. false: timeout or abort. */
__device__ __forceinline__ bool recvLines(const kilnSymArgs& a, uint64_t seq, int idx0, uint64_t l,
                                          uint32_t flag, Spin& spin, uint64_t* v) {
  const int n = a.nranks, me = a.rank;
  uint32_t d0[MAXR], f0[MAXR], d1[MAXR], f1[MAXR];
#pragma unroll
  for (int q = 0; q < MAXR; q++) {
    f0[q] = f1[q] = flag;
    d0[q] = d1[q] = 0;
    if (q < n && q != me) llLoadOnce((const uint4*)region(a, seq, me, idx0 + q) + l, &d0[q], &f0[q], &d1[q], &f1[q]);
  }
  bool ok = true;
#pragma unroll
  for (int q = 0; q < MAXR; q++) {
    v[q] = (uint64_t)d0[q] | ((uint64_t)d1[q] << 32);
    if (q < n && q != me && ok && (f0[q] != flag || f1[q] != flag))
      ok = llLoad((const uint4*)region(a, seq, me, idx0 + q) + l, flag, spin, &v[q]);
  }
  return ok;
}

/* The reduction of one line in rank order: v[q] from peer q, mine in this rank's place. */
template <typename T>
__device__ __forceinline__ uint64_t reduceLine(const kilnSymArgs& a, const OpDyn& op, const uint64_t* v,
                                               uint64_t mine) {
  const int n = a.nranks, me = a.rank;
  uint64_t acc = me == 0 ? mine : v[0];
#pragma unroll
  for (int q = 1; q < MAXR; q++)
    if (q < n) acc = opPack<T>(op, acc, q == me ? mine : v[q]);
  return a.op == OP_AVG ? dividePack<T, uint64_t>(acc, n) : acc;
}

/* For every i < m: r = srcs[0][i] op srcs[1][i] op ... op srcs[NS-1][i] (divided by avgN when
 * avgN > 0), stored to dsts[d][i] for every non-null dsts[d] (MAXR of them). All the loads of a
 * round (NS operands x U packs) are in flight together. 16-byte packs when every pointer allows
 * it, elements otherwise. */
template <typename T, int NS>
__device__ __forceinline__ void combine(T* const* dsts, const T* const* srcs, uint64_t m, const OpDyn& op,
                                        int avgN) {
  constexpr int E = 16 / sizeof(T);
  constexpr int U = NS <= 1 ? 8 : NS == 2 ? 4 : NS <= 4 ? 2 : 1;
  const int tid = threadIdx.x, nthr = blockDim.x;
  uintptr_t mis = 0;
#pragma unroll
  for (int s = 0; s < NS; s++) mis |= (uintptr_t)srcs[s];
#pragma unroll
  for (int d = 0; d < MAXR; d++) mis |= (uintptr_t)dsts[d];
  const uint64_t nvec = (mis % 16 == 0) ? m / E : 0;
  uint64_t i = tid;
  for (; i + (uint64_t)(U - 1) * nthr < nvec; i += (uint64_t)U * nthr) {
    uint4 v[NS][U];
#pragma unroll
    for (int s = 0; s < NS; s++)
#pragma unroll
      for (int u = 0; u < U; u++) v[s][u] = __ldcg((const uint4*)srcs[s] + i + (uint64_t)u * nthr);
#pragma unroll
    for (int u = 0; u < U; u++) {
      uint4 r = v[0][u];
#pragma unroll
      for (int s = 1; s < NS; s++) r = opPack<T>(op, r, v[s][u]);
      if (avgN > 0) r = dividePack<T>(r, avgN);
#pragma unroll
      for (int d = 0; d < MAXR; d++)
        if (dsts[d]) ((uint4*)dsts[d])[i + (uint64_t)u * nthr] = r;
    }
  }
  for (; i < nvec; i += nthr) {
    uint4 v[NS];
#pragma unroll
    for (int s = 0; s < NS; s++) v[s] = __ldcg((const uint4*)srcs[s] + i);
    uint4 r = v[0];
#pragma unroll
    for (int s = 1; s < NS; s++) r = opPack<T>(op, r, v[s]);
    if (avgN > 0) r = dividePack<T>(r, avgN);
#pragma unroll
    for (int d = 0; d < MAXR; d++)
      if (dsts[d]) ((uint4*)dsts[d])[i] = r;
  }
  for (uint64_t e = nvec * E + tid; e < m; e += nthr) {
    T r = ldcg(srcs[0] + e);
#pragma unroll
    for (int s = 1; s < NS; s++) r = op(r, ldcg(srcs[s] + e));
    if (avgN > 0) r = divide(r, avgN);
#pragma unroll
    for (int d = 0; d < MAXR; d++)
      if (dsts[d]) dsts[d][e] = r;
  }
}

/* combine over the n sources of a reduction (n known at run time). */
template <typename T>
__device__ __forceinline__ void reduceN(int n, T* const* dsts, const T* const* srcs, uint64_t m,
                                        const OpDyn& op, int avgN) {
  switch (n) {
    case 2: combine<T, 2>(dsts, srcs, m, op, avgN); break;
    case 3: combine<T, 3>(dsts, srcs, m, op, avgN); break;
    case 4: combine<T, 4>(dsts, srcs, m, op, avgN); break;
    case 5: combine<T, 5>(dsts, srcs, m, op, avgN); break;
    case 6: combine<T, 6>(dsts, srcs, m, op, avgN); break;
    case 7: combine<T, 7>(dsts, srcs, m, op, avgN); break;
    case 8: combine<T, 8>(dsts, srcs, m, op, avgN); break;
    default: combine<T, 1>(dsts, srcs, m, op, avgN); break;
  }
}

/* One copy src -> dst (m elements). */
template <typename T> __device__ __forceinline__ void copy1(T* dst, const T* src, uint64_t m, const OpDyn& op) {
  T* d[MAXR] = {dst};
  const T* s[1] = {src};
  combine<T, 1>(d, s, m, op, 0);
}

/* Publishes this block's flag of `phase` to every peer (after a barrier: every store of the block
 * to the peers' staging areas comes first), then waits for every peer's flag of the same block and
 * phase. Warp 0 publishes while warp 1 waits. false: timeout or abort. */
__device__ __forceinline__ bool exchange(const kilnSymArgs& a, int phase, uint64_t seq, Shared* sh) {
  const int tid = threadIdx.x, n = a.nranks, me = a.rank, j = blockIdx.x;
  __syncthreads();
  if (tid < n && tid != me) stReleaseSys(a.flags[tid] + ((size_t)(phase * MAXR + me) * MAXB + j), seq);
  if (tid >= 32 && tid < 32 + n && tid - 32 != me) {
    const uint64_t* f = a.flags[me] + ((size_t)(phase * MAXR + (tid - 32)) * MAXB + j);
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

template <typename T> __device__ void body(const kilnSymArgs& a, uint64_t seq, Shared* sh) {
  const int n = a.nranks, me = a.rank;
  const OpDyn op{a.op};
  const int avgN = a.op == OP_AVG ? n : 0;
  const T* in = (const T*)a.in;
  T* out = (T*)a.out;
  const uint64_t count = a.count, seg = a.seg;
  uint64_t lo, hi;
  blockRange<T>(a, &lo, &hi);
  const uint64_t len = hi - lo;
  /* Rank p's staging region (phase, src) in the half of this call. */
  auto stage = [&](int p, int phase, int src) -> T* { return (T*)region(a, seq, p, phase * n + src); };
  T* dsts[MAXR];
  const T* srcs[MAXR];
#pragma unroll
  for (int q = 0; q < MAXR; q++) dsts[q] = nullptr, srcs[q] = nullptr;

  if (a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG) {
    /* Every peer gets this rank's range (allgather: also this rank's place in the output). */
#pragma unroll
    for (int p = 0; p < MAXR; p++)
      if (p < n && p != me) dsts[p] = stage(p, 0, me) + lo;
    if (a.algo == KILN_SYM_AG && in != out + (uint64_t)me * count) dsts[me] = out + (uint64_t)me * count + lo;
    srcs[0] = in + lo;
    combine<T, 1>(dsts, srcs, len, op, 0);
  } else {
    /* Piece p (a share of the input, or the part for rank p) goes to rank p. */
    const uint64_t stride = a.algo == KILN_SYM_AR_TWOSHOT ? seg : count;
    for (int p = 0; p < n; p++) {
      if (p == me) continue;
      const uint64_t start = (uint64_t)p * stride + lo;
      const uint64_t m = a.algo == KILN_SYM_AR_TWOSHOT ? (start >= count ? 0 : min(len, count - start)) : len;
      copy1<T>(stage(p, 0, me) + lo, in + start, m, op);
    }
    if (a.algo == KILN_SYM_A2A && in + (uint64_t)me * count != out + (uint64_t)me * count)
      copy1<T>(out + (uint64_t)me * count + lo, in + (uint64_t)me * count + lo, len, op);
  }
  if (!exchange(a, 0, seq, sh)) return;

#pragma unroll
  for (int q = 0; q < MAXR; q++) dsts[q] = nullptr;
  switch (a.algo) {
    case KILN_SYM_AR_ONESHOT:
    case KILN_SYM_RS: {
      const uint64_t own = a.algo == KILN_SYM_RS ? (uint64_t)me * count : 0;
#pragma unroll
      for (int q = 0; q < MAXR; q++)
        if (q < n) srcs[q] = q == me ? in + own + lo : stage(me, 0, q) + lo;
      dsts[0] = out + lo;
      reduceN<T>(n, dsts, srcs, len, op, avgN);
      break;
    }
    case KILN_SYM_AR_TWOSHOT: {
      /* Reduce this rank's share into the output and every peer's phase-1 region at once. */
      const uint64_t start = (uint64_t)me * seg + lo;
      const uint64_t m = start >= count ? 0 : min(len, count - start);
#pragma unroll
      for (int q = 0; q < MAXR; q++)
        if (q < n) {
          srcs[q] = q == me ? in + start : stage(me, 0, q) + lo;
          dsts[q] = q == me ? out + start : stage(q, 1, me) + lo;
        }
      reduceN<T>(n, dsts, srcs, m, op, avgN);
      if (!exchange(a, 1, seq, sh)) return;
      for (int q = 0; q < n; q++) {
        if (q == me) continue;
        const uint64_t st = (uint64_t)q * seg + lo;
        copy1<T>(out + st, stage(me, 1, q) + lo, st >= count ? 0 : min(len, count - st), op);
      }
      break;
    }
    default: /* allgather, alltoall: each peer's range to its place in the output */
      for (int q = 0; q < n; q++)
        if (q != me) copy1<T>(out + (uint64_t)q * count + lo, stage(me, 0, q) + lo, len, op);
      break;
  }
}

/* Small calls (kilnSymArgs.ll): the same exchange with the data as LL lines (primitives.cuh:
 * 8 data bytes and the flag twice per 16-byte line, the flag made from the call's sequence
 * number), so a line is its own signal: no fence, no flag words, one NVLink flight from the
 * sender's store to the receiver's use. Region (rank p's, from src) holds one line per 8 bytes of
 * the segment. The staging halves alternate as above: in call s - 1 every rank read lines of every
 * peer, stored after that peer's call s - 2 had ended. One-shot allreduce, reducescatter,
 * allgather and alltoall (two-shot is for large calls). */
template <typename T> __device__ void bodyLL(const kilnSymArgs& a, uint64_t seq, Shared* sh) {
  constexpr int E8 = 8 / sizeof(T);
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, nthr = blockDim.x;
  const OpDyn op{a.op};
  const T* in = (const T*)a.in;
  T* out = (T*)a.out;
  const uint64_t count = a.count, seg = a.seg;
  uint64_t l0, l1;
  blockLines<T>(a, &l0, &l1);
  const uint32_t flag = symFlag(seq);
  auto lines = [&](int p, int src) -> uint4* { return (uint4*)region(a, seq, p, src); };
  const bool toAll = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_AG;
  /* Send: line l of this rank's data (or of piece p) to every peer p. */
  for (uint64_t l = l0 + tid; l < l1; l += nthr) {
    const uint64_t e0 = l * E8;
    const int nv = (int)min((uint64_t)E8, seg - e0);
    if (toAll) {
      const uint64_t v = loadPart<T, uint64_t>(in + e0, nv);
#pragma unroll
      for (int p = 0; p < MAXR; p++)
        if (p < n && p != me) llStore(lines(p, me) + l, v, flag);
      if (a.algo == KILN_SYM_AG && in != out + (uint64_t)me * count) storePart<T, uint64_t>(out + (uint64_t)me * count + e0, v, nv);
    } else {
#pragma unroll
      for (int p = 0; p < MAXR; p++)
        if (p < n && p != me) llStore(lines(p, me) + l, loadPart<T, uint64_t>(in + (uint64_t)p * count + e0, nv), flag);
      if (a.algo == KILN_SYM_A2A && in != out)
        storePart<T, uint64_t>(out + (uint64_t)me * count + e0, loadPart<T, uint64_t>(in + (uint64_t)me * count + e0, nv), nv);
    }
  }
  /* Receive: every peer's line l, then reduce in rank order or copy into place. */
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  const bool reduces = a.algo == KILN_SYM_AR_ONESHOT || a.algo == KILN_SYM_RS;
  const uint64_t own = a.algo == KILN_SYM_RS ? (uint64_t)me * count : 0;
  for (uint64_t l = l0 + tid; l < l1 && !*(volatile int*)&sh->abort; l += nthr) {
    const uint64_t e0 = l * E8;
    const int nv = (int)min((uint64_t)E8, seg - e0);
    uint64_t v[MAXR];
    if (!recvLines(a, seq, 0, l, flag, spin, v)) {
      sh->abort = 1;
      break;
    }
    if (reduces) {
      storePart<T, uint64_t>(out + e0, reduceLine<T>(a, op, v, loadPart<T, uint64_t>(in + own + e0, nv)), nv);
    } else {
#pragma unroll
      for (int q = 0; q < MAXR; q++)
        if (q < n && q != me) storePart<T, uint64_t>(out + (uint64_t)q * count + e0, v[q], nv);
    }
  }
}

/* Two-shot allreduce as LL lines (kilnSymArgs.ll with KILN_SYM_AR_TWOSHOT): share p of this
 * rank's input to rank p (regions 0..n-1); rank q reduces share q from the lines it received and
 * its own input, stores the result into its output and, as lines, into every peer's region n + q;
 * then copies the peers' shares from those lines into place. Lines past the input's end carry
 * zeros (the receiver reads every line of its range). */
template <typename T> __device__ void bodyLL2(const kilnSymArgs& a, uint64_t seq, Shared* sh) {
  constexpr int E8 = 8 / sizeof(T);
  const int n = a.nranks, me = a.rank, tid = threadIdx.x, nthr = blockDim.x;
  const OpDyn op{a.op};
  const T* in = (const T*)a.in;
  T* out = (T*)a.out;
  const uint64_t count = a.count, seg = a.seg;
  uint64_t l0, l1;
  blockLines<T>(a, &l0, &l1);
  const uint32_t flag = symFlag(seq);
  auto lines = [&](int p, int idx) -> uint4* { return (uint4*)region(a, seq, p, idx); };
  /* Valid elements of share p's line at share offset e0. */
  auto valid = [&](int p, uint64_t e0) -> int {
    const uint64_t start = (uint64_t)p * seg + e0;
    return start >= count ? 0 : (int)min((uint64_t)E8, count - start);
  };
  for (uint64_t l = l0 + tid; l < l1; l += nthr) {
    const uint64_t e0 = l * E8;
#pragma unroll
    for (int p = 0; p < MAXR; p++)
      if (p < n && p != me)
        llStore(lines(p, me) + l, loadPart<T, uint64_t>(in + (uint64_t)p * seg + e0, valid(p, e0)), flag);
  }
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  for (int phase = 0; phase < 2; phase++) {
    for (uint64_t l = l0 + tid; l < l1 && !*(volatile int*)&sh->abort; l += nthr) {
      const uint64_t e0 = l * E8;
      uint64_t v[MAXR];
      if (!recvLines(a, seq, phase * n, l, flag, spin, v)) {
        sh->abort = 1;
        break;
      }
      if (phase == 0) {
        const int nv = valid(me, e0);
        const uint64_t acc = reduceLine<T>(a, op, v, loadPart<T, uint64_t>(in + (uint64_t)me * seg + e0, nv));
        storePart<T, uint64_t>(out + (uint64_t)me * seg + e0, acc, nv);
#pragma unroll
        for (int p = 0; p < MAXR; p++)
          if (p < n && p != me) llStore(lines(p, n + me) + l, acc, flag);
      } else {
#pragma unroll
        for (int q = 0; q < MAXR; q++)
          if (q < n && q != me) storePart<T, uint64_t>(out + (uint64_t)q * seg + e0, v[q], valid(q, e0));
      }
    }
  }
}

template <typename T> __global__ void __launch_bounds__(512) kernel(kilnSymArgs a) {
  __shared__ Shared sh;
  if (threadIdx.x == 0) {
    sh.seq = *(volatile uint64_t*)a.seq + 1;
    sh.abort = *(volatile int*)a.abortFlag;
  }
  __syncthreads();
  const uint64_t seq = sh.seq;
  if (!sh.abort) {
    if (a.ll && a.algo == KILN_SYM_AR_TWOSHOT) bodyLL2<T>(a, seq, &sh);
    else if (a.ll) bodyLL<T>(a, seq, &sh);
    else body<T>(a, seq, &sh);
  }
  /* The call's last block to finish advances the sequence (every block has read it by then). */
  __syncthreads();
  if (threadIdx.x == 0 && atomicAdd(a.fin, 1u) == (unsigned)a.nblocks - 1) {
    *a.fin = 0;
    *(volatile uint64_t*)a.seq = seq;
  }
}

} /* namespace sym */
} /* namespace kiln */

#endif /* KILN_KERNELS_SYM_CUH */
