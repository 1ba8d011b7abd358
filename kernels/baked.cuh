/*
 * The template that baked (generated) kernels instantiate.
 *
 * gen/ writes, per plan, a struct P of constexpr tables: tbs[] (one row per threadblock of every
 * rank: rank, tb, send, recv, chan, first step, steps), steps[] (one row per step, as the plan XML
 * has it) and rankTb[] (each rank's first row), and one line per data type:
 *     KILN_BAKED_KERNEL(ident, dtype-name, C type)
 * which defines the extern "C" launch function kilnBaked_<ident>_<dtype-name>.
 *
 * The kernel below is the interpreter (interp.cuh) with the plan known at compile time: block b of
 * rank r runs row rankTb[r] + b, whose steps are unrolled into straight-line calls of the
 * primitives (a fold over the step indices), every step's type, buffers, offsets, counts and
 * dependency being constants. P::inlineSteps (set by gen/ for plans with few steps) inlines each
 * step with its constants folded in; larger plans call one out-of-line body per step type with the
 * constants as immediate arguments, which keeps their compile time linear and small. No
 * instruction is decoded at run time; what stays at run time is what the call decides: buffer
 * pointers, sizes (chunk and slice lengths, iterations), the FIFO addresses of kilnDevTb, and
 * sequence numbers. The protocol (waits, fences, publishing, the
 * per-call sequence, avg's final division) is the interpreter's (waitStep/publishStep of
 * interp.cuh, Simple loads 8 packs deep at 512 threads), so a baked kernel and the interpreter
 * interoperate on one communicator and can be checked against each other.
 * Only sum is baked (avg reduces as sum and divides at the end).
 */
#ifndef KILN_KERNELS_BAKED_CUH
#define KILN_KERNELS_BAKED_CUH

#include <utility>

#include "interp.cuh"
#include "launch_driver.cuh"
#include "mem.cuh"

