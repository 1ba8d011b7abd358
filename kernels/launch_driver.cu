/* The symmetric kernels' launch (launch_driver.cuh): the driver's cuLaunchKernelEx on a kernel's
 * context-free handle, the runtime's cudaLaunchKernelExC where that path is missing. Host code
 * only, so bench/host_bench builds it too and times exactly this path. */
#include <cuda.h>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "launch_driver.cuh"

/* cuLaunchKernelEx, found through the runtime (the library does not link libcuda); NULL where the
 * driver lacks it. */
typedef CUresult (*DrvLaunchEx)(const CUlaunchConfig*, CUfunction, void**, void**);
static DrvLaunchEx drv_launch_ex(void) {
  static const DrvLaunchEx f = []() -> DrvLaunchEx {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuLaunchKernelEx", &p, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return (DrvLaunchEx)p;
  }();
  return f;
}

/* Whether launches may take the driver's path (kilnLaunchDriverUse). */
static std::atomic<bool> driverOn{true};

extern "C" void kilnLaunchDriverUse(int on) { driverOn.store(on != 0, std::memory_order_relaxed); }

/* The driver's launch (0), or -1 where the driver path is not there (off, no cuLaunchKernelEx, no
 * handle) or refused the launch. */
static int launch_driver(KilnDriverFn* fn, const void* kernel, unsigned grid, unsigned block, void* stream,
                         int pdl, void** params) {
  const DrvLaunchEx launch = driverOn.load(std::memory_order_relaxed) ? drv_launch_ex() : nullptr;
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

extern "C" int kilnLaunchKernel(KilnDriverFn* fn, const void* kernel, unsigned grid, unsigned block,
                                void* stream, int pdl, const void* arg) {
  void* params[] = {const_cast<void*>(arg)}; /* both launches only read it */
  if (launch_driver(fn, kernel, grid, block, stream, pdl, params) == 0) return 0;
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
