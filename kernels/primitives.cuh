/*
 * The FIFO vocabulary of the plans' send and receive steps: one generic routine,
 * kilnPrim<T, Op, PROTO, FLAGS>, that moves one piece of a plan step (a slice of one chunk)
 * between a user/scratch buffer and a FIFO slot, and short named wrappers over it (copy, reduce,
 * send, recv, recvCopySend, recvReduceSend, recvReduceCopy, recvReduceCopySend). The protocols
 * themselves (Simple, LL, LL128 lines: how they are stored and polled) are protocols.cuh's.
 *
 * The value of a piece is  A op B  where A is the source buffer (FLAG_SRC) and B is the received
 * data (FLAG_RECV) or, for `re`, the destination itself (FLAG_REDUCE_DST); it is written to the
 * destination (FLAG_DST) and/or the peer's FIFO slot (FLAG_SEND).
 *
 * In a slot:
 * - Simple: raw data, written by the sender through a peer pointer in 16-byte stores; the block
 *   then publishes a counter (see interp.cuh). Receivers read with ld.cg.
 * - LL: 16-byte lines {data0, flag, data1, flag ^ KILN_DEV_LL_FLAG_PAIR}; the receiver spins on the
 *   flags of each line, so no counter is needed before reading.
 * - LL128: 128-byte lines of 15 data words and a flag word, a warp's 4 lines per store, polled
 *   until every line's flag is there and loaded again (pollLines128). The runtime runs LL128
 *   plans as Simple unless KILN_LL128=1 (host/exec.c, dev_proto, says why).
 * Flags derive from the slot's use number (the connection's count of slots sent, from 1): see
 * llFlag/ll128Flag.
 *
 * All routines are executed by all threads of the block; none synchronizes the block.
 */
#ifndef KILN_KERNELS_PRIMITIVES_CUH
#define KILN_KERNELS_PRIMITIVES_CUH

#include "protocols.cuh"

