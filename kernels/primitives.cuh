/*
 * kiln's device primitives: one generic routine, kilnPrim<T, Op, PROTO, FLAGS>, that moves one
 * piece of a plan step (a slice of one chunk) between a user/scratch buffer and a FIFO slot, and
 * short named wrappers over it (copy, reduce, send, recv, recvCopySend, recvReduceSend,
 * recvReduceCopy, recvReduceCopySend). Plans, the interpreter and generated kernels are written
 * in this vocabulary only.
 *
 * The value of a piece is  A op B  where A is the source buffer (FLAG_SRC) and B is the received
 * data (FLAG_RECV) or, for `re`, the destination itself (FLAG_REDUCE_DST); it is written to the
 * destination (FLAG_DST) and/or the peer's FIFO slot (FLAG_SEND).
 *
 * Protocols:
 * - Simple: the slot holds raw data, written by the sender through a peer pointer in 16-byte
 *   stores; the block then publishes a counter (see interp.cuh). Receivers read with ld.cg.
 * - LL: the slot holds 16-byte lines {data0, flag, data1, flag ^ KILN_DEV_LL_FLAG_PAIR}; the receiver
 *   spins on the flags of each line, so no counter is needed before reading.
 * - LL128: the slot holds 128-byte lines of 15 data words and a flag word (120 of 128 bytes carry
 *   data, LL 8 of 16). A warp stores 4 lines with one 16-byte store per thread, the flag word
 *   being the 8th thread's second half; the receiver's warp loads the same way until every
 *   line's flag is there, then loads the lines again and uses that data. What makes it correct
 *   is the property NCCL's LL128 rests on (enabled by NCCL on Hopper over NVLink;
 *   NVIDIA/nccl#786): the 128 bytes one warp-wide store instruction writes reach the peer in ascending
 *   address order, so once the flag (the line's last word) is seen, a later load sees the data.
 *   A load is not atomic over the line: the poll that saw the flag can hold older lower words
 *   (using them returns stale elements). The runtime runs LL128 plans as
 *   Simple unless KILN_LL128=1 (host/exec.c, devProto, says why).
 * Flags derive from the slot's use number (the connection's count of slots sent, from 1): see
 * llFlag/ll128Flag.
 *
 * All routines are executed by all threads of the block; none synchronizes the block.
 */
#ifndef KILN_KERNELS_PRIMITIVES_CUH
#define KILN_KERNELS_PRIMITIVES_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <string.h>

#include "kiln_dev.h"

