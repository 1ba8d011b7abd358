/* Launch table of the interpreter: one instantiation per data type (ids as kilnDataType_t). */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "kiln_dev.h"
#include "launch_driver.cuh"
#include "sym_ce.h"

/* X(id, name) in kilnDataType_t order; the instantiations come from interp_dtype.cu.in. */
#define KILN_DEV_DTYPES(X) \
  X(0, int8) X(1, uint8) X(2, int32) X(3, uint32) X(4, int64) X(5, uint64) X(6, half) \
  X(7, float) X(8, double) X(9, bfloat16) X(10, fp8_e4m3) X(11, fp8_e5m2)

#define KILN_X_DECL(id, name)                                                     \
  extern "C" int kilnInterpLaunch_##name(const kilnDevArgs*, int, void*);         \
  extern "C" int kilnInterpPreload_##name(void);                                  \
  extern "C" int kilnSymLaunch_##name(const kilnSymArgs*, int, void*, int);
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
  if (dtype < 0 || dtype >= (int)(sizeof(kSymLaunch) / sizeof(kSymLaunch[0]))) return (int)cudaErrorInvalidValue;
  return kSymLaunch[dtype](args, threads, stream, pdl);
}

static __global__ void __launch_bounds__(512) symCopyKernel(uint4* dst, const uint4* src, size_t n);

/* cuLaunchKernelEx, found through the runtime (the library does not link libcuda); NULL where the
 * driver lacks it. */
typedef CUresult (*DrvLaunchEx)(const CUlaunchConfig*, CUfunction, void**, void**);
static DrvLaunchEx drvLaunchEx(void) {
  static const DrvLaunchEx f = []() -> DrvLaunchEx {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return (DrvLaunchEx)p;
  }();
  return f;
}

/* The driver's launch (0), or -1 where the driver path is not there (off, no cuLaunchKernelEx, no
 * handle) or refused the launch. */
static int launchDriver(KilnDriverFn* fn, const void* kernel, unsigned grid, unsigned block, void* stream, int pdl,
                        void** params) {
  static const bool off = [] {
    const char* e = getenv("KILN_LAUNCH_DRIVER");
    return e && strcmp(e, "0") == 0;
  }();
  const DrvLaunchEx launch = off ? nullptr : drvLaunchEx();
  if (!launch) return -1;
  /* The kernel's context-free handle (the runtime's CUkernel): the driver launches it in the
   * stream's context, so one handle serves every device and outlives a context's reset. */
  CUfunction f = (CUfunction)fn->k.load(std::memory_order_acquire);
  if (!f) {
    cudaKernel_t k = nullptr;
    if (cudaGetKernel(&k, kernel) != cudaSuccess || !k) {
      (void)cudaGetLastError();
      return -1;
    }
    f = (CUfunction)k;
    fn->k.store((void*)f, std::memory_order_release);
  }
  CUlaunchConfig cfg = {};
  CUlaunchAttribute attr[1];
  cfg.gridDimX = grid;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = block;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = (CUstream)stream;
  if (pdl) {
    attr[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr[0].value.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  return launch(&cfg, f, params, nullptr) == CUDA_SUCCESS ? 0 : -1;
}

extern "C" int kilnLaunchKernel(KilnDriverFn* fn, const void* kernel, unsigned grid, unsigned block, void* stream,
                                int pdl, const void* arg) {
  void* params[] = {const_cast<void*>(arg)}; /* both launches only read it */
  if (launchDriver(fn, kernel, grid, block, stream, pdl, params) == 0) return 0;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(block);
  cfg.stream = (cudaStream_t)stream;
  if (pdl) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  const cudaError_t e = cudaLaunchKernelExC(&cfg, kernel, params);
  if (e != cudaSuccess) (void)cudaGetLastError(); /* not left for the next launch to report */
  return (int)e;
}

extern "C" int kilnInterpPreload(void) {
  /* The copy-engine form's local copy too: its first launch comes while the call's meeting kernel
   * may still wait for the peers (2 GPUs: loaded lazily there, every such call timed out). */
  cudaFuncAttributes attr;
  int first = (int)cudaFuncGetAttributes(&attr, symCopyKernel);
#define KILN_X_LOAD(id, name)                  \
  {                                            \
    int e = kilnInterpPreload_##name();        \
    if (e != 0 && first == 0) first = e;       \
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
