/* kiln simulate: predicted time of plans, or of NCCL's ring/tree, on an α-β topology model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/plan.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln simulate --topo NAME|FILE.xml [--nodes K] --bytes SIZE PLAN.xml...\n"
          "       kiln simulate --topo NAME|FILE.xml [--nodes K] --bytes SIZE\n"
          "                     --baseline ring|tree --coll COLL\n"
          "Predicts the time of each plan (plan rank r on topology rank r), or of NCCL's ring or\n"
          "tree algorithm (alltoall: its all-pairs send/receive), on the topology's alpha-beta\n"
          "model (links, switch ports and NICs serialize; alpha is latency) with the costs of\n"
          "kiln's runtime: a call's launch, each protocol's efficiency and latency, signals and\n"
          "waits, a threadblock's own rate, local work, FIFO steps and their slots. They are the\n"
          "topology's <costs> where it has them (kiln profile writes them), else the defaults\n"
          "calibrated on H200s (kiln/topology.h KILN_SIM_PARAMS_INIT; bench/sim_calibrate checks\n"
          "them against the measured tables); NCCL's baselines take KILN_SIM_PARAMS_NCCL, its\n"
          "fastest protocol at each size.\n"
          "SIZE (e.g. 1M, 64KB, 1GiB; K, M, G, T are powers of 1024, with or without i and B) is\n"
          "the per-rank input for allreduce, the total output for allgather, the total input for\n"
          "reducescatter and alltoall.\n"
          "built-in topologies: %s\n",
          kilnTopologyBuiltinNames());
}

/* Prints one result line: time, algorithm and bus bandwidth. */
static void report(const char* what, kilnColl_t coll, int n, uint64_t bytes, const kilnSimResult* r) {
  double algbw = r->time_us > 0 ? (double)bytes / (r->time_us * 1e3) : 0; /* GB/s */
  double factor = coll == KILN_COLL_ALLREDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
  printf("%s: %.2f us, algbw %.2f GB/s, busbw %.2f GB/s (%d transfers, busiest resource %.2f us)\n", what,
         r->time_us, algbw, algbw * factor, r->nsends, r->busiest_link_us);
}

int cmd_simulate(int argc, char** argv) {
  kilnTopoArgs ta = {0};
  uint64_t bytes = 0;
  bool have_bytes = false;
  const char* baseline = NULL;
  kilnColl_t coll = KILN_NUM_COLLS;
  int nfiles = 0;
  for (int i = 1; i < argc; i++) {
    int used = cliTopoArg(&ta, argc, argv, i);
    if (used < 0) return 2;
    if (used > 0) {
      i += used - 1;
      continue;
    }
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(a, "--bytes")) {
      if (!v || !kilnParseSize(v, &bytes) || bytes == 0) {
        fprintf(stderr, "kiln simulate: --bytes '%s': needs a size above 0, like 1M, 64KB or 1048576\n",
                v ? v : "");
        return 2;
      }
      have_bytes = true;
      i++;
      continue;
    }
    if (!strcmp(a, "--baseline")) {
      if (!v || (strcmp(v, "ring") && strcmp(v, "tree"))) {
        fprintf(stderr, "kiln simulate: --baseline is ring or tree\n");
        return 2;
      }
      baseline = v;
      i++;
      continue;
    }
    if (!strcmp(a, "--coll")) {
      if (!v || !kilnCollParse(v, &coll) || coll == KILN_COLL_CUSTOM) {
        fprintf(stderr, "kiln simulate: --coll is allgather, alltoall, reducescatter or allreduce\n");
        return 2;
      }
      i++;
      continue;
    }
    if (a[0] == '-' && a[1]) {
      fprintf(stderr, "kiln simulate: unknown option '%s'\n", a);
      help(stderr);
      return 2;
    }
    argv[++nfiles] = argv[i];
  }
  if (!baseline && coll != KILN_NUM_COLLS) {
    fprintf(stderr, "kiln simulate: --coll goes with --baseline (a plan names its own collective)\n");
    return 2;
  }
  if (!have_bytes || (!baseline && nfiles == 0) || (baseline && (nfiles > 0 || coll == KILN_NUM_COLLS))) {
    fprintf(stderr, "kiln simulate: give --bytes and either plan files or --baseline with --coll\n");
    help(stderr);
    return 2;
  }
  kilnTopology* t = NULL;
  const int trc = cliLoadTopo(&ta, &t);
  if (trc != 0) return trc;
  int failed = 0;
  kilnSimResult r;
  if (baseline) {
    kilnBaseline_t b = !strcmp(baseline, "ring") ? KILN_BASELINE_RING : KILN_BASELINE_TREE;
    const kilnResult_t br = kilnBaselineSimulate(b, coll, t, bytes, &r);
    if (br != KILN_SUCCESS) {
      fprintf(stderr, "kiln simulate: %s\n", kilnLastError());
      kilnTopologyFree(t);
      /* a baseline NCCL does not have for that collective: the arguments' fault */
      return br == KILN_ERR_UNSUPPORTED && b == KILN_BASELINE_TREE && coll != KILN_COLL_ALLREDUCE ? 2 : 1;
    } else {
      char what[160];
      const char* algo = coll == KILN_COLL_ALLTOALL ? "all-pairs" : baseline; /* NCCL has no ring a2a */
      snprintf(what, sizeof what, "NCCL %s %s on %s (%d ranks)", algo, kilnCollName(coll), t->name,
               t->nranks);
      report(what, coll, t->nranks, bytes, &r);
    }
  }
  for (int f = 1; f <= nfiles; f++) {
    kilnPlan* p = NULL;
    if (kilnPlanReadFile(argv[f], &p) != KILN_SUCCESS) {
      cliPrintFileError(argv[f], kilnLastError());
      failed++;
      continue;
    }
    if (kilnPlanSimulate(p, t, bytes, &r) != KILN_SUCCESS) {
      printf("%s: %s\n", argv[f], kilnLastError());
      failed++;
    } else {
      report(argv[f], p->coll, p->ngpus, bytes, &r);
    }
    kilnPlanFree(p);
  }
  kilnTopologyFree(t);
  fflush(stdout);
  return failed ? 1 : 0;
}