namespace kiln {

enum : int {
  FLAG_RECV = 1,        /* B = data received from the FIFO */
  FLAG_SEND = 2,        /* result goes to the peer's FIFO */
  FLAG_SRC = 4,         /* A = source buffer */
  FLAG_DST = 8,         /* result is stored to the destination buffer */
  FLAG_REDUCE_DST = 16, /* B = destination buffer (re: dst <- dst op src) */
};

/* ---- Numbers: every type computes in a wider type and rounds back once. ---- */
template <typename T> struct Num {
  typedef T W;
  static __device__ __forceinline__ W to(T x) { return x; }
  static __device__ __forceinline__ T from(W x) { return (T)x; }
};
template <> struct Num<int8_t> {
  typedef int W;
  static __device__ __forceinline__ W to(int8_t x) { return x; }
  static __device__ __forceinline__ int8_t from(W x) { return (int8_t)x; }
};
template <> struct Num<uint8_t> {
  typedef unsigned W;
  static __device__ __forceinline__ W to(uint8_t x) { return x; }
  static __device__ __forceinline__ uint8_t from(W x) { return (uint8_t)x; }
};
template <> struct Num<__half> {
  typedef float W;
  static __device__ __forceinline__ W to(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from(W x) { return __float2half_rn(x); }
};
template <> struct Num<__nv_bfloat16> {
  typedef float W;
  static __device__ __forceinline__ W to(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from(W x) { return __float2bfloat16_rn(x); }
};
template <> struct Num<__nv_fp8_e4m3> {
  typedef float W;
  static __device__ __forceinline__ W to(__nv_fp8_e4m3 x) { return (float)x; }
  static __device__ __forceinline__ __nv_fp8_e4m3 from(W x) { return __nv_fp8_e4m3(x); }
};
template <> struct Num<__nv_fp8_e5m2> {
  typedef float W;
  static __device__ __forceinline__ W to(__nv_fp8_e5m2 x) { return (float)x; }
  static __device__ __forceinline__ __nv_fp8_e5m2 from(W x) { return __nv_fp8_e5m2(x); }
};

/* ---- Reduction ops (ids as kilnRedOp_t; avg reduces as sum, the division comes last). ---- */
enum : int { OP_SUM = 0, OP_PROD = 1, OP_MAX = 2, OP_MIN = 3, OP_AVG = 4 };
/* Whether op reduces as a sum (sum, and avg): what the kernels with the op fixed at compile time
 * (OpSum) serve. */
__host__ __device__ __forceinline__ constexpr bool opSums(int op) { return op == OP_SUM || op == OP_AVG; }

/* Op OP on two values widened to W (Num<T>::W): what every op type below computes. */
template <int OP, typename W> __device__ __forceinline__ W opWide(W x, W y) {
  return (OP == OP_PROD) ? (W)(x * y) : (OP == OP_MAX) ? (x > y ? x : y) : (OP == OP_MIN) ? (x < y ? x : y) : (W)(x + y);
}

template <int OP> struct OpStatic {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    return Num<T>::from(opWide<OP>(Num<T>::to(a), Num<T>::to(b)));
  }
};
typedef OpStatic<OP_SUM> OpSum;
typedef OpStatic<OP_PROD> OpProd;
typedef OpStatic<OP_MAX> OpMax;
typedef OpStatic<OP_MIN> OpMin;

/* The op chosen at run time by a uniform branch per element: what the symmetric flag forms reduce
 * 4- and 8-byte types with for ops other than sum and avg (kernels/sym.cuh reduceN). */
struct OpDyn {
  int op;
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    switch (op) {
      case OP_PROD: return OpProd()(a, b);
      case OP_MAX: return OpMax()(a, b);
      case OP_MIN: return OpMin()(a, b);
      default: return OpSum()(a, b);
    }
  }
};

/* The op chosen at run time without a branch: every op computed, the call's picked by selects.
 * What the symmetric line kernels reduce with for the ops other than sum and avg (kernels/sym.cuh
 * kernel<T, F, false>; there a branch per element costs more than the extra arithmetic).
 * 4x H200, the kernel alone: allreduce max 64 KiB as LL12 lines 3.44 us, 3.56 with OpDyn (2026-11-28). */
struct OpSel {
  int op;
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const {
    typedef typename Num<T>::W W;
    const W x = Num<T>::to(a), y = Num<T>::to(b);
    const W s = opWide<OP_SUM>(x, y), p = opWide<OP_PROD>(x, y), mx = opWide<OP_MAX>(x, y), mn = opWide<OP_MIN>(x, y);
    return Num<T>::from(op == OP_PROD ? p : op == OP_MAX ? mx : op == OP_MIN ? mn : s);
  }
};

/* x / n in the type's arithmetic (integers truncate, as NCCL's avg does). */
template <typename T> __device__ __forceinline__ T divide(T x, int n) {
  typedef typename Num<T>::W W;
  return Num<T>::from((W)(Num<T>::to(x) / (W)n));
}

/* ---- Loads and stores. Reads go through L2 (ld.cg): the data may come from another block or
 * from a peer's NVLink stores, which L1 does not see. ---- */
template <typename T> __device__ __forceinline__ T ldcg(const T* p) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "size");
  T out;
  if (sizeof(T) == 1) {
    unsigned short v;
    asm volatile("ld.global.cg.u8 %0, [%1];" : "=h"(v) : "l"(p));
    unsigned char c = (unsigned char)v;
    memcpy(&out, &c, 1);
  } else if (sizeof(T) == 2) {
    unsigned short v = __ldcg((const unsigned short*)p);
    memcpy(&out, &v, 2);
  } else if (sizeof(T) == 4) {
    unsigned v = __ldcg((const unsigned*)p);
    memcpy(&out, &v, 4);
  } else {
    unsigned long long v = __ldcg((const unsigned long long*)p);
    memcpy(&out, &v, 8);
  }
  return out;
}

