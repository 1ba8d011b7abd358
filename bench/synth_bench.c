/* Synthesis-time benchmark: for each case of the TACCL paper's Table 2, kiln's synthesis time
 * beside the paper's (Gurobi, their machine), and the α-β simulated time of kiln's plan against
 * NCCL's ring / tree (alltoall: NCCL's all-pairs) at 1 KB, 1 MB and 1 GB.
 *
 * usage: kiln_synth_bench [--time-limit S] [--stall S] [--only SUBSTRING] [--quiet]
 *        kiln_synth_bench --scale [--min-nodes N] [--max-nodes N] [--sizes 1K,1M,1G] ...
 *        kiln_synth_bench --multinode [--write DIR] [--sizes 1K,1M,1G] ...
 *        (any of them with --alpha-beta: kiln's plans and NCCL's on the alpha-beta table,
 *        KILN_SIM_PARAMS_ALPHA_BETA, instead of their calibrated costs; --instances N: the plans
 *        in N instances, where by default the synthesizer chooses)
 * Default limits keep the Table 2 run under 10 minutes on 2 cores.
 * --scale: hgx-h100 and dgx2 on 2, 4, ... nodes (up to KILN_MAX_RANKS GPUs): each collective's
 * synthesis time and its plan's simulated time at 1 KB, 1 MB and 1 GB against NCCL's ring and tree
 * (a plan synthesized for each size). --multinode: the plans across nodes of the paper's sketches,
 * at full size and scaled down to nodes of 1, 2 and 4 GPUs, the same way; --write DIR writes each
 * one's 1 MB plan of at most 8 ranks there. */
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

/* --alpha-beta: the topologies carry the alpha-beta table as their costs (kiln's plans are
 * synthesized and simulated on it) and NCCL's baselines take it too; otherwise kiln's plans run on
 * the calibrated table (KILN_SIM_PARAMS_INIT) and NCCL's on its own (KILN_SIM_PARAMS_NCCL). */
static bool alpha_beta;
static const kilnSimParams alpha_beta_params = KILN_SIM_PARAMS_ALPHA_BETA;

static kilnResult_t baseline(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t, uint64_t ref,
                             kilnSimResult* r) {
  return kilnBaselineSimulateWith(b, coll, t, ref, alpha_beta ? &alpha_beta_params : NULL, r);
}

static void on_costs(kilnTopology* t) {
  if (!alpha_beta) return;
  t->has_costs = true;
  t->costs = alpha_beta_params;
}

/* Simulated time of plan at ref bytes, and NCCL's ring and tree (tree: allreduce only; NAN where
 * the model has none). */
static void sim_row(const kilnPlan* plan, const kilnTopology* t, kilnColl_t coll, uint64_t ref, double* ks,
                    double* ring, double* tree) {
  kilnSimResult r;
  *ks = kilnPlanSimulate(plan, t, ref, &r) == KILN_SUCCESS ? r.time_us : NAN;
  *ring = baseline(KILN_BASELINE_RING, coll, t, ref, &r) == KILN_SUCCESS ? r.time_us : NAN;
  *tree = coll == KILN_COLL_ALLREDUCE && baseline(KILN_BASELINE_TREE, coll, t, ref, &r) == KILN_SUCCESS
              ? r.time_us
              : NAN;
}

static const kilnColl_t all_colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL, KILN_COLL_REDUCESCATTER,
                                       KILN_COLL_ALLREDUCE};
static const uint64_t sizes[] = {1ull << 10, 1ull << 20, 1ull << 30};
static const char* const size_names[] = {"1KB", "1MB", "1GB"};

