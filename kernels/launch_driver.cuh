/* Kernel launches through the driver API (kernels/launch_driver.cu), for the launches whose host
 * time a call's latency is made of: one process issuing every GPU from a thread per GPU spent 1.31 us
 * per GPU and round in cuLaunchKernel against 2.18 in the runtime's launch and 1.84 in
 * cudaLaunchKernelEx with programmatic serialization (host_bench, 4x H100, s13 run 1). */
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
extern "C" int kilnLaunchKernel(KilnDriverFn* fn, const void* kernel, unsigned grid, unsigned block, void* stream,
                                int pdl, const void* arg);

#endif /* KILN_KERNELS_LAUNCH_DRIVER_CUH */