/* Element-wise op over a pack P (uint4 or uint64_t) of T. */
template <typename T, typename P, class Op>
__device__ __forceinline__ P opPack(const Op& op, P a, P b) {
  constexpr int E = sizeof(P) / sizeof(T);
  T x[E], y[E];
  memcpy(x, &a, sizeof(P));
  memcpy(y, &b, sizeof(P));
#pragma unroll
  for (int e = 0; e < E; e++) x[e] = op(x[e], y[e]);
  P r;
  memcpy(&r, x, sizeof(P));
  return r;
}

/* The W words of memory from byte address p, of which the first `bytes` (1 to 4 W) are valid and
 * the rest come back zero; p aligned to A bytes (1, 2 or 4: the element's size). Branch-free:
 * every word's load issued, those past the last word that holds a valid byte clamped to that word
 * (so no load reaches past the valid bytes' words, nor past the buffer), then funnel shifts. What
 * a line's partial or misaligned elements take (loadPart, load12) instead of a load per element
 * (with a load per element a reducescatter whose pieces lie at 4- but not 8-byte offsets, an odd
 * float count per rank, takes ~0.45 us more than an aligned one).
 * 4x H200, the kernel alone: branch-free words take 1-12% off every misaligned or partial case (2026-11-28). */
template <int W, int A> __device__ __forceinline__ void loadWords(const void* p, int bytes, uint32_t (&w)[W]) {
  static_assert(A == 1 || A == 2 || A == 4, "alignment");
  const uintptr_t addr = (uintptr_t)p;
  const int off = A == 4 ? 0 : (int)(addr & 3);
  const unsigned* q = (const unsigned*)(addr - off);
  const int last = (off + bytes - 1) >> 2;
  constexpr int N = A == 4 ? W : W + 1;
  uint32_t x[N];
#pragma unroll
  for (int k = 0; k < N; k++) x[k] = __ldcg(q + min(k, last));
#pragma unroll
  for (int k = 0; k < W; k++) {
    const uint32_t v = A == 4 ? x[k] : __funnelshift_r(x[k], x[k + 1], off * 8);
    const int b = bytes - 4 * k;
    w[k] = b >= 4 ? v : b <= 0 ? 0u : v & ((1u << (8 * b)) - 1u);
  }
}

/* Elements 0 to nv - 1 of the W words w to p (aligned to A bytes, the element's size), each store
 * predicated on its element's index, none past them. */
template <int W, int A> __device__ __forceinline__ void storeWords(void* p, const uint32_t (&w)[W], int nv) {
  static_assert(A == 1 || A == 2 || A == 4, "alignment");
#pragma unroll
  for (int e = 0; e < 4 * W / A; e++) {
    if (e >= nv) continue;
    const uint32_t v = w[e * A / 4] >> (8 * (e * A % 4));
    if (A == 4) ((unsigned*)p)[e] = v;
    else if (A == 2) ((unsigned short*)p)[e] = (unsigned short)v;
    else ((unsigned char*)p)[e] = (unsigned char)v;
  }
}

/* A whole pack P (8, 12 or 16 bytes: LL lines' data, LL12 lines' Pack12 in kernels/sym.cuh, a
 * uint4) from p, at P's alignment (12 bytes: a word's): a vector load through L2, or three word
 * loads (loadPart's and load12's fast path); storeWhole the store. The three words go straight
 * into r's: copied in from a word array they changed the LL12 kernels' code (87 registers -> 82,
 * float), in r's own words the kernels' instructions stay those of the loops this replaced. */
template <typename P> __device__ __forceinline__ P loadWhole(const void* p) {
  static_assert(sizeof(P) == 8 || sizeof(P) == 12 || sizeof(P) == 16, "an 8-, 12- or 16-byte pack");
  P r;
  if constexpr (sizeof(P) == 16) {
    const uint4 v = __ldcg((const uint4*)p);
    memcpy(&r, &v, sizeof(P));
  } else if constexpr (sizeof(P) == 12) {
    uint32_t* w = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
    for (int k = 0; k < 3; k++) w[k] = __ldcg((const unsigned*)p + k);
  } else {
    const unsigned long long v = __ldcg((const unsigned long long*)p);
    memcpy(&r, &v, sizeof(P));
  }
  return r;
}
template <typename P> __device__ __forceinline__ void storeWhole(void* p, const P& v) {
  if constexpr (sizeof(P) == 12) {
#pragma unroll
    for (int k = 0; k < 3; k++) ((unsigned*)p)[k] = reinterpret_cast<const uint32_t*>(&v)[k];
  } else {
    *(P*)p = v;
  }
}

