/*
 * Plans with memory steps (put, get, gre, sig, wait; kiln/plan.h, kiln/passes.h): the passes of a
 * threadblock run over the protocols of protocols.cuh, by the interpreter (memKernel: the passes
 * read from device memory) and by the baked kernels (kernels/baked.cuh: every pass's shape and
 * operands constants), the same routines for both.
 *
 * One CUDA block per plan threadblock of this rank. A call runs the plan once per iteration it
 * (slice it of every chunk, args.sliceElems elements), as epoch e = E + it, where E is the
 * communicator's next epoch when the call begins: epochs count across every call of every plan
 * with memory steps on the communicator, in device memory (kilnDevMem.slots: one copy per block,
 * as the symmetric kernels keep their sequence numbers), so graph replays need no host. Scratch
 * has two halves, half e & 1: plain chunks in the window's plain area, line chunks in its line
 * areas (16-byte lines for LL and LL12, LL128 lines), each chunk's slice at its index among that
 * rank's chunks of its kind. A line carries lineFlag(e); a reader polls each line until it holds
 * its epoch's flag, so what an earlier epoch of the same half left (the flags of e and e - 2k
 * differ) never passes for it. A sig stores (e << KILN_DEV_SIG_SHIFT) + k + 1 with a system-scope
 * release into the peer's signal word of (this rank, channel) after a block barrier; a wait
 * polls its own word with acquire loads until it is at least that, then the block meets.
 *
 * A plan's own consecutive calls are what kilnPlanVerify checked (scratch halves reused two
 * epochs later, user buffers between calls). A call of another plan than the communicator's last
 * one (its hash in the slot) may find a peer still reading what that plan left in the areas this
 * one writes: every block of such a call first meets every peer (arrival words: each rank stores
 * E + 1 into every peer's word of this rank, then waits for every peer's; a peer there has ended
 * its previous call), before any other access to a peer.
 *
 * Passes (kiln/passes.h) run as the symmetric kernels' bodies do: a PUT of one source to several
 * peers loads each line once and stores it to every peer (protocols.cuh putLines' shape); a
 * REDUCE loads this rank's own operands, then polls the lines of every peer at once
 * (pollLines*), and reduces in the plan's order, so every rank gets bitwise the same result; a
 * COPY polls every source's line at once. LL and LL12 passes take a thread per line, LL128 ones
 * a warp per 4 lines (8 lanes a line), Simple ones 16-byte packs with several in flight (combine).
 * The block meets only where a pass says so (its barrier flag: local data an earlier pass
 * touched another way), before a signal, after a wait, and around dependencies.
 */
#ifndef KILN_KERNELS_MEM_CUH
#define KILN_KERNELS_MEM_CUH

#include "interp.cuh"

