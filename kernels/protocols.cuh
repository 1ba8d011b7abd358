/*
 * kiln's protocols as interchangeable parts: how data moves between GPUs over NVLink peer memory,
 * independent of what moves it. Every kernel of kiln is written with these: the FIFO vocabulary
 * of the plans' send and receive steps (primitives.cuh), the plans' memory steps (mem.cuh: put,
 * get, reduce from peers, signal, wait) and the symmetric kernels (sym.cuh).
 *
 * - Simple: raw data stored with 16-byte stores (several in flight per thread: combine), made
 *   visible by one system-scope release store of a counter or flag after a block barrier, and
 *   taken after an acquire load of it and a barrier (the argument is in interp.cuh).
 * - LL: 16-byte lines of 8 data bytes, each 4-byte half beside a flag word (llStore2, llStore); a
 *   line is its own signal, no fence: the reader polls it until both flag words hold the flag it
 *   expects (pollLines: a line of every source at once).
 * - LL12: 16-byte lines of 12 data bytes and one flag word (llStore12, pollLines12).
 * - LL128: 128-byte lines of 120 data bytes and an 8-byte flag word, stored and polled a warp at a
 *   time, the data loaded again after the flags (ll128Store, pollLines128). What makes it correct
 *   is the property NCCL's LL128 rests on (enabled by NCCL on Hopper over NVLink; NVIDIA/nccl#786):
 *   the 128 bytes one warp-wide store instruction writes reach the peer in ascending address
 *   order, so once the flag (the line's last word) is seen, a later load sees the data. A load is
 *   not atomic over the line: the poll that saw the flag can hold older lower words.
 * Line flags are 32-bit values of an epoch (lineFlag: a call's sequence number, a plan's epoch) or
 * of a FIFO slot's use (llFlag, ll128Flag); a line area holds lines of one kind only, in two
 * halves used by alternate epochs, so what an earlier epoch left never passes for this one's.
 *
 * Also here: the element types' arithmetic (Num, the ops), loads and stores of partial and
 * misaligned packs, and the bounded spin every wait uses. All routines are run by every thread
 * of a block (the LL128 ones by every lane of a warp); none synchronizes the block.
 */
#ifndef KILN_KERNELS_PROTOCOLS_CUH
#define KILN_KERNELS_PROTOCOLS_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>
#include <string.h>
#include <type_traits>

#include "kiln_dev.h"