/* Up to E = sizeof(P)/sizeof(T) elements from p (nv valid; the rest zero), any alignment. A whole
 * line at P's alignment is one vector load; any other line of 1- or 2-byte elements, its words
 * branch-free (loadWords: up to 4 or 5 loads for a line that took up to 8 or 16 element loads);
 * of 4- or 8-byte ones, a load per element (their words branch-free behind this branch take 1-4%
 * more, 2x H200, 2026-11-28; the line kernels take them branch-free on a branch per line instead,
 * kernels/sym.cuh LineData::loadBy). */
template <typename T, typename P> __device__ __forceinline__ P loadPart(const T* p, int nv) {
  constexpr int E = sizeof(P) / sizeof(T);
  if (nv == E && ((uintptr_t)p % sizeof(P)) == 0) return loadWhole<P>(p);
  P r;
  if constexpr (sizeof(T) < 4) {
    constexpr int W = sizeof(P) / 4;
    uint32_t w[W];
    if (nv <= 0) {
#pragma unroll
      for (int k = 0; k < W; k++) w[k] = 0;
    } else {
      loadWords<W, sizeof(T)>(p, nv * (int)sizeof(T), w);
    }
    memcpy(&r, w, sizeof(P));
  } else {
    T x[E];
    memset(x, 0, sizeof(x));
    for (int e = 0; e < nv; e++) x[e] = ldcg(p + e);
    memcpy(&r, x, sizeof(P));
  }
  return r;
}

template <typename T, typename P> __device__ __forceinline__ void storePart(T* p, P v, int nv) {
  constexpr int E = sizeof(P) / sizeof(T);
  if (nv == E && ((uintptr_t)p % sizeof(P)) == 0) {
    storeWhole(p, v);
    return;
  }
  if constexpr (sizeof(T) < 4) {
    uint32_t w[sizeof(P) / 4];
    memcpy(w, &v, sizeof(P));
    storeWords<sizeof(P) / 4, sizeof(T)>(p, w, nv);
  } else {
    T x[E];
    memcpy(x, &v, sizeof(P));
    for (int e = 0; e < nv; e++) p[e] = x[e];
  }
}

/* ---- Bounded spinning: every wait gives up after timeoutNs or when another block did. ---- */
__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

struct Spin {
  uint64_t start, timeoutNs;
  int* abortFlag;
  int* errWord;
  unsigned n;
  __device__ Spin(uint64_t to, int* ab, int* err) : start(0), timeoutNs(to), abortFlag(ab), errWord(err), n(0) {}
  /* true: give up (and the error is recorded). */
  __device__ __forceinline__ bool tick() {
    if ((++n & 1023) != 0) return false;
    if (*(volatile int*)abortFlag) return true;
    uint64_t now = globaltimer();
    if (start == 0) { start = now; return false; }
    if (now - start > timeoutNs) {
      atomicExch(abortFlag, 1);
      atomicCAS(errWord, KILN_DEV_OK, KILN_DEV_ERR_TIMEOUT);
      __threadfence_system();
      return true;
    }
    return false;
  }
};

