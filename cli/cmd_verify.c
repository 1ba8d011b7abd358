/* kiln verify: run plans on the CPU verifier and report each one. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "../solver/phases.h"
#include "kiln/plan.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln verify [--schedules N] [--seed S] [--fifo-depth D] [--nodes K] PLAN.xml...\n"
          "Runs each plan for all ranks on the CPU and checks its collective's result (symbolic\n"
          "and numeric with sum/prod/max/min), deadlocks, matching of sends and receives, and\n"
          "buffer ranges. A plan with memory steps (put, get, gre, sig, wait) runs for 2 calls of\n"
          "3 iterations, and every read of another rank's data and every write over data another\n"
          "rank may still read must be ordered by signals (or lines). Prints 'FILE: OK (...)' or\n"
          "the first error; exits 0 only if all pass.\n"
          "  --schedules N  interleavings of threadblocks to try, 1..100000 (default 4)\n"
          "  --seed S       seed of the random interleavings and values, decimal (default 1)\n"
          "  --fifo-depth D FIFO slots per connection, as the runtime's nslots (default 8, the\n"
          "                 runtime's default; 0: unbounded); a plan that needs more deadlocks\n"
          "                 and is reported\n"
          "  --nodes K      also cut each plan for K nodes of consecutive ranks, as the runtime\n"
          "                 runs it on a communicator of K nodes (kernels within a node, NCCL's\n"
          "                 point-to-point calls between nodes), and run the phases on the CPU\n"
          "                 (every rank's calls paired, no deadlock, the result); default: the\n"
          "                 plan's nnodes where it names more than one, else none\n");
}

static bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s || *s == '-') return false;
  errno = 0;
  char* end;
  unsigned long long v = strtoull(s, &end, 10); /* decimal: "010" is ten, not eight */
  if (errno || *end) return false;
  *out = v;
  return true;
}

/* Cuts p for `nodes` nodes and runs the phases (solver/phases.h); appends what it found to buf. */
static kilnResult_t verify_nodes(const kilnPlan* p, int nodes, const kilnVerifyOptions* vo, char* buf,
                                 size_t len) {
  kilnPlan* q = NULL;
  kilnResult_t r = kilnPlanClone(p, &q);
  if (r == KILN_SUCCESS && kilnPlanHasCopies(q)) r = kilnPlanLowerCopies(q);
  kilnPhases* ph = NULL;
  if (r == KILN_SUCCESS) r = kilnPhasesBuild(q, nodes, NULL, &ph);
  if (r == KILN_SUCCESS && kilnPlanVerify(ph->split, vo) != KILN_SUCCESS) {
    kilnPrefixError("cut for %d nodes: ", nodes);
    r = KILN_ERR_VERIFY;
  }
  /* Counts that divide into the plan's chunks and one that leaves the last ones short. */
  for (int c = 0; r == KILN_SUCCESS && c < 2; c++) {
    const uint64_t count = (uint64_t)ph->k * 3 - (uint64_t)c;
    for (int inplace = 0; r == KILN_SUCCESS && inplace < 2; inplace++) {
      if (!kilnPlanServes(q, inplace) || (inplace && q->coll == KILN_COLL_ALLTOALL)) continue;
      r = kilnPhasesCheck(ph, q, count, inplace, KILN_SUM, vo->fifo_depth, vo->seed);
      if (r == KILN_SUCCESS && (q->coll == KILN_COLL_ALLREDUCE || q->coll == KILN_COLL_REDUCESCATTER))
        r = kilnPhasesCheck(ph, q, count, inplace, KILN_MAX, vo->fifo_depth, vo->seed);
    }
  }
  const bool memory = r == KILN_ERR_UNSUPPORTED && ph; /* memory steps: the cut verified, not run */
  if (memory) r = KILN_SUCCESS;
  if (r == KILN_SUCCESS) {
    int groups = 0;
    for (int i = 0; i < ph->nphases; i++) groups += ph->phases[i].p2p;
    snprintf(buf, len,
             "; cut for %d nodes: %d phases (%d kernel, %d groups of NCCL calls), %d messages through "
             "NCCL (%d received apart)%s",
             nodes, ph->nphases, ph->nphases - groups, groups, ph->nmessages, ph->napart,
             memory ? "; its memory steps keep the phases from being run on the CPU" : "");
  }
  kilnPhasesFree(ph);
  kilnPlanFree(q);
  return r;
}

