/* Internals shared by the runtime's host files (comm.c, exec.c, nccl_dev.cu). */
#ifndef KILN_HOST_RUNTIME_INTERNAL_H
#define KILN_HOST_RUNTIME_INTERNAL_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdint.h>

#include "kiln/runtime.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nccl_dev.cu. Return ncclResult_t / cudaError_t values. */
int kilnNcclDevCommCreate(ncclComm_t comm, void** handle);
/* NCCL's load/store team as the device communicator has it (this rank's place in it and its size:
 * ranks rank - lsaRank .. + lsaSize share memory with this one) and its GIN contexts
 * (GPU-initiated networking between nodes; 0 where the network has none). */
void kilnNcclDevCommTeam(void* handle, int* lsaRank, int* lsaSize, int* ginContexts);
int kilnNcclDevCommDestroy(ncclComm_t comm, void* handle);
int kilnNcclPeerPointers(ncclWindow_t win, int nranks, void** scratch, void** hostOut);

#ifndef __CUDACC__

/* Window layout, the same on every rank:
 *   FIFOs  [src rank][chan] of nslots * slotBytes   (connection src -> this rank)
 *   heads  [src rank][chan] one 128-byte line each  (written by src: slots filled)
 *   tails  [dst rank][chan] one 128-byte line each  (written by dst: slots drained)
 *   sym flags  [phase][src rank][block] one word each (kernels/sym.cuh)
 *   sym staging  two halves of symBytes / 2  (the flag form's)
 *   LL lines     two halves of symLLHalf     (host/sym.c sym_line_areas: the line forms' staging,
 *   LL128 lines  two halves of symLL128Half   apart from the flag form's and from each other's)
 *   plans' plain scratch    two halves of memHalf       (plans with memory steps, host/memplan.c:
 *   plans' 16-byte lines    two halves of memLineHalf[0]  every kind of chunk in an area of its own,
 *   plans' LL128 lines      two halves of memLineHalf[1]  as the symmetric kernels' staging)
 *   plans' signal words     [src rank][chan], 8 bytes each
 *   plans' arrival words    [src rank], 8 bytes each */