__device__ __forceinline__ uint64_t ldAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ uint64_t ldAcquireGpu(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void stReleaseSys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void stReleaseGpu(uint64_t* p, uint64_t v) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* The flag of an LL / LL128 line for the slot's use number: the use number times an odd
 * constant. Successive uses of a slot get different flags (the map is one to one) and the flags
 * look nothing like the small integers user data often holds: a slot a Simple step of another
 * plan on this connection filled with raw data keeps that data, which an LL reader must not take
 * for this use's flags. */
__device__ __forceinline__ uint32_t llFlag(uint64_t use) { return kilnDevLLFlag(use); }
/* The plans' LL lines carry llFlag in their second word and llFlagPair of it (llFlag ^
 * KILN_DEV_LL_FLAG_PAIR, kiln_dev.h) in their fourth. A slot's
 * bytes may hold what a Simple piece left there (any data of the caller's): with the same flag in
 * both places, a constant run of the value llFlag(u) (an odd 2^-31 chance per use, but for every
 * use again) passed for lines of use u; now the stale words must also differ by this constant,
 * which no constant or repeated data does (the symmetric kernels keep each line form in staging of
 * its own instead: host/sym.c symLineAreas). */
__device__ __forceinline__ uint32_t llFlagPair(uint32_t flag) { return flag ^ KILN_DEV_LL_FLAG_PAIR; }
__device__ __forceinline__ uint64_t ll128Flag(uint64_t use) { return use * 0x9E3779B97F4A7C15ull; }

/* LL line: 8 data bytes, each half guarded by a flag word (f0 after the low half, f1 after the
 * high one). */
__device__ __forceinline__ void llStore2(uint4* p, uint64_t v, uint32_t f0, uint32_t f1) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"((uint32_t)v),
               "r"(f0), "r"((uint32_t)(v >> 32)), "r"(f1)
               : "memory");
}
/* The symmetric kernels' LL line: the same flag in both places. */
__device__ __forceinline__ void llStore(uint4* p, uint64_t v, uint32_t flag) { llStore2(p, v, flag, flag); }
/* One read of a line, no spinning (no "memory" clobber: several may be in flight at once; asm
 * volatile keeps each one a real load). */
__device__ __forceinline__ void llLoadOnce(const uint4* p, uint32_t* d0, uint32_t* f0, uint32_t* d1,
                                           uint32_t* f1) {
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(*d0), "=r"(*f0), "=r"(*d1), "=r"(*f1)
               : "l"(p));
}
/* Spins until the line carries the flags want0 and want1 (llStore2); false when the spin gave up. */
__device__ __forceinline__ bool llLoad(const uint4* p, uint32_t want0, uint32_t want1, Spin& spin, uint64_t* out) {
  uint32_t d0, f0, d1, f1;
  for (;;) {
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(d0), "=r"(f0), "=r"(d1), "=r"(f1)
                 : "l"(p)
                 : "memory");
    if (f0 == want0 && f1 == want1) break;
    if (spin.tick()) return false;
  }
  *out = (uint64_t)d0 | ((uint64_t)d1 << 32);
  return true;
}

/* One piece: n elements of the slice, of which m are valid (the rest of a short last chunk). */
template <typename T> struct Piece {
  const T* src;        /* A (FLAG_SRC) */
  T* dst;              /* FLAG_DST / FLAG_REDUCE_DST */
  const void* rslot;   /* received data (Simple: T[]; LL: lines) */
  void* sslot;         /* peer's slot (Simple: T[]; LL: lines) */
  uint64_t n, m;
  uint64_t ruse, suse; /* LL / LL128: the use numbers of the receive and send slots */
};

/* LL128 geometry: a line is 16 words, the last the flag; a warp stores 4 lines per instruction. */
/* Warp stores per round (UL x 4 lines per warp): the loads of a round are in flight together.
 * 4, measured (prim_bench hop-ll128, 2x H200): 8 took 3.4 µs per hop at 8 B where 4 takes 1.8, and
 * 36.7 µs at 512 KiB where 4 takes 27.3 (registers: the 8 x 4 words of a round spill). */
#ifndef KILN_LL128_UL
#define KILN_LL128_UL 4
#endif
enum : int {
  LL128_LINE_BYTES = KILN_DEV_LL128_LINE_BYTES,
  LL128_DATA_BYTES = KILN_DEV_LL128_DATA_BYTES,
  LL128_LINE_WORDS = LL128_LINE_BYTES / 8
};

/* Bytes one piece of `elems` elements of `esize` bytes takes in a slot (the host sizes pieces by
 * the inverse, kilnDevPieceElems in kiln_dev.h). */
template <int PROTO> __host__ __device__ constexpr uint64_t pieceBytes(uint64_t elems, int esize) {
  return PROTO == KILN_DEV_PROTO_LL ? elems * esize * (KILN_DEV_LL_LINE_BYTES / KILN_DEV_LL_DATA_BYTES)
       : PROTO == KILN_DEV_PROTO_LL128
           ? (elems * esize + LL128_DATA_BYTES - 1) / LL128_DATA_BYTES * LL128_LINE_BYTES
           : elems * esize;
}

