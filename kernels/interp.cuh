/*
 * The interpreter kernel: runs any plan uploaded to device memory (kilnDevTb/kilnDevStep), one
 * CUDA block per plan threadblock of this rank. Large buffers loop over the plan: iteration `it`
 * moves elements [it*S, it*S + S) of every chunk, so one step's pieces always fit a FIFO slot.
 *
 * Per step, threads 0 and 32 wait (dependency flag and a free send slot; a filled receive slot
 * for Simple), the block moves the pieces through the primitives, then, after a barrier, the same
 * two threads publish (Simple's head counter with one release, the drained slot to the sender,
 * progress for dependants): see waitStep/publishStep.
 * Every wait is bounded: on timeout the kernel records KILN_DEV_ERR_TIMEOUT and returns.
 */
#ifndef KILN_KERNELS_INTERP_CUH
#define KILN_KERNELS_INTERP_CUH

#include <type_traits>

#include "primitives.cuh"

namespace kiln {

/* plan.h's step types, in its order (the table there is the authority; checked on the host). */
enum : int { ST_SEND = 0, ST_RECV, ST_RCS, ST_RRS, ST_RRC, ST_RRCS, ST_CPY, ST_RE, ST_NOP };

/* What a step type touches (the interpreter and the baked kernels, kernels/baked.cuh). */
__host__ __device__ constexpr bool stepReceives(int t) { return t >= ST_RECV && t <= ST_RRCS; }
__host__ __device__ constexpr bool stepSends(int t) {
  return t == ST_SEND || t == ST_RCS || t == ST_RRS || t == ST_RRCS;
}
__host__ __device__ constexpr bool stepReadsSrc(int t) {
  return t == ST_SEND || t == ST_RRS || t == ST_RRC || t == ST_RRCS || t == ST_CPY || t == ST_RE;
}
__host__ __device__ constexpr bool stepUsesDst(int t) {
  return t == ST_RECV || t == ST_RCS || t == ST_RRC || t == ST_RRCS || t == ST_CPY || t == ST_RE;
}

/* Element offset and valid length of chunk j's slice `it` in buffer b. */
__device__ __forceinline__ void chunkSlice(const kilnDevArgs& a, int b, int64_t j, int it, uint64_t n,
                                           uint64_t* off, uint64_t* valid) {
  const uint64_t L = a.chunkElems, S = a.sliceElems;
  if (b == KILN_DEV_BUF_SCRATCH) {
    *off = (uint64_t)j * L + (uint64_t)it * S;
    *valid = n;
    return;
  }
  const uint64_t blk = (uint64_t)j / a.chunksPerBlock, c = (uint64_t)j % a.chunksPerBlock;
  *off = blk * a.count + c * L + (uint64_t)it * S;
  const uint64_t start = c * L + (uint64_t)it * S;
  const uint64_t chunkEnd = min(a.count, c * L + L);
  *valid = start >= chunkEnd ? 0 : min(n, chunkEnd - start);
}

/* U: Simple's packs in flight per thread (see kilnPrim); 8 needs more than the 64 registers a
 * 1024-thread kernel gets: both kernels run 512-thread blocks (the primitives' own default stays
 * 4 for other callers). */
template <typename T, class Op, int PROTO, int U = 8>
__device__ __forceinline__ bool runPiece(int type, const Piece<T>& pc, const Op& op, Spin& spin) {
  switch (type) {
    case ST_SEND: return send<T, Op, PROTO, U>(pc, op, spin);
    case ST_RECV: return recv<T, Op, PROTO, U>(pc, op, spin);
    case ST_RCS: return recvCopySend<T, Op, PROTO, U>(pc, op, spin);
    case ST_RRS: return recvReduceSend<T, Op, PROTO, U>(pc, op, spin);
    case ST_RRC: return recvReduceCopy<T, Op, PROTO, U>(pc, op, spin);
    case ST_RRCS: return recvReduceCopySend<T, Op, PROTO, U>(pc, op, spin);
    case ST_CPY: return copy<T, Op, PROTO, U>(pc, op, spin);
    case ST_RE: return reduce<T, Op, PROTO, U>(pc, op, spin);
    default: return true;
  }
}

/* Block state shared by the threads. */
struct BlockState {
  uint64_t sent, rcvd;
  uint64_t tail; /* the send connection's `tail` as last loaded (it only grows) */
  uint64_t seq;  /* this call's number (calls of this exec since its load, this one included) */
  int abort;
};

/* The slots a step moves data through: this rank's receive slot (rv) and the peer's send slot
 * (sd), by the connections' counts so far. */
__device__ __forceinline__ void stepSlots(const kilnDevArgs& a, const kilnDevTb& tb, const BlockState* bs,
                                          bool rv, bool sd, const char** rslot, char** sslot) {
  *rslot = rv ? tb.recvFifo + (bs->rcvd % a.nslots) * a.slotBytes : nullptr;
  *sslot = sd ? tb.sendFifo + (bs->sent % a.nslots) * a.slotBytes : nullptr;
}

/* Piece c (the step's c-th chunk) of a step of iteration `it`, n elements per chunk: its operands
 * (rs: the step reads its source, ud: it uses its destination), its valid length and its part of
 * the slots (pieceLen bytes each). */
template <typename T>
__device__ __forceinline__ Piece<T> stepPiece(const kilnDevArgs& a, int srcbuf, int srcoff, int dstbuf,
                                              int dstoff, bool rs, bool ud, int c, int it, uint64_t n,
                                              const char* rslot, char* sslot, uint64_t pieceLen,
                                              const BlockState* bs) {
  Piece<T> pc;
  uint64_t soff = 0, sval = n, doff = 0, dval = n;
  if (rs) chunkSlice(a, srcbuf, (int64_t)srcoff + c, it, n, &soff, &sval);
  if (ud) chunkSlice(a, dstbuf, (int64_t)dstoff + c, it, n, &doff, &dval);
  pc.src = rs ? (const T*)a.bufs[srcbuf] + soff : nullptr;
  pc.dst = ud ? (T*)a.bufs[dstbuf] + doff : nullptr;
  pc.n = n;
  pc.m = min(rs ? sval : n, ud ? dval : n);
  pc.rslot = rslot ? rslot + c * pieceLen : nullptr;
  pc.sslot = sslot ? sslot + c * pieceLen : nullptr;
  pc.ruse = bs->rcvd + 1;
  pc.suse = bs->sent + 1;
  return pc;
}

/* Thread roles around a step (blocks have at least 64 threads): thread 0 owns the send side
 * (waits for a free slot, publishes `head`, counts bs->sent) and the dependencies (waits, publishes
 * `progress`); thread 32, in another warp, owns the receive side (waits for `head` (Simple),
 * publishes `tail`, counts bs->rcvd). bs->tail is loaded by thread 32 in blockBegin and owned by
 * thread 0 after blockBegin's barrier. Each counter has one writer, read by the others only after
 * a __syncthreads(), and a step that receives and sends waits for both peers at once instead of
 * one round trip after the other.
 *
 * Publishing happens after a __syncthreads() that every thread reached after its last access to
 * the step's data. One thread pays one fence per step instead of every thread paying a system
 * fence (that was most of Simple's per-step cost).
 *
 * Why this is enough under the PTX memory model: bar.sync synchronizes the block's threads, so
 * every thread's stores (and loads) of the step precede, in causality order, whatever threads 0
 * and 32 do after the barrier. A release (st.release.sys = fence.acq_rel.sys + store) is
 * cumulative: it orders before the store every operation that precedes it in causality order, not
 * only the releasing thread's own. So a peer that acquires `head` (ld.acquire.sys by its thread
 * 32, followed by its own bar.sync) sees every byte the whole sending block stored into the slot.
 * The same argument with gpu scope covers `progress` for dependent blocks of this rank, and the
 * waits: an acquire by one thread followed by bar.sync orders the whole block's accesses after it.
 *
 * `tail` (the slot may be overwritten) is stored relaxed, as NCCL does: it only has to follow the
 * block's loads of the slot, and by the barrier every one of those loads has returned its value
 * (each value is consumed - stored, reduced or compared against the LL flag - before the thread
 * can arrive), so no later write of the sender can change what was read. */
/* The `progress` word of a block that has finished `done` steps of iteration `it` of call `seq`
 * (nsteps steps per iteration): the call's number above the steps done (fewer than 2^31 a call:
 * host/exec.c refuses more), modulo 2^64. Words are compared as differences (progressBefore):
 * from call 2^32 on the call's number wraps in the word, and a word of the call before then
 * differs from this call's by about -2^32, not by +2^64 - 2^32. */
__device__ __forceinline__ uint64_t progressWord(uint64_t seq, int it, int nsteps, int done) {
  return (seq << 32) + (uint64_t)((int64_t)it * nsteps + done);
}
__device__ __forceinline__ bool progressBefore(uint64_t word, uint64_t want) {
  return (int64_t)(word - want) < 0;
}

/* depid/deps: the step this one waits on (depid < 0: none), depNsteps: its block's steps. */
template <int PROTO> __device__ __forceinline__ bool waitStep(const kilnDevArgs& a, const kilnDevTb& tb,
                                                              int depid, int deps, int depNsteps, int it,
                                                              BlockState* bs, Spin& spin, bool sd, bool rv) {
  const int tid = threadIdx.x;
  bool bad = false;
  if (tid == 0) {
    if (depid >= 0) {
      const uint64_t want = progressWord(bs->seq, it, depNsteps, deps + 1);
      while (!bad && progressBefore(ldAcquireGpu(a.progress + depid), want)) bad = spin.tick();
    }
    /* A slot is free once the peer has drained it: `tail` only grows, so a value loaded earlier
     * (blockBegin, an earlier step) that already frees the slot spares the load. */
    if (sd && bs->tail + (uint64_t)a.nslots < bs->sent + 1)
      while (!bad && (bs->tail = ldAcquireSys(tb.sendTail)) + (uint64_t)a.nslots < bs->sent + 1)
        bad = spin.tick();
  } else if (tid == 32 && rv && PROTO == KILN_DEV_PROTO_SIMPLE) {
    while (!bad && ldAcquireSys(tb.recvHead) < bs->rcvd + 1) bad = spin.tick();
  }
  return !bad;
}

/* The start of every step: its waits, then a barrier. false: the block gives up (timeout or
 * abort, here or in another thread of the block). */
template <int PROTO> __device__ __forceinline__ bool beginStep(const kilnDevArgs& a, const kilnDevTb& tb,
                                                               int depid, int deps, int depNsteps, int it,
                                                               BlockState* bs, Spin& spin, bool sd, bool rv) {
  if (!waitStep<PROTO>(a, tb, depid, deps, depNsteps, it, bs, spin, sd, rv)) bs->abort = 1;
  __syncthreads();
  return !bs->abort;
}

template <int PROTO> __device__ __forceinline__ void publishStep(const kilnDevTb& tb, BlockState* bs, bool sd,
                                                                 bool rv, bool hasdep, uint64_t* progress,
                                                                 uint64_t progressVal) {
  const int tid = threadIdx.x;
  if (tid == 0) {
    if (sd) {
      if (PROTO == KILN_DEV_PROTO_SIMPLE) stReleaseSys(tb.sendHead, bs->sent + 1);
      bs->sent++;
    }
    if (hasdep) stReleaseGpu(progress, progressVal);
  } else if (tid == 32 && rv) {
    stRelaxedSys(tb.recvTail, bs->rcvd + 1);
    bs->rcvd++;
  }
}

/* A folded run (kilnStepFoldable) for iteration `it`: head step (type, operands) and the
 * sources of the `fold` re steps after it, one pass per chunk of the head's count. */
template <typename T, class Op>
__device__ __forceinline__ void runFolded(const kilnDevArgs& a, int type, int srcbuf, int srcoff, int dstbuf,
                                          int dstoff, int cnt, const int* fbuf, const int* foff, int fold,
                                          int it, uint64_t n, const Op& op) {
  for (int c = 0; c < cnt; c++) {
    const T* ops[KILN_DEV_FOLD_MAX + 1];
    uint64_t off, val;
    chunkSlice(a, dstbuf, (int64_t)dstoff + c, it, n, &off, &val);
    T* dst = (T*)a.bufs[dstbuf] + off;
    uint64_t m = val;
    int k = 0;
    if (type == ST_RE) ops[k++] = dst;
    chunkSlice(a, srcbuf, (int64_t)srcoff + c, it, n, &off, &val);
    ops[k++] = (const T*)a.bufs[srcbuf] + off;
    m = min(m, val);
    for (int f = 0; f < fold; f++) {
      chunkSlice(a, fbuf[f], (int64_t)foff[f] + c, it, n, &off, &val);
      ops[k++] = (const T*)a.bufs[fbuf[f]] + off;
      m = min(m, val);
    }
    reduceMany<T, Op, KILN_DEV_FOLD_MAX + 1>(dst, ops, k, m, op);
  }
}

/* This block's steps: copied to shared memory when they fit (one read of global memory per
 * block instead of one dependent read per step). */
__device__ __forceinline__ const kilnDevStep* blockSteps(const kilnDevArgs& a, const kilnDevTb& tb,
                                                         kilnDevStep* smem) {
  if (tb.nsteps > KILN_DEV_SMEM_STEPS) return a.steps + tb.firstStep;
  constexpr int W = sizeof(kilnDevStep) / sizeof(uint4);
  const uint4* src = (const uint4*)(a.steps + tb.firstStep);
  for (int i = threadIdx.x; i < tb.nsteps * W; i += blockDim.x) ((uint4*)smem)[i] = src[i];
  __syncthreads();
  return smem;
}

template <typename T, class Op, int PROTO>
__device__ void interpBody(const kilnDevArgs& a, const kilnDevTb& tb, const Op& op, BlockState* bs) {
  __shared__ kilnDevStep smemSteps[KILN_DEV_SMEM_STEPS];
  const kilnDevStep* steps = blockSteps(a, tb, smemSteps);
  Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
  const uint64_t S = a.sliceElems, L = a.chunkElems;
  const uint64_t pieceLen = pieceBytes<PROTO>(S, sizeof(T));

  for (int it = 0; it < a.niter; it++) {
    const uint64_t n = min(S, L - (uint64_t)it * S);
    for (int s = 0; s < tb.nsteps; s++) {
      const kilnDevStep st = steps[s];
      const bool rv = stepReceives(st.type), sd = stepSends(st.type);
      if (!beginStep<PROTO>(a, tb, st.depid, st.deps, st.depNsteps, it, bs, spin, sd, rv)) return;
      if (st.fold > 0) {
        int fbuf[KILN_DEV_FOLD_MAX], foff[KILN_DEV_FOLD_MAX];
        for (int f = 0; f < st.fold; f++) {
          fbuf[f] = steps[s + 1 + f].srcbuf;
          foff[f] = steps[s + 1 + f].srcoff;
        }
        runFolded<T, Op>(a, st.type, st.srcbuf, st.srcoff, st.dstbuf, st.dstoff, st.cnt, fbuf, foff, st.fold,
                         it, n, op);
        __syncthreads();
        s += st.fold;
        publishStep<PROTO>(tb, bs, false, false, steps[s].hasdep, a.progress + blockIdx.x,
                           progressWord(bs->seq, it, tb.nsteps, s + 1));
        continue;
      }

      const char* rslot;
      char* sslot;
      stepSlots(a, tb, bs, rv, sd, &rslot, &sslot);
      const bool rs = stepReadsSrc(st.type), ud = stepUsesDst(st.type);
      bool ok = true;
      for (int c = 0; c < st.cnt && st.type != ST_NOP; c++) {
        const Piece<T> pc = stepPiece<T>(a, st.srcbuf, st.srcoff, st.dstbuf, st.dstoff, rs, ud, c, it, n,
                                         rslot, sslot, pieceLen, bs);
        ok = runPiece<T, Op, PROTO>(st.type, pc, op, spin) && ok;
      }
      if (!ok) bs->abort = 1; /* benign race: every writer stores 1 */
      __syncthreads();
      if (bs->abort) return;
      publishStep<PROTO>(tb, bs, sd, rv, st.hasdep, a.progress + blockIdx.x,
                         progressWord(bs->seq, it, tb.nsteps, s + 1));
      /* bs->sent/rcvd are read by the other threads at the next step, after its first barrier. */
    }
  }
}

/* The start every kiln kernel block shares (interpreter and baked): bump this block's call
 * sequence number, load its connection counters, and see whether the communicator was aborted.
 * Another warp loads the send connection's `tail` meanwhile, so that the first send's wait for a
 * free slot (waitStep) usually needs no load of its own after the barrier: one round trip less
 * before the first byte goes out. Its acquire, followed by the barrier, orders the block's later
 * stores into the slot after the peer's reads of it, as waitStep's own load does.
 * Returns false when the block must not run. */
__device__ __forceinline__ bool blockBegin(const kilnDevArgs& a, const kilnDevTb& tb, BlockState* bs) {
  if (threadIdx.x == 0) {
    bs->seq = a.callSeq[blockIdx.x] + 1;
    a.callSeq[blockIdx.x] = bs->seq;
    bs->sent = tb.sendPeer >= 0 ? *tb.sendCount : 0;
    bs->rcvd = tb.recvPeer >= 0 ? *tb.recvCount : 0;
    bs->abort = *(volatile int*)a.abortFlag;
  } else if (threadIdx.x == 32) {
    bs->tail = tb.sendPeer >= 0 ? ldAcquireSys(tb.sendTail) : 0;
  }
  __syncthreads();
  return !bs->abort;
}

/* The end every kiln kernel block shares: store the connection counters back, count the block
 * as finished and, for avg, divide this rank's result once every block is done. */
template <typename T>
__device__ __forceinline__ void blockEnd(const kilnDevArgs& a, const kilnDevTb& tb, BlockState* bs) {
  __syncthreads();
  if (threadIdx.x == 0) {
    if (tb.sendPeer >= 0) *tb.sendCount = bs->sent;
    if (tb.recvPeer >= 0) *tb.recvCount = bs->rcvd;
  }
  if (bs->abort) return;
  /* Every call counts its finished blocks, so that avg's grid barrier has a target. Only avg reads
   * this block's output after the count, so only avg pays the fence before it. */
  if (threadIdx.x == 0) {
    if (a.avgBuf != nullptr) __threadfence();
    atomicAdd(a.done, 1ull);
  }
  if (a.avgBuf == nullptr) return;
  /* avg: once every block of this rank has finished, this rank's result is final; divide it by
   * nranks. */
  if (threadIdx.x == 0) {
    Spin spin(a.timeoutNs, a.abortFlag, a.errWord);
    const unsigned long long want = (unsigned long long)bs->seq * (unsigned long long)a.ntbs;
    while (*(volatile unsigned long long*)a.done < want)
      if (spin.tick()) {
        bs->abort = 1;
        break;
      }
    __threadfence();
  }
  __syncthreads();
  if (bs->abort) return;
  T* buf = (T*)a.avgBuf;
  for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.avgElems;
       i += (uint64_t)gridDim.x * blockDim.x)
    buf[i] = divide(ldcg(buf + i), a.nranks);
}