/* A topology: a built-in's name, or a file under plans/topologies/ (NAME.xml). */
static kilnResult_t load_topo(const char* name, int nodes, kilnTopology** t) {
  if (kilnTopologyBuiltin(name, nodes, t) == KILN_SUCCESS) {
    on_costs(*t);
    return KILN_SUCCESS;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/plans/topologies/%s.xml", KILN_SOURCE_DIR, name);
  kilnResult_t r = kilnTopologyReadFile(path, t);
  if (r != KILN_SUCCESS) return r;
  (*t)->nodes = nodes;
  r = kilnTopologyExpand(*t);
  if (r != KILN_SUCCESS) {
    kilnTopologyFree(*t);
    *t = NULL;
  } else {
    on_costs(*t);
  }
  return r;
}

static void table_header(void) {
  printf("%-13s %5s %5s %-13s %-16s", "topo", "nodes", "GPUs", "collective", "sketch");
  for (int z = 0; z < 3; z++)
    printf(" | %s: %7s %9s %6s %6s", size_names[z], "synth s", "kiln us", "ring", "tree");
  printf("\n");
}

/* One row: for each size asked (zmask), the plan synthesized for it (the sketch's input size is the
 * size its plan is for), its time in the simulator, and NCCL's ring and tree there over it (x > 1:
 * kiln faster; n/a: the model has no such baseline, as the all-pairs alltoall on NDv2's missing
 * links; r or d after kiln's time: the floor's plan, NCCL's ring or its all-pairs alltoall,
 * simulated faster than the sketch's and is the one timed). With write_dir, the 1 MB column's plan
 * of at most 8 ranks is written there. Returns the failures. */
static int table_row(kilnSynthOptions o, const char* topo, int N, kilnColl_t coll, const char* sketch,
                     unsigned zmask, bool quiet, const char* write_dir) {
  kilnTopology* t = NULL;
  kilnSketch* s = NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/plans/sketches/%s.xml", KILN_SOURCE_DIR, sketch);
  if (load_topo(topo, N, &t) != KILN_SUCCESS || kilnSketchReadFile(path, &s) != KILN_SUCCESS) {
    printf("%s x%d %s %s: %s\n", topo, N, kilnCollName(coll), sketch, kilnLastError());
    kilnTopologyFree(t);
    return 1;
  }
  int failures = 0;
  printf("%-13s %5d %5d %-13s %-16s", topo, N, t->nranks, kilnCollName(coll), sketch);
  for (int z = 0; z < 3; z++) {
    if (!(zmask & (1u << z))) {
      printf(" | %7s %9s %6s %6s", "-", "-", "-", "-");
      continue;
    }
    kilnSynthOptions oz = o;
    const uint64_t per =
        coll == KILN_COLL_ALLGATHER ? 1 : (uint64_t)t->nranks; /* chunks a rank's input needs */
    oz.input_size = coll == KILN_COLL_ALLGATHER ? sizes[z] / (uint64_t)t->nranks : sizes[z];
    if (oz.input_size < (uint64_t)s->input_chunkup * per) oz.input_size = (uint64_t)s->input_chunkup * per;
    if (!quiet)
      fprintf(stderr, "  %s x%d %s %s at %s ...\n", topo, N, kilnCollName(coll), sketch, size_names[z]);
    kilnSynthStats st;
    kilnPlan* plan = NULL;
    double t0 = now_s();
    kilnResult_t r = kilnSynthesize(t, s, coll, &oz, &plan, &st);
    double el = now_s() - t0;
    if (r != KILN_SUCCESS) {
      printf(" | failed: %s", kilnLastError());
      failures++;
      continue;
    }
    double ks, ring, tree;
    sim_row(plan, t, coll, sizes[z], &ks, &ring, &tree);
    char rs[16] = "n/a", ts[16] = "-";
    if (!isnan(ring)) snprintf(rs, sizeof rs, "%.2fx", ring / ks);
    if (!isnan(tree)) snprintf(ts, sizeof ts, "%.2fx", tree / ks);
    /* r, d: the floor's plan (NCCL's ring on the NIC rails, its all-pairs alltoall) was faster than the sketch's */
    printf(" | %7.2f %8.1f%c %6s %6s", el, ks,
           st.ring_floor     ? 'r'
           : st.direct_floor ? 'd'
           : st.tree_floor   ? 't'
                             : ' ',
           rs, ts);
    if (!quiet)
      fprintf(stderr, "    stages: route %.2fs order %.2fs lower %.2fs verify %.2fs; %d transfers\n",
              st.stage_s[KILN_SYNTH_STAGE_ROUTE], st.stage_s[KILN_SYNTH_STAGE_ORDER],
              st.stage_s[KILN_SYNTH_STAGE_LOWER], st.stage_s[KILN_SYNTH_STAGE_VERIFY], st.transfers);
    if (write_dir && z == 1 && t->nranks <= 8) { /* the plans one machine of the lent ones runs */
      char out[1200];
      snprintf(out, sizeof out, "%s/%s-%s-%dx%d.xml", write_dir, sketch, kilnCollName(coll), N,
               t->gpus_per_node);
      if (kilnPlanWriteFile(plan, out) != KILN_SUCCESS) {
        fprintf(stderr, "%s\n", kilnLastError());
        failures++;
      }
    }
    kilnPlanFree(plan);
    fflush(stdout);
  }
  printf("\n");
  kilnSketchFree(s);
  kilnTopologyFree(t);
  return failures;
}

/* Synthesis time against node count, and the plans' simulated times against NCCL's. */
static int run_scale(kilnSynthOptions o, const char* only, int minnodes, int maxnodes, unsigned zmask,
                     bool quiet) {
  static const struct {
    const char* topo;
    const char* sketch[4]; /* per collective: allgather, alltoall, reducescatter, allreduce */
  } topos[] = {
      {"hgx-h100", {"hgx-h100-rails", "hgx-h100-direct", "hgx-h100-rails", "hgx-h100-rails"}},
      {"dgx2", {"dgx2-sk-1", "dgx2-sk-3", "dgx2-sk-1", "dgx2-sk-1"}},
  };
  table_header();
  int failures = 0;
  for (size_t ti = 0; ti < sizeof topos / sizeof topos[0]; ti++)
    for (int N = minnodes; N <= maxnodes; N *= 2)
      for (int c = 0; c < 4; c++) {
        char label[160];
        snprintf(label, sizeof label, "%s x%d %s %s", topos[ti].topo, N, kilnCollName(all_colls[c]),
                 topos[ti].sketch[c]);
        if (only && !strstr(label, only)) continue;
        kilnTopology* probe = NULL;
        if (kilnTopologyBuiltin(topos[ti].topo, N, &probe) != KILN_SUCCESS)
          continue; /* past KILN_MAX_RANKS */
        kilnTopologyFree(probe);
        failures += table_row(o, topos[ti].topo, N, all_colls[c], topos[ti].sketch[c], zmask, quiet, NULL);
      }
  return failures ? 1 : 0;
}

/* The plans across nodes (the paper's multi-node sketches at full size, and scaled down to the
 * machines that run them: nodes of 1, 2 and 4 GPUs), against NCCL's ring and tree. */
static int run_multinode(kilnSynthOptions o, const char* only, unsigned zmask, bool quiet,
                         const char* write_dir) {
  static const struct {
    const char* topo;
    int nodes;
    const char* sketch;
    unsigned colls; /* bits of all_colls */
  } rows[] = {
      {"dgx2", 2, "dgx2-sk-1", 1 | 4 | 8},
      {"dgx2", 2, "dgx2-sk-2", 1 | 2 | 8},
      {"dgx2", 2, "dgx2-sk-3", 2},
      {"ndv2", 2, "ndv2-sk-1", 15},
      {"ndv2", 4, "ndv2-sk-1", 15},
      {"ndv2", 8, "ndv2-sk-1", 15},
      {"ndv2", 2, "ndv2-sk-2", 2},
      {"ndv2", 4, "ndv2-sk-2", 2},
      {"ndv2", 8, "ndv2-sk-2", 2},
      {"hgx-h100", 2, "hgx-h100-rails", 1 | 4 | 8},
      {"hgx-h100", 4, "hgx-h100-rails", 1 | 4 | 8},
      {"hgx-h100", 8, "hgx-h100-rails", 1 | 4 | 8},
      {"hgx-h100", 2, "hgx-h100-direct", 2},
      {"hgx-h100", 4, "hgx-h100-direct", 2},
      {"hgx-h100", 8, "hgx-h100-direct", 2},
      {"switch2", 2, "switch2-rails", 15},
      {"switch2-1nic", 2, "switch2-sk-1", 15},
      {"switch4-2nic", 2, "switch4-sk-1", 15},
      {"switch4-1nic", 2, "switch4-sk-ndv2", 15},
      {"switch1", 2, "switch1", 15},
      {"switch1", 4, "switch1", 15},
  };
  table_header();
  int failures = 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    for (int c = 0; c < 4; c++) {
      if (!(rows[i].colls & (1u << c))) continue;
      char label[160];
      snprintf(label, sizeof label, "%s x%d %s %s", rows[i].topo, rows[i].nodes, kilnCollName(all_colls[c]),
               rows[i].sketch);
      if (only && !strstr(label, only)) continue;
      failures +=
          table_row(o, rows[i].topo, rows[i].nodes, all_colls[c], rows[i].sketch, zmask, quiet, write_dir);
    }
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  o.time_limit_s = 30;
  o.stall_s = 0.2;
  const char* only = NULL;
  bool quiet = false, scale = false, multinode = false;
  const char* write_dir = NULL;
  int minnodes = 2, maxnodes = 128;
  unsigned zmask = 7;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--time-limit") && i + 1 < argc)
      o.time_limit_s = atof(argv[++i]);
    else if (!strcmp(argv[i], "--stall") && i + 1 < argc)
      o.stall_s = atof(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--quiet"))
      quiet = true;
    else if (!strcmp(argv[i], "--alpha-beta"))
      alpha_beta = true;
    else if (!strcmp(argv[i], "--instances") && i + 1 < argc)
      o.instances = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--scale"))
      scale = true;
    else if (!strcmp(argv[i], "--multinode"))
      multinode = true;
    else if (!strcmp(argv[i], "--write") && i + 1 < argc)
      write_dir = argv[++i];
    else if (!strcmp(argv[i], "--max-nodes") && i + 1 < argc)
      maxnodes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--min-nodes") && i + 1 < argc)
      minnodes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
      const char* v = argv[++i];
      zmask = (strstr(v, "1K") ? 1u : 0u) | (strstr(v, "1M") ? 2u : 0u) | (strstr(v, "1G") ? 4u : 0u);
    } else {
      fprintf(
          stderr,
          "usage: %s [--time-limit S] [--stall S] [--only SUBSTRING] [--quiet] [--alpha-beta] [--instances "
          "N]\n"
          "       [--scale [--min-nodes N] [--max-nodes N] | --multinode [--write DIR]] [--sizes 1K,1M,1G]\n",
          argv[0]);
      return strcmp(argv[i], "--help") ? 2 : 0;
    }
  }
  if (!quiet) o.progress = progress;
  if (scale) return run_scale(o, only, minnodes, maxnodes, zmask, quiet);
  if (multinode) return run_multinode(o, only, zmask, quiet, write_dir);
  printf("kiln synthesis benchmark (TACCL Table 2 cases); MILP time limit %.0fs, stall %.1fs\n",
         o.time_limit_s, o.stall_s);
  printf(
      "simulated times in us on the %s; NCCL = best of ring and tree (alltoall: all-pairs;\n"
      "n/a where the topology lacks a link between some pair)\n\n",
      alpha_beta ? "alpha-beta table" : "calibrated tables (kiln's and NCCL's)");
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
    if (load_topo(bc->topo, bc->nodes, &t) != KILN_SUCCESS || kilnSketchReadFile(path, &s) != KILN_SUCCESS) {
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
        if (baseline(KILN_BASELINE_RING, bc->coll, t, ref, &ring) == KILN_SUCCESS) nccl = ring.time_us;
        if (baseline(KILN_BASELINE_TREE, bc->coll, t, ref, &tree) == KILN_SUCCESS && tree.time_us < nccl)
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
                st.stage_s[KILN_SYNTH_STAGE_VERIFY],
                st.route_optimal ? "routes optimal" : "routes stopped early",
                st.sched_used_greedy ? ", greedy schedule" : ", contiguity schedule");
      fflush(stdout);
      kilnPlanFree(plan);
    }
    kilnSketchFree(s);
    kilnTopologyFree(t);
  }
  return failures ? 1 : 0;
}
