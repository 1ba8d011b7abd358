/* Kernel launches through the driver API (kernels/launch_driver.cu), for the launches whose host
 * time a call's latency is made of: one process issuing every GPU from a thread per GPU spends less
 * host time in cuLaunchKernel than in the runtime's launches.
 * 4x H100, host_bench, per GPU and round: cuLaunchKernel 1.31 us, cudaLaunchKernelEx with PDL 1.84 (2026-11-27). */
#ifndef KILN_KERNELS_LAUNCH_DRIVER_CUH
#define KILN_KERNELS_LAUNCH_DRIVER_CUH

#include <atomic>

/* One kernel's context-free driver handle (a CUkernel), found at its first launch (static
 * storage: null until then). */
struct KilnDriverFn {
  std::atomic<void*> k;
};

/* Launches `kernel` (its host stub, one argument: `arg` points at it) with `grid` blocks of `block`
 * threads on `stream` (in the stream's context), with programmatic stream serialization when pdl:
 * through the driver (cuLaunchKernelEx on the kernel's context-free handle, found through the
 * runtime's entry points, so no link to libcuda; KILN_LAUNCH_DRIVER=0: never), else, where that
 * path is missing or refuses, through the runtime (cudaLaunchKernelExC), whose error says why a
 * launch fails. Returns 0 or that cudaError_t. */
extern "C" int kilnLaunchKernel(KilnDriverFn* fn, const void* kernel, unsigned grid, unsigned block,
                                void* stream, int pdl, const void* arg);

#endif /* KILN_KERNELS_LAUNCH_DRIVER_CUH */
