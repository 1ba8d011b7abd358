/*
 * A fake "real NCCL" for the shim's CPU test: a shared library exporting every function of
 * host/shim/shim_api.h that records each call (name and the raw bytes of every argument, in order)
 * instead of doing anything. Functions with outputs the shim reads (version, count, rank, device,
 * new communicators) fill them from the settings below.
 */
#ifndef KILN_FAKE_NCCL_H
#define KILN_FAKE_NCCL_H

#include <stddef.h>
#include <string.h>

#define FAKE_NCCL_VERSION 29901 /* "2.99.1": no real NCCL reports it */
#define FAKE_NCCL_COMM ((ncclComm_t)(uintptr_t)0xfacade00)

typedef struct fakeNcclRecord {
  char name[64]; /* function called */
  size_t nbytes; /* bytes of its arguments, concatenated in order */
  unsigned char bytes[512];
} fakeNcclRecord;

/* The library keeps the last FAKE_NCCL_HISTORY calls: fakeNcclHistory[i % FAKE_NCCL_HISTORY] for
 * call i (0-based), fakeNcclCalls calls so far. */
#define FAKE_NCCL_HISTORY 32

/* Appends the raw bytes of one argument to a record. */
static inline void fakeNcclAppend(fakeNcclRecord* r, const void* p, size_t n) {
  if (r->nbytes + n <= sizeof r->bytes) memcpy(r->bytes + r->nbytes, p, n);
  r->nbytes += n;
}

/* FAKE_NCCL_EACH((a, b, c)) -> appends a, b, c to *fakeRec (zero to 8 arguments). */
#define FAKE_NCCL_NARGS(...) FAKE_NCCL_NARGS_(_ __VA_OPT__(, ) __VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define FAKE_NCCL_NARGS_(_, a1, a2, a3, a4, a5, a6, a7, a8, N, ...) N
#define FAKE_NCCL_CAT(a, b) FAKE_NCCL_CAT_(a, b)
#define FAKE_NCCL_CAT_(a, b) a##b
#define FAKE_NCCL_EACH(args) FAKE_NCCL_EACH_ args
#define FAKE_NCCL_EACH_(...) FAKE_NCCL_CAT(FAKE_NCCL_E, FAKE_NCCL_NARGS(__VA_ARGS__))(__VA_ARGS__)
#define FAKE_NCCL_A(x) fakeNcclAppend(fakeRec, &(x), sizeof(x));
#define FAKE_NCCL_E0()
#define FAKE_NCCL_E1(a) FAKE_NCCL_A(a)
#define FAKE_NCCL_E2(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E1(__VA_ARGS__)
#define FAKE_NCCL_E3(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E2(__VA_ARGS__)
#define FAKE_NCCL_E4(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E3(__VA_ARGS__)
#define FAKE_NCCL_E5(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E4(__VA_ARGS__)
#define FAKE_NCCL_E6(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E5(__VA_ARGS__)
#define FAKE_NCCL_E7(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E6(__VA_ARGS__)
#define FAKE_NCCL_E8(a, ...) FAKE_NCCL_A(a) FAKE_NCCL_E7(__VA_ARGS__)

#endif /* KILN_FAKE_NCCL_H */