int cmd_verify(int argc, char** argv) {
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  int nfiles = 0, nodes = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(a, "--schedules")) {
      if (i + 1 >= argc || !cliParseInt(argv[i + 1], &vo.schedules) || vo.schedules < 1 ||
          vo.schedules > 100000) {
        fprintf(stderr, "kiln verify: --schedules wants 1..100000\n");
        return 2;
      }
      i++;
      continue;
    }
    if (!strcmp(a, "--fifo-depth")) {
      if (i + 1 >= argc || !cliParseInt(argv[i + 1], &vo.fifo_depth)) {
        fprintf(stderr, "kiln verify: --fifo-depth needs a non-negative integer\n");
        return 2;
      }
      i++;
      continue;
    }
    if (!strcmp(a, "--nodes")) {
      if (i + 1 >= argc || !cliParseInt(argv[i + 1], &nodes) || nodes < 1) {
        fprintf(stderr, "kiln verify: --nodes needs a positive integer\n");
        return 2;
      }
      i++;
      continue;
    }
    if (!strcmp(a, "--seed")) {
      if (i + 1 >= argc || !parse_u64(argv[i + 1], &vo.seed)) {
        fprintf(stderr, "kiln verify: --seed needs a non-negative integer\n");
        return 2;
      }
      i++;
      continue;
    }
    if (a[0] == '-' && a[1]) {
      fprintf(stderr, "kiln verify: unknown option '%s'\n", a);
      help(stderr);
      return 2;
    }
    argv[++nfiles] = argv[i]; /* compact the file names in place */
  }
  if (nfiles == 0) {
    fprintf(stderr, "kiln verify: no plan files given\n");
    help(stderr);
    return 2;
  }
  int failed = 0;
  for (int f = 1; f <= nfiles; f++) {
    const char* path = argv[f];
    kilnPlan* p = NULL;
    if (kilnPlanReadFile(path, &p) != KILN_SUCCESS) {
      cliPrintFileError(path, kilnLastError());
      failed++;
      continue;
    }
    const int k = nodes > 0 ? nodes : p->nnodes;
    char cut[256] = "";
    if (kilnPlanVerify(p, &vo) == KILN_SUCCESS &&
        (k <= 1 || verify_nodes(p, k, &vo, cut, sizeof cut) == KILN_SUCCESS)) {
      int tbs = 0, steps = 0;
      for (int r = 0; r < p->ngpus; r++) {
        tbs += p->gpus[r].ntbs;
        for (int t = 0; t < p->gpus[r].ntbs; t++) steps += p->gpus[r].tbs[t].nsteps;
      }
      char races[160] = "";
      const bool mem = kilnPlanHasMemorySteps(p);
      if (mem && !KILN_VERIFY_MEMORY_CHECKS_ALL_RACES(tbs, p->ngpus, steps))
        snprintf(races, sizeof races,
                 "; data races checked only on the %d interleavings run, not on all: the plan is "
                 "too large for the clocks; --schedules N runs more",
                 vo.schedules);
      else if (!mem && !KILN_VERIFY_CHECKS_ALL_RACES(tbs, steps))
        snprintf(races, sizeof races,
                 "; data races checked rank by rank (each rank's own order settles its "
                 "accesses): the plan is too large for the clocks of all");
      char epochs[64] = "";
      if (mem)
        snprintf(epochs, sizeof epochs, ", %d calls of %d iterations", KILN_VERIFY_CALLS,
                 KILN_VERIFY_ITERATIONS);
      printf("%s: OK (%s, %d ranks, %d tbs, %d steps%s%s%s)\n", path, kilnCollName(p->coll), p->ngpus, tbs,
             steps, epochs, races, cut);
    } else {
      printf("%s: %s\n", path, kilnLastError());
      failed++;
    }
    kilnPlanFree(p);
  }
  fflush(stdout);
  return failed ? 1 : 0;
}