namespace kiln {

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
  return (OP == OP_PROD)  ? (W)(x * y)
         : (OP == OP_MAX) ? (x > y ? x : y)
         : (OP == OP_MIN) ? (x < y ? x : y)
                          : (W)(x + y);
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
    const W s = opWide<OP_SUM>(x, y), p = opWide<OP_PROD>(x, y), mx = opWide<OP_MAX>(x, y),
            mn = opWide<OP_MIN>(x, y);
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
template <typename T, typename P, class Op> __device__ __forceinline__ P opPack(const Op& op, P a, P b) {
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
template <int W, int A>
__device__ __forceinline__ void loadWords(const void* p, int bytes, uint32_t (&w)[W]) {
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
    if (A == 4)
      ((unsigned*)p)[e] = v;
    else if (A == 2)
      ((unsigned short*)p)[e] = (unsigned short)v;
    else
      ((unsigned char*)p)[e] = (unsigned char)v;
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
  __device__ Spin(uint64_t to, int* ab, int* err)
      : start(0), timeoutNs(to), abortFlag(ab), errWord(err), n(0) {}
  /* true: give up (and the error is recorded). */
  __device__ __forceinline__ bool tick() {
    if ((++n & 1023) != 0) return false;
    if (*(volatile int*)abortFlag) return true;
    uint64_t now = globaltimer();
    if (start == 0) {
      start = now;
      return false;
    }
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
 * its own instead: host/sym.c sym_line_areas). */
__device__ __forceinline__ uint32_t llFlagPair(uint32_t flag) { return flag ^ KILN_DEV_LL_FLAG_PAIR; }
__device__ __forceinline__ uint64_t ll128Flag(uint64_t use) { return use * 0x9E3779B97F4A7C15ull; }

/* LL line: 8 data bytes, each half guarded by a flag word (f0 after the low half, f1 after the
 * high one). */
__device__ __forceinline__ void llStore2(uint4* p, uint64_t v, uint32_t f0, uint32_t f1) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"((uint32_t)v), "r"(f0),
               "r"((uint32_t)(v >> 32)), "r"(f1)
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
__device__ __forceinline__ bool llLoad(const uint4* p, uint32_t want0, uint32_t want1, Spin& spin,
                                       uint64_t* out) {
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

/* LL128 geometry: a line is 16 words, the last the flag; a warp stores 4 lines per instruction. */
enum : int {
  LL128_LINE_BYTES = KILN_DEV_LL128_LINE_BYTES,
  LL128_DATA_BYTES = KILN_DEV_LL128_DATA_BYTES,
  LL128_LINE_WORDS = LL128_LINE_BYTES / 8
};

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

/* ---- Lines: the flag of an epoch ---- */

/* The 32-bit flag of lines written in epoch (or call sequence number) e: kilnDevSymFlag, never 0
 * (zeroed memory, or zeros another use left, never pass for a line), and different for e and
 * e - 2k, which share a half of a line area (their values differ by an even multiple of an odd
 * constant). The symmetric kernels' calls (sym.cuh symFlag) and the plans' epochs (mem.cuh) take
 * it. */
__device__ __forceinline__ uint32_t lineFlag(uint64_t e) { return kilnDevSymFlag(e); }
/* The LL128 flag word of epoch e: lineFlag in both halves. */
__device__ __forceinline__ uint64_t lineFlag128(uint64_t e) {
  const uint64_t f = lineFlag(e);
  return f << 32 | f;
}

/* Every element of pack P (of T) divided by n (avg's last step). */
template <typename T, typename P = uint4> __device__ __forceinline__ P dividePack(P v, int n) {
  constexpr int E = sizeof(P) / sizeof(T);
  T x[E];
  memcpy(x, &v, sizeof(P));
#pragma unroll
  for (int e = 0; e < E; e++) x[e] = divide(x[e], n);
  memcpy(&v, x, sizeof(P));
  return v;
}

/* ---- LL lines: 8 data bytes, the flag twice, in 16 bytes ---- */

/* How LL lines carry data: 8 bytes a line (P), stored with the flag twice (llStore), received by
 * pollLines. LinesLL12 (below) is the LL12 lines'. */
struct LinesLL {
  using P = uint64_t;
  __device__ __forceinline__ static void put(uint4* p, P v, uint32_t flag) { llStore(p, v, flag); }
  template <int R, class Src>
  __device__ __forceinline__ static bool poll(unsigned pend, const Src& src, uint32_t flag, Spin& spin, P* v);
};

/* Line data part(p) (D::P) of every peer p < n but `me` into line dst(p) (a uint4*), every part
 * loaded before the first line goes out: llStore's "memory" clobber keeps a load written after a
 * store behind it, a memory latency per peer. R: peers at compile time (the loops' bound).
 * 4x H200, graphs, reducescatter: 64 B-64 KiB up to 6% less time, 256 KiB up to 4% more (2026-11-27). */
template <int R, class D = LinesLL, class Part, class Dst>
__device__ __forceinline__ void putLines(int n, int me, uint32_t flag, const Part& part, const Dst& dst) {
  typename D::P v[R];
#pragma unroll
  for (int p = 0; p < R; p++)
    if (p < n && p != me) v[p] = part(p);
#pragma unroll
  for (int p = 0; p < R; p++)
    if (p < n && p != me) D::put(dst(p), v[p], flag);
}

/* The LL line at src(q) of every source q of the mask pend (a bit per source, q < R), into v[q]
 * (0 for the others): all loads in flight at once; the lines whose flags were not there yet are
 * read again, all of them together, until every one is (spinning on one source's line after
 * another leaves a load's latency per later source after the last line has arrived). false:
 * timeout or abort.
 * 4x H200, graphs, against one peer after another: allreduce 16 KiB 4.31 vs 5.53 us (2026-11-27). */
template <int R, class Src> __device__ __forceinline__ bool pollLines(unsigned pend, const Src& src,
                                                                      uint32_t flag, Spin& spin,
                                                                      uint64_t* v) {
  uint32_t d0[R], f0[R], d1[R], f1[R];
  const uint4* p[R];
#pragma unroll
  for (int q = 0; q < R; q++) {
    f0[q] = f1[q] = flag;
    d0[q] = d1[q] = 0;
    p[q] = src(q);
  }
  while (pend) {
#pragma unroll
    for (int q = 0; q < R; q++)
      if (pend >> q & 1) llLoadOnce(p[q], &d0[q], &f0[q], &d1[q], &f1[q]);
#pragma unroll
    for (int q = 0; q < R; q++)
      if (f0[q] == flag && f1[q] == flag) pend &= ~(1u << q);
    if (pend && spin.tick()) return false;
  }
#pragma unroll
  for (int q = 0; q < R; q++) v[q] = (uint64_t)d0[q] | ((uint64_t)d1[q] << 32);
  return true;
}
template <int R, class Src> __device__ __forceinline__ bool LinesLL::poll(unsigned pend, const Src& src,
                                                                          uint32_t flag, Spin& spin, P* v) {
  return pollLines<R>(pend, src, flag, spin, v);
}

/* ---- LL12 lines: 12 data bytes and the flag in 16 bytes ---- */

/* LL12 lines: 12 data bytes and the epoch's flag (lineFlag) in the fourth word of a 16-byte line,
 * which one thread stores with one instruction and the receiver loads with one; a line is taken
 * once its fourth word holds the flag. Where LL trusts 8 bytes (each data word beside a flag word
 * of its own: an 8-byte access is single-copy atomic in the PTX memory model), this trusts the 16
 * bytes of one aligned vector store and load to arrive together, which PTX does not promise;
 * NVLink and L2 move them in one 32-byte sector, and LL128 lines on the same links trust more (a
 * warp's 128 bytes behind one flag word). A third less line traffic than LL for the same data.
 * LL12 lines may share an area with LL lines: an LL line of an earlier epoch holds that epoch's
 * flag in the fourth word too, and an LL12 line holds data in LL's second word but an older flag
 * in its fourth, so neither passes for a line of the other (host/sym.c sym_line_areas). Elements of
 * at most 4 bytes (12 / sizeof(T) per line).
 * 4x H200, the kernel alone, LL12 vs LL: allreduce 16 KiB 2.36 vs 2.44 us, 1 KiB 2.15 vs 2.04 (2026-11-28). */
struct Pack12 {
  uint32_t w[3];
};
/* Up to 12 / sizeof(T) elements from p (nv valid; the rest zero), any alignment: a whole line at
 * a word's alignment as three word loads, any other line of 1- or 2-byte elements its words
 * branch-free (loadWords), of 4-byte ones a load per element (as loadPart). */
template <typename T> __device__ __forceinline__ Pack12 load12(const T* p, int nv) {
  static_assert(sizeof(T) <= 4, "LL12 lines hold elements of at most 4 bytes");
  constexpr int E = 12 / sizeof(T);
  if (nv == E && ((uintptr_t)p & 3) == 0) return loadWhole<Pack12>(p);
  Pack12 r;
  if constexpr (sizeof(T) < 4) {
    if (nv <= 0)
      r.w[0] = r.w[1] = r.w[2] = 0;
    else
      loadWords<3, sizeof(T)>(p, nv * (int)sizeof(T), r.w);
  } else {
    T x[E];
    memset(x, 0, sizeof(x));
    for (int e = 0; e < nv; e++) x[e] = ldcg(p + e);
    memcpy(&r, x, sizeof(r));
  }
  return r;
}
template <typename T> __device__ __forceinline__ void store12(T* p, const Pack12& v, int nv) {
  static_assert(sizeof(T) <= 4, "LL12 lines hold elements of at most 4 bytes");
  constexpr int E = 12 / sizeof(T);
  if (nv == E && ((uintptr_t)p & 3) == 0) {
    storeWhole(p, v);
    return;
  }
  if constexpr (sizeof(T) < 4) {
    storeWords<3, sizeof(T)>(p, v.w, nv);
  } else {
    T x[E];
    memcpy(x, &v, sizeof(v));
    for (int e = 0; e < nv; e++) p[e] = x[e];
  }
}
__device__ __forceinline__ void llStore12(uint4* p, const Pack12& v, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]),
               "r"(v.w[2]), "r"(flag)
               : "memory");
}
/* The LL12 line at src(q) of every source q of the mask pend, into v[q]: pollLines with one flag
 * word. */
template <int R, class Src> __device__ __forceinline__ bool pollLines12(unsigned pend, const Src& src,
                                                                        uint32_t flag, Spin& spin,
                                                                        Pack12* v) {
  uint32_t f[R];
  const uint4* p[R];
#pragma unroll
  for (int q = 0; q < R; q++) {
    f[q] = flag;
    v[q].w[0] = v[q].w[1] = v[q].w[2] = 0;
    p[q] = src(q);
  }
  while (pend) {
#pragma unroll
    for (int q = 0; q < R; q++)
      if (pend >> q & 1) llLoadOnce(p[q], &v[q].w[0], &v[q].w[1], &v[q].w[2], &f[q]);
#pragma unroll
    for (int q = 0; q < R; q++)
      if (f[q] == flag) pend &= ~(1u << q);
    if (pend && spin.tick()) return false;
  }
  return true;
}

/* How LL12 lines carry data (putLines). */
struct LinesLL12 {
  using P = Pack12;
  __device__ __forceinline__ static void put(uint4* p, const P& v, uint32_t flag) { llStore12(p, v, flag); }
  template <int R, class Src> __device__ __forceinline__ static bool poll(unsigned pend, const Src& src,
                                                                          uint32_t flag, Spin& spin, P* v) {
    return pollLines12<R>(pend, src, flag, spin, v);
  }
};

/* How a line's elements are loaded and stored where a body takes a line of every peer's piece
 * (LineData::loadBy, storeBy): LINE_WHOLE a whole line at the line's alignment with no test,
 * LINE_ANY any line of 1 to E elements branch-free (loadWords, storeWords). */
enum LineHow : int { LINE_WHOLE, LINE_ANY };
template <int H> using LineHowT = std::integral_constant<int, H>;

/* A 16-byte line protocol's data for elements T (L: KILN_DEV_PROTO_LL or KILN_DEV_PROTO_LL12): E
 * elements a line, loaded and stored at any alignment (nv valid); put and poll come from the
 * protocol (LinesLL, LinesLL12). Where a line is loaded or stored for every peer (the symmetric reducescatter's and
 * alltoall's sends, allgather's and alltoall's receives), the caller picks LINE_WHOLE or LINE_ANY
 * once per line (loadBy, storeBy): each peer's load behind a test of its own (load, store) keeps
 * the loads of a misaligned line's peers from being issued together (2x H200, the kernel alone,
 * 2026-11-28). */
template <typename T, int L> struct LineData
    : std::conditional<L == KILN_DEV_PROTO_LL12, LinesLL12, LinesLL>::type {
  using P = typename std::conditional<L == KILN_DEV_PROTO_LL12, LinesLL12, LinesLL>::type::P;
  static constexpr int E = (int)sizeof(P) / (int)sizeof(T);
  static constexpr int W = (int)sizeof(P) / 4; /* data words a line */
  __device__ __forceinline__ static P load(const T* p, int nv) {
    if constexpr (L == KILN_DEV_PROTO_LL12)
      return load12<T>(p, nv);
    else
      return loadPart<T, uint64_t>(p, nv);
  }
  __device__ __forceinline__ static void store(T* p, const P& v, int nv) {
    if constexpr (L == KILN_DEV_PROTO_LL12)
      store12<T>(p, v, nv);
    else
      storePart<T, uint64_t>(p, v, nv);
  }
  __device__ __forceinline__ static bool aligned(const void* p) {
    return (uintptr_t)p % (L == KILN_DEV_PROTO_LL12 ? 4 : 8) == 0;
  }
  template <int H> __device__ __forceinline__ static P loadBy(const T* p, int nv) {
    if constexpr (sizeof(T) > 4) {
      return load(p, nv); /* 8-byte elements: one a line, always whole */
    } else if constexpr (H == LINE_WHOLE) {
      return loadWhole<P>(p);
    } else {
      uint32_t w[W];
      loadWords<W, sizeof(T)>(p, nv * (int)sizeof(T), w);
      P r;
      memcpy(&r, w, sizeof(w));
      return r;
    }
  }
  template <int H> __device__ __forceinline__ static void storeBy(T* p, const P& v, int nv) {
    if constexpr (sizeof(T) > 4) {
      store(p, v, nv);
    } else if constexpr (H == LINE_WHOLE) {
      storeWhole(p, v);
    } else {
      uint32_t w[W];
      memcpy(w, &v, sizeof(w));
      storeWords<W, sizeof(T)>(p, w, nv);
    }
  }
};

/* ---- LL128 lines: 120 data bytes and an 8-byte flag in 128 bytes, a warp's store ---- */

/* A lane's place in its warp's LL128 lines: lane j (0-7) of each 8-lane group holds words 2j and
 * 2j + 1 of one line (line lane >> 3 of the warp's 4), the flag lane (7) word 14 and the flag; a
 * warp's rounds start at its first line plus 4 warp and step by 4 nwarps. */
struct Lane128 {
  int lane, j, warp, nwarps;
  bool flagLane;
  __device__ __forceinline__ Lane128()
      : lane(threadIdx.x & 31),
        j(lane & 7),
        warp(threadIdx.x >> 5),
        nwarps(blockDim.x >> 5),
        flagLane(j == 7) {}
  /* This lane's first word of line l of the lines at base. */
  __device__ __forceinline__ uint64_t* word(void* base, uint64_t l) const {
    return (uint64_t*)base + l * 16 + 2 * j;
  }
};

/* A lane's two words at o: nv0 and nv1 valid elements of each (none: not stored). */
template <typename T>
__device__ __forceinline__ void storeWords128(T* o, uint64_t v0, uint64_t v1, int nv0, int nv1) {
  if (nv0 > 0) storePart<T, uint64_t>(o, v0, nv0);
  if (nv1 > 0) storePart<T, uint64_t>(o + 8 / sizeof(T), v1, nv1);
}

/* This lane's 16 bytes of the LL128 line whose words for this lane start at src(q), for every
 * source q of the mask pend (has: the lane's line is one the caller reads; pend must be 0
 * otherwise), into r0[q] and r1[q]. Every lane of the warp calls it: the 8 lanes of a line poll
 * together until lane 7 has seen the flag of every source (its pending sources go to the other 7
 * by a shuffle), the warp until every line of it is complete; then, after a warp barrier, the
 * data is loaded again (the poll that saw a line's flag may hold older data in the line's lower
 * words: the load is served in 32-byte sectors, only the writer's order is guaranteed). false
 * (the whole warp): timeout or abort. */
template <int R, class Src> __device__ __forceinline__ bool pollLines128(unsigned pend, const Src& src,
                                                                         uint64_t flag, Spin& spin,
                                                                         uint64_t* r0, uint64_t* r1) {
  const int lane = threadIdx.x & 31;
  const uint64_t* p[R];
#pragma unroll
  for (int q = 0; q < R; q++) {
    r0[q] = r1[q] = 0;
    p[q] = src(q);
  }
  const unsigned all = pend;
  for (;;) {
#pragma unroll
    for (int q = 0; q < R; q++)
      if (pend >> q & 1) ll128Load(p[q], &r0[q], &r1[q]);
    unsigned miss = 0;
#pragma unroll
    for (int q = 0; q < R; q++)
      if ((pend >> q & 1) && r1[q] != flag) miss |= 1u << q;
    pend = __shfl_sync(0xffffffffu, miss, lane | 7);
    if (!__any_sync(0xffffffffu, pend != 0)) break;
    if (__any_sync(0xffffffffu, spin.tick())) return false;
  }
  __syncwarp();
#pragma unroll
  for (int q = 0; q < R; q++)
    if (all >> q & 1) ll128LoadAgain(p[q], &r0[q], &r1[q]);
  return true;
}

/* ---- Simple: bulk data ---- */

/* The most destinations combine stores one result to. */
enum : int { COMBINE_MAX_DSTS = 8 };

/* For every i < m: r = srcs[0][i] op srcs[1][i] op ... op srcs[NS-1][i] (divided by avgN when
 * avgN > 0), stored to dsts[d][i] for every non-null dsts[d] (ND of them). All the loads of a
 * round (NS operands x U packs) are in flight together. 16-byte packs when every pointer allows
 * it, elements otherwise. */
template <typename T, int NS, class Op, int ND = COMBINE_MAX_DSTS>
__device__ __forceinline__ void combine(T* const* dsts, const T* const* srcs, uint64_t m, const Op& op,
                                        int avgN) {
  constexpr int E = 16 / sizeof(T);
  constexpr int U = NS <= 1 ? 8 : NS == 2 ? 4 : NS <= 4 ? 2 : 1;
  const int tid = threadIdx.x, nthr = blockDim.x;
  uintptr_t mis = 0;
#pragma unroll
  for (int s = 0; s < NS; s++) mis |= (uintptr_t)srcs[s];
#pragma unroll
  for (int d = 0; d < ND; d++) mis |= (uintptr_t)dsts[d];
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
      for (int d = 0; d < ND; d++)
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
    for (int d = 0; d < ND; d++)
      if (dsts[d]) ((uint4*)dsts[d])[i] = r;
  }
  for (uint64_t e = nvec * E + tid; e < m; e += nthr) {
    T r = ldcg(srcs[0] + e);
#pragma unroll
    for (int s = 1; s < NS; s++) r = op(r, ldcg(srcs[s] + e));
    if (avgN > 0) r = divide(r, avgN);
#pragma unroll
    for (int d = 0; d < ND; d++)
      if (dsts[d]) dsts[d][e] = r;
  }
}
} /* namespace kiln */

#endif /* KILN_KERNELS_PROTOCOLS_CUH */
