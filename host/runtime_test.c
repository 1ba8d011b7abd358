/* Hooks for the runtime's tests (runtime_test.h). */
#include "runtime_test.h"

#include <stdlib.h>
#include <string.h>

#include "kiln_dev.h"
#include "runtime_internal.h"
#include "sym_ce.h"

void kilnTestCommRead(kilnComm_t c, kilnTestCommView* out) {
  memset(out, 0, sizeof *out);
  if (!c) return;
  out->rank = c->rank;
  out->nranks = c->nranks;
  out->cfg = c->cfg;
  out->counts = c->state;
  out->winBytes = c->winBytes;
  out->symStageBase = c->symStageBase;
  out->symHalf = c->symHalf;
  out->symLLBase = c->symLLBase;
  out->symLLHalf = c->symLLHalf;
  out->symLL128Base = c->symLL128Base;
  out->symLL128Half = c->symLL128Half;
  out->symPdl = c->symPdl;
  out->symEarlyTrigger = c->symEarlyTrigger;
  out->inClique = c->clique != NULL;
  out->symPeerCalls = c->symPeerCalls;
  out->symPeerForm = c->symPeerForm;
  out->symState = c->symState;
  out->nwindows = c->nuwins;
}

char* kilnTestCommFifo(kilnComm_t c, int src, int chan) { return c->win + kilnFifoOff(c, src, chan); }

ncclWindow_t kilnTestCommWindowAt(kilnComm_t c, int i) {
  return c && i >= 0 && i < c->nuwins ? c->uwins[i].win : NULL;
}

kilnComm_t kilnTestCommHost(int nranks, int rank, size_t symHalf) {
  struct kilnComm* c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->rank = rank;
  c->dev = rank;
  c->nsm = 132;
  c->nnodes = 1;
  kilnTestCommSet(c, nranks, symHalf);
  return c;
}

void kilnTestCommSet(kilnComm_t c, int nranks, size_t symHalf) {
  c->nranks = nranks;
  c->symHalf = symHalf;
}

void kilnTestCommSetSms(kilnComm_t c, int nsm) { c->nsm = nsm; }

void kilnTestCommConfigure(kilnComm_t c) { kilnSymConfigure(c); }

kilnResult_t kilnTestCommWindowAdd(kilnComm_t c, ncclWindow_t win, char* base, size_t bytes,
                                   char* const* peers) {
  if (c->nuwins == c->capuwins) {
    const int cap = c->capuwins ? 2 * c->capuwins : 4;
    struct kilnUserWindow* n = realloc(c->uwins, (size_t)cap * sizeof *n);
    if (!n) return kilnSetError(KILN_ERR_NO_MEMORY, "kilnTestCommWindowAdd: out of memory");
    c->uwins = n;
    c->capuwins = cap;
  }
  char** mine = calloc((size_t)c->nranks, sizeof(char*));
  if (!mine) return kilnSetError(KILN_ERR_NO_MEMORY, "kilnTestCommWindowAdd: out of memory");
  for (int q = 0; peers && q < c->nranks; q++) mine[q] = peers[q];
  c->uwins[c->nuwins++] = (struct kilnUserWindow){win, base, bytes, mine};
  return KILN_SUCCESS;
}

kilnResult_t kilnTestCliqueHost(int n, char* const* wins, size_t stageBase, size_t symHalf, kilnComm_t* out) {
  if (n < 1 || n > KILN_CLIQUE_MAX)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnTestCliqueHost: %d ranks", n);
  struct kilnClique* k = calloc(1, sizeof *k);
  if (!k) return kilnSetError(KILN_ERR_NO_MEMORY, "kilnTestCliqueHost: out of memory");
  k->n = n;
  for (int r = 0; r < n; r++) {
    struct kilnComm* c = calloc(1, sizeof *c);
    char** peers = calloc((size_t)n, sizeof(char*));
    if (!c || !peers) {
      free(c);
      free(peers);
      for (int q = 0; q < r; q++) kilnTestCommFree(out[q]);
      if (r == 0) free(k);
      return kilnSetError(KILN_ERR_NO_MEMORY, "kilnTestCliqueHost: out of memory");
    }
    memcpy(peers, wins, (size_t)n * sizeof(char*));
    c->rank = r;
    c->dev = r;
    c->nsm = 132;
    c->win = wins[r];
    c->peers = peers;
    c->symStageBase = stageBase;
    c->clique = k;
    kilnTestCommSet(c, n, symHalf);
    kilnSymConfigure(c);
    k->members[r] = c;
    k->refs++;
    out[r] = c;
  }
  return KILN_SUCCESS;
}

void kilnTestCliqueMember(kilnComm_t c, bool member) {
  if (c && c->clique) c->clique->members[c->rank] = member ? c : NULL;
}

void kilnTestCommFree(kilnComm_t c) {
  if (!c) return;
  for (int i = 0; i < c->nuwins; i++) free(c->uwins[i].peers);
  free(c->uwins);
  free(c->peers);
  struct kilnClique* k = c->clique;
  if (k) {
    if (k->members[c->rank] == c) k->members[c->rank] = NULL;
    if (--k->refs == 0) free(k);
  }
  free(c);
}

int kilnTestSymCopy(void* dst, const void* src, size_t bytes, int blocks, void* stream) {
  return kilnSymCopyLaunch(dst, src, bytes, blocks, stream);
}

bool kilnTestSymHasKernel(int dtype, const void* args) {
  return kilnSymHasKernel(dtype, (const kilnSymArgs*)args) != 0;
}