namespace kiln {
namespace baked {

using ::kiln::ST_CPY;
using ::kiln::ST_NOP;
using ::kiln::ST_RCS;
using ::kiln::ST_RE;
using ::kiln::ST_RECV;
using ::kiln::ST_RRC;
using ::kiln::ST_RRCS;
using ::kiln::ST_RRS;
using ::kiln::ST_SEND;
using ::kiln::stepReadsSrc;
using ::kiln::stepReceives;
using ::kiln::stepSends;
using ::kiln::stepUsesDst;
enum : int { BUF_I = KILN_DEV_BUF_INPUT, BUF_O = KILN_DEV_BUF_OUTPUT, BUF_S = KILN_DEV_BUF_SCRATCH };

/* One threadblock row and one step row of a generated table. */
struct Tb {
  int rank, id, send, recv, chan, first, nsteps;
};
struct Step {
  int type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep;
  int fold;   /* steps after this one it runs in the same pass (kilnStepFoldable) */
  int folded; /* 1: run by an earlier step's pass */
};

/* One piece of a step of type TYPE: one out-of-line body per (T, PROTO, TYPE), shared by every
 * step that has that type, so a plan's size costs calls, not copies of the primitive (compile
 * time stays linear in steps and small). */
template <typename T, int PROTO, int TYPE> __device__ __noinline__ bool piece(Piece<T> pc, Spin* spin) {
  OpSum op;
  return runPiece<T, OpSum, PROTO>(TYPE, pc, op, *spin);
}

/* The operands of one step, with its dependency's length and its own position resolved. */
struct StepArgs {
  int srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, depNsteps, hasdep, s, tbSteps;
};

/* One step of type TYPE, iteration `it` (n elements per chunk): the interpreter's step protocol.
 * Inlined with constant operands (small plans) or called with them as immediates (large plans).
 * false: give up (timeout/abort). */
template <typename T, int PROTO, int TYPE>
__device__ __forceinline__ bool stepBody(const kilnDevArgs& a, const kilnDevTb& tb, int it, uint64_t n,
                                         BlockState* bs, Spin& spin, const StepArgs st) {
  constexpr bool rv = stepReceives(TYPE), sd = stepSends(TYPE);
  constexpr bool rs = stepReadsSrc(TYPE), ud = stepUsesDst(TYPE);
  const uint64_t pieceLen = pieceBytes<PROTO>(a.sliceElems, sizeof(T));
  if (!beginStep<PROTO>(a, tb, st.depid, st.deps, st.depNsteps, it, bs, spin, sd, rv)) return false;

  if constexpr (TYPE != ST_NOP) {
    const char* rslot;
    char* sslot;
    stepSlots(a, tb, bs, rv, sd, &rslot, &sslot);
    bool ok = true;
#pragma unroll
    for (int c = 0; c < st.cnt; c++) {
      const Piece<T> pc = stepPiece<T>(a, st.srcbuf, st.srcoff, st.dstbuf, st.dstoff, rs, ud, c, it, n, rslot,
                                       sslot, pieceLen, bs);
      ok = piece<T, PROTO, TYPE>(pc, &spin) && ok;
    }
    if (!ok) bs->abort = 1; /* benign race: every writer stores 1 */
  }
  __syncthreads();
  if (bs->abort) return false;
  publishStep<PROTO>(tb, bs, sd, rv, st.hasdep != 0, a.progress + blockIdx.x,
                     progressWord(bs->seq, it, st.tbSteps, st.s + 1));
  return true;
}

/* A folded run: the head step's wait, one pass over the head's and the folded steps' operands
 * (fbuf/foff: the folded steps' sources), and the last folded step's publishing. */
template <typename T, int PROTO>
__device__ __forceinline__ bool foldBody(const kilnDevArgs& a, const kilnDevTb& tb, int it, uint64_t n,
                                         BlockState* bs, Spin& spin, const StepArgs st, int type,
                                         const int* fbuf, const int* foff, int fold, int hasdepLast) {
  if (!beginStep<PROTO>(a, tb, st.depid, st.deps, st.depNsteps, it, bs, spin, false, false)) return false;
  OpSum op;
  runFolded<T, OpSum>(a, type, st.srcbuf, st.srcoff, st.dstbuf, st.dstoff, st.cnt, fbuf, foff, fold, it, n,
                      op);
  __syncthreads();
  publishStep<PROTO>(tb, bs, false, false, hasdepLast != 0, a.progress + blockIdx.x,
                     progressWord(bs->seq, it, st.tbSteps, st.s + fold + 1));
  return true;
}

/* Step J's source operand as constants device code may use. */
template <class P, int J> struct SrcOf {
  static constexpr int buf = P::steps[J].srcbuf, off = P::steps[J].srcoff;
};

template <class P, int I, int... F>
__device__ __forceinline__ void foldSources(int* fbuf, int* foff, std::integer_sequence<int, F...>) {
  (void)fbuf;
  (void)foff;
  ((fbuf[F] = SrcOf<P, I + 1 + F>::buf, foff[F] = SrcOf<P, I + 1 + F>::off), ...);
}

template <typename T, int PROTO, int TYPE>
__device__ __noinline__ bool stepCall(const kilnDevArgs& a, const kilnDevTb& tb, int it, uint64_t n,
                                      BlockState* bs, Spin* spin, const StepArgs st) {
  return stepBody<T, PROTO, TYPE>(a, tb, it, n, bs, *spin, st);
}

/* Step S of row R: its operands are constants of the table. */
template <class P, int R, int S, typename T>
__device__ __forceinline__ bool step(const kilnDevArgs& a, const kilnDevTb& tb, int it, uint64_t n,
                                     BlockState* bs, Spin& spin) {
  constexpr int I = P::tbs[R].first + S;
  constexpr int type = P::steps[I].type;
  constexpr int depid = P::steps[I].depid;
  constexpr int depNsteps =
      depid >= 0 ? P::tbs[P::rankTb[P::tbs[R].rank] + (depid >= 0 ? depid : 0)].nsteps : 0;
  constexpr StepArgs st = {P::steps[I].srcbuf, P::steps[I].srcoff,
                           P::steps[I].dstbuf, P::steps[I].dstoff,
                           P::steps[I].cnt,    depid,
                           P::steps[I].deps,   depNsteps,
                           P::steps[I].hasdep, S,
                           P::tbs[R].nsteps};
  constexpr int fold = P::steps[I].fold;
  if constexpr (P::steps[I].folded != 0) {
    return true;
  } else if constexpr (fold > 0) {
    int fbuf[fold], foff[fold];
    foldSources<P, I>(fbuf, foff, std::make_integer_sequence<int, fold>());
    return foldBody<T, P::proto>(a, tb, it, n, bs, spin, st, type, fbuf, foff, fold,
                                 P::steps[I + fold].hasdep);
  } else if constexpr (P::inlineSteps) {
    return stepBody<T, P::proto, type>(a, tb, it, n, bs, spin, st);
  } else {
    return stepCall<T, P::proto, type>(a, tb, it, n, bs, &spin, st);
  }
}

/* Row R: every iteration runs the row's steps in order, unrolled. */
template <class P, int R, typename T, int... S>
__device__ void row(const kilnDevArgs& a, BlockState* bs, std::integer_sequence<int, S...>) {
  /* A copy: the waits' memory clobbers would make every use of a reference re-read it. */
  const kilnDevTb tb = a.tbs[blockIdx.x];
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  const uint64_t SL = a.sliceElems, L = a.chunkElems;
  for (int it = 0; it < a.niter; it++) {
    const uint64_t n = min(SL, L - (uint64_t)it * SL);
    const bool ok = (true && ... && step<P, R, S, T>(a, tb, it, n, bs, spin));
    if (!ok) return;
  }
}

/* The compile-time loop over rows: runs the one that equals `r`. */
template <class P, typename T, int... R>
__device__ __forceinline__ void dispatch(const kilnDevArgs& a, BlockState* bs, int r,
                                         std::integer_sequence<int, R...>) {
  (void)(false || ... ||
         (r == R ? (row<P, R, T>(a, bs, std::make_integer_sequence<int, P::tbs[R].nsteps>()), true) : false));
}

/* rankTb[K] as a scalar constant (device code may use those, not host arrays). */
template <class P, int K> struct RankFirst { static constexpr int v = P::rankTb[K]; };

/* This block's row: rankTb[rank] + blockIdx.x (-1 for a rank the plan does not have). */
template <class P, int... K>
__device__ __forceinline__ int rowOf(int rank, std::integer_sequence<int, K...>) {
  int r = -1;
  (void)(false || ... || (rank == K ? (r = RankFirst<P, K>::v + (int)blockIdx.x, true) : false));
  return r;
}

template <class P, typename T> __global__ void __launch_bounds__(512) kernel(kilnDevArgs a) {
  __shared__ BlockState bs;
  const kilnDevTb& tb = a.tbs[blockIdx.x];
  if (!blockBegin(a, tb, &bs)) return;
  dispatch<P, T>(a, &bs, rowOf<P>(a.rank, std::make_integer_sequence<int, P::nranks>()),
                 std::make_integer_sequence<int, P::ntbs>());
  blockEnd<T>(a, tb, &bs);
}

/* Launches P's kernel for T; refuses arguments made for another plan shape. args NULL: only
 * loads the kernel on the current device (see kiln/registry.h: lazy loading while another kiln
 * kernel spins can deadlock). */
template <class P, typename T> int launch(const void* args, int threads, void* stream) {
  const kilnDevArgs* a = (const kilnDevArgs*)args;
  if (!a) {
    cudaFuncAttributes attr;
    return (int)cudaFuncGetAttributes(&attr, kernel<P, T>);
  }
  if (a->nranks != P::nranks || a->rank < 0 || a->rank >= P::nranks || a->proto != P::proto ||
      a->ntbs != P::rankTb[a->rank + 1] - P::rankTb[a->rank])
    return (int)cudaErrorInvalidValue;
  kernel<P, T><<<a->ntbs, threads, 0, (cudaStream_t)stream>>>(*a);
  return (int)cudaGetLastError();
}

/* ---- Plans with memory steps: their passes (kiln/passes.h) unrolled ----
 * gen/ writes, for such a plan, tbs[] (rank, tb, first pass, passes, steps), passes[] (kilnDevPass's
 * fields) and ops[] (kilnDevOpnd's fields) of every rank, and one KILN_BAKED_MEM_KERNEL line per
 * data type. Block b of rank r runs row rankTb[r] + b: every pass of the row inlined with its
 * shape (kernels/mem.cuh ShapeCt: its count and which operands are lines) and its operands as
 * constants, so a pass compiles to the symmetric kernels' bodies: a one-shot send is one loop that
 * loads each line once and stores it to every peer, a reduction one loop with every peer's line in
 * flight. The frame (epochs, the first meeting, dependencies, the end) is kernels/mem.cuh's, the
 * same as the interpreter's. */
enum : int {
  PASS_PUT = KILN_DEV_PASS_PUT,
  PASS_REDUCE = KILN_DEV_PASS_REDUCE,
  PASS_COPY = KILN_DEV_PASS_COPY,
  PASS_SIGNAL = KILN_DEV_PASS_SIGNAL,
  PASS_WAIT = KILN_DEV_PASS_WAIT,
  PASS_NOP = KILN_DEV_PASS_NOP
};
enum : int {
  OP_USER = KILN_DEV_OPND_USER,
  OP_SCRATCH = KILN_DEV_OPND_SCRATCH,
  OP_LINES = KILN_DEV_OPND_LINES,
  OP_SIGNAL = KILN_DEV_OPND_SIGNAL
};
struct MemTb {
  int rank, id, first, npasses, nsteps;
  int tmpl; /* the row whose code runs this one (itself, or an earlier row of its class) */
};
struct MemPass {
  int kind, proto, nops, flags, cnt, firstOp, lastStep, depid, deps, depNsteps;
  unsigned lineMask;
};
struct MemOp {
  int kind, rank, buf, off;
};

/* Operand K as constants device code may use. */
template <class P, int K> struct OpAt {
  static constexpr int kind = P::ops[K].kind, rank = P::ops[K].rank, buf = P::ops[K].buf, off = P::ops[K].off;
};
template <class P, int F, int... Q>
__device__ __forceinline__ void opsOf(kilnDevOpnd* v, std::integer_sequence<int, Q...>) {
  (void)v;
  ((v[Q].kind = (uint8_t)OpAt<P, F + Q>::kind, v[Q].rank = (uint8_t)OpAt<P, F + Q>::rank,
    v[Q].buf = (uint8_t)OpAt<P, F + Q>::buf, v[Q].pad = 0, v[Q].off = OpAt<P, F + Q>::off),
   ...);
}

/* Pass J as constants. */
template <class P, int J> struct PassAt {
  static constexpr int kind = P::passes[J].kind, proto = P::passes[J].proto, nops = P::passes[J].nops,
                       flags = P::passes[J].flags, cnt = P::passes[J].cnt, firstOp = P::passes[J].firstOp,
                       lastStep = P::passes[J].lastStep, depid = P::passes[J].depid, deps = P::passes[J].deps,
                       depNsteps = P::passes[J].depNsteps;
  static constexpr unsigned lineMask = P::passes[J].lineMask;
  /* The shape's count: a reduction's operands after dst, the pairs of a put or copy, else the
   * operands. */
  static constexpr int count = kind == PASS_REDUCE                     ? nops - 1
                               : kind == PASS_PUT || kind == PASS_COPY ? nops / 2
                                                                       : nops;
};

/* Pass J of a row, iteration k; the row's operands' offsets moved by shift, its signals' channels
 * by chanShift (its class: kilnDevTb.shift). */
template <class P, int J, typename T>
__device__ __forceinline__ void memPass(const kilnDevArgs& a, const mem::Iter& k, mem::Block& b, int it,
                                        Spin& spin, int nsteps, int shift, int chanShift) {
  using Q = PassAt<P, J>;
  kilnDevPass ps;
  ps.kind = (uint8_t)Q::kind;
  ps.proto = (uint8_t)Q::proto;
  ps.nops = (uint8_t)Q::nops;
  ps.flags = (uint8_t)Q::flags;
  ps.cnt = Q::cnt;
  ps.firstOp = Q::firstOp;
  ps.lastStep = Q::lastStep;
  ps.depid = Q::depid;
  ps.deps = Q::deps;
  ps.depNsteps = Q::depNsteps;
  ps.lineMask = Q::lineMask;
  kilnDevOpnd ops[Q::nops > 0 ? Q::nops : 1];
  opsOf<P, Q::firstOp>(ops, std::make_integer_sequence<int, Q::nops>());
#pragma unroll
  for (int q = 0; q < Q::nops; q++) {
    if (ops[q].kind == OP_SIGNAL)
      ops[q].buf = (uint8_t)(ops[q].buf + chanShift);
    else
      ops[q].off += shift;
  }
  using Sh = mem::ShapeCt<Q::count, Q::lineMask>;
  constexpr int R = Q::count > 0 ? Q::count : 1;
  OpSum op;
  mem::beforePass(a, ps, b, it, spin);
  mem::runPass<T, P::proto, R>(a, k, ps, ops, Sh(), op, spin, b.ok);
  if (Q::flags & KILN_DEV_PASS_PUBLISH) mem::publish(a, ps, b, it, nsteps);
}

/* Row R (the code of its class): every iteration runs the row's passes in order, unrolled. */
template <class P, int R, typename T, int... J> __device__ void memRow(const kilnDevArgs& a, mem::Block& b,
                                                                       Spin& spin, int shift, int chanShift,
                                                                       std::integer_sequence<int, J...>) {
  for (int it = 0; it < a.niter; it++) {
    if (it > 0) __syncthreads(); /* the last iteration's reads done before this one's puts */
    const mem::Iter k = mem::iterOf(a, b, it);
    (memPass<P, P::tbs[R].first + J, T>(a, k, b, it, spin, P::tbs[R].nsteps, shift, chanShift), ...);
  }
}

/* Runs row r when R is r and has code of its own (the first row of its class). */
template <class P, int R, typename T>
__device__ __forceinline__ bool memRowIf(const kilnDevArgs& a, mem::Block& b, Spin& spin, int r, int shift,
                                         int chanShift) {
  if constexpr (P::tbs[R].tmpl == R) {
    if (r != R) return false;
    memRow<P, R, T>(a, b, spin, shift, chanShift, std::make_integer_sequence<int, P::tbs[R].npasses>());
    return true;
  } else {
    return false;
  }
}

template <class P, typename T, int... R>
__device__ __forceinline__ void memDispatch(const kilnDevArgs& a, mem::Block& b, Spin& spin, int r, int shift,
                                            int chanShift, std::integer_sequence<int, R...>) {
  (void)(false || ... || memRowIf<P, R, T>(a, b, spin, r, shift, chanShift));
}

template <class P, typename T> __global__ void __launch_bounds__(512, 1)
    memKernel(const __grid_constant__ kilnDevArgs a) {
  __shared__ mem::Shared sh;
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  mem::Block b;
  /* This block's class: the row whose code it runs and how its operands move (host/memplan.c
   * fills them from kilnPlanMemRowClasses, as gen/ did for these tables). */
  const kilnDevTb& tb = a.tbs[blockIdx.x];
  const int tmpl = tb.tmpl, shift = tb.shift, chanShift = tb.chanShift;
  mem::begin(a, b, &sh, spin);
  memDispatch<P, T>(a, b, spin,
                    rowOf<P>(a.rank, std::make_integer_sequence<int, P::nranks>()) - (int)blockIdx.x + tmpl,
                    shift, chanShift, std::make_integer_sequence<int, P::ntbs>());
  mem::end<T>(a, b, &sh);
}

/* Launches P's memory-step kernel for T through the driver (kilnLaunchKernel), with programmatic
 * stream serialization where args->mem.pdl says; refuses arguments made for another plan shape.
 * args NULL: only loads the kernel on the current device. */
template <class P, typename T> int memLaunch(const void* args, int threads, void* stream) {
  static KilnDriverFn fn;
  const kilnDevArgs* a = (const kilnDevArgs*)args;
  if (!a) {
    cudaFuncAttributes attr;
    return (int)cudaFuncGetAttributes(&attr, memKernel<P, T>);
  }
  if (a->nranks != P::nranks || a->rank < 0 || a->rank >= P::nranks || a->proto != P::proto ||
      a->ntbs != P::rankTb[a->rank + 1] - P::rankTb[a->rank])
    return (int)cudaErrorInvalidValue;
  return kilnLaunchKernel(&fn, (const void*)memKernel<P, T>, (unsigned)a->ntbs, (unsigned)threads, stream,
                          a->mem.pdl, a);
}

} /* namespace baked */
} /* namespace kiln */

#define KILN_BAKED_MEM_KERNEL(ident, tname, ctype)                                             \
  extern "C" int kilnBaked_##ident##_##tname(const void* args, int threads, void* stream) {    \
    return ::kiln::baked::memLaunch<::kiln_baked::plan_##ident, ctype>(args, threads, stream); \
  }

#define KILN_BAKED_KERNEL(ident, tname, ctype)                                              \
  extern "C" int kilnBaked_##ident##_##tname(const void* args, int threads, void* stream) { \
    return ::kiln::baked::launch<::kiln_baked::plan_##ident, ctype>(args, threads, stream); \
  }

#endif /* KILN_KERNELS_BAKED_CUH */
