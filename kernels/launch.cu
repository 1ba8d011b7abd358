/* Launch tables of the interpreters and the symmetric kernels: one instantiation per data type (ids
 * as kilnDataType_t). */
#include <cuda_runtime.h>

#include "kiln_dev.h"
#include "sym_ce.h"

/* X(id, name) in kilnDataType_t order; the instantiations come from interp_dtype.cu.in. */
/* one per line: clang-format 14 reflows this list differently on every pass */
// clang-format off
#define KILN_DEV_DTYPES(X) \
  X(0, int8) \
  X(1, uint8) \
  X(2, int32) \
  X(3, uint32) \
  X(4, int64) \
  X(5, uint64) \
  X(6, half) \
  X(7, float) \
  X(8, double) \
  X(9, bfloat16) \
  X(10, fp8_e4m3) \
  X(11, fp8_e5m2)
// clang-format on

#define KILN_X_DECL(id, name)                                               \
  extern "C" int kilnInterpLaunch_##name(const kilnDevArgs*, int, void*);   \
  extern "C" int kilnInterpPreload_##name(void);                            \
  extern "C" int kilnSymLaunch_##name(const kilnSymArgs*, int, void*, int); \
  extern "C" int kilnSymHasKernel_##name(const kilnSymArgs*);               \
  extern "C" int kilnMemLaunch_##name(int, const kilnDevArgs*, int, void*, int);
KILN_DEV_DTYPES(KILN_X_DECL)
#undef KILN_X_DECL

typedef int (*kilnLaunchFn)(const kilnDevArgs*, int, void*);
static const kilnLaunchFn kLaunch[] = {
#define KILN_X_ROW(id, name) /* id */ kilnInterpLaunch_##name,
    KILN_DEV_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

extern "C" int kilnInterpLaunch(int dtype, const kilnDevArgs* args, int threads, void* stream) {
  if (dtype < 0 || dtype >= (int)(sizeof(kLaunch) / sizeof(kLaunch[0]))) return (int)cudaErrorInvalidValue;
  return kLaunch[dtype](args, threads, stream);
}

typedef int (*kilnSymLaunchFn)(const kilnSymArgs*, int, void*, int);
static const kilnSymLaunchFn kSymLaunch[] = {
#define KILN_X_ROW(id, name) /* id */ kilnSymLaunch_##name,
    KILN_DEV_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

extern "C" int kilnSymLaunch(int dtype, const kilnSymArgs* args, int threads, void* stream, int pdl) {
  if (dtype < 0 || dtype >= (int)(sizeof(kSymLaunch) / sizeof(kSymLaunch[0])))
    return (int)cudaErrorInvalidValue;
  return kSymLaunch[dtype](args, threads, stream, pdl);
}

typedef int (*kilnMemLaunchFn)(int, const kilnDevArgs*, int, void*, int);
static const kilnMemLaunchFn kMemLaunch[] = {
#define KILN_X_ROW(id, name) /* id */ kilnMemLaunch_##name,
    KILN_DEV_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

extern "C" int kilnMemLaunch(int dtype, int lines, const kilnDevArgs* args, int threads, void* stream,
                             int pdl) {
  if (dtype < 0 || dtype >= (int)(sizeof(kMemLaunch) / sizeof(kMemLaunch[0])))
    return (int)cudaErrorInvalidValue;
  return kMemLaunch[dtype](lines, args, threads, stream, pdl);
}

typedef int (*kilnSymHasFn)(const kilnSymArgs*);
static const kilnSymHasFn kSymHas[] = {
#define KILN_X_ROW(id, name) /* id */ kilnSymHasKernel_##name,
    KILN_DEV_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

extern "C" int kilnSymHasKernel(int dtype, const kilnSymArgs* args) {
  return dtype >= 0 && dtype < (int)(sizeof(kSymHas) / sizeof(kSymHas[0])) && kSymHas[dtype](args);
}

static __global__ void __launch_bounds__(512) symCopyKernel(uint4* dst, const uint4* src, size_t n);

extern "C" int kilnInterpPreload(void) {
  /* The copy-engine form's local copy too: its first launch comes while the call's meeting kernel
   * may still wait for the peers (2 GPUs: loaded lazily there, every such call timed out). */
  cudaFuncAttributes attr;
  int first = (int)cudaFuncGetAttributes(&attr, symCopyKernel);
#define KILN_X_LOAD(id, name)            \
  {                                      \
    int e = kilnInterpPreload_##name();  \
    if (e != 0 && first == 0) first = e; \
  }
  KILN_DEV_DTYPES(KILN_X_LOAD)
#undef KILN_X_LOAD
  return first;
}

/* The local piece of a copy-engine direct call (sym_ce.h), beside the engine's copies to the peers:
 * block j copies range j, each thread 8 packs of 16 bytes in flight. A few blocks suffice (2x H100:
 * 512 MiB out to the peer by the copy engine and 512 MiB locally by 32 blocks at once took
 * 1377 us, the engine's copy alone 1371; with 128 blocks 1480). */
static __global__ void __launch_bounds__(512) symCopyKernel(uint4* dst, const uint4* src, size_t n) {
  const size_t per = (n + gridDim.x - 1) / gridDim.x;
  const size_t lo = (size_t)blockIdx.x * per, hi = lo + per < n ? lo + per : n;
  constexpr int U = 8;
  size_t i = lo + threadIdx.x;
  for (; i + (size_t)(U - 1) * blockDim.x < hi; i += (size_t)U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) v[u] = __ldcg(src + i + (size_t)u * blockDim.x);
#pragma unroll
    for (int u = 0; u < U; u++) dst[i + (size_t)u * blockDim.x] = v[u];
  }
  for (; i < hi; i += blockDim.x) dst[i] = __ldcg(src + i);
}

extern "C" int kilnSymCopyLaunch(void* dst, const void* src, size_t bytes, int blocks, void* stream) {
  if (((uintptr_t)dst | (uintptr_t)src | bytes) % 16 != 0 || blocks < 1) return (int)cudaErrorInvalidValue;
  if (bytes == 0) return 0;
  symCopyKernel<<<blocks, 512, 0, (cudaStream_t)stream>>>((uint4*)dst, (const uint4*)src, bytes / 16);
  return (int)cudaGetLastError();
}
