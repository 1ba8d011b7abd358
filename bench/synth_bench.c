/* Synthesis-time benchmark: for each case of the TACCL paper's Table 2, kiln's synthesis time
 * beside the paper's (Gurobi, their machine), and the α-β simulated time of kiln's plan against
 * NCCL's ring / tree (alltoall: NCCL's all-pairs) at 1 KB, 1 MB and 1 GB.
 *
 * usage: kiln_synth_bench [--time-limit S] [--stall S] [--only SUBSTRING] [--quiet]
 * Default limits keep the whole run under 10 minutes on 2 cores. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"

#ifndef KILN_SOURCE_DIR
#define KILN_SOURCE_DIR "."
#endif

typedef struct benchCase {
  kilnColl_t coll;
  const char* sketch;
  const char* topo;
  int nodes;
  double paper_s; /* Table 2 */
} benchCase;

static const benchCase cases[] = {
    {KILN_COLL_ALLGATHER, "dgx2-sk-1", "dgx2", 2, 35.8},
    {KILN_COLL_ALLGATHER, "dgx2-sk-2", "dgx2", 2, 11.3},
    {KILN_COLL_ALLGATHER, "ndv2-sk-1", "ndv2", 2, 2.6},
    {KILN_COLL_ALLTOALL, "dgx2-sk-2", "dgx2", 2, 92.5},
    {KILN_COLL_ALLTOALL, "ndv2-sk-1", "ndv2", 2, 1809.8},
    {KILN_COLL_ALLTOALL, "ndv2-sk-2", "ndv2", 2, 8.4},
    {KILN_COLL_ALLREDUCE, "dgx2-sk-1", "dgx2", 2, 6.1},
    {KILN_COLL_ALLREDUCE, "dgx2-sk-2", "dgx2", 2, 127.8},
    {KILN_COLL_ALLREDUCE, "ndv2-sk-1", "ndv2", 2, 0.3},
};

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(const kilnSynthProgress* p, void* user) {
  (void)user;
  if (p->rows >= 0 && strcmp(p->message, "model built") == 0)
    fprintf(stderr, "    %-8s model %d rows x %d cols, %d integer\n", kilnSynthStageName(p->stage), p->rows,
            p->cols, p->integers);
}

/* Simulated time of plan at ref bytes, and NCCL's ring and tree (tree: allreduce only; NAN where
 * the model has none). */
static void sim_row(const kilnPlan* plan, const kilnTopology* t, kilnColl_t coll, uint64_t ref, double* ks,
                    double* ring, double* tree) {
  kilnSimResult r;
  *ks = kilnPlanSimulate(plan, t, ref, &r) == KILN_SUCCESS ? r.time_us : NAN;
  *ring = kilnBaselineSimulate(KILN_BASELINE_RING, coll, t, ref, &r) == KILN_SUCCESS ? r.time_us : NAN;
  *tree = coll == KILN_COLL_ALLREDUCE && kilnBaselineSimulate(KILN_BASELINE_TREE, coll, t, ref, &r) == KILN_SUCCESS
              ? r.time_us
              : NAN;
}

typedef struct scaleCase {
  const char* topo;
  const char* sketch[4]; /* per collective: allgather, alltoall, reducescatter, allreduce */
} scaleCase;

