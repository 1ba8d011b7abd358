/* Counting GPUs for the GPU suites (tests/gpu/gpu_common.c). */
#ifndef KILN_TESTS_GPU_COUNT_H
#define KILN_TESTS_GPU_COUNT_H

/* Counts the visible GPUs in a forked child, so that no CUDA state exists in a process that
 * forks later (Criterion runs each test in a child). */
int gpu_count_in_child(void);

#endif