struct kilnComm {
  ncclComm_t nccl;
  int rank, nranks, dev, nsm;
  /* The nodes the ranks form (kilnCommConfig.nodes as settled: nnodes of nodeSize consecutive
   * ranks; 1 node of all ranks where every rank shares memory). Peers of other nodes have no
   * peers[] address: plans run cut into phases there (internode.c). */
  int nnodes, nodeSize;
  bool emulatedNodes; /* the split came from kilnCommConfig.nodes or KILN_EMULATE_NODES */
  int ginContexts;    /* NCCL's device communicator's GIN contexts (0: no GPU-initiated networking) */
  kilnCommConfig cfg;
  size_t fifoBytes, headBase, tailBase, winBytes;
  size_t symFlagBase, symStageBase, symHalf;               /* symHalf 0: no symmetric-memory kernels */
  size_t symLLBase, symLLHalf, symLL128Base, symLL128Half; /* the line forms' staging */
  uint64_t* symState; /* device: the symmetric calls' sequence number, one per block */
  /* Plans with memory steps (host/memplan.c): their areas of the window (offsets from its base;
   * memHalf 0: none, such plans are refused) and the per-block epoch slots (device,
   * [KILN_DEV_MEM_SLOTS][2], kernels/mem.cuh). */
  size_t memPlainBase, memHalf;
  size_t memLineBase[2], memLineHalf[2];
  size_t memSigBase, memArriveBase;
  uint64_t* memSlots;
  /* The symmetric kernels' settings, read once at creation (host/sym.c, kilnSymConfigure): every
   * rank must have the same (the kernels of a call meet block by block). */
  bool symOff;                      /* KILN_SYM=0 */
  int symMaxBlocks;                 /* KILN_SYM_BLOCKS */
  int symReduceBlocks;              /* KILN_SYM_REDUCE_BLOCKS */
  uint64_t symBlockBytes;           /* KILN_SYM_BLOCK_BYTES */
  uint64_t symLLBytes;              /* KILN_SYM_LL_BYTES */
  uint64_t symLLReduceBytes;        /* KILN_SYM_LL_REDUCE_BYTES */
  uint64_t symLL2Bytes;             /* KILN_SYM_LL2_BYTES */
  uint64_t symLL12Bytes;            /* KILN_SYM_LL12_BYTES: one-shot LL segments above it go as LL12 lines
                             * (elements of at most 4 bytes; KILN_SYM_LL12=0: never) */
  uint64_t symLL128Bytes;           /* KILN_SYM_LL128_BYTES: one-shot segments above it go as LL128 lines */
  uint64_t symLL128MaxBytes;        /* KILN_SYM_LL128_MAX_BYTES: ... up to this */
  uint64_t symLL128TwoShotBytes;    /* KILN_SYM_LL2_128_BYTES: two-shot shares above it as LL128 lines */
  uint64_t symLL128TwoShotMaxBytes; /* KILN_SYM_LL2_128_MAX_BYTES: ... up to this */
  uint64_t symRoundBytes;           /* KILN_SYM_ROUND_BYTES */
  uint64_t symRSRoundBytes;         /* KILN_SYM_RS_ROUND_BYTES */
  uint64_t symCopyRoundBytes;       /* KILN_SYM_COPY_ROUND_BYTES */
  uint64_t symCopyRoundMaxBytes;    /* KILN_SYM_COPY_ROUND_MAX_BYTES */
  int symCopyBlocks;                /* KILN_SYM_COPY_BLOCKS */
  uint64_t symA2ABigBytes;          /* KILN_SYM_A2A_BIG_BYTES */
  int symMinRounds;                 /* KILN_SYM_MIN_ROUNDS */
  char* win;                        /* ncclMemAlloc (cudaMalloc when sharedWin) */
  bool sharedWin;                   /* made by kilnCommCreateShared: no NCCL communicator or window */
  ncclWindow_t window;
  void* devComm;      /* ncclDevComm*, owned by nccl_dev.cu */
  char** peers;       /* [nranks] each rank's window base as mapped here */
  void** peerScratch; /* device, [nranks]: where kilnNcclPeerPointers reads them */
  uint64_t* state;    /* device: sendCount[nranks*maxch], then recvCount[nranks*maxch] */
  int* abortFlag;     /* device */
  int* errHost;       /* mapped host word written by kernels */
  int* errDev;
  cudaEvent_t last;              /* end of the last call, to order calls across streams */
  unsigned long long lastStream; /* cudaStreamGetId of the last call's stream */
  bool haveLast;
  bool registered;
  bool aborted; /* kilnCommAbort (or a creation that failed in a collective step):
                             * calls refused; the teardown makes no NCCL call */
  /* The caller's symmetric windows (kilnCommWindowAdd): buffers in them go direct, zero copy. */
  struct kilnUserWindow* uwins;
  int nuwins, capuwins;
  uint64_t symDirectBytes;         /* KILN_SYM_DIRECT_BYTES: calls from this size go direct (KILN_SYM_DIRECT=0
                             * or unmeasured rank counts: UINT64_MAX / LLONG_MAX, never) */
  uint64_t symDirectA2ABytes;      /* KILN_SYM_DIRECT_A2A_BYTES: the same for alltoall */
  int symDirectBlocks;             /* KILN_SYM_DIRECT_BLOCKS */
  uint64_t symDirectBlockBytes;    /* KILN_SYM_DIRECT_BLOCK_BYTES */
  uint64_t symDirectBigBlockBytes; /* KILN_SYM_DIRECT_BIG_BLOCK_BYTES: pieces from 1 MiB */
  bool symDirectPreload;           /* KILN_SYM_DIRECT_PRELOAD */
  uint64_t symCEBytes;             /* KILN_SYM_CE_BYTES: direct allgather/alltoall from this size copy
                             * with the copy engine (KILN_SYM_CE=0: UINT64_MAX, never) */
  int symCEBlocks;                 /* KILN_SYM_CE_BLOCKS: blocks of the local copy beside the engine */
  bool symPdl;                     /* KILN_SYM_PDL: kernels launched with programmatic serialization */
  bool symEarlyTrigger;            /* KILN_SYM_PDL_TRIGGER: LL forms trigger the next kernel once their
                             * lines are out (kilnSymArgs.earlyTrigger), not at their end */
  uint64_t symARCEBytes;           /* KILN_SYM_AR_CE_BYTES: direct allreduce from this size reduces its
                             * share staged, then copies it to the peers with the engine */
  cudaStream_t ceSide;             /* the copy-engine form's local copy runs here, forked from the call's
                             * stream and joined back (ceFork, ceJoin); ceSideCapture for
                             * captured calls */
  cudaStream_t ceSideCapture;
  cudaEvent_t ceFork, ceJoin;
  /* The communicators set up with this one by kilnCommCreateAll, when they are every rank and
   * their GPUs have peer access to each other (NULL otherwise, and with KILN_SYM_PEERS=0). */
  struct kilnClique* clique;
  bool wholeInProcess;   /* every rank of the communicator is in this process (kilnCommCreateAll of
                             * all of them, kilnCommCreateShared): their plain buffers are in reach */
  uint64_t symPeerCalls; /* calls that went direct into the clique's plain buffers */
  int symPeerForm;       /* the kilnSymArgs.direct of the last of them */
};

