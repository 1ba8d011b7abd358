/*
 * The NCCL calls the runtime makes between nodes (host/internode_nccl.h), on the CPU against the
 * recording fake NCCL (tests/shim/fake_nccl.c, linked in place of NCCL): for the ring and direct
 * plans of every collective on 2x2, 2x1 and 4x1 nodes, each rank's group of each phase is
 * ncclGroupStart, then ncclSend/ncclRecv with exactly the buffer address, count, type, peer,
 * communicator and stream kilnPhasesP2pCalls says, in its order, then ncclGroupEnd; every send
 * meets a receive of its count at its peer, in order. An NCCL error stops a rank's calls and is
 * returned.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#ifdef KILN_FAKE_NCCL_LINKED

#include "fake_nccl.h"
#include "internode_nccl.h"
#include "kiln/plan.h"

extern fakeNcclRecord fakeNcclHistory[FAKE_NCCL_HISTORY];
extern int fakeNcclCalls;
extern ncclResult_t fakeNcclResult;

typedef struct issued {
  bool send;
  int peer;
  size_t count;
} issued;

/* Where rank r's buffer b lies in the test (never touched: the fake only records). */
static char* base(int r, int b) {
  return (char*)(uintptr_t)(((uint64_t)(r + 1) << 36) + ((uint64_t)(b + 1) << 32));
}

typedef struct expect {
  int n;
  struct {
    bool send;
    int peer;
    char* p;
    uint64_t count;
  } v[FAKE_NCCL_HISTORY];
  int rank;
  size_t es;
} expect;

static int expect_one(void* ctx, bool send, int peer, kilnBuffer_t buf, uint64_t off, uint64_t n) {
  expect* e = ctx;
  cr_assert(lt(int, e->n, FAKE_NCCL_HISTORY - 2), "a group of more calls than the fake keeps");
  e->v[e->n].send = send;
  e->v[e->n].peer = peer;
  e->v[e->n].p = base(e->rank, buf) + off * e->es;
  e->v[e->n].count = n;
  e->n++;
  return 0;
}

/* The arguments of a recorded ncclSend/ncclRecv: buffer, count, type, peer, comm, stream. */
static void decode(const fakeNcclRecord* r, char** p, size_t* count, ncclDataType_t* t, int* peer,
                   ncclComm_t* comm, cudaStream_t* st) {
  cr_assert(
      eq(sz, r->nbytes, sizeof *p + sizeof *count + sizeof *t + sizeof *peer + sizeof *comm + sizeof *st));
  const unsigned char* b = r->bytes;
  memcpy(p, b, sizeof *p), b += sizeof *p;
  memcpy(count, b, sizeof *count), b += sizeof *count;
  memcpy(t, b, sizeof *t), b += sizeof *t;
  memcpy(peer, b, sizeof *peer), b += sizeof *peer;
  memcpy(comm, b, sizeof *comm), b += sizeof *comm;
  memcpy(st, b, sizeof *st);
}

typedef struct splitCase {
  int algo; /* 0 ring, 1 direct */
  kilnColl_t coll;
  int nodes, gpn;
} splitCase;

ParameterizedTestParameters(internode, calls) {
  static const struct {
    int algo;
    kilnColl_t coll;
  } pairs[] = {{0, KILN_COLL_ALLGATHER}, {0, KILN_COLL_REDUCESCATTER}, {0, KILN_COLL_ALLREDUCE},
               {1, KILN_COLL_ALLGATHER}, {1, KILN_COLL_ALLTOALL},      {1, KILN_COLL_REDUCESCATTER},
               {1, KILN_COLL_ALLREDUCE}};
  static const int splits[3][2] = {{2, 2}, {2, 1}, {4, 1}};
  const size_t n = sizeof pairs / sizeof pairs[0] * 3;
  splitCase* v = cr_malloc(sizeof *v * n);
  size_t k = 0;
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    for (int s = 0; s < 3; s++)
      v[k++] = (splitCase){pairs[i].algo, pairs[i].coll, splits[s][0], splits[s][1]};
  return cr_make_param_array(splitCase, v, n);
}

