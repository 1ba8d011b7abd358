/*
 * The NCCL calls of one rank's part of a point-to-point phase (solver/phases.h), shared by the
 * runtime (internode.c) and the CPU test that records them through a fake NCCL
 * (tests/test_internode.c). Header-only: it needs nothing of the runtime but nccl.h.
 */
#ifndef KILN_HOST_INTERNODE_NCCL_H
#define KILN_HOST_INTERNODE_NCCL_H

#include <nccl.h>

#include "../solver/phases.h"

typedef struct kilnNcclIssue {
  char* bases[KILN_NUM_BUFFERS]; /* the call's input, output and scratch as the plan's buffers */
  size_t esize;
  ncclDataType_t dtype; /* kilnDataType_t numbers types as NCCL */
  ncclComm_t comm;
  cudaStream_t stream;
  ncclResult_t failed; /* the NCCL error that stopped the calls */
} kilnNcclIssue;

static inline int kilnNcclIssueOne(void* ctx, bool send, int peer, kilnBuffer_t buf, uint64_t off,
                                   uint64_t n) {
  kilnNcclIssue* x = (kilnNcclIssue*)ctx;
  char* p = x->bases[buf] + off * x->esize;
  x->failed = send ? ncclSend(p, (size_t)n, x->dtype, peer, x->comm, x->stream)
                   : ncclRecv(p, (size_t)n, x->dtype, peer, x->comm, x->stream);
  return x->failed != ncclSuccess;
}

/* Rank's ncclSend/ncclRecv of phase i for a call of count elements, in the order both ends of
 * each message issue them (kilnPhasesP2pCalls); the caller wraps them in ncclGroupStart/End. The
 * first NCCL error stops them and is returned. */
static inline ncclResult_t kilnPhasesNcclCalls(const kilnPhases* ph, int i, int rank, uint64_t count,
                                               kilnNcclIssue* x) {
  x->failed = ncclSuccess;
  if (kilnPhasesP2pCalls(ph, i, rank, count, kilnNcclIssueOne, x) != 0 && x->failed == ncclSuccess)
    x->failed = ncclInternalError;
  return x->failed;
}

#endif