/* Every rank of an NCCL communicator in this process, set up together (kilnCommCreateAll), with
 * peer access between their GPUs: a group holding one call of each of them can let every rank
 * store into the others' buffers, whatever memory they are in, when each GPU can reach them
 * (kilnSymGroupPeers). Shared by its members; the last one freed frees it. */
#define KILN_CLIQUE_MAX 8 /* KILN_SYM_MAX_RANKS (kiln_dev.h; sym.c checks) */
struct kilnClique {
  int n, refs;
  struct kilnComm* members[KILN_CLIQUE_MAX]; /* by rank; NULL once freed */
};

/* A window the caller registered (NCCL_WIN_COLL_SYMMETRIC) and added to kiln. */
struct kilnUserWindow {
  ncclWindow_t win;
  char* base;
  size_t bytes;
  char** peers; /* [nranks] each rank's base of it as mapped here */
};

/* comm.c: whether [p, p + bytes) lies in one of c's added windows; then peers[q] is rank q's
 * address of p (the same offset in q's window), peers[c->rank] = p. */
KILN_INTERNAL bool kilnUserWindowPeers(const struct kilnComm* c, const void* p, size_t bytes, char** peers);

/* sym.c: whether every GPU of devs[0..ndevs) can store into [p, p + bytes) (one allocation or
 * mapping, read and write access from each); kilnSymGroupPeers asks it for every rank's output,
 * with the other ranks' GPUs. */
typedef bool (*kilnPeerAccessFn)(const int* devs, int ndevs, const void* p, size_t bytes);
bool kilnPeerAccess(const int* devs, int ndevs, const void* p, size_t bytes);

/* sym.c: reads the symmetric kernels' settings into c, and sizes and places the line forms'
 * staging (symLL*) after the flag form's two halves of symHalf at symStageBase. */
void kilnSymConfigure(struct kilnComm* c);
/* sym.c: how kilnSymRun would run this call: 0 staged, else its kilnSymArgs.direct
 * (kernels/sym_ce.h: KILN_SYM_DIRECT_SM, KILN_SYM_DIRECT_ARRIVE for the copy-engine form, or
 * KILN_SYM_DIRECT_REDUCE_CE). */
KILN_INTERNAL int kilnSymDirectForm(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf,
                                    size_t count, kilnDataType_t dtype);
/* sym.c: the blocks of that direct form's kernel (0: the call does not go direct). */
KILN_INTERNAL int kilnSymDirectBlocks(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf,
                                      size_t count, kilnDataType_t dtype);