__device__ __forceinline__ void ll128Store(uint64_t* p, uint64_t a, uint64_t b) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}
/* No "memory" clobber: a round's loads are all in flight at once (asm volatile keeps each). */
__device__ __forceinline__ void ll128Load(const uint64_t* p, uint64_t* a, uint64_t* b) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p));
}
/* The load of a line's data once its flag was seen: with a "memory" clobber, so that it stays
 * after the poll. */
__device__ __forceinline__ void ll128LoadAgain(const uint64_t* p, uint64_t* a, uint64_t* b) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*a), "=l"(*b) : "l"(p) : "memory");
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
#pragma unroll
      for (int u = 0; u < UL; u++) r0[u] = r1[u] = 0;
      __syncwarp();
      while (ok) {
        bool reload = false;
#pragma unroll
        for (int u = 0; u < UL; u++) {
          const uint64_t l = ll128Line(base, u, lane);
          if (l < nlValid) {
            ll128Load(rl + l * LL128_LINE_WORDS + 2 * j, &r0[u], &r1[u]);
            reload |= flagLane && r1[u] != rflag;
          }
        }
        if (!__any_sync(0xffffffffu, reload)) break;
        if (__any_sync(0xffffffffu, spin.tick())) ok = false;
      }
      /* The poll that saw a line's flag may hold older data in the line's lower words (the load
       * is served in 32-byte sectors; only the writer's order is guaranteed), so the data comes
       * from a second load, ordered after the flags by the warp barrier: as NCCL's LL128 does. */
      if (ok) {
        __syncwarp();
#pragma unroll
        for (int u = 0; u < UL; u++) {
          const uint64_t l = ll128Line(base, u, lane);
          if (l < nlValid) ll128LoadAgain(rl + l * LL128_LINE_WORDS + 2 * j, &r0[u], &r1[u]);
        }
      }
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
        if (F & FLAG_SRC) v[u] = __ldcg((const uint4*)pc.src + j);
        else if (F & FLAG_RECV) v[u] = __ldcg((const uint4*)rs + j);
      }
#pragma unroll
      for (int u = 0; u < U; u++) {
        const uint64_t j = i + (uint64_t)u * nthr;
        if ((F & FLAG_SRC) && (F & FLAG_RECV)) v[u] = opPack<T>(op, v[u], __ldcg((const uint4*)rs + j));
        if ((F & FLAG_SRC) && (F & FLAG_REDUCE_DST)) v[u] = opPack<T>(op, __ldcg((const uint4*)pc.dst + j), v[u]);
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
      if (F & FLAG_SRC) v = __ldcg((const uint4*)pc.src + i);
      else v = __ldcg((const uint4*)rs + i);
      if ((F & FLAG_SRC) && (F & FLAG_RECV)) v = opPack<T>(op, v, __ldcg((const uint4*)rs + i));
      if ((F & FLAG_SRC) && (F & FLAG_REDUCE_DST)) v = opPack<T>(op, __ldcg((const uint4*)pc.dst + i), v);
      if (F & (FLAG_DST | FLAG_REDUCE_DST)) ((uint4*)pc.dst)[i] = v;
      if (F & FLAG_SEND) ((uint4*)ss)[i] = v;
    }
    for (uint64_t e = nvec * E + tid; e < pc.m; e += nthr) {
      T v;
      if (F & FLAG_SRC) v = ldcg(pc.src + e);
      else v = ldcg(rs + e);
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
            if (ok && (f0[u] != rflag || f1[u] != rflag1)) ok = llLoad(rl + l, rflag, rflag1, spin, &v);
            else v = (uint64_t)d0[u] | ((uint64_t)d1[u] << 32);
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
#define KILN_PRIM(name, flags)                                                        \
  template <typename T, class Op, int PROTO, int U = 4>                               \
  __device__ __forceinline__ bool name(const Piece<T>& pc, const Op& op, Spin& spin) { \
    return kilnPrim<T, Op, PROTO, (flags), U>(pc, op, spin);                          \
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
