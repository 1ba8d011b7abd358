/* The benchmarks' exit-on-failure check of a CUDA runtime call: prints the program's name, file,
 * line, call and CUDA's error text, and exits with status 1. */
#ifndef KILN_BENCH_CHECK_H
#define KILN_BENCH_CHECK_H

#include <cuda_runtime.h>
#include <errno.h> /* program_invocation_short_name (GNU; g++ defines _GNU_SOURCE) */
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(x)                                                                              \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "%s: %s:%d %s: %s\n", program_invocation_short_name, __FILE__, __LINE__, #x, \
              cudaGetErrorString(e_));                                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

#endif
