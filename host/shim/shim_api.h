/*
 * The NCCL API that kiln's libnccl.so.2 exports: one table of every function the real
 * libnccl.so.2 (2.28.9) exports, from which the shim builds its table of real function pointers,
 * its pure forwarders, its pnccl twins, and the tests build their fake NCCL and export checks.
 *
 * Row: X(ret, name, params, args, missing)
 *   ret, name, params  the exact prototype of nccl.h (or of the nccl_device headers for the device API);
 *                      shim_api_check.cpp has the C++ compiler compare each row with those headers
 *   args               the parameter names, to forward the call
 *   missing            what the shim returns when the real NCCL or this function in it is absent
 *
 * KILN_SHIM_FORWARDED: passed to the real NCCL unchanged.
 * KILN_SHIM_STREAMED:  passed to the real NCCL unchanged, after noting the call's communicator
 *                      and stream inside a group (the group's streams are joined where kiln took
 *                      some of its calls: shim_exports.c, group_join).
 * KILN_SHIM_HOOKED:    the shim writes the body (communicator setup and teardown, the collectives
 *                      kiln may run, symmetric windows and the memory under them, group
 *                      tracking, async errors); each still
 *                      ends in the real call
 *                      whenever kiln does not take the call.
 * KILN_SHIM_VOID:      the two functions returning void, X(name).
 * Every row except ncclResetDebugInitInternal also exists as pnccl<Name>, an alias of the same body.
 */
#ifndef KILN_SHIM_API_H
#define KILN_SHIM_API_H

#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device API's host functions (nccl_device/core.h, ll_a2a.h, lsa_barrier.h, gin_barrier.h).
 * Those headers are C++-only in part, so C code gets these declarations; shim_api_check.cpp
 * includes the real headers together with this table and fails to compile on any mismatch. */
#ifndef _NCCL_DEVICE_CORE_H_
typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclTeam ncclTeam_t;
struct ncclTeam {
  int nRanks, rank, stride;
};
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevResourceRequirements ncclDevResourceRequirements_t;
typedef struct ncclLsaBarrierHandle ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle ncclGinBarrierHandle_t;
typedef struct ncclLLA2AHandle ncclLLA2AHandle_t;
#endif

#define KILN_SHIM_NO_TEAM ((ncclTeam_t){0, 0, 0})

/* clang-format off */
#define KILN_SHIM_FORWARDED(X)                                                                      \
  X(ncclResult_t, ncclGetVersion, (int* version), (version), shimMissing("ncclGetVersion"))           \
  X(ncclResult_t, ncclGetUniqueId, (ncclUniqueId* uniqueId), (uniqueId),                             \
    shimMissing("ncclGetUniqueId"))                                                                  \
  X(const char*, ncclGetErrorString, (ncclResult_t result), (result), shimErrorString(result))       \
  X(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count), (comm, count),                 \
    shimMissing("ncclCommCount"))                                                                    \
  X(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device), (comm, device),            \
    shimMissing("ncclCommCuDevice"))                                                                 \
  X(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank), (comm, rank),                \
    shimMissing("ncclCommUserRank"))                                                                 \
  X(ncclResult_t, ncclCommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle), \
    (comm, buff, size, handle), shimMissing("ncclCommRegister"))                                     \
  X(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle), (comm, handle),          \
    shimMissing("ncclCommDeregister"))                                                               \
  X(ncclResult_t, ncclRedOpCreatePreMulSum,                                                          \
    (ncclRedOp_t* op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,        \
     ncclComm_t comm),                                                                               \
    (op, scalar, datatype, residence, comm), shimMissing("ncclRedOpCreatePreMulSum"))                \
  X(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm), (op, comm),                   \
    shimMissing("ncclRedOpDestroy"))                                                                 \
  X(ncclResult_t, ncclDevCommCreate,                                                                 \
    (ncclComm_t comm, ncclDevCommRequirements_t const* reqs, ncclDevComm_t* outDevComm),             \
    (comm, reqs, outDevComm), shimMissing("ncclDevCommCreate"))                                      \
  X(ncclResult_t, ncclDevCommDestroy, (ncclComm_t comm, ncclDevComm_t const* devComm),               \
    (comm, devComm), shimMissing("ncclDevCommDestroy"))                                              \
  X(ncclTeam_t, ncclTeamWorld, (ncclComm_t comm), (comm), KILN_SHIM_NO_TEAM)                         \
  X(ncclTeam_t, ncclTeamLsa, (ncclComm_t comm), (comm), KILN_SHIM_NO_TEAM)                           \
  X(ncclTeam_t, ncclTeamRail, (ncclComm_t comm), (comm), KILN_SHIM_NO_TEAM)                          \
  X(int, ncclTeamRankToWorld, (ncclComm_t comm, ncclTeam_t team, int rank), (comm, team, rank), -1)  \
  X(int, ncclTeamRankToLsa, (ncclComm_t comm, ncclTeam_t team, int rank), (comm, team, rank), -1)    \
  X(int, ncclLLA2ACalcSlots, (int maxElts, int maxEltSize), (maxElts, maxEltSize), -1)               \
  X(ncclResult_t, ncclLLA2ACreateRequirement,                                                        \
    (int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle, ncclDevResourceRequirements_t* outReq),  \
    (nBlocks, nSlots, outHandle, outReq), shimMissing("ncclLLA2ACreateRequirement"))                 \
  X(ncclResult_t, ncclLsaBarrierCreateRequirement,                                                   \
    (ncclTeam_t team, int nBarriers, ncclLsaBarrierHandle_t* outHandle,                              \
     ncclDevResourceRequirements_t* outReq),                                                         \
    (team, nBarriers, outHandle, outReq), shimMissing("ncclLsaBarrierCreateRequirement"))            \
  X(ncclResult_t, ncclGinBarrierCreateRequirement,                                                   \
    (ncclComm_t comm, ncclTeam_t team, int nBarriers, ncclGinBarrierHandle_t* outHandle,             \
     ncclDevResourceRequirements_t* outReq),                                                         \
    (comm, team, nBarriers, outHandle, outReq), shimMissing("ncclGinBarrierCreateRequirement"))