/* Synthesis time against node count, and the plans' simulated times against NCCL's. */
static int run_scale(kilnSynthOptions o, const char* only, int minnodes, int maxnodes, unsigned zmask, bool quiet) {
  static const scaleCase topos[] = {
      {"hgx-h100", {"hgx-h100-rails", "hgx-h100-direct", "hgx-h100-rails", "hgx-h100-rails"}},
      {"dgx2", {"dgx2-sk-1", "dgx2-sk-3", "dgx2-sk-1", "dgx2-sk-1"}},
  };
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL, KILN_COLL_REDUCESCATTER,
                                     KILN_COLL_ALLREDUCE};
  static const uint64_t sizes[] = {1ull << 10, 1ull << 20, 1ull << 30};
  printf("%-9s %5s %5s %-13s %-16s", "topo", "nodes", "GPUs", "collective", "sketch");
  for (int z = 0; z < 3; z++) printf(" | %s: %7s %9s %6s %6s", z == 0 ? "1KB" : z == 1 ? "1MB" : "1GB", "synth s", "kiln us", "ring", "tree");
  printf("\n");
  int failures = 0;
  for (size_t ti = 0; ti < sizeof topos / sizeof topos[0]; ti++)
    for (int N = minnodes; N <= maxnodes; N *= 2)
      for (int c = 0; c < 4; c++) {
        const scaleCase* sc = &topos[ti];
        char label[160];
        snprintf(label, sizeof label, "%s x%d %s %s", sc->topo, N, kilnCollName(colls[c]), sc->sketch[c]);
        if (only && !strstr(label, only)) continue;
        kilnTopology* t = NULL;
        kilnSketch* s = NULL;
        kilnPlan* plan = NULL;
        char path[1024];
        snprintf(path, sizeof path, "%s/plans/sketches/%s.xml", KILN_SOURCE_DIR, sc->sketch[c]);
        if (kilnTopologyBuiltin(sc->topo, N, &t) != KILN_SUCCESS || kilnSketchReadFile(path, &s) != KILN_SUCCESS) {
          printf("%s: %s\n", label, kilnLastError());
          failures++;
          kilnTopologyFree(t);
          continue;
        }
        if (t->nranks > KILN_MAX_RANKS) { kilnTopologyFree(t); kilnSketchFree(s); continue; }
        printf("%-9s %5d %5d %-13s %-16s", sc->topo, N, t->nranks, kilnCollName(colls[c]), sc->sketch[c]);
        for (int z = 0; z < 3; z++) {
          if (!(zmask & (1u << z))) {
            printf(" | %7s %9s %6s %6s", "-", "-", "-", "-");
            continue;
          }
          /* the plan for this size: the sketch's input size is the size its plan is for */
          kilnSynthOptions oz = o;
          oz.input_size = colls[c] == KILN_COLL_ALLGATHER ? sizes[z] / (uint64_t)t->nranks : sizes[z];
          if (oz.input_size < (uint64_t)s->input_chunkup * (colls[c] == KILN_COLL_ALLGATHER ? 1 : (uint64_t)t->nranks))
            oz.input_size = (uint64_t)s->input_chunkup * (colls[c] == KILN_COLL_ALLGATHER ? 1 : (uint64_t)t->nranks);
          if (!quiet) fprintf(stderr, "  %s at %s ...\n", label, z == 0 ? "1KB" : z == 1 ? "1MB" : "1GB");
          kilnSynthStats st;
          double t0 = now_s();
          kilnResult_t r = kilnSynthesize(t, s, colls[c], &oz, &plan, &st);
          double el = now_s() - t0;
          if (r != KILN_SUCCESS) {
            printf(" | failed: %s", kilnLastError());
            failures++;
            continue;
          }
          double ks, ring, tree;
          sim_row(plan, t, colls[c], sizes[z], &ks, &ring, &tree);
          printf(" | %7.2f %9.1f %6.2f %6.2f", el, ks, ring / ks, tree / ks);
          if (!quiet)
            fprintf(stderr, "    stages: route %.2fs order %.2fs lower %.2fs verify %.2fs; %d transfers\n",
                    st.stage_s[KILN_SYNTH_STAGE_ROUTE], st.stage_s[KILN_SYNTH_STAGE_ORDER],
                    st.stage_s[KILN_SYNTH_STAGE_LOWER], st.stage_s[KILN_SYNTH_STAGE_VERIFY], st.transfers);
          kilnPlanFree(plan);
          plan = NULL;
          fflush(stdout);
        }
        printf("\n");
        fflush(stdout);
        kilnSketchFree(s);
        kilnTopologyFree(t);
      }
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  o.time_limit_s = 30;
  o.stall_s = 0.2;
  const char* only = NULL;
  bool quiet = false, scale = false;
  int minnodes = 2, maxnodes = 128;
  unsigned zmask = 7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--time-limit") && i + 1 < argc) o.time_limit_s = atof(argv[++i]);
    else if (!strcmp(argv[i], "--stall") && i + 1 < argc) o.stall_s = atof(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--quiet")) quiet = true;
    else if (!strcmp(argv[i], "--scale")) scale = true;
    else if (!strcmp(argv[i], "--max-nodes") && i + 1 < argc) maxnodes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--min-nodes") && i + 1 < argc) minnodes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
      const char* v = argv[++i];
      zmask = (strstr(v, "1K") ? 1u : 0u) | (strstr(v, "1M") ? 2u : 0u) | (strstr(v, "1G") ? 4u : 0u);
    }
    else {
      fprintf(stderr, "usage: %s [--time-limit S] [--stall S] [--only SUBSTRING] [--quiet]\n", argv[0]);
      return strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (!quiet) o.progress = progress;
  if (scale) return run_scale(o, only, minnodes, maxnodes, zmask, quiet);
  static const uint64_t sizes[] = {1ull << 10, 1ull << 20, 1ull << 30};
  static const char* const size_names[] = {"1KB", "1MB", "1GB"};
  printf("kiln synthesis benchmark (TACCL Table 2 cases); MILP time limit %.0fs, stall %.1fs\n",
         o.time_limit_s, o.stall_s);
  printf("simulated times in us on the alpha-beta model; NCCL = best of ring and tree (alltoall: all-pairs;\n"
         "n/a where the topology lacks a link between some pair)\n\n");
  printf("%-13s %-10s %-7s %9s %9s %9s |", "collective", "sketch", "topo", "kiln s", "paper s", "speedup");
  for (int z = 0; z < 3; z++) printf(" %10s %10s %6s |", size_names[z], "NCCL", "x");
  printf("\n");
  int failures = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const benchCase* bc = &cases[c];
    char label[128];
    snprintf(label, sizeof label, "%s %s", kilnCollName(bc->coll), bc->sketch);
    if (only && !strstr(label, only)) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/plans/sketches/%s.xml", KILN_SOURCE_DIR, bc->sketch);
    kilnTopology* t = NULL;
    kilnSketch* s = NULL;
    kilnPlan* plan = NULL;
    if (kilnTopologyBuiltin(bc->topo, bc->nodes, &t) != KILN_SUCCESS ||
        kilnSketchReadFile(path, &s) != KILN_SUCCESS) {
      printf("%-13s %-10s: %s\n", kilnCollName(bc->coll), bc->sketch, kilnLastError());
      failures++;
      if (t) kilnTopologyFree(t);
      continue;
    }
    if (!quiet) fprintf(stderr, "  %s on %s x%d ...\n", label, bc->topo, bc->nodes);
    kilnSynthStats st;
    double t0 = now_s();
    kilnResult_t r = kilnSynthesize(t, s, bc->coll, &o, &plan, &st);
    double el = now_s() - t0;
    if (r != KILN_SUCCESS) {
      printf("%-13s %-10s %-7s failed: %s\n", kilnCollName(bc->coll), bc->sketch, bc->topo, kilnLastError());
      failures++;
    } else {
      printf("%-13s %-10s %-7s %9.2f %9.1f %8.1fx |", kilnCollName(bc->coll), bc->sketch, bc->topo, el,
             bc->paper_s, bc->paper_s / el);
      for (int z = 0; z < 3; z++) {
        uint64_t ref = sizes[z];
        kilnSimResult ks, ring, tree;
        double nccl = INFINITY;
        if (kilnBaselineSimulate(KILN_BASELINE_RING, bc->coll, t, ref, &ring) == KILN_SUCCESS) nccl = ring.time_us;
        if (kilnBaselineSimulate(KILN_BASELINE_TREE, bc->coll, t, ref, &tree) == KILN_SUCCESS && tree.time_us < nccl)
          nccl = tree.time_us;
        bool have = kilnPlanSimulate(plan, t, ref, &ks) == KILN_SUCCESS;
        if (have && isfinite(nccl))
          printf(" %10.1f %10.1f %5.2fx |", ks.time_us, nccl, nccl / ks.time_us);
        else if (have)
          printf(" %10.1f %10s %6s |", ks.time_us, "n/a", "");
        else
          printf(" %10s %10.1f %6s |", "n/a", nccl, "");
      }
      printf("\n");
      if (!quiet)
        fprintf(stderr, "    stages: route %.2fs order %.2fs schedule %.2fs lower %.2fs verify %.2fs; %s%s\n",
                st.stage_s[KILN_SYNTH_STAGE_ROUTE], st.stage_s[KILN_SYNTH_STAGE_ORDER],
                st.stage_s[KILN_SYNTH_STAGE_SCHEDULE], st.stage_s[KILN_SYNTH_STAGE_LOWER],
                st.stage_s[KILN_SYNTH_STAGE_VERIFY], st.route_optimal ? "routes optimal" : "routes stopped early",
                st.sched_used_greedy ? ", greedy schedule" : ", contiguity schedule");
      fflush(stdout);
      kilnPlanFree(plan);
    }
    kilnSketchFree(s);
    kilnTopologyFree(t);
  }
  return failures ? 1 : 0;
}