/* The interpreter's kernels, one per protocol kind and kind of op. LL128: the LL128 protocol's
 * kernel, else Simple's and LL's. LL128 has a kernel of its own: in the same kernel its body takes
 * registers from the others (the float interpreter would spill 126 bytes). S: sum and avg (a sum
 * divided at the end) with the op fixed at compile time (OpSum), else the other ops picked by
 * selects (OpSel), not by a branch per element (OpDyn). A kernel per kind of op rather than a
 * branch on the op in one kernel: with the branch every kernel spills (float LL128 272 bytes of
 * spill stores, 756 of loads; Simple/LL 32 and 48).
 * 2 ranks on one H200, selects vs OpDyn: float allreduce 4-256 MiB 0.83-0.94x the time (2026-11-29).
 * Same, the sum fixed vs selects: float reducescatter 4-256 MiB 0.89-0.95x the time (2026-11-29). */
template <typename T, bool LL128, bool S> __global__ void __launch_bounds__(512)
    kilnInterpKernel(kilnDevArgs a) {
  __shared__ BlockState bs;
  const kilnDevTb& tb = a.tbs[blockIdx.x];
  if (!blockBegin(a, tb, &bs)) return;
  using Op = typename std::conditional<S, OpSum, OpSel>::type;
  Op op;
  if constexpr (!S) op.op = a.op;
  if constexpr (LL128)
    interpBody<T, Op, KILN_DEV_PROTO_LL128>(a, tb, op, &bs);
  else if (a.proto == KILN_DEV_PROTO_LL)
    interpBody<T, Op, KILN_DEV_PROTO_LL>(a, tb, op, &bs);
  else
    interpBody<T, Op, KILN_DEV_PROTO_SIMPLE>(a, tb, op, &bs);
  blockEnd<T>(a, tb, &bs);
}

/* The interpreter kernel of calls of protocol `proto` and op `op` (KILN_DEV_PROTO_*, OP_*) over T;
 * NKERNELS_INTERP of them per T, interpKernelAt(i) the i-th (for loading them all up front). */
enum : int { NKERNELS_INTERP = 4 };
template <typename T> const void* interpKernelAt(int i) {
  switch (i) {
    case 0: return (const void*)kilnInterpKernel<T, false, false>;
    case 1: return (const void*)kilnInterpKernel<T, false, true>;
    case 2: return (const void*)kilnInterpKernel<T, true, false>;
    default: return (const void*)kilnInterpKernel<T, true, true>;
  }
}
template <typename T> const void* interpKernelOf(int proto, int op) {
  return interpKernelAt<T>((proto == KILN_DEV_PROTO_LL128 ? 2 : 0) + (opSums(op) ? 1 : 0));
}

} /* namespace kiln */

#endif /* KILN_KERNELS_INTERP_CUH */