/* Whether rank q is on c's node (its peers[] address exists). */
static inline bool kilnCommSameNode(const struct kilnComm* c, int q) {
  return q / c->nodeSize == c->rank / c->nodeSize;
}

static inline size_t kilnFifoOff(const struct kilnComm* c, int src, int chan) {
  return ((size_t)src * c->cfg.maxChannels + chan) * c->fifoBytes;
}
static inline size_t kilnHeadOff(const struct kilnComm* c, int src, int chan) {
  return c->headBase + ((size_t)src * c->cfg.maxChannels + chan) * 128;
}
static inline size_t kilnTailOff(const struct kilnComm* c, int dst, int chan) {
  return c->tailBase + ((size_t)dst * c->cfg.maxChannels + chan) * 128;
}
#endif

/* comm.c: n ranks of this process over CUDA peer memory, without NCCL, rank i on GPU devs[i]
 * (several may share a GPU: each gets an equal share of its SMs); for the GPU suites and
 * coll_bench --shared (rank counts beyond the GPUs at hand). Freed together with
 * kilnCommDestroyAll (each rank's peers[] points into the others' windows). */
KILN_INTERNAL kilnResult_t kilnCommCreateShared(int n, const int* devs, const kilnCommConfig* cfg,
                                                kilnComm_t* out);

/* sym.c, for coll_bench --mirror: how kilnSymRun runs this call (plain ints, so that CUDA sources
 * can ask): *direct its kilnSymArgs.direct (0: staged), *lines its KILN_SYM_LINES_* form (staged
 * calls), *blocks its kernel's blocks. false where the call does not fit the communicator. */
KILN_INTERNAL bool kilnSymCallShape(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf,
                                    size_t count, kilnDataType_t dtype, int* direct, int* lines, int* blocks);

/* The most elements a call may have (kilnRun, kilnSymRun, kilnPlanSupports): far past any buffer,
 * and low enough that no size computed from it wraps. */
#define KILN_MAX_CALL_COUNT ((size_t)1 << 40)
/* comm.c: KILN_SUCCESS when c may take a call of count elements of dtype on those buffers with
 * op; else the error (set): an unknown data type or op, a count past KILN_MAX_CALL_COUNT, a NULL
 * buffer for a call of elements, an aborted communicator (kilnCommAbort), or one whose kernels
 * gave up earlier (a timeout: its abort word stays raised, so its kernels would return at once and
 * leave the outputs unwritten). */
kilnResult_t kilnCommCallCheck(const struct kilnComm* c, size_t count, const void* sendbuf,
                               const void* recvbuf, kilnDataType_t dtype, kilnRedOp_t op);
/* Agreement through NCCL: flags[i][0..m) become their minimum over the ranks of nccls[i], for the
 * n communicators of this process at once (a grouped allreduce on each one's device; blocks until
 * it is done). Collective: every rank calls it with the same m. kilnNcclAgree does it once;
 * kilnAgreeOpen allocates what it needs (local: a rank that cannot take part, out of memory for m
 * ints, returns an error and leaves its peers waiting), kilnAgreeRun agrees (any number of times;
 * a rank whose own upload fails still takes part, with zeros), kilnAgreeClose frees. */
typedef struct kilnAgreement {
  int n, m;
  const ncclComm_t* nccls;
  int** buf;        /* [n] device, m ints each */
  int* dev;         /* [n] */
  cudaStream_t* st; /* [n] */
} kilnAgreement;
kilnResult_t kilnAgreeOpen(kilnAgreement* g, int n, const ncclComm_t* nccls, int m);
kilnResult_t kilnAgreeRun(kilnAgreement* g, int* const* flags);
void kilnAgreeClose(kilnAgreement* g);
kilnResult_t kilnNcclAgree(int n, const ncclComm_t* nccls, int* const* flags, int m);

#ifdef __cplusplus
}
#endif
#endif
