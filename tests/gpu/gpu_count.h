/* Counting GPUs for the GPU suites (tests/gpu/gpu_common.c). */
#ifndef KILN_TESTS_GPU_COUNT_H
#define KILN_TESTS_GPU_COUNT_H

/* Counts the visible GPUs in a forked child, so that no CUDA state exists in a process that
 * forks later (Criterion runs each test in a child). */
int gpu_count_in_child(void);
/* Why the last count was 0 other than a machine without GPUs (no driver, no device): a CUDA
 * error's name, or "" when there is nothing to say. */
const char* gpu_count_problem(void);
/* For a suite's PRE_ALL hook: counts the GPUs, prints any problem, and when
 * KILN_TEST_REQUIRE_GPUS is set (GPU machines) exits the runner with status 1 if fewer than
 * `need` GPUs are usable or CUDA failed, so that a broken GPU setup cannot pass as "skipped". */
int gpu_count_for_suite(const char* suite, int need);

#endif