/* Forwarded, and noted inside a group (their communicator and stream), so that a group in which
 * kiln took a call can join its streams as NCCL joins those of its own calls (shim_exports.c). */
#define KILN_SHIM_STREAMED(X)                                                                       \
  X(ncclResult_t, ncclReduce,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,    \
     int root, ncclComm_t comm, cudaStream_t stream),                                                \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream), shimMissing("ncclReduce"))        \
  X(ncclResult_t, ncclBcast,                                                                         \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,                   \
     cudaStream_t stream),                                                                           \
    (buff, count, datatype, root, comm, stream), shimMissing("ncclBcast"))                           \
  X(ncclResult_t, ncclBroadcast,                                                                     \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,          \
     ncclComm_t comm, cudaStream_t stream),                                                          \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), shimMissing("ncclBroadcast"))         \
  X(ncclResult_t, ncclGather,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,          \
     ncclComm_t comm, cudaStream_t stream),                                                          \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), shimMissing("ncclGather"))            \
  X(ncclResult_t, ncclScatter,                                                                       \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,          \
     ncclComm_t comm, cudaStream_t stream),                                                          \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), shimMissing("ncclScatter"))           \
  X(ncclResult_t, ncclSend,                                                                          \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,         \
     cudaStream_t stream),                                                                           \
    (sendbuff, count, datatype, peer, comm, stream), shimMissing("ncclSend"))                        \
  X(ncclResult_t, ncclRecv,                                                                          \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,               \
     cudaStream_t stream),                                                                           \
    (recvbuff, count, datatype, peer, comm, stream), shimMissing("ncclRecv"))

