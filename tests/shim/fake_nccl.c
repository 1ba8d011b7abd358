/*
 * The fake NCCL's recorder and the bodies whose outputs the shim reads: version, rank, count,
 * device, and the communicators an init returns (FAKE_NCCL_COMM).
 */
#include <stdint.h>

#include "fake_nccl.h"
#include "shim_api.h"

#define FAKE_API __attribute__((visibility("default")))

FAKE_API fakeNcclRecord fakeNcclHistory[FAKE_NCCL_HISTORY];
FAKE_API int fakeNcclCalls;
FAKE_API ncclResult_t fakeNcclResult = ncclSuccess;
FAKE_API int fakeNcclNranks = 1; /* a 1-rank communicator: kiln never sets up on it */
FAKE_API int fakeNcclRank = 0;
FAKE_API int fakeNcclLsaSize = 1; /* ncclTeamLsa's answer: ranks that share memory with this one */

FAKE_API fakeNcclRecord* fakeNcclBegin(const char* name) {
  fakeNcclRecord* r = &fakeNcclHistory[fakeNcclCalls++ % FAKE_NCCL_HISTORY];
  memset(r, 0, sizeof *r);
  strncpy(r->name, name, sizeof r->name - 1);
  return r;
}

FAKE_API ncclResult_t ncclGetVersion(int* version) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclGetVersion");
  FAKE_NCCL_EACH((version))
  if (version) *version = FAKE_NCCL_VERSION;
  return fakeNcclResult;
}

FAKE_API ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclCommCount");
  FAKE_NCCL_EACH((comm, count))
  if (count) *count = fakeNcclNranks;
  return fakeNcclResult;
}

FAKE_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclCommUserRank");
  FAKE_NCCL_EACH((comm, rank))
  if (rank) *rank = fakeNcclRank;
  return fakeNcclResult;
}

FAKE_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclCommCuDevice");
  FAKE_NCCL_EACH((comm, device))
  if (device) *device = 0;
  return fakeNcclResult;
}

FAKE_API ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclCommInitRank");
  FAKE_NCCL_EACH((comm, nranks, commId, rank))
  if (comm && fakeNcclResult == ncclSuccess) *comm = FAKE_NCCL_COMM;
  return fakeNcclResult;
}

FAKE_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                             ncclConfig_t* config) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclCommInitRankConfig");
  FAKE_NCCL_EACH((comm, nranks, commId, rank, config))
  if (comm && fakeNcclResult == ncclSuccess) *comm = FAKE_NCCL_COMM;
  return fakeNcclResult;
}

FAKE_API ncclTeam_t ncclTeamLsa(ncclComm_t comm) {
  fakeNcclRecord* fakeRec = fakeNcclBegin("ncclTeamLsa");
  FAKE_NCCL_EACH((comm))
  return (ncclTeam_t){fakeNcclLsaSize, fakeNcclRank % fakeNcclLsaSize, 1};
}
