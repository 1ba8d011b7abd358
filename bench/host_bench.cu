/*
 * host_bench: what one collective call costs on the host, per CUDA runtime call, in the model
 * where one thread drives every GPU of the node (a loop over devices per call). Each row is the
 * mean over --iters rounds of the loop, divided by the number of GPUs: the host time one GPU adds
 * to a call. Streams are non-blocking, kernels are empty (grid 4 x 512, kiln's argument size), so
 * the GPU never holds the host back.
 *   host_bench [--iters N] [--gpus N]
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#define CUDA_CHECK(x)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "host_bench: %s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

/* As large as kiln's kernel arguments (kilnDevArgs), so launches pass the same bytes. */
struct Args {
  char bytes[256];
};

__global__ void emptyKernel(Args a) {
  if (a.bytes[0] == 42 && threadIdx.x == 1023) a.bytes[1] = 0; /* never true; keeps the argument live */
}

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

struct Gpu {
  int dev;
  cudaStream_t s, s2;
  cudaEvent_t ev;
};

enum What { SET_DEVICE, GET_DEVICE, IS_CAPTURING, STREAM_ID, EVENT_RECORD, WAIT_EVENT, LAUNCH, KILN_PATH, NWHAT };
static const char* kName[NWHAT] = {
    "cudaSetDevice (switch)", "cudaGetDevice", "cudaStreamIsCapturing", "cudaStreamGetId",
    "cudaEventRecord", "cudaStreamWaitEvent", "kernel launch", "kilnRun's CUDA calls"};

/* One round: every GPU once. */
static void round(std::vector<Gpu>& g, What w, const Args& a) {
  for (Gpu& x : g) {
    switch (w) {
      case SET_DEVICE: CUDA_CHECK(cudaSetDevice(x.dev)); break;
      case GET_DEVICE: { int d; CUDA_CHECK(cudaGetDevice(&d)); } break;
      case IS_CAPTURING: { cudaStreamCaptureStatus st; CUDA_CHECK(cudaStreamIsCapturing(x.s, &st)); } break;
      case STREAM_ID: { unsigned long long id; CUDA_CHECK(cudaStreamGetId(x.s, &id)); } break;
      case EVENT_RECORD: CUDA_CHECK(cudaSetDevice(x.dev)); CUDA_CHECK(cudaEventRecord(x.ev, x.s)); break;
      case WAIT_EVENT: CUDA_CHECK(cudaSetDevice(x.dev)); CUDA_CHECK(cudaStreamWaitEvent(x.s2, x.ev, 0)); break;
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
      default: break;
    }
  }
}

int main(int argc, char** argv) {
  int iters = 20000, ngpu = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--gpus") && i + 1 < argc) ngpu = atoi(argv[++i]);
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
  std::vector<Gpu> g(ngpu);
  for (int i = 0; i < ngpu; i++) {
    g[i].dev = i;
    CUDA_CHECK(cudaSetDevice(i));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[i].s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[i].s2, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&g[i].ev, cudaEventDisableTiming));
    CUDA_CHECK(cudaFree(0));
  }
  Args a;
  memset(&a, 0, sizeof(a));
  printf("# host_bench: %d GPUs, one thread, %d rounds; microseconds per GPU per call\n", ngpu, iters);
  printf("%-26s %10s\n", "call", "us/GPU");
  for (int w = 0; w < NWHAT; w++) {
    for (int i = 0; i < 200; i++) round(g, (What)w, a); /* warm up */
    for (Gpu& x : g) { CUDA_CHECK(cudaSetDevice(x.dev)); CUDA_CHECK(cudaDeviceSynchronize()); }
    double t0 = nowUs();
    for (int i = 0; i < iters; i++) {
      round(g, (What)w, a);
      /* Keep the queues short: a full launch queue would block the host and measure the GPU. */
      if ((w == LAUNCH || w == KILN_PATH) && i % 256 == 255)
        for (Gpu& x : g) { CUDA_CHECK(cudaSetDevice(x.dev)); CUDA_CHECK(cudaStreamSynchronize(x.s)); }
    }
    double t1 = nowUs();
    printf("%-26s %10.3f\n", kName[w], (t1 - t0) / iters / ngpu);
    for (Gpu& x : g) { CUDA_CHECK(cudaSetDevice(x.dev)); CUDA_CHECK(cudaDeviceSynchronize()); }
  }
  return 0;
}