namespace kiln {

enum : int {
  FLAG_RECV = 1,        /* B = data received from the FIFO */
  FLAG_SEND = 2,        /* result goes to the peer's FIFO */
  FLAG_SRC = 4,         /* A = source buffer */
  FLAG_DST = 8,         /* result is stored to the destination buffer */
  FLAG_REDUCE_DST = 16, /* B = destination buffer (re: dst <- dst op src) */
};

/* One piece: n elements of the slice, of which m are valid (the rest of a short last chunk). */
template <typename T> struct Piece {
  const T* src;      /* A (FLAG_SRC) */
  T* dst;            /* FLAG_DST / FLAG_REDUCE_DST */
  const void* rslot; /* received data (Simple: T[]; LL: lines) */
  void* sslot;       /* peer's slot (Simple: T[]; LL: lines) */
  uint64_t n, m;
  uint64_t ruse, suse; /* LL / LL128: the use numbers of the receive and send slots */
};

/* Warp stores per round (UL x 4 lines per warp): the loads of a round are in flight together.
 * 4, measured (prim_bench hop-ll128, 2x H200): 8 took 3.4 µs per hop at 8 B where 4 takes 1.8, and
 * 36.7 µs at 512 KiB where 4 takes 27.3 (registers: the 8 x 4 words of a round spill). */
#ifndef KILN_LL128_UL
#define KILN_LL128_UL 4
#endif

/* Bytes one piece of `elems` elements of `esize` bytes takes in a slot (the host sizes pieces by
 * the inverse, kilnDevPieceElems in kiln_dev.h). */
template <int PROTO> __host__ __device__ constexpr uint64_t pieceBytes(uint64_t elems, int esize) {
  return PROTO == KILN_DEV_PROTO_LL ? elems * esize * (KILN_DEV_LL_LINE_BYTES / KILN_DEV_LL_DATA_BYTES)
         : PROTO == KILN_DEV_PROTO_LL128
             ? (elems * esize + LL128_DATA_BYTES - 1) / LL128_DATA_BYTES * LL128_LINE_BYTES
             : elems * esize;
}

/* Valid elements of a word of E elements that starts at element e0 of a piece of m. */
__device__ __forceinline__ int wordValid(uint64_t e0, uint64_t m, int E) {
  return e0 < m ? (int)min((uint64_t)E, m - e0) : 0;
}

/* The line a lane works on in store u of a warp's round that starts at line `base`. */
__device__ __forceinline__ uint64_t ll128Line(uint64_t base, int u, int lane) {
  return base + (uint64_t)u * 4 + (lane >> 3);
}

/* A lane's data in line l of a piece of m elements (EL per line, EW per word): its first element
 * e0 and how many elements of its two words are valid (lane 7's second word is the flag). */
__device__ __forceinline__ void ll128Words(uint64_t l, int lane, uint64_t m, int EL, int EW, uint64_t* e0,
                                           int* nv0, int* nv1) {
  const int j = lane & 7;
  *e0 = l * EL + (uint64_t)(2 * j) * EW;
  *nv0 = wordValid(*e0, m, EW);
  *nv1 = j == 7 ? 0 : wordValid(*e0 + EW, m, EW);
}

/* The LL128 body of kilnPrim. Lane j (0..7) of a line holds its words 2j and 2j+1, that is
 * elements [l*EL + 2j*EW, +2*EW) of the piece; lane 7 holds one data word and the flag. Every
 * lane of a warp runs the same rounds (the bounds are per warp), so the warp-wide loads, votes and
 * stores a line needs are never split by a lane that left early. */
template <typename T, class Op, int F, int UL = KILN_LL128_UL>
__device__ __forceinline__ bool ll128Prim(const Piece<T>& pc, const Op& op, Spin& spin) {
  constexpr int EW = 8 / sizeof(T);                /* elements per word */
  constexpr int EL = LL128_DATA_BYTES / sizeof(T); /* elements per line */
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const int j = lane & 7;
  const bool flagLane = j == 7;
  const uint64_t* rl = (const uint64_t*)pc.rslot;
  uint64_t* sl = (uint64_t*)pc.sslot;
  const uint64_t rflag = ll128Flag(pc.ruse), sflag = ll128Flag(pc.suse);
  const uint64_t nlValid = (pc.m + EL - 1) / EL;
  /* A sender fills every line of the slice (as LL does). */
  const uint64_t nl = (F & FLAG_SEND) ? (pc.n + EL - 1) / EL : nlValid;
  bool ok = true; /* uniform in the warp: set from votes */
  for (uint64_t base = (uint64_t)warp * 4 * UL; base < nl; base += (uint64_t)nwarps * 4 * UL) {
    uint64_t r0[UL], r1[UL], a0[UL], a1[UL];
    if (F & FLAG_RECV) {
      /* The round's UL lines of this lane polled together, as a line of UL sources. */
      unsigned pend = 0;
#pragma unroll
      for (int u = 0; u < UL; u++)
        if (ok && ll128Line(base, u, lane) < nlValid) pend |= 1u << u;
      __syncwarp();
      ok = pollLines128<UL>(
               pend, [&](int u) { return rl + ll128Line(base, u, lane) * LL128_LINE_WORDS + 2 * j; }, rflag,
               spin, r0, r1) &&
           ok;
    }
    if (F & (FLAG_SRC | FLAG_REDUCE_DST)) {
#pragma unroll
      for (int u = 0; u < UL; u++) {
        uint64_t e0;
        int nv0, nv1;
        ll128Words(ll128Line(base, u, lane), lane, pc.m, EL, EW, &e0, &nv0, &nv1);
        a0[u] = a1[u] = 0;
        if (F & FLAG_SRC) {
          if (nv0 > 0) a0[u] = loadPart<T, uint64_t>(pc.src + e0, nv0);
          if (nv1 > 0) a1[u] = loadPart<T, uint64_t>(pc.src + e0 + EW, nv1);
        }
        if (!(F & FLAG_RECV) && (F & FLAG_REDUCE_DST)) {
          if (nv0 > 0) a0[u] = opPack<T>(op, loadPart<T, uint64_t>(pc.dst + e0, nv0), a0[u]);
          if (nv1 > 0) a1[u] = opPack<T>(op, loadPart<T, uint64_t>(pc.dst + e0 + EW, nv1), a1[u]);
        }
      }
    }
    uint64_t v0[UL], v1[UL];
#pragma unroll
    for (int u = 0; u < UL; u++) {
      uint64_t e0;
      int nv0, nv1;
      ll128Words(ll128Line(base, u, lane), lane, pc.m, EL, EW, &e0, &nv0, &nv1);
      if (F & FLAG_RECV) {
        v0[u] = r0[u];
        v1[u] = r1[u];
        if (F & FLAG_SRC) {
          v0[u] = opPack<T>(op, a0[u], v0[u]);
          v1[u] = opPack<T>(op, a1[u], v1[u]);
        }
      } else {
        v0[u] = a0[u];
        v1[u] = a1[u];
      }
      if (F & (FLAG_DST | FLAG_REDUCE_DST)) {
        if (nv0 > 0) storePart<T, uint64_t>(pc.dst + e0, v0[u], nv0);
        if (nv1 > 0) storePart<T, uint64_t>(pc.dst + e0 + EW, v1[u], nv1);
      }
    }
    if (F & FLAG_SEND) {
      /* The lanes of a line store together: reconverge first (the stores above diverge). */
      __syncwarp();
#pragma unroll
      for (int u = 0; u < UL; u++) {
        const uint64_t l = ll128Line(base, u, lane);
        if (l < nl) ll128Store(sl + l * LL128_LINE_WORDS + 2 * j, v0[u], flagLane ? sflag : v1[u]);
      }
    }
  }
  return ok;
}

/* The generic primitive. Returns false when a wait gave up (LL and LL128; Simple waits are done by the
 * caller before the piece). */
template <typename T, class Op, int PROTO, int F, int U = 4>
__device__ __forceinline__ bool kilnPrim(const Piece<T>& pc, const Op& op, Spin& spin) {
  const int tid = threadIdx.x, nthr = blockDim.x;
  if (PROTO == KILN_DEV_PROTO_SIMPLE) {
    constexpr int E = 16 / sizeof(T);
    const T* rs = (const T*)pc.rslot;
    T* ss = (T*)pc.sslot;
    uintptr_t mis = 0;
    if (F & FLAG_SRC) mis |= (uintptr_t)pc.src;
    if (F & (FLAG_DST | FLAG_REDUCE_DST)) mis |= (uintptr_t)pc.dst;
    if (F & FLAG_RECV) mis |= (uintptr_t)rs;
    if (F & FLAG_SEND) mis |= (uintptr_t)ss;
    const uint64_t nvec = (mis % 16 == 0) ? pc.m / E : 0;
    /* U packs in flight per thread: a block moves U x 16 B x threads per memory latency (4: one
     * block ~45 GB/s on NVLink; the interpreter, 512 threads and up to 128 registers, uses 8). */
    uint64_t i = tid;
    for (; i + (uint64_t)(U - 1) * nthr < nvec; i += (uint64_t)U * nthr) {
      uint4 v[U];
#pragma unroll
      for (int u = 0; u < U; u++) {
        const uint64_t j = i + (uint64_t)u * nthr;
        if (F & FLAG_SRC)
          v[u] = __ldcg((const uint4*)pc.src + j);
        else if (F & FLAG_RECV)
          v[u] = __ldcg((const uint4*)rs + j);
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const uint64_t j = i + (uint64_t)u * nthr;
        if ((F & FLAG_SRC) && (F & FLAG_RECV)) v[u] = opPack<T>(op, v[u], __ldcg((const uint4*)rs + j));
        if ((F & FLAG_SRC) && (F & FLAG_REDUCE_DST))
          v[u] = opPack<T>(op, __ldcg((const uint4*)pc.dst + j), v[u]);
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const uint64_t j = i + (uint64_t)u * nthr;
        if (F & (FLAG_DST | FLAG_REDUCE_DST)) ((uint4*)pc.dst)[j] = v[u];
        if (F & FLAG_SEND) ((uint4*)ss)[j] = v[u];
      }
    }
    for (; i < nvec; i += nthr) {
      uint4 v;
      if (F & FLAG_SRC)
        v = __ldcg((const uint4*)pc.src + i);
      else
        v = __ldcg((const uint4*)rs + i);
      if ((F & FLAG_SRC) && (F & FLAG_RECV)) v = opPack<T>(op, v, __ldcg((const uint4*)rs + i));
      if ((F & FLAG_SRC) && (F & FLAG_REDUCE_DST)) v = opPack<T>(op, __ldcg((const uint4*)pc.dst + i), v);
      if (F & (FLAG_DST | FLAG_REDUCE_DST)) ((uint4*)pc.dst)[i] = v;
      if (F & FLAG_SEND) ((uint4*)ss)[i] = v;
    }
    for (uint64_t e = nvec * E + tid; e < pc.m; e += nthr) {
      T v;
      if (F & FLAG_SRC)
        v = ldcg(pc.src + e);
      else
        v = ldcg(rs + e);
      if ((F & FLAG_SRC) && (F & FLAG_RECV)) v = op(v, ldcg(rs + e));
      if ((F & FLAG_SRC) && (F & FLAG_REDUCE_DST)) v = op(ldcg(pc.dst + e), v);
      if (F & (FLAG_DST | FLAG_REDUCE_DST)) pc.dst[e] = v;
      if (F & FLAG_SEND) ss[e] = v;
    }
    return true;
  } else if (PROTO == KILN_DEV_PROTO_LL128) {
    return ll128Prim<T, Op, F>(pc, op, spin);
  } else {
    constexpr int E = 8 / sizeof(T);
    const uint32_t rflag = llFlag(pc.ruse), sflag = llFlag(pc.suse), rflag1 = llFlagPair(rflag),
                   sflag1 = llFlagPair(sflag);
    const uint4* rl = (const uint4*)pc.rslot;
    uint4* sl = (uint4*)pc.sslot;
    const uint64_t nlValid = (pc.m + E - 1) / E;
    /* A sender always fills every line of the slice, so a receiver never waits on a line that
     * its own (possibly longer) view of the chunk needs but the sender's did not. */
    const uint64_t nl = (F & FLAG_SEND) ? (pc.n + E - 1) / E : nlValid;
    /* UL lines per thread per round, every load of a round issued before any is used: a round
     * costs one memory latency, not UL (one line per thread per round made 64 KB pieces a chain
     * of 16 dependent round trips). */
    constexpr int UL = 4;
    bool ok = true;
    for (uint64_t l0 = tid; l0 < nl; l0 += (uint64_t)UL * nthr) {
      uint32_t d0[UL], f0[UL], d1[UL], f1[UL];
      uint64_t a[UL];
      if (F & FLAG_RECV) {
#pragma unroll
        for (int u = 0; u < UL; u++) {
          const uint64_t l = l0 + (uint64_t)u * nthr;
          f0[u] = rflag;
          f1[u] = rflag1;
          d0[u] = d1[u] = 0;
          if (l < nlValid) llLoadOnce(rl + l, &d0[u], &f0[u], &d1[u], &f1[u]);
        }
      }
      if (F & (FLAG_SRC | FLAG_REDUCE_DST)) {
#pragma unroll
        for (int u = 0; u < UL; u++) {
          const uint64_t l = l0 + (uint64_t)u * nthr, e0 = l * E;
          const int nv = e0 < pc.m ? (int)min((uint64_t)E, pc.m - e0) : 0;
          a[u] = 0;
          if (nv > 0) {
            if (F & FLAG_SRC) a[u] = loadPart<T, uint64_t>(pc.src + e0, nv);
            if (!(F & FLAG_RECV) && (F & FLAG_REDUCE_DST))
              a[u] = opPack<T>(op, loadPart<T, uint64_t>(pc.dst + e0, nv), a[u]);
          }
        }
      }
#pragma unroll
      for (int u = 0; u < UL; u++) {
        const uint64_t l = l0 + (uint64_t)u * nthr, e0 = l * E;
        if (l >= nl) break;
        const int nv = e0 < pc.m ? (int)min((uint64_t)E, pc.m - e0) : 0;
        uint64_t v = 0;
        if (nv > 0) {
          if (F & FLAG_RECV) {
            if (ok && (f0[u] != rflag || f1[u] != rflag1))
              ok = llLoad(rl + l, rflag, rflag1, spin, &v);
            else
              v = (uint64_t)d0[u] | ((uint64_t)d1[u] << 32);
            if (F & FLAG_SRC) v = opPack<T>(op, a[u], v);
          } else {
            v = a[u];
          }
          if (F & (FLAG_DST | FLAG_REDUCE_DST)) storePart<T, uint64_t>(pc.dst + e0, v, nv);
        }
        if (F & FLAG_SEND) llStore2(sl + l, v, sflag, sflag1);
      }
    }
    return ok;
  }
}

/* A folded run of local reductions (kilnStepFoldable): dst <- ops[0] op ops[1] op ... op
 * ops[nops-1], left to right, m elements; every operand is a local buffer (no FIFO), so both
 * protocols take this path. MAXOPS bounds nops (at most KILN_FUSE_MAX + 1: the head re reads its
 * destination first). Operands are loaded G at a time, all G in flight together: a fold of up to
 * G + 1 operands costs one memory latency per 16-byte pack, and the registers it holds stay few
 * (it is inlined into the interpreter's loop, whose other paths must not spill). */
template <typename T, class Op, int MAXOPS, int G = 4>
__device__ __forceinline__ void reduceMany(T* dst, const T* const* ops, int nops, uint64_t m, const Op& op) {
  const int tid = threadIdx.x, nthr = blockDim.x;
  constexpr int E = 16 / sizeof(T);
  uintptr_t mis = (uintptr_t)dst;
  for (int k = 0; k < nops; k++) mis |= (uintptr_t)ops[k];
  const uint64_t nvec = (mis % 16 == 0) ? m / E : 0;
  for (uint64_t i = tid; i < nvec; i += nthr) {
    uint4 acc = __ldcg((const uint4*)ops[0] + i);
#pragma unroll
    for (int k0 = 1; k0 < MAXOPS; k0 += G) {
      if (k0 >= nops) break;
      uint4 v[G];
#pragma unroll
      for (int g = 0; g < G; g++)
        if (k0 + g < nops) v[g] = __ldcg((const uint4*)ops[k0 + g] + i);
#pragma unroll
      for (int g = 0; g < G; g++)
        if (k0 + g < nops) acc = opPack<T>(op, acc, v[g]);
    }
    ((uint4*)dst)[i] = acc;
  }
  for (uint64_t e = nvec * E + tid; e < m; e += nthr) {
    T acc = ldcg(ops[0] + e);
    for (int k = 1; k < nops; k++) acc = op(acc, ldcg(ops[k] + e));
    dst[e] = acc;
  }
}

/* ---- The vocabulary. ---- */
#define KILN_PRIM(name, flags)                                                         \
  template <typename T, class Op, int PROTO, int U = 4>                                \
  __device__ __forceinline__ bool name(const Piece<T>& pc, const Op& op, Spin& spin) { \
    return kilnPrim<T, Op, PROTO, (flags), U>(pc, op, spin);                           \
  }
KILN_PRIM(send, FLAG_SRC | FLAG_SEND)
KILN_PRIM(recv, FLAG_RECV | FLAG_DST)
KILN_PRIM(recvCopySend, FLAG_RECV | FLAG_DST | FLAG_SEND)
KILN_PRIM(recvReduceSend, FLAG_RECV | FLAG_SRC | FLAG_SEND)
KILN_PRIM(recvReduceCopy, FLAG_RECV | FLAG_SRC | FLAG_DST)
KILN_PRIM(recvReduceCopySend, FLAG_RECV | FLAG_SRC | FLAG_DST | FLAG_SEND)
KILN_PRIM(copy, FLAG_SRC | FLAG_DST)
KILN_PRIM(reduce, FLAG_SRC | FLAG_REDUCE_DST)
#undef KILN_PRIM

} /* namespace kiln */

#endif /* KILN_KERNELS_PRIMITIVES_CUH */