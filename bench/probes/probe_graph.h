/*
 * What bench/probes/pdl_probe.cu and bench/probes/sym_probe.cu share (CUDA calls checked by
 * bench/bench_check.h's CUDA_CHECK): peer access among the GPUs, a graph of K launches captured on
 * a stream, and the time of ITERS launches of every GPU's graph back to back (no events between
 * them), and the OR of every GPU's error word. At most 64 GPUs.
 */
#ifndef KILN_SCRIPTS_PROBE_GRAPH_H
#define KILN_SCRIPTS_PROBE_GRAPH_H

#include "../bench_check.h" /* CUDA_CHECK */

/* GPU g (the current device) reaches every other of the first n. */
static void probePeers(int g, int n) {
  for (int h = 0; h < n; h++)
    if (h != g) {
      cudaError_t e = cudaDeviceEnablePeerAccess(h, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(e);
      cudaGetLastError();
    }
}

/* A graph of K launches of kernel(arg) with grid x block, each with programmatic stream
 * serialization when pdl, captured on st (of the current device). */
template <typename A> static cudaGraphExec_t probeGraph(cudaStream_t st, int K, void (*kernel)(A),
                                                        const A& arg, unsigned grid, unsigned block,
                                                        int pdl) {
  cudaGraph_t graph;
  cudaGraphExec_t ex;
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < K; i++) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute at[1];
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.stream = st;
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = pdl;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, arg));
  }
  CUDA_CHECK(cudaStreamEndCapture(st, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&ex, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));
  return ex;
}

/* Every GPU g < n launches ex[g] on st[g] 20 times (warm-up), then iters times between two events;
 * returns the slowest GPU's milliseconds over the iters launches. */
static float probeTime(int n, const cudaGraphExec_t* ex, const cudaStream_t* st, int iters) {
  cudaEvent_t e0[64], e1[64];
  for (int w = 0; w < 20; w++)
    for (int g = 0; g < n; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaGraphLaunch(ex[g], st[g]));
    }
  for (int g = 0; g < n; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    CUDA_CHECK(cudaEventCreate(&e0[g]));
    CUDA_CHECK(cudaEventCreate(&e1[g]));
    CUDA_CHECK(cudaStreamSynchronize(st[g]));
    CUDA_CHECK(cudaEventRecord(e0[g], st[g]));
  }
  for (int i = 0; i < iters; i++)
    for (int g = 0; g < n; g++) {
      CUDA_CHECK(cudaSetDevice(g));
      CUDA_CHECK(cudaGraphLaunch(ex[g], st[g]));
    }
  float worst = 0;
  for (int g = 0; g < n; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    CUDA_CHECK(cudaEventRecord(e1[g], st[g]));
    CUDA_CHECK(cudaEventSynchronize(e1[g]));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0[g], e1[g]));
    if (ms > worst) worst = ms;
    CUDA_CHECK(cudaEventDestroy(e0[g]));
    CUDA_CHECK(cudaEventDestroy(e1[g]));
  }
  return worst;
}

/* The OR of GPU g's error word words[g] (device memory) over GPUs 0..n-1. */
static int probeErrors(int n, int* const* words) {
  int all = 0;
  for (int g = 0; g < n; g++) {
    CUDA_CHECK(cudaSetDevice(g));
    int e = 0;
    CUDA_CHECK(cudaMemcpy(&e, words[g], sizeof(int), cudaMemcpyDeviceToHost));
    all |= e;
  }
  return all;
}

#endif /* KILN_SCRIPTS_PROBE_GRAPH_H */