namespace kiln {
namespace mem {

enum : int { MAXR = KILN_DEV_MEM_MAX_RANKS, MAXP = 8 /* pairs or operands a pass */ };

/* A pass's shape: how many pairs or operands it has and which are lines. Run time for the
 * interpreter (ShapeRt), compile time for the baked kernels (ShapeCt), so that one routine serves
 * both and a baked pass's loops and branches fold away. */
struct ShapeRt {
  static constexpr bool fixed = false;
  int count;
  unsigned lines;
  __device__ __forceinline__ int n() const { return count; }
  __device__ __forceinline__ bool line(int q) const { return (lines >> q) & 1u; }
  __device__ __forceinline__ unsigned mask() const { return lines; }
};
template <int N, unsigned LINES> struct ShapeCt {
  static constexpr bool fixed = true;
  __device__ __forceinline__ static constexpr int n() { return N; }
  __device__ __forceinline__ static constexpr bool line(int q) { return (LINES >> q) & 1u; }
  __device__ __forceinline__ static constexpr unsigned mask() { return LINES; }
};

/* What every pass of an iteration shares. */
struct Iter {
  uint64_t epoch;
  uint64_t n; /* elements of every chunk's slice in this iteration */
  int it;
  int half;
  uint32_t flag;    /* lineFlag(epoch) */
  uint64_t flag128; /* lineFlag128(epoch) */
};

/* The address of operand o's chunk c in this iteration and its valid elements there. */
template <typename T> __device__ __forceinline__ T* addr(const kilnDevArgs& a, const Iter& k,
                                                         const kilnDevOpnd& o, int c, uint64_t* valid) {
  if (o.kind == KILN_DEV_OPND_USER) {
    uint64_t off, v;
    chunkSlice(a, o.buf, (int64_t)o.off + c, k.it, k.n, &off, &v);
    *valid = v;
    return (T*)a.mem.user[o.rank][o.buf] + off;
  }
  *valid = k.n;
  if (o.kind == KILN_DEV_OPND_SCRATCH)
    return (T*)(a.mem.win[o.rank] + a.mem.plainOff + (uint64_t)k.half * a.mem.plainHalf +
                (uint64_t)(o.off + c) * a.sliceElems * sizeof(T));
  return (T*)(a.mem.win[o.rank] + a.mem.lineOff[o.buf] + (uint64_t)k.half * a.mem.lineHalf[o.buf] +
              (uint64_t)(o.off + c) * a.mem.lineChunk[o.buf]);
}

/* ---- LL and LL12 lines: a thread per line ---- */

/* PUT: pairs (ops[2j]: a peer's line chunk, ops[2j+1]: the source) of the pass's protocol L. The
 * whole slice goes out (zeros past a source's valid elements), so a reader never waits on a line
 * nobody writes. Sources loaded once each (all the same: once), lines of sources polled together,
 * then every line stored. */
template <typename T, int L, int R, class Sh>
__device__ __forceinline__ void putLines16(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                           const kilnDevOpnd* ops, const Sh& sh, Spin& spin, bool& ok) {
  using D = LineData<T, L>;
  using P = typename D::P;
  constexpr int E = D::E;
  const bool same = ps.flags & KILN_DEV_PASS_SAME_SRC;
  const int tid = threadIdx.x, nthr = blockDim.x;
  for (int c = 0; c < ps.cnt && ok; c++) {
    uint4* tg[R];
    const T* src[R];
    uint64_t m[R];
#pragma unroll
    for (int j = 0; j < R; j++)
      if (j < sh.n() && (j == 0 || !same)) {
        uint64_t v;
        tg[j] = addr<uint4>(a, k, ops[2 * j], c, &v);
        src[j] = addr<T>(a, k, ops[2 * j + 1], c, &m[j]);
      } else if (j < sh.n()) {
        uint64_t v;
        tg[j] = addr<uint4>(a, k, ops[2 * j], c, &v);
      }
    const uint64_t nl = (k.n + E - 1) / E;
    for (uint64_t l = tid; l < nl && ok; l += nthr) {
      const uint64_t e0 = l * E;
      P v[R];
      if (same) {
        if (sh.line(0)) {
          ok = D::template poll<1>(
              1u, [&](int) { return (const uint4*)src[0] + l; }, k.flag, spin, v);
        } else {
          const int nv = e0 < m[0] ? (int)min((uint64_t)E, m[0] - e0) : 0;
          v[0] = nv > 0 ? D::load(src[0] + e0, nv) : P{};
        }
#pragma unroll
        for (int j = 0; j < R; j++)
          if (j < sh.n()) D::put(tg[j] + l, v[0], k.flag);
      } else {
        P w[R];
#pragma unroll
        for (int j = 0; j < R; j++)
          if (j < sh.n() && !sh.line(j)) {
            const int nv = e0 < m[j] ? (int)min((uint64_t)E, m[j] - e0) : 0;
            v[j] = nv > 0 ? D::load(src[j] + e0, nv) : P{};
          }
        if (sh.mask())
          ok = D::template poll<R>(
              sh.mask(), [&](int j) { return (const uint4*)src[j] + l; }, k.flag, spin, w);
#pragma unroll
        for (int j = 0; j < R; j++)
          if (j < sh.n()) D::put(tg[j] + l, sh.line(j) ? w[j] : v[j], k.flag);
      }
    }
  }
}

/* A reduction pass's chunk c: its destination (returned), its operands o[q] and the elements valid
 * in all of them (*m: the destination's, less where a plain operand holds fewer; lines hold all). */
template <typename T, int R, class Sh>
__device__ __forceinline__ T* reduceOperands(const kilnDevArgs& a, const Iter& k, const kilnDevOpnd* ops,
                                             const Sh& sh, int c, const T** o, uint64_t* m) {
  T* dst = addr<T>(a, k, ops[0], c, m);
#pragma unroll
  for (int q = 0; q < R; q++)
    if (q < sh.n()) {
      uint64_t v;
      o[q] = addr<T>(a, k, ops[1 + q], c, &v);
      if (!sh.line(q)) *m = min(*m, v);
    }
  return dst;
}

/* REDUCE: ops[0] <- ops[1] op ops[2] op ... (sh.n() operands after dst), lines of protocol L among
 * them. This rank's plain operands are loaded before the lines are polled, all of them at once. */
template <typename T, int L, int R, class Sh, class Op>
__device__ __forceinline__ void reduceLines16(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                              const kilnDevOpnd* ops, const Sh& sh, const Op& op, Spin& spin,
                                              bool& ok) {
  using D = LineData<T, L>;
  using P = typename D::P;
  constexpr int E = D::E;
  const int tid = threadIdx.x, nthr = blockDim.x;
  for (int c = 0; c < ps.cnt && ok; c++) {
    uint64_t m;
    const T* o[R];
    T* dst = reduceOperands<T, R>(a, k, ops, sh, c, o, &m);
    const uint64_t nl = (m + E - 1) / E;
    for (uint64_t l = tid; l < nl && ok; l += nthr) {
      const uint64_t e0 = l * E;
      const int nv = (int)min((uint64_t)E, m - e0);
      P v[R], w[R];
#pragma unroll
      for (int q = 0; q < R; q++)
        if (q < sh.n() && !sh.line(q)) v[q] = D::load(o[q] + e0, nv);
      ok = D::template poll<R>(
          sh.mask(), [&](int q) { return (const uint4*)o[q] + l; }, k.flag, spin, w);
      P acc = sh.line(0) ? w[0] : v[0];
#pragma unroll
      for (int q = 1; q < R; q++)
        if (q < sh.n()) acc = opPack<T>(op, acc, sh.line(q) ? w[q] : v[q]);
      D::store(dst + e0, acc, nv);
    }
  }
}

/* The (dst, src) pairs of a copy pass's chunk c: their addresses and valid elements m[j] (a pair
 * whose source is lines: the destination's), and the most of them. */
template <typename T, int R, class Sh>
__device__ __forceinline__ uint64_t copyPairs(const kilnDevArgs& a, const Iter& k, const kilnDevOpnd* ops,
                                              const Sh& sh, int c, T** dst, const T** src, uint64_t* m) {
  uint64_t top = 0;
#pragma unroll
  for (int j = 0; j < R; j++)
    if (j < sh.n()) {
      uint64_t vd, vs;
      dst[j] = addr<T>(a, k, ops[2 * j], c, &vd);
      src[j] = addr<T>(a, k, ops[2 * j + 1], c, &vs);
      m[j] = sh.line(j) ? vd : min(vd, vs);
      top = max(top, m[j]);
    }
  return top;
}

/* COPY: pairs (ops[2j]: this rank's chunk, ops[2j+1]: the source), the sources' lines polled
 * together. */
template <typename T, int L, int R, class Sh>
__device__ __forceinline__ void copyLines16(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                            const kilnDevOpnd* ops, const Sh& sh, Spin& spin, bool& ok) {
  using D = LineData<T, L>;
  using P = typename D::P;
  constexpr int E = D::E;
  const int tid = threadIdx.x, nthr = blockDim.x;
  for (int c = 0; c < ps.cnt && ok; c++) {
    T* dst[R];
    const T* src[R];
    uint64_t m[R];
    const uint64_t top = copyPairs<T, R>(a, k, ops, sh, c, dst, src, m);
    const uint64_t nl = (top + E - 1) / E;
    for (uint64_t l = tid; l < nl && ok; l += nthr) {
      const uint64_t e0 = l * E;
      P v[R], w[R];
      unsigned pend = 0;
#pragma unroll
      for (int j = 0; j < R; j++)
        if (j < sh.n() && e0 < m[j]) {
          if (sh.line(j))
            pend |= 1u << j;
          else
            v[j] = D::load(src[j] + e0, (int)min((uint64_t)E, m[j] - e0));
        }
      ok = D::template poll<R>(
          pend, [&](int j) { return (const uint4*)src[j] + l; }, k.flag, spin, w);
#pragma unroll
      for (int j = 0; j < R; j++)
        if (j < sh.n() && e0 < m[j])
          D::store(dst[j] + e0, sh.line(j) ? w[j] : v[j], (int)min((uint64_t)E, m[j] - e0));
    }
  }
}

/* ---- LL128 lines: 8 lanes a line, a warp 4 lines at a time ---- */

/* Valid elements of data word w (8 bytes: E8 elements) of a chunk of m. */
template <typename T> __device__ __forceinline__ int word128Valid(uint64_t w, uint64_t m) {
  constexpr int E8 = 8 / sizeof(T);
  const uint64_t e = w * E8;
  return e < m ? (int)min((uint64_t)E8, m - e) : 0;
}
/* LL128 lines a chunk's m elements take. */
template <typename T> __device__ __forceinline__ uint64_t lines128(uint64_t m) {
  return (m * sizeof(T) + LL128_DATA_BYTES - 1) / LL128_DATA_BYTES;
}

/* This lane's two words of the chunk's plain data at p (zeros where not valid). */
template <typename T> __device__ __forceinline__ void load128(const T* p, uint64_t e0, int nv0, int nv1,
                                                              uint64_t* v0, uint64_t* v1) {
  constexpr int E8 = 8 / sizeof(T);
  *v0 = nv0 > 0 ? loadPart<T, uint64_t>(p + e0, nv0) : 0;
  *v1 = nv1 > 0 ? loadPart<T, uint64_t>(p + e0 + E8, nv1) : 0;
}

template <typename T, int R, class Sh>
__device__ __forceinline__ void putLines128(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                            const kilnDevOpnd* ops, const Sh& sh, Spin& spin, bool& ok) {
  constexpr int E8 = 8 / sizeof(T);
  const bool same = ps.flags & KILN_DEV_PASS_SAME_SRC;
  ok = __all_sync(0xffffffffu, ok); /* the warp polls and stores together */
  const Lane128 ln;
  for (int c = 0; c < ps.cnt && ok; c++) {
    uint64_t* tg[R];
    const T* src[R];
    uint64_t m[R];
#pragma unroll
    for (int j = 0; j < R; j++)
      if (j < sh.n()) {
        uint64_t v;
        tg[j] = addr<uint64_t>(a, k, ops[2 * j], c, &v);
        if (j == 0 || !same) src[j] = addr<T>(a, k, ops[2 * j + 1], c, &m[j]);
      }
    const uint64_t nl = lines128<T>(k.n);
    for (uint64_t base = (uint64_t)ln.warp * 4; base < nl && ok; base += (uint64_t)ln.nwarps * 4) {
      const uint64_t l = base + (ln.lane >> 3), w = l * 15 + 2 * ln.j, e0 = w * E8;
      const bool has = l < nl;
      uint64_t v0[R], v1[R], r0[R], r1[R];
      unsigned pend = 0;
#pragma unroll
      for (int j = 0; j < R; j++)
        if (j < sh.n() && (j == 0 || !same)) {
          if (sh.line(j)) {
            if (has) pend |= 1u << j;
          } else {
            const int nv0 = has ? word128Valid<T>(w, m[j]) : 0,
                      nv1 = has && !ln.flagLane ? word128Valid<T>(w + 1, m[j]) : 0;
            load128<T>(src[j], e0, nv0, nv1, &v0[j], &v1[j]);
          }
        }
      if (sh.mask())
        ok = pollLines128<R>(
            pend, [&](int j) { return (const uint64_t*)src[j] + l * 16 + 2 * ln.j; }, k.flag128, spin, r0,
            r1);
      __syncwarp();
#pragma unroll
      for (int j = 0; j < R; j++)
        if (j < sh.n() && has) {
          const int s = same ? 0 : j;
          const uint64_t a0 = sh.line(s) ? r0[s] : v0[s], a1 = sh.line(s) ? r1[s] : v1[s];
          ll128Store(ln.word(tg[j], l), a0, ln.flagLane ? k.flag128 : a1);
        }
    }
  }
}

template <typename T, int R, class Sh, class Op>
__device__ __forceinline__ void reduceLines128(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                               const kilnDevOpnd* ops, const Sh& sh, const Op& op, Spin& spin,
                                               bool& ok) {
  constexpr int E8 = 8 / sizeof(T);
  ok = __all_sync(0xffffffffu, ok); /* the warp polls and stores together */
  const Lane128 ln;
  for (int c = 0; c < ps.cnt && ok; c++) {
    uint64_t m;
    const T* o[R];
    T* dst = reduceOperands<T, R>(a, k, ops, sh, c, o, &m);
    const uint64_t nl = lines128<T>(m);
    for (uint64_t base = (uint64_t)ln.warp * 4; base < nl && ok; base += (uint64_t)ln.nwarps * 4) {
      const uint64_t l = base + (ln.lane >> 3), w = l * 15 + 2 * ln.j, e0 = w * E8;
      const bool has = l < nl;
      const int nv0 = has ? word128Valid<T>(w, m) : 0,
                nv1 = has && !ln.flagLane ? word128Valid<T>(w + 1, m) : 0;
      uint64_t v0[R], v1[R], r0[R], r1[R];
#pragma unroll
      for (int q = 0; q < R; q++)
        if (q < sh.n() && !sh.line(q)) load128<T>(o[q], e0, nv0, nv1, &v0[q], &v1[q]);
      ok = pollLines128<R>(
          has ? sh.mask() : 0u, [&](int q) { return (const uint64_t*)o[q] + l * 16 + 2 * ln.j; }, k.flag128,
          spin, r0, r1);
      uint64_t a0 = sh.line(0) ? r0[0] : v0[0], a1 = sh.line(0) ? r1[0] : v1[0];
#pragma unroll
      for (int q = 1; q < R; q++)
        if (q < sh.n()) {
          a0 = opPack<T>(op, a0, sh.line(q) ? r0[q] : v0[q]);
          a1 = opPack<T>(op, a1, sh.line(q) ? r1[q] : v1[q]);
        }
      storeWords128<T>(dst + e0, a0, a1, nv0, nv1);
    }
  }
}

template <typename T, int R, class Sh>
__device__ __forceinline__ void copyLines128(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                             const kilnDevOpnd* ops, const Sh& sh, Spin& spin, bool& ok) {
  constexpr int E8 = 8 / sizeof(T);
  ok = __all_sync(0xffffffffu, ok); /* the warp polls and stores together */
  const Lane128 ln;
  for (int c = 0; c < ps.cnt && ok; c++) {
    T* dst[R];
    const T* src[R];
    uint64_t m[R];
    const uint64_t top = copyPairs<T, R>(a, k, ops, sh, c, dst, src, m);
    const uint64_t nl = lines128<T>(top);
    for (uint64_t base = (uint64_t)ln.warp * 4; base < nl && ok; base += (uint64_t)ln.nwarps * 4) {
      const uint64_t l = base + (ln.lane >> 3), w = l * 15 + 2 * ln.j, e0 = w * E8;
      uint64_t v0[R], v1[R], r0[R], r1[R];
      int nv0[R], nv1[R];
      unsigned pend = 0;
#pragma unroll
      for (int j = 0; j < R; j++)
        if (j < sh.n()) {
          const bool has = l < lines128<T>(m[j]);
          nv0[j] = has ? word128Valid<T>(w, m[j]) : 0;
          nv1[j] = has && !ln.flagLane ? word128Valid<T>(w + 1, m[j]) : 0;
          if (sh.line(j)) {
            if (has) pend |= 1u << j;
          } else {
            load128<T>(src[j], e0, nv0[j], nv1[j], &v0[j], &v1[j]);
          }
        }
      ok = pollLines128<R>(
          pend, [&](int j) { return (const uint64_t*)src[j] + l * 16 + 2 * ln.j; }, k.flag128, spin, r0, r1);
#pragma unroll
      for (int j = 0; j < R; j++)
        if (j < sh.n())
          storeWords128<T>(dst[j] + e0, sh.line(j) ? r0[j] : v0[j], sh.line(j) ? r1[j] : v1[j], nv0[j],
                           nv1[j]);
    }
  }
}

/* ---- Simple: 16-byte packs, several in flight (combine) ---- */

/* PUT of plain data: one source to every peer in one pass (each pack loaded once), else each pair
 * in turn. */
template <typename T, int R, class Sh, class Op>
__device__ __forceinline__ void putSimple(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                          const kilnDevOpnd* ops, const Sh& sh, const Op& op) {
  const bool same = ps.flags & KILN_DEV_PASS_SAME_SRC;
  for (int c = 0; c < ps.cnt; c++) {
    if (same) {
      T* dsts[R];
      uint64_t m;
      const T* src[1] = {addr<T>(a, k, ops[1], c, &m)};
#pragma unroll
      for (int j = 0; j < R; j++) {
        dsts[j] = nullptr;
        if (j < sh.n()) {
          uint64_t v;
          dsts[j] = addr<T>(a, k, ops[2 * j], c, &v);
          m = min(m, v);
        }
      }
      combine<T, 1, Op, R>(dsts, src, m, op, 0);
    } else {
#pragma unroll 1
      for (int j = 0; j < sh.n(); j++) {
        uint64_t vd, vs;
        T* d[1] = {addr<T>(a, k, ops[2 * j], c, &vd)};
        const T* s[1] = {addr<T>(a, k, ops[2 * j + 1], c, &vs)};
        combine<T, 1, Op, 1>(d, s, min(vd, vs), op, 0);
      }
    }
  }
}

template <typename T, int R, class Sh, class Op>
__device__ __forceinline__ void reduceSimple(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                             const kilnDevOpnd* ops, const Sh& sh, const Op& op) {
  for (int c = 0; c < ps.cnt; c++) {
    uint64_t m;
    T* dst[1] = {addr<T>(a, k, ops[0], c, &m)};
    const T* o[R];
#pragma unroll
    for (int q = 0; q < R; q++)
      if (q < sh.n()) {
        uint64_t v;
        o[q] = addr<T>(a, k, ops[1 + q], c, &v);
        m = min(m, v);
      }
    /* A shape known at compile time (baked): combine's loads of every operand in flight; else
     * the interpreter's folded reduction (reduceMany: groups of operands in flight), one routine
     * for every count instead of a combine per count. */
    if constexpr (Sh::fixed)
      combine<T, (R > 0 ? R : 1), Op, 1>(dst, o, m, op, 0);
    else
      reduceMany<T, Op, MAXP>(dst[0], o, sh.n(), m, op);
  }
}

template <typename T, class Sh, class Op>
__device__ __forceinline__ void copySimple(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                           const kilnDevOpnd* ops, const Sh& sh, const Op& op) {
  for (int c = 0; c < ps.cnt; c++)
#pragma unroll 1
    for (int j = 0; j < sh.n(); j++) {
      uint64_t vd, vs;
      T* d[1] = {addr<T>(a, k, ops[2 * j], c, &vd)};
      const T* s[1] = {addr<T>(a, k, ops[2 * j + 1], c, &vs)};
      combine<T, 1, Op, 1>(d, s, min(vd, vs), op, 0);
    }
}

/* ---- signals ---- */

/* The signal word of stream (src -> the rank whose window win is, channel ch). */
__device__ __forceinline__ uint64_t* sigWord(const kilnDevArgs& a, const char* win, int src, int ch) {
  return (uint64_t*)(win + a.mem.sigOff) + (size_t)src * a.mem.maxChannels + ch;
}
__device__ __forceinline__ uint64_t sigValue(uint64_t epoch, int ord) {
  return (epoch << KILN_DEV_SIG_SHIFT) + (uint64_t)ord + 1;
}

/* SIGNAL: after a barrier (every thread's earlier stores come first: the release is cumulative
 * over them, interp.cuh says why), lane j of warp 0 raises the j-th signal. */
template <class Sh> __device__ __forceinline__ void signalPass(const kilnDevArgs& a, const Iter& k,
                                                               const kilnDevOpnd* ops, const Sh& sh,
                                                               bool ok) {
  __syncthreads();
  const int j = threadIdx.x;
  if (j < sh.n() && ok) {
    const kilnDevOpnd o = ops[j];
    stReleaseSys(sigWord(a, a.mem.win[o.rank], a.rank, o.buf), sigValue(k.epoch, o.off));
  }
}

/* WAIT: lane j of warp 0 waits for the j-th signal (acquire), then the block meets. */
template <class Sh> __device__ __forceinline__ void waitPass(const kilnDevArgs& a, const Iter& k,
                                                             const kilnDevOpnd* ops, const Sh& sh, Spin& spin,
                                                             bool& ok) {
  const int j = threadIdx.x;
  if (j < sh.n() && ok) {
    const kilnDevOpnd o = ops[j];
    const uint64_t* w = sigWord(a, a.mem.win[a.rank], o.rank, o.buf);
    const uint64_t want = sigValue(k.epoch, o.off);
    while (ldAcquireSys(w) < want)
      if (spin.tick()) {
        ok = false;
        break;
      }
  }
  ok = __syncthreads_and(ok);
}

/* ---- a pass ---- */

/* Runs pass ps (operands ops, shape sh) of protocol L: R bounds the shape's count at compile
 * time. LP: the line protocol this kernel has code for (the pass's, or Simple). */
template <typename T, int LP, int R, class Sh, class Op>
__device__ __forceinline__ void runPass(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                        const kilnDevOpnd* ops, const Sh& sh, const Op& op, Spin& spin,
                                        bool& ok) {
  const bool lines = LP != KILN_DEV_PROTO_SIMPLE && ps.proto == LP;
  switch (ps.kind) {
    case KILN_DEV_PASS_PUT:
      if constexpr (LP == KILN_DEV_PROTO_LL128) {
        if (lines) {
          putLines128<T, R>(a, k, ps, ops, sh, spin, ok);
          break;
        }
      } else if constexpr (LP == KILN_DEV_PROTO_LL || (LP == KILN_DEV_PROTO_LL12 && sizeof(T) <= 4)) {
        if (lines) {
          putLines16<T, LP, R>(a, k, ps, ops, sh, spin, ok);
          break;
        }
      }
      putSimple<T, R>(a, k, ps, ops, sh, op);
      break;
    case KILN_DEV_PASS_REDUCE:
      if constexpr (LP == KILN_DEV_PROTO_LL128) {
        if (lines) {
          reduceLines128<T, R>(a, k, ps, ops, sh, op, spin, ok);
          break;
        }
      } else if constexpr (LP == KILN_DEV_PROTO_LL || (LP == KILN_DEV_PROTO_LL12 && sizeof(T) <= 4)) {
        if (lines) {
          reduceLines16<T, LP, R>(a, k, ps, ops, sh, op, spin, ok);
          break;
        }
      }
      reduceSimple<T, R>(a, k, ps, ops, sh, op);
      break;
    case KILN_DEV_PASS_COPY:
      if constexpr (LP == KILN_DEV_PROTO_LL128) {
        if (lines) {
          copyLines128<T, R>(a, k, ps, ops, sh, spin, ok);
          break;
        }
      } else if constexpr (LP == KILN_DEV_PROTO_LL || (LP == KILN_DEV_PROTO_LL12 && sizeof(T) <= 4)) {
        if (lines) {
          copyLines16<T, LP, R>(a, k, ps, ops, sh, spin, ok);
          break;
        }
      }
      copySimple<T>(a, k, ps, ops, sh, op);
      break;
    case KILN_DEV_PASS_SIGNAL: signalPass(a, k, ops, sh, ok); break;
    case KILN_DEV_PASS_WAIT: waitPass(a, k, ops, sh, spin, ok); break;
    default: break;
  }
}

/* ---- the block's frame: epochs, the first meeting, dependencies, the end ---- */

/* What a block keeps between passes. */
struct Block {
  uint64_t e0;    /* the call's first epoch */
  uint64_t seq;   /* the exec's call number (progress words, avg's count); only with deps or avg */
  bool ok;        /* this thread has not given up */
  bool triggered; /* the next kernel may launch */
};
struct Shared {
  uint64_t seq;
  int abort;
};

/* The next kernel on the stream may be scheduled (programmatic launch). */
__device__ __forceinline__ void trigger(Block& b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (!b.triggered) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  b.triggered = true;
}

/* The start of a block: wait for the kernel before (programmatic launch), read the epoch slot
 * (every thread itself, no barrier), meet every peer where the communicator's last plan was
 * another, read the exec's call number where the plan needs it. */
__device__ __forceinline__ void begin(const kilnDevArgs& a, Block& b, Shared* sh, Spin& spin) {
  asm volatile("" ::"l"(a.mem.slots), "l"(a.abortFlag), "l"(a.passes));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const volatile uint64_t* slot = a.mem.slots + 2 * blockIdx.x;
  b.e0 = slot[0];
  const uint64_t last = slot[1];
  b.ok = !*(volatile int*)a.abortFlag;
  b.triggered = false;
  b.seq = 0;
  const bool meet = last != a.mem.planHash;
  if (a.mem.hasDeps || a.avgBuf) {
    if (threadIdx.x == 0) {
      sh->seq = a.callSeq[blockIdx.x] + 1;
      a.callSeq[blockIdx.x] = sh->seq;
    }
  }
  if (meet) {
    const int q = threadIdx.x, n = a.nranks, me = a.rank;
    if (q < n && q != me && b.ok) {
      stReleaseSys((uint64_t*)(a.mem.win[q] + a.mem.arriveOff) + me, b.e0 + 1);
      const uint64_t* w = (const uint64_t*)(a.mem.win[me] + a.mem.arriveOff) + q;
      while (ldAcquireSys(w) < b.e0 + 1)
        if (spin.tick()) {
          b.ok = false;
          break;
        }
    }
  }
  if (meet || a.mem.hasDeps || a.avgBuf) {
    b.ok = __syncthreads_and(b.ok);
    b.seq = sh->seq;
  }
}

/* A dependency's wait (thread 0, then the block meets) and a publication (after a meeting). */
__device__ __forceinline__ void awaitDep(const kilnDevArgs& a, const kilnDevPass& ps, const Block& b, int it,
                                         Spin& spin, bool& ok) {
  if (threadIdx.x == 0 && ok) {
    const uint64_t want = progressWord(b.seq, it, ps.depNsteps, ps.deps + 1);
    while (progressBefore(ldAcquireGpu(a.progress + ps.depid), want))
      if (spin.tick()) {
        ok = false;
        break;
      }
  }
  ok = __syncthreads_and(ok);
}
__device__ __forceinline__ void publish(const kilnDevArgs& a, const kilnDevPass& ps, const Block& b, int it,
                                        int nsteps) {
  __syncthreads();
  if (threadIdx.x == 0)
    stReleaseGpu(a.progress + blockIdx.x, progressWord(b.seq, it, nsteps, ps.lastStep + 1));
}

/* Before and after a pass: its meeting, its dependency, the early trigger; after: its
 * publication. */
__device__ __forceinline__ void beforePass(const kilnDevArgs& a, const kilnDevPass& ps, Block& b, int it,
                                           Spin& spin) {
  if ((ps.flags & KILN_DEV_PASS_POLLS) && a.mem.earlyTrigger) trigger(b);
  if (ps.depid >= 0)
    awaitDep(a, ps, b, it, spin, b.ok);
  else if (ps.flags & KILN_DEV_PASS_BARRIER)
    __syncthreads();
}

/* The end of a block: the next epoch and this plan's hash into the block's slot (block 0: also
 * those of the blocks the call lacks), after every thread has read it; avg's division. */
template <typename T> __device__ __forceinline__ void end(const kilnDevArgs& a, Block& b, Shared* sh) {
  trigger(b);
  const bool bad = __syncthreads_or(!b.ok);
  if (threadIdx.x == 0) {
    a.mem.slots[2 * blockIdx.x] = b.e0 + (uint64_t)a.niter;
    a.mem.slots[2 * blockIdx.x + 1] = a.mem.planHash;
  }
  if (blockIdx.x == 0)
    for (int k = a.ntbs + threadIdx.x; k < KILN_DEV_MEM_SLOTS; k += blockDim.x) {
      a.mem.slots[2 * k] = b.e0 + (uint64_t)a.niter;
      a.mem.slots[2 * k + 1] = a.mem.planHash;
    }
  /* Calls that count (begin: with dependencies or avg) count their finished blocks, so that avg's
   * wait has a target; only avg reads the output after the count, so only avg fences first. */
  if (threadIdx.x == 0 && (a.mem.hasDeps || a.avgBuf)) {
    if (a.avgBuf) __threadfence();
    atomicAdd(a.done, 1ull);
  }
  if (a.avgBuf == nullptr || bad) return;
  /* avg: once every block of this rank has finished, this rank's result is final; divide it. */
  if (threadIdx.x == 0) {
    sh->abort = 0;
    Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
    const unsigned long long want = (unsigned long long)b.seq * (unsigned long long)a.ntbs;
    while (*(volatile unsigned long long*)a.done < want)
      if (spin.tick()) {
        sh->abort = 1;
        break;
      }
    __threadfence();
  }
  __syncthreads();
  if (sh->abort) return;
  T* buf = (T*)a.avgBuf;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.avgElems;
       i += (uint64_t)gridDim.x * blockDim.x)
    buf[i] = divide(ldcg(buf + i), a.nranks);
}

/* The iteration's shared values. */
__device__ __forceinline__ Iter iterOf(const kilnDevArgs& a, const Block& b, int it) {
  Iter k;
  k.it = it;
  k.epoch = b.e0 + (uint64_t)it;
  k.half = (int)(k.epoch & 1);
  k.n = min(a.sliceElems, a.chunkElems - (uint64_t)it * a.sliceElems);
  k.flag = lineFlag(k.epoch);
  k.flag128 = lineFlag128(k.epoch);
  return k;
}

/* ---- the interpreter ---- */

/* The interpreter runs a pass's pairs or operands GROUP at a time (a larger pass as several
 * sweeps: every GROUP operands' loads in flight, fewer registers than 8 need): one code path per
 * pass kind, inlined, instead of one per count (a function per kind and count took 10 minutes of
 * compiling a type and spilled 0.3-2.5 KB each). A reduction's later groups reduce into dst
 * (dst op the group's operands, in order). */
enum : int { GROUP = 4 };

template <typename T, int LP, int KIND, class Op>
__device__ __forceinline__ void passGroup(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                          const kilnDevOpnd* ops, int n, unsigned mask, const Op& op,
                                          Spin& spin, bool& ok) {
  constexpr int R = GROUP;
  const ShapeRt sh{n, mask};
  const bool lines = LP != KILN_DEV_PROTO_SIMPLE && ps.proto == LP;
  constexpr bool l16 = LP == KILN_DEV_PROTO_LL || (LP == KILN_DEV_PROTO_LL12 && sizeof(T) <= 4);
  if constexpr (KIND == KILN_DEV_PASS_PUT) {
    if constexpr (LP == KILN_DEV_PROTO_LL128) {
      if (lines) return putLines128<T, R>(a, k, ps, ops, sh, spin, ok);
    } else if constexpr (l16) {
      if (lines) return putLines16<T, LP, R>(a, k, ps, ops, sh, spin, ok);
    }
    putSimple<T, R>(a, k, ps, ops, sh, op);
  } else if constexpr (KIND == KILN_DEV_PASS_REDUCE) {
    if constexpr (LP == KILN_DEV_PROTO_LL128) {
      if (lines) return reduceLines128<T, R>(a, k, ps, ops, sh, op, spin, ok);
    } else if constexpr (l16) {
      if (lines) return reduceLines16<T, LP, R>(a, k, ps, ops, sh, op, spin, ok);
    }
    reduceSimple<T, R>(a, k, ps, ops, sh, op);
  } else {
    if constexpr (LP == KILN_DEV_PROTO_LL128) {
      if (lines) return copyLines128<T, R>(a, k, ps, ops, sh, spin, ok);
    } else if constexpr (l16) {
      if (lines) return copyLines16<T, LP, R>(a, k, ps, ops, sh, spin, ok);
    }
    copySimple<T>(a, k, ps, ops, sh, op);
  }
}

template <typename T, int LP, class Op>
__device__ __forceinline__ void runPassRt(const kilnDevArgs& a, const Iter& k, const kilnDevPass& ps,
                                          const kilnDevOpnd* ops, const Op& op, Spin& spin, bool& ok) {
  switch (ps.kind) {
    case KILN_DEV_PASS_PUT:
    case KILN_DEV_PASS_COPY: {
      const int n = ps.nops / 2;
      for (int g = 0; g < n; g += GROUP) {
        const int m = min(GROUP, n - g);
        const unsigned mask = (ps.lineMask >> g) & ((1u << m) - 1u);
        if (ps.kind == KILN_DEV_PASS_PUT)
          passGroup<T, LP, KILN_DEV_PASS_PUT>(a, k, ps, ops + 2 * g, m, mask, op, spin, ok);
        else
          passGroup<T, LP, KILN_DEV_PASS_COPY>(a, k, ps, ops + 2 * g, m, mask, op, spin, ok);
      }
      break;
    }
    case KILN_DEV_PASS_REDUCE: {
      const int n = ps.nops - 1;
      const int m0 = min(GROUP, n);
      passGroup<T, LP, KILN_DEV_PASS_REDUCE>(a, k, ps, ops, m0, ps.lineMask & ((1u << m0) - 1u), op, spin,
                                             ok);
      for (int g = m0; g < n; g += GROUP - 1) {
        /* dst, then dst as the first operand, then up to GROUP - 1 more; after a meeting (a
         * misaligned operand makes a sweep take elements where the one before took packs). */
        __syncthreads();
        kilnDevOpnd grp[GROUP + 1];
        const int m = min(GROUP - 1, n - g);
        grp[0] = grp[1] = ops[0];
        for (int q = 0; q < m; q++) grp[2 + q] = ops[1 + g + q];
        const unsigned mask = ((ps.lineMask >> g) & ((1u << m) - 1u)) << 1;
        passGroup<T, LP, KILN_DEV_PASS_REDUCE>(a, k, ps, grp, m + 1, mask, op, spin, ok);
      }
      break;
    }
    case KILN_DEV_PASS_SIGNAL: signalPass(a, k, ops, ShapeRt{ps.nops, 0}, ok); break;
    case KILN_DEV_PASS_WAIT: waitPass(a, k, ops, ShapeRt{ps.nops, 0}, spin, ok); break;
    default: break;
  }
}

/* Passes and operands a block keeps in shared memory (more: read from global memory). */
enum : int { SMEM_PASSES = 32, SMEM_OPS = 256 };

/* The interpreter of plans with memory steps: one block per threadblock of the plan's rank, its
 * passes (and operands) copied to shared memory when they fit. LP: the protocol of the lines the
 * plan has (Simple: none), whose kernels take blocks of at most KILN_DEV_MEM_LINE_THREADS threads
 * and so up to 255 registers (at 512 the LL128 kernel spilled 480 bytes); S: sum and avg with the
 * op fixed at compile time, else selects. */
template <typename T, int LP, bool S>
__global__ void __launch_bounds__(LP == KILN_DEV_PROTO_SIMPLE ? 512 : KILN_DEV_MEM_LINE_THREADS)
    memKernel(const __grid_constant__ kilnDevArgs a) {
  __shared__ Shared sh;
  __shared__ kilnDevPass spass[SMEM_PASSES];
  __shared__ kilnDevOpnd sops[SMEM_OPS];
  using Op = typename std::conditional<S, OpSum, OpSel>::type;
  Op op;
  if constexpr (!S) op.op = a.op;
  const kilnDevTb tb = a.tbs[blockIdx.x];
  const int np = tb.npasses, firstOp = tb.firstOp, nops = tb.nops;
  const kilnDevPass* passes = a.passes + tb.firstPass;
  const bool inSmem = np <= SMEM_PASSES && nops <= SMEM_OPS;
  if (inSmem) {
    for (int i = threadIdx.x; i < np * 2; i += blockDim.x) ((uint4*)spass)[i] = ((const uint4*)passes)[i];
    for (int i = threadIdx.x; i < nops; i += blockDim.x) sops[i] = a.opnds[firstOp + i];
  }
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  Block b;
  begin(a, b, &sh, spin);
  __syncthreads();
  const kilnDevPass* pp = inSmem ? spass : passes;
  const kilnDevOpnd* po = inSmem ? sops : a.opnds + firstOp;
  for (int it = 0; it < a.niter; it++) {
    if (it > 0) __syncthreads(); /* the last iteration's reads done before this one's puts */
    const Iter k = iterOf(a, b, it);
    for (int i = 0; i < np; i++) {
      const kilnDevPass ps = pp[i];
      beforePass(a, ps, b, it, spin);
      runPassRt<T, LP>(a, k, ps, po + (ps.firstOp - firstOp), op, spin, b.ok);
      if (ps.flags & KILN_DEV_PASS_PUBLISH) publish(a, ps, b, it, tb.nsteps);
    }
  }
  end<T>(a, b, &sh);
}

/* The kernels of one type: a kernel per line protocol (Simple: none; LL; LL12 for elements of at
 * most 4 bytes; LL128) and kind of op. NKERNELS of them; kernelAt(i) the i-th (for loading them all
 * up front), kernelOf the one of a call. */
enum : int { NKERNELS = 8 };
template <typename T> inline const void* kernelAt(int i) {
  switch (i) {
    case 0: return (const void*)memKernel<T, KILN_DEV_PROTO_SIMPLE, false>;
    case 1: return (const void*)memKernel<T, KILN_DEV_PROTO_SIMPLE, true>;
    case 2: return (const void*)memKernel<T, KILN_DEV_PROTO_LL, false>;
    case 3: return (const void*)memKernel<T, KILN_DEV_PROTO_LL, true>;
    case 4: return (const void*)memKernel<T, KILN_DEV_PROTO_LL128, false>;
    case 5: return (const void*)memKernel<T, KILN_DEV_PROTO_LL128, true>;
    case 6: return sizeof(T) <= 4 ? (const void*)memKernel<T, KILN_DEV_PROTO_LL12, false> : nullptr;
    case 7: return sizeof(T) <= 4 ? (const void*)memKernel<T, KILN_DEV_PROTO_LL12, true> : nullptr;
    default: return nullptr;
  }
}
__host__ __device__ __forceinline__ int kernelIndexOf(int lines, int op) {
  const int p = lines == KILN_DEV_PROTO_LL      ? 1
                : lines == KILN_DEV_PROTO_LL128 ? 2
                : lines == KILN_DEV_PROTO_LL12  ? 3
                                                : 0;
  return 2 * p + (opSums(op) ? 1 : 0);
}

} /* namespace mem */
} /* namespace kiln */

#endif /* KILN_KERNELS_MEM_CUH */
