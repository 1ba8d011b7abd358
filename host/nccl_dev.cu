/*
 * The one translation unit that includes nccl_device.h (C++17): creates NCCL's device
 * communicator (which confirms that the communicator supports symmetric memory) and reads each
 * peer's address of a symmetric window once, in a small kernel. The rest of the runtime is C and
 * plain CUDA and never sees NCCL's device types.
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_internal.h"

extern "C" int kilnNcclDevCommCreate(ncclComm_t comm, void** handle) {
  ncclDevComm* dc = (ncclDevComm*)calloc(1, sizeof(ncclDevComm));
  if (!dc) return (int)ncclSystemError;
  ncclDevCommRequirements reqs;
  memset(&reqs, 0, sizeof(reqs));
  ncclResult_t r = ncclDevCommCreate(comm, &reqs, dc);
  if (r != ncclSuccess && r != ncclInProgress) {
    free(dc);
    return (int)r;
  }
  *handle = dc;
  return (int)ncclSuccess;
}

extern "C" void kilnNcclDevCommTeam(void* handle, int* lsaRank, int* lsaSize, int* ginContexts) {
  const ncclDevComm* dc = (const ncclDevComm*)handle;
  *lsaRank = dc->lsaRank;
  *lsaSize = dc->lsaSize;
  *ginContexts = dc->ginContextCount;
}

extern "C" int kilnNcclDevCommDestroy(ncclComm_t comm, void* handle) {
  if (!handle) return 0;
  ncclResult_t r = ncclDevCommDestroy(comm, (const ncclDevComm*)handle);
  free(handle);
  return (int)r;
}

__global__ void kilnReadPeersKernel(ncclWindow_t win, int nranks, void** out) {
  for (int p = threadIdx.x; p < nranks; p += blockDim.x) out[p] = ncclGetPeerPointer(win, 0, p);
}

/* Into `scratch` (device, nranks pointers), on a stream of its own so that it waits for no other
 * work on the device (a window may be added while collectives run), with no allocation. */
extern "C" int kilnNcclPeerPointers(ncclWindow_t win, int nranks, void** scratch, void** hostOut) {
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return (int)e;
  kilnReadPeersKernel<<<1, 32, 0, s>>>(win, nranks, scratch);
  e = cudaGetLastError();
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(hostOut, scratch, sizeof(void*) * nranks, cudaMemcpyDeviceToHost, s);
  cudaError_t f = cudaStreamSynchronize(s);
  if (e == cudaSuccess) e = f;
  cudaStreamDestroy(s);
  return (int)e;
}