ParameterizedTest(splitCase* sc, internode, calls) {
  const int n = sc->nodes * sc->gpn;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 2;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan(sc->algo ? "direct" : "ring", sc->coll, n, &o, &p), KILN_SUCCESS));
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, sc->nodes, NULL, &ph), KILN_SUCCESS), "%s", kilnLastError());
  const ncclComm_t comm = FAKE_NCCL_COMM;
  const kilnDataType_t dts[] = {KILN_FLOAT32, KILN_BFLOAT16, KILN_INT8};
  for (size_t d = 0; d < 3; d++) {
    const uint64_t count = (uint64_t)ph->k * 5 + 3; /* the last chunks short */
    for (int i = 0; i < ph->nphases; i++) {
      if (!ph->phases[i].p2p) continue;
      issued* all[64] = {0};
      int nall[64] = {0};
      for (int r = 0; r < n; r++) {
        expect e = {0};
        e.rank = r;
        e.es = kilnDataTypeSize(dts[d]);
        cr_assert(eq(int, kilnPhasesP2pCalls(ph, i, r, count, expect_one, &e), 0));
        kilnNcclIssue x;
        for (int b = 0; b < KILN_NUM_BUFFERS; b++) x.bases[b] = base(r, b);
        x.esize = e.es;
        x.dtype = (ncclDataType_t)dts[d];
        x.comm = comm;
        x.stream = (cudaStream_t)(uintptr_t)(0x5000 + r);
        const int first = fakeNcclCalls;
        cr_assert(eq(int, ncclGroupStart(), ncclSuccess));
        cr_assert(eq(int, kilnPhasesNcclCalls(ph, i, r, count, &x), ncclSuccess));
        cr_assert(eq(int, ncclGroupEnd(), ncclSuccess));
        cr_assert(eq(int, fakeNcclCalls - first, e.n + 2), "rank %d phase %d", r, i);
        cr_assert(eq(str, fakeNcclHistory[first % FAKE_NCCL_HISTORY].name, "ncclGroupStart"));
        cr_assert(eq(str, fakeNcclHistory[(first + e.n + 1) % FAKE_NCCL_HISTORY].name, "ncclGroupEnd"));
        all[r] = calloc((size_t)e.n + 1, sizeof **all);
        for (int j = 0; j < e.n; j++) {
          const fakeNcclRecord* rec = &fakeNcclHistory[(first + 1 + j) % FAKE_NCCL_HISTORY];
          cr_assert(eq(str, (char*)rec->name, e.v[j].send ? "ncclSend" : "ncclRecv"),
                    "rank %d phase %d call %d", r, i, j);
          char* ptr;
          size_t cnt;
          ncclDataType_t t;
          int peer;
          ncclComm_t c;
          cudaStream_t st;
          decode(rec, &ptr, &cnt, &t, &peer, &c, &st);
          cr_assert(eq(ptr, ptr, e.v[j].p), "rank %d phase %d call %d: the buffer", r, i, j);
          cr_assert(eq(sz, cnt, (size_t)e.v[j].count));
          cr_assert(eq(int, t, (int)dts[d]));
          cr_assert(eq(int, peer, e.v[j].peer));
          cr_assert(eq(ptr, c, comm));
          cr_assert(eq(ptr, (void*)st, (void*)x.stream));
          all[r][nall[r]++] = (issued){e.v[j].send, peer, cnt};
        }
      }
      /* Every send meets, in order, a receive of its count at its peer. */
      for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
          int js = 0, jr = 0;
          for (;;) {
            while (js < nall[a] && !(all[a][js].send && all[a][js].peer == b)) js++;
            while (jr < nall[b] && !(!all[b][jr].send && all[b][jr].peer == a)) jr++;
            if (js == nall[a] || jr == nall[b]) {
              cr_assert(js == nall[a] && jr == nall[b], "phase %d: ranks %d -> %d: sends and receives differ",
                        i, a, b);
              break;
            }
            cr_assert(eq(sz, all[a][js].count, all[b][jr].count), "phase %d: ranks %d -> %d", i, a, b);
            js++;
            jr++;
          }
        }
      for (int r = 0; r < n; r++) free(all[r]);
    }
  }
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

Test(internode, an_nccl_error_stops_the_rank_and_is_returned) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLTOALL, 4, &o, &p), KILN_SUCCESS));
  kilnPhases* ph = NULL;
  cr_assert(eq(int, kilnPhasesBuild(p, 4, NULL, &ph), KILN_SUCCESS), "%s", kilnLastError());
  int i = 0;
  while (i < ph->nphases && !ph->phases[i].p2p) i++;
  cr_assert(lt(int, i, ph->nphases));
  cr_assert(gt(int, ph->phases[i].nops[0], 1));
  kilnNcclIssue x;
  for (int b = 0; b < KILN_NUM_BUFFERS; b++) x.bases[b] = base(0, b);
  x.esize = 4;
  x.dtype = ncclFloat32;
  x.comm = FAKE_NCCL_COMM;
  x.stream = NULL;
  fakeNcclResult = ncclRemoteError;
  const int first = fakeNcclCalls;
  cr_assert(eq(int, kilnPhasesNcclCalls(ph, i, 0, 64, &x), ncclRemoteError));
  cr_assert(eq(int, fakeNcclCalls - first, 1), "calls after the failed one");
  fakeNcclResult = ncclSuccess;
  kilnPhasesFree(ph);
  kilnPlanFree(p);
}

#else

Test(internode, not_built) { cr_skip_test("the fake NCCL is not built here (no CUDA or NCCL)"); }

#endif
