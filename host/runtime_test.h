/*
 * Hooks for the runtime's tests (tests/gpu/): what a test sets up or reads that the API does not
 * give, so that no test writes into struct kilnComm. Exported from libkiln for kiln's own test
 * binaries (KILN_INTERNAL); not part of the API.
 */
#ifndef KILN_HOST_RUNTIME_TEST_H
#define KILN_HOST_RUNTIME_TEST_H

#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/runtime.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the tests read of a communicator (kilnTestCommRead). */
typedef struct kilnTestCommView {
  int rank, nranks;
  kilnCommConfig cfg; /* the settings it was made with */
  const void* counts; /* device: the plans' slot counts, sendCount[nranks * maxChannels], then
                             * recvCount[nranks * maxChannels] (uint64_t each) */
  size_t winBytes;    /* its window */
  /* The symmetric kernels' staging: the flag form's two halves, then the line forms' */
  size_t symStageBase, symHalf, symLLBase, symLLHalf, symLL128Base, symLL128Half;
  bool symPdl;           /* KILN_SYM_PDL as read at creation */
  bool symEarlyTrigger;  /* KILN_SYM_PDL_TRIGGER as read at creation */
  bool inClique;         /* made a clique by kilnCommCreateAll */
  uint64_t symPeerCalls; /* grouped calls that went direct into the clique's buffers */
  int symPeerForm;       /* the direct form of the last of them (kernels/sym_ce.h) */
  const void* symState;  /* device: the symmetric calls' sequence number (a uint64_t) */
  int nwindows;          /* windows added (kilnCommWindowCount) */
} kilnTestCommView;
KILN_INTERNAL void kilnTestCommRead(kilnComm_t c, kilnTestCommView* out);
/* Where the FIFO of connection src -> this rank on channel chan starts (device memory: nslots
 * slots of cfg.slotBytes). */
KILN_INTERNAL char* kilnTestCommFifo(kilnComm_t c, int src, int chan);
/* The i-th of c's added windows in the order kept (oldest first), or NULL. */
KILN_INTERNAL ncclWindow_t kilnTestCommWindowAt(kilnComm_t c, int i);

/* A communicator's host part alone, for tests of the host's decisions without a GPU: rank `rank`
 * of nranks on GPU `rank` of 132 SMs, staging halves of symHalf bytes at offset 0 of a window
 * that does not exist (kilnSymSelect, kilnSymFits, kilnSymIsDirect, kilnSymRun's argument checks
 * and the window functions take it; nothing may launch on it). The symmetric kernels' settings
 * are not read yet: kilnTestCommConfigure does. NULL when out of memory. Freed with
 * kilnTestCommFree. */
KILN_INTERNAL kilnComm_t kilnTestCommHost(int nranks, int rank, size_t symHalf);
/* Gives a host communicator nranks ranks and staging halves of symHalf bytes (the settings stay
 * as read last). */
KILN_INTERNAL void kilnTestCommSet(kilnComm_t c, int nranks, size_t symHalf);
/* Gives a host communicator's rank nsm SMs to itself (a GPU's share: the blocks a call takes). */
KILN_INTERNAL void kilnTestCommSetSms(kilnComm_t c, int nsm);
/* Reads the symmetric kernels' settings from the environment, as a communicator's creation does,
 * and sizes the line forms' staging after the flag form's halves. */
KILN_INTERNAL void kilnTestCommConfigure(kilnComm_t c);
/* Adds a window to a host communicator as kilnCommWindowAdd would once it has read the peers'
 * addresses: [base, base + bytes) here, peers[q] its base on rank q (copied; NULL: all NULL).
 * Addresses are never dereferenced. */
KILN_INTERNAL kilnResult_t kilnTestCommWindowAdd(kilnComm_t c, ncclWindow_t win, char* base, size_t bytes,
                                                 char* const* peers);
/* n host communicators (ranks 0 .. n-1 of n, staging halves of symHalf bytes at stageBase, the
 * settings read) made one clique, as kilnCommCreateAll makes one: rank q's window at wins[q] as
 * every rank maps it. */
KILN_INTERNAL kilnResult_t kilnTestCliqueHost(int n, char* const* wins, size_t stageBase, size_t symHalf,
                                              kilnComm_t* out);
/* Takes c out of its clique's members, as freeing it does (member false), or puts it back. */
KILN_INTERNAL void kilnTestCliqueMember(kilnComm_t c, bool member);
/* Frees a host communicator (of kilnTestCommHost or kilnTestCliqueHost; a clique's last member
 * frees the clique). */
KILN_INTERNAL void kilnTestCommFree(kilnComm_t c);

/* Puts x's state as after `calls` calls (every block's call sequence number, its progress word as
 * the last call left it, the count of finished blocks; exec.c), so that a test reaches the numbers
 * of a long run (past 2^32 calls) in a few. Waits for the communicator's last call. */
KILN_INTERNAL kilnResult_t kilnExecSetCalls(kilnExec_t x, uint64_t calls);

/* The symmetric kernels' local copy (kernels/sym_ce.h, kilnSymCopyLaunch): bytes from src to dst
 * (16-byte aligned, a multiple of 16) by `blocks` blocks on `stream`. Returns a cudaError_t value. */
KILN_INTERNAL int kilnTestSymCopy(void* dst, const void* src, size_t bytes, int blocks, void* stream);
/* Whether the device code has a symmetric kernel for a call of this geometry (kernels/launch.cu,
 * kilnSymHasKernel); args is a kilnSymArgs (kernels/kiln_dev.h). */
KILN_INTERNAL bool kilnTestSymHasKernel(int dtype, const void* args);

#ifdef __cplusplus
}
#endif
#endif /* KILN_HOST_RUNTIME_TEST_H */
