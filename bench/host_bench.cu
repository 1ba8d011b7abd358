/*
 * host_bench: what one collective call costs on the host, per CUDA runtime call, in the model
 * where one thread drives every GPU of the node (a loop over devices per call). Each row is the
 * mean over --iters rounds of the loop, divided by the number of GPUs: the host time one GPU adds
 * to a call. Streams are non-blocking, kernels are empty (grid 4 x 512, kiln's argument size), so
 * the GPU never holds the host back.
 *   host_bench [--iters N] [--gpus N]
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bench_check.h"
#include "launch_driver.cuh"

/* As large as kiln's kernel arguments (kilnDevArgs), so launches pass the same bytes. */
struct Args {
  char bytes[256];
};

__global__ void emptyKernel(Args a) {
  if (a.bytes[0] == 42 && threadIdx.x == 1023) a.bytes[1] = 0; /* never true; keeps the argument live */
}

struct SmallArgs {
  void* p;
  unsigned long long n;
};

__global__ void emptySmallKernel(SmallArgs a) {
  if (a.n == 42 && threadIdx.x == 1023) *(int*)a.p = 0; /* never true */
}

#define CU_CHECK(x)                                                                            \
  do {                                                                                         \
    CUresult r_ = (x);                                                                         \
    if (r_ != CUDA_SUCCESS) {                                                                  \
      fprintf(stderr, "host_bench: %s:%d %s: CUresult %d\n", __FILE__, __LINE__, #x, (int)r_); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* The driver entry points the driver-API row uses, found through the runtime (linking
 * libcuda would keep the program from starting, and from saying "no GPU", where there is none). */
static CUresult (*drvCtxGetCurrent)(CUcontext*);
static CUresult (*drvCtxSetCurrent)(CUcontext);
static CUresult (*drvLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream, void**, void**);

static void driver_entry_points(void) {
  struct {
    const char* name;
    void** fn;
  } want[] = {{"cuCtxGetCurrent", (void**)&drvCtxGetCurrent},
              {"cuCtxSetCurrent", (void**)&drvCtxSetCurrent},
              {"cuLaunchKernel", (void**)&drvLaunchKernel}};
  for (auto& w : want) {
    cudaDriverEntryPointQueryResult st;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion(w.name, w.fn, 12000, cudaEnableDefault, &st));
    if (st != cudaDriverEntryPointSuccess) {
      fprintf(stderr, "host_bench: driver entry point %s not found\n", w.name);
      exit(1);
    }
  }
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

struct Gpu {
  int dev;
  cudaStream_t s, s2;
  cudaEvent_t ev;
  CUcontext ctx;
  CUfunction fn; /* emptyKernel on this device (driver API) */
};
static KilnDriverFn gKilnFn; /* emptyKernel's handle for kiln's launch (kilnLaunchKernel) */

enum What {
  SET_DEVICE,
  GET_DEVICE,
  IS_CAPTURING,
  STREAM_ID,
  EVENT_RECORD,
  WAIT_EVENT,
  LAUNCH,
  KILN_PATH,
  LAUNCH_SMALL_ARGS,
  LAUNCH_ONE_WARP,
  LAUNCH_NO_SWITCH,
  LAUNCH_DRIVER,
  LAUNCH_THREADS,
  THREADS_DRIVER,
  THREADS_PDL,
  THREADS_KILN,
  THREADS_KILN_NO_EVENT,
  THREADS_KILN_DRIVER,
  THREADS_KILN_DRIVER_EVENT,
  NWHAT
};
static const char* kName[NWHAT] = {"cudaSetDevice (switch)",
                                   "cudaGetDevice",
                                   "cudaStreamIsCapturing",
                                   "cudaStreamGetId",
                                   "cudaEventRecord",
                                   "cudaStreamWaitEvent",
                                   "kernel launch",
                                   "kilnRun's CUDA calls",
                                   "launch, 16 B arguments",
                                   "launch, 1 block x 32",
                                   "launch, device 0 only",
                                   "cuLaunchKernel+ctx",
                                   "launch, thread per GPU",
                                   "cuLaunchKernel, thread/GPU",
                                   "launch PDL, thread/GPU",
                                   "kiln's calls, thread/GPU",
                                   "kiln's, no event, thr/GPU",
                                   "driver, no event, thr/GPU",
                                   "kiln's calls (driver), t/G"};
static bool is_launch(int w) { return w == LAUNCH || w == KILN_PATH || w >= LAUNCH_SMALL_ARGS; }
static bool threaded(int w) { return w >= LAUNCH_THREADS; }

/* The thread rows: GPU 0 issues from the calling thread, every other GPU from its own thread
 * (spinning on a round counter), and the round ends when all have issued: the host time of a
 * round when the GPUs' calls overlap. What a GPU issues per round: */
static void issue_threaded(Gpu& x, What w, const Args& a) {
  switch (w) {
    case THREADS_DRIVER: {
      void* params[] = {(void*)&a};
      CU_CHECK(drvLaunchKernel(x.fn, 4, 1, 1, 512, 1, 1, 0, (CUstream)x.s, params, nullptr));
    } break;
    case THREADS_PDL:
    case THREADS_KILN:
    case THREADS_KILN_NO_EVENT: { /* the runtime API's launch with PDL (kilnLaunchKernel's fallback) */
      unsigned long long id;
      if (w != THREADS_PDL) CUDA_CHECK(cudaStreamGetId(x.s, &id));
      cudaLaunchConfig_t cfg = {};
      cudaLaunchAttribute attr[1];
      cfg.gridDim = dim3(4);
      cfg.blockDim = dim3(512);
      cfg.stream = x.s;
      attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attr[0].val.programmaticStreamSerializationAllowed = 1;
      cfg.attrs = attr;
      cfg.numAttrs = 1;
      CUDA_CHECK(cudaLaunchKernelEx(&cfg, emptyKernel, a));
      if (w == THREADS_KILN) CUDA_CHECK(cudaEventRecord(x.ev, x.s));
    } break;
    case THREADS_KILN_DRIVER:
    case THREADS_KILN_DRIVER_EVENT: { /* kiln's calls: the stream's id, kiln's launch
                                       * (kilnLaunchKernel: the driver's, with PDL), the event */
      unsigned long long id;
      CUDA_CHECK(cudaStreamGetId(x.s, &id));
      CUDA_CHECK((cudaError_t)kilnLaunchKernel(&gKilnFn, (const void*)emptyKernel, 4, 512, x.s, 1, &a));
      if (w == THREADS_KILN_DRIVER_EVENT) CUDA_CHECK(cudaEventRecord(x.ev, x.s));
    } break;
    default: emptyKernel<<<4, 512, 0, x.s>>>(a); break;
  }
}

static std::atomic<long> gRound{0}, gDone{0};
static std::atomic<bool> gStop{false};
static void worker(Gpu* x, What w, const Args* a, long seen) {
  CUDA_CHECK(cudaSetDevice(x->dev));
  while (!gStop.load(std::memory_order_acquire)) {
    long r = gRound.load(std::memory_order_acquire);
    if (r == seen) continue;
    seen = r;
    issue_threaded(*x, w, *a);
    CUDA_CHECK(cudaGetLastError());
    gDone.fetch_add(1, std::memory_order_acq_rel);
  }
}

/* One round: every GPU once. */
static void round(std::vector<Gpu>& g, What w, const Args& a) {
  if (threaded(w)) {
    long want = gDone.load(std::memory_order_acquire) + (long)g.size() - 1;
    gRound.fetch_add(1, std::memory_order_acq_rel);
    CUDA_CHECK(cudaSetDevice(g[0].dev));
    issue_threaded(g[0], w, a);
    while (gDone.load(std::memory_order_acquire) < want) {}
    return;
  }
  for (Gpu& x : g) {
    switch (w) {
      case SET_DEVICE: CUDA_CHECK(cudaSetDevice(x.dev)); break;
      case GET_DEVICE: {
        int d;
        CUDA_CHECK(cudaGetDevice(&d));
      } break;
      case IS_CAPTURING: {
        cudaStreamCaptureStatus st;
        CUDA_CHECK(cudaStreamIsCapturing(x.s, &st));
      } break;
      case STREAM_ID: {
        unsigned long long id;
        CUDA_CHECK(cudaStreamGetId(x.s, &id));
      } break;
      case EVENT_RECORD:
        CUDA_CHECK(cudaSetDevice(x.dev));
        CUDA_CHECK(cudaEventRecord(x.ev, x.s));
        break;
      case WAIT_EVENT:
        CUDA_CHECK(cudaSetDevice(x.dev));
        CUDA_CHECK(cudaStreamWaitEvent(x.s2, x.ev, 0));
        break;
      case LAUNCH:
        CUDA_CHECK(cudaSetDevice(x.dev));
        emptyKernel<<<4, 512, 0, x.s>>>(a);
        break;
      case KILN_PATH: { /* what kilnRun does per call: the bench's loop has switched device already */
        CUDA_CHECK(cudaSetDevice(x.dev));
        int d;
        CUDA_CHECK(cudaGetDevice(&d));
        cudaStreamCaptureStatus st;
        CUDA_CHECK(cudaStreamIsCapturing(x.s, &st));
        CUDA_CHECK(cudaStreamWaitEvent(x.s, x.ev, 0));
        emptyKernel<<<4, 512, 0, x.s>>>(a);
        CUDA_CHECK(cudaEventRecord(x.ev, x.s));
      } break;
      case LAUNCH_SMALL_ARGS: {
        CUDA_CHECK(cudaSetDevice(x.dev));
        SmallArgs sa = {nullptr, 0};
        emptySmallKernel<<<4, 512, 0, x.s>>>(sa);
      } break;
      case LAUNCH_ONE_WARP:
        CUDA_CHECK(cudaSetDevice(x.dev));
        emptyKernel<<<1, 32, 0, x.s>>>(a);
        break;
      case LAUNCH_NO_SWITCH: /* every launch of the round on GPU 0: the cost without switching */
        emptyKernel<<<4, 512, 0, g[0].s>>>(a);
        break;
      case LAUNCH_DRIVER: {
        CU_CHECK(drvCtxSetCurrent(x.ctx));
        void* params[] = {(void*)&a};
        CU_CHECK(drvLaunchKernel(x.fn, 4, 1, 1, 512, 1, 1, 0, (CUstream)x.s, params, nullptr));
      } break;
      default: break;
    }
  }
}

int main(int argc, char** argv) {
  int iters = 20000, ngpu = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc)
      iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--gpus") && i + 1 < argc)
      ngpu = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: host_bench [--iters N] [--gpus N]\n");
      return 2;
    }
  }
  int have = 0;
  if (cudaGetDeviceCount(&have) != cudaSuccess || have < 1) {
    printf("host_bench: no GPU; skipped\n");
    return 0;
  }
  if (ngpu <= 0 || ngpu > have) ngpu = have;
  if (iters < 100) iters = 100;
  driver_entry_points();
  std::vector<Gpu> g(ngpu);
  for (int i = 0; i < ngpu; i++) {
    g[i].dev = i;
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[i].s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[i].s2, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&g[i].ev, cudaEventDisableTiming));
    CUDA_CHECK(cudaFree(0));
    CU_CHECK(drvCtxGetCurrent(&g[i].ctx));
    cudaFunction_t f;
    CUDA_CHECK(cudaGetFuncBySymbol(&f, (const void*)emptyKernel));
    g[i].fn = (CUfunction)f;
  }
  CUDA_CHECK(cudaSetDevice(0));
  Args a;
  memset(&a, 0, sizeof(a));
  printf("# host_bench: %d GPUs, one thread, %d rounds; microseconds per GPU per call\n", ngpu, iters);
  printf("%-26s %10s\n", "call", "us/GPU");
  for (int w = 0; w < NWHAT; w++) {
    /* The thread rows' launchers spin: only for their row, not while the others are measured */
    std::vector<std::thread> workers;
    if (threaded(w)) {
      gStop.store(false, std::memory_order_release);
      for (int i = 1; i < ngpu; i++) workers.emplace_back(worker, &g[i], (What)w, &a, gRound.load());
    }
    CUDA_CHECK(cudaSetDevice(0));                       /* LAUNCH_NO_SWITCH launches on GPU 0's stream */
    for (int i = 0; i < 200; i++) round(g, (What)w, a); /* warm up */
    for (Gpu& x : g) {
      CUDA_CHECK(cudaSetDevice(x.dev));
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    CUDA_CHECK(cudaSetDevice(0));
    double t0 = now_us();
    for (int i = 0; i < iters; i++) {
      round(g, (What)w, a);
      /* Keep the queues short: a full launch queue would block the host and measure the GPU. */
      if (is_launch(w) && i % 256 == 255) {
        for (Gpu& x : g) {
          CUDA_CHECK(cudaSetDevice(x.dev));
          CUDA_CHECK(cudaStreamSynchronize(x.s));
        }
        CUDA_CHECK(cudaSetDevice(0));
      }
    }
    double t1 = now_us();
    CUDA_CHECK(cudaGetLastError()); /* this thread's launches of the row */
    printf("%-26s %10.3f\n", kName[w], (t1 - t0) / iters / ngpu);
    gStop.store(true, std::memory_order_release);
    for (std::thread& t : workers) t.join();
    for (Gpu& x : g) {
      CUDA_CHECK(cudaSetDevice(x.dev));
      CUDA_CHECK(cudaDeviceSynchronize());
    }
  }
  return 0;
}