#define KILN_SHIM_HOOKED(X)                                                                         \
  X(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size), (ptr, size), shimMissing("ncclMemAlloc")) \
  X(ncclResult_t, ncclMemFree, (void* ptr), (ptr), shimMissing("ncclMemFree"))                        \
  X(const char*, ncclGetLastError, (ncclComm_t comm), (comm), shimLastError())                       \
  X(ncclResult_t, ncclCommInitRankConfig,                                                            \
    (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),             \
    (comm, nranks, commId, rank, config), shimMissing("ncclCommInitRankConfig"))                     \
  X(ncclResult_t, ncclCommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank),   \
    (comm, nranks, commId, rank), shimMissing("ncclCommInitRank"))                                   \
  X(ncclResult_t, ncclCommInitAll, (ncclComm_t* comm, int ndev, const int* devlist),                 \
    (comm, ndev, devlist), shimMissing("ncclCommInitAll"))                                           \
  X(ncclResult_t, ncclCommInitRankScalable,                                                          \
    (ncclComm_t* newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,                    \
     ncclConfig_t* config),                                                                          \
    (newcomm, nranks, myrank, nId, commIds, config), shimMissing("ncclCommInitRankScalable"))        \
  X(ncclResult_t, ncclCommSplit,                                                                     \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),                \
    (comm, color, key, newcomm, config), shimMissing("ncclCommSplit"))                               \
  X(ncclResult_t, ncclCommShrink,                                                                    \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,             \
     ncclConfig_t* config, int shrinkFlags),                                                         \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags),                       \
    shimMissing("ncclCommShrink"))                                                                   \
  X(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm), shimMissing("ncclCommFinalize"))      \
  X(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm), shimMissing("ncclCommDestroy"))        \
  X(ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm), shimMissing("ncclCommAbort"))            \
  X(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags),           \
    shimMissing("ncclCommRevoke"))                                                                   \
  X(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError),                \
    (comm, asyncError), shimMissing("ncclCommGetAsyncError"))                                        \
  X(ncclResult_t, ncclAllReduce,                                                                     \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,    \
     ncclComm_t comm, cudaStream_t stream),                                                          \
    (sendbuff, recvbuff, count, datatype, op, comm, stream), shimMissing("ncclAllReduce"))           \
  X(ncclResult_t, ncclReduceScatter,                                                                 \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,                \
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                          \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), shimMissing("ncclReduceScatter"))   \
  X(ncclResult_t, ncclAllGather,                                                                     \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,                \
     ncclComm_t comm, cudaStream_t stream),                                                          \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream), shimMissing("ncclAllGather"))           \
  X(ncclResult_t, ncclAlltoAll,                                                                      \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,   \
     cudaStream_t stream),                                                                           \
    (sendbuff, recvbuff, count, datatype, comm, stream), shimMissing("ncclAlltoAll"))                \
  X(ncclResult_t, ncclCommWindowRegister,                                                            \
    (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags),                     \
    (comm, buff, size, win, winFlags), shimMissing("ncclCommWindowRegister"))                        \
  X(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win), (comm, win),        \
    shimMissing("ncclCommWindowDeregister"))                                                         \
  X(ncclResult_t, ncclGroupStart, (void), (), shimMissing("ncclGroupStart"))                         \
  X(ncclResult_t, ncclGroupEnd, (void), (), shimMissing("ncclGroupEnd"))                             \
  X(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t* simInfo), (simInfo),                         \
    shimMissing("ncclGroupSimulateEnd"))

#define KILN_SHIM_VOID(X) \
  X(ncclResetDebugInit)   \
  X(ncclResetDebugInitInternal)
/* clang-format on */

/* Every row, forwarded or hooked. */
#define KILN_SHIM_ALL(X) KILN_SHIM_FORWARDED(X) KILN_SHIM_STREAMED(X) KILN_SHIM_HOOKED(X)

/* The device-API functions and ncclResetDebugInitInternal are declared by no C header; declare
 * them (and every pnccl twin the headers lack) so definitions and callers are checked. */
ncclResult_t ncclDevCommCreate(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*);
ncclResult_t pncclDevCommCreate(ncclComm_t, ncclDevCommRequirements_t const*, ncclDevComm_t*);
ncclResult_t ncclDevCommDestroy(ncclComm_t, ncclDevComm_t const*);
ncclResult_t pncclDevCommDestroy(ncclComm_t, ncclDevComm_t const*);
ncclTeam_t ncclTeamWorld(ncclComm_t);
ncclTeam_t pncclTeamWorld(ncclComm_t);
ncclTeam_t ncclTeamLsa(ncclComm_t);
ncclTeam_t pncclTeamLsa(ncclComm_t);
ncclTeam_t ncclTeamRail(ncclComm_t);
ncclTeam_t pncclTeamRail(ncclComm_t);
int ncclTeamRankToWorld(ncclComm_t, ncclTeam_t, int rank);
int pncclTeamRankToWorld(ncclComm_t, ncclTeam_t, int rank);
int ncclTeamRankToLsa(ncclComm_t, ncclTeam_t, int rank);
int pncclTeamRankToLsa(ncclComm_t, ncclTeam_t, int rank);
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t, int nBarriers, ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t, ncclTeam_t, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t, ncclTeam_t, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
void ncclResetDebugInitInternal(void);

#ifdef __cplusplus
}
#endif
#endif /* KILN_SHIM_API_H */
