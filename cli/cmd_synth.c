/* kiln synth: synthesize a collective from a topology and a communication sketch (TACCL),
 * verify it, and write the plan. Progress on stderr, a summary at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln synth --topo NAME|FILE.xml [--nodes K] --sketch SKETCH.xml|NAME\n"
          "                  --coll allgather|alltoall|reducescatter|allreduce -o PLAN.xml\n"
          "                  [--time-limit SECONDS] [--stall SECONDS] [--gap G] [--instances N]\n"
          "                  [--proto Simple|LL|LL128]\n"
          "                  [--ordering auto|shortest-path-first|longest-path-first]\n"
          "                  [--size BYTES] [--inplace] [--max-tbs N] [--no-symmetry] [--no-contiguity]\n"
          "                  [--no-fuse] [--node-level auto|on|off] [--quiet]\n"
          "Routes (MILP), orders (greedy) and schedules (contiguity MILP) the collective the sketch\n"
          "describes, lowers it to a plan, verifies it and writes it atomically. --time-limit bounds\n"
          "each MILP solve and the greedy ordering's variants of a round (default 60 s; reaching it\n"
          "keeps the best solution found, which then depends on the machine's speed); --stall stops\n"
          "a MILP whose incumbent has not improved for that long (default 5 s, 0: never); --gap is\n"
          "the relative MIP gap (default 0.01). --size overrides the sketch's input size (bytes\n"
          "per rank's input). --inplace writes MSCCL's\n"
          "in-place form (allgather, reducescatter, allreduce). --max-tbs caps threadblocks per rank\n"
          "(a runtime runs one per SM; 0: no cap). --sketch NAME takes a sketch kiln ships\n"
          "(plans/sketches: dgx2-sk-1, dgx2-sk-2, dgx2-sk-3, ndv2, ndv2-sk-1, ndv2-sk-2, hgx-h100,\n"
          "hgx-h100-direct, switch2, switch4, switch8, torus4x4) where no file of that name is\n"
          "here.\n"
          "--instances N lowers N parallel copies over channels, each with threadblocks of its\n"
          "own (one moves ~40 GB/s a connection on an H200: large calls want 16-32 with Simple,\n"
          "small ones a few with --proto LL; scripts/quickstart.sh makes both); --ordering\n"
          "picks the greedy ordering's heuristic (default the sketch's); --no-symmetry,\n"
          "--no-contiguity and --no-fuse turn off the sketch's symmetry quotient, the contiguity\n"
          "MILP and fused instructions. --node-level routes on two nodes that stand for all of them\n"
          "and copies the routes onto every node (the MILP stays the size of two nodes; auto: on\n"
          "topologies of 3 nodes or more). --quiet (-q) drops the progress lines, not the closing\n"
          "summary; -o is also --output.\n"
          "built-in topologies: %s\n",
          kilnTopologyBuiltinNames());
}

static void progress(const kilnSynthProgress* p, void* user) {
  (void)user;
  fprintf(stderr, "[%-8s] %6.2fs %s", kilnSynthStageName(p->stage), p->elapsed_s, p->message);
  if (p->rows >= 0)
    fprintf(stderr, "  rows %d cols %d%s%.0d ints %d", p->rows, p->cols, p->nonzeros >= 0 ? " nnz " : "",
            p->nonzeros >= 0 ? p->nonzeros : 0, p->integers);
  if (!isnan(p->incumbent)) fprintf(stderr, "  incumbent %.3f us", p->incumbent);
  if (!isnan(p->bound)) fprintf(stderr, "  bound %.3f us", p->bound);
  if (!isnan(p->gap)) fprintf(stderr, "  gap %.2f%%", 100.0 * p->gap);
  fputc('\n', stderr);
}

int cmd_synth(int argc, char** argv) {
  kilnTopoArgs ta = {0};
  const char *sketch_path = NULL, *coll_name = NULL, *out = NULL;
  char sketch_buf[4096];
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  bool quiet = false;
  for (int i = 1; i < argc; i++) {
    int used = cliTopoArg(&ta, argc, argv, i);
    if (used < 0) return 2;
    if (used > 0) { i += used - 1; continue; }
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { help(stdout); return 0; }
    if (!strcmp(a, "--no-symmetry")) { o.use_symmetry = false; continue; }
    if (!strcmp(a, "--no-contiguity")) { o.contiguity = false; continue; }
    if (!strcmp(a, "--no-fuse")) { o.fuse = false; continue; }
    if (!strcmp(a, "--inplace")) { o.inplace = true; continue; }
    if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) { quiet = true; continue; }
    static const char* const valued[] = {"--sketch", "--coll", "-o", "--output", "--time-limit", "--stall",
                                         "--gap", "--max-tbs", "--instances", "--proto", "--size", "--ordering",
                                         "--node-level"};
    bool known = false;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(a, valued[k]);
    if (!known) {
      fprintf(stderr, "kiln synth: %s '%s'\n", a[0] == '-' ? "unknown option" : "unexpected argument", a);
      help(stderr);
      return 2;
    }
    if (!v) {
      fprintf(stderr, "kiln synth: %s needs a value\n", a);
      help(stderr);
      return 2;
    }
    i++;
    if (!strcmp(a, "--sketch")) {
      if (!cliOnce("synth", &sketch_path, a, v)) return 2;
    } else if (!strcmp(a, "--coll")) {
      if (!cliOnce("synth", &coll_name, a, v)) return 2;
    } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
      if (!cliOnce("synth", &out, "-o", v)) return 2;
    } else if (!strcmp(a, "--time-limit")) {
      char* end;
      o.time_limit_s = strtod(v, &end);
      if (*end || !(o.time_limit_s > 0)) { fprintf(stderr, "kiln synth: bad --time-limit '%s'\n", v); return 2; }
    } else if (!strcmp(a, "--stall") || !strcmp(a, "--gap")) {
      char* end;
      double d = strtod(v, &end);
      if (*end || !(d >= 0)) { fprintf(stderr, "kiln synth: bad %s '%s'\n", a, v); return 2; }
      if (!strcmp(a, "--stall")) o.stall_s = d;
      else o.mip_gap = d;
    } else if (!strcmp(a, "--max-tbs")) {
      if (!cliParseInt(v, &o.max_tbs)) {
        fprintf(stderr, "kiln synth: --max-tbs needs a non-negative integer\n");
        return 2;
      }
    } else if (!strcmp(a, "--instances")) {
      if (!cliParseInt(v, &o.instances) || o.instances < 1 || o.instances > 64) {
        fprintf(stderr, "kiln synth: --instances needs an integer in 1..64\n");
        return 2;
      }
    } else if (!strcmp(a, "--proto")) {
      if (!kilnProtoParse(v, &o.proto)) { fprintf(stderr, "kiln synth: unknown protocol '%s'\n", v); return 2; }
    } else if (!strcmp(a, "--size")) {
      if (!kilnParseSize(v, &o.input_size) || o.input_size == 0) {
        fprintf(stderr, "kiln synth: bad --size '%s'\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--node-level")) {
      if (!strcmp(v, "auto")) o.nodes_mode = -1;
      else if (!strcmp(v, "on")) o.nodes_mode = 1;
      else if (!strcmp(v, "off")) o.nodes_mode = 0;
      else { fprintf(stderr, "kiln synth: --node-level is auto, on or off, not '%s'\n", v); return 2; }
    } else if (!strcmp(a, "--ordering")) {
      kilnOrdering_t h;
      if (!kilnOrderingParse(v, &h)) { fprintf(stderr, "kiln synth: unknown ordering '%s'\n", v); return 2; }
      o.ordering = (int)h;
    }
  }
  kilnColl_t coll;
  if (!sketch_path || !coll_name || !out) {
    fprintf(stderr, "kiln synth: --sketch, --coll and -o are required\n");
    help(stderr);
    return 2;
  }
  const char* sketch_name = sketch_path;
  sketch_path = cliSketchPath(sketch_name, sketch_buf, sizeof sketch_buf);
  if (!sketch_path) { /* as an unknown --topo name is */
    fprintf(stderr, "kiln synth: unknown sketch '%s': no file of that name here, nor a sketch kiln ships (see --help)\n",
            sketch_name);
    return 2;
  }
  /* Requests synthesis cannot serve, refused as classic and simulate refuse theirs (2, not 1). */
  if (!kilnCollParse(coll_name, &coll) || coll == KILN_COLL_CUSTOM) {
    fprintf(stderr, "kiln synth: --coll is allgather, alltoall, reducescatter or allreduce, not '%s'\n", coll_name);
    return 2;
  }
  if (o.inplace && coll == KILN_COLL_ALLTOALL) {
    fprintf(stderr, "kiln synth: in-place alltoall plans are not supported (drop --inplace)\n");
    return 2;
  }
  kilnTopology* t = NULL;
  const int trc = cliLoadTopo(&ta, &t);
  if (trc != 0) return trc;
  const char* const ins[] = {sketch_path, ta.file ? ta.name : NULL};
  if (!cliOutputApart("synth", out, ins, 2) || !cliOutputWritable("synth", out)) {
    kilnTopologyFree(t);
    return 2;
  }
  int rc = 1;
  kilnSketch* s = NULL;
  kilnPlan* plan = NULL;
  if (kilnSketchReadFile(sketch_path, &s) != KILN_SUCCESS) {
    fprintf(stderr, "kiln synth: %s\n", kilnLastError());
    goto out_free;
  }
  if (!quiet) {
    o.progress = progress;
  }
  kilnSynthStats st;
  kilnResult_t r = kilnSynthesize(t, s, coll, &o, &plan, &st);
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "kiln synth: %s: %s\n", kilnResultString(r), kilnLastError());
    goto out_free;
  }
  if (kilnPlanWriteFile(plan, out) != KILN_SUCCESS) {
    fprintf(stderr, "kiln synth: %s\n", kilnLastError());
    goto out_free;
  }
  uint64_t insize = o.input_size ? o.input_size : s->input_size;
  uint64_t ref = kilnSynthReferenceBytes(coll, t->nranks, insize);
  kilnSimResult sim = {0}, ring = {0}, tree = {0};
  bool have_sim = kilnPlanSimulate(plan, t, ref, &sim) == KILN_SUCCESS;
  bool have_ring = kilnBaselineSimulate(KILN_BASELINE_RING, coll, t, ref, &ring) == KILN_SUCCESS;
  bool have_tree = coll == KILN_COLL_ALLREDUCE &&
                   kilnBaselineSimulate(KILN_BASELINE_TREE, coll, t, ref, &tree) == KILN_SUCCESS;
  fprintf(stderr, "kiln synth: %s on %s (%d ranks), sketch %s -> %s\n", kilnCollName(coll), t->name,
          t->nranks, s->name, out);
  fprintf(stderr, "  stages:");
  for (int g = 0; g < KILN_SYNTH_NUM_STAGES; g++)
    fprintf(stderr, " %s %.2fs", kilnSynthStageName((kilnSynthStage_t)g), st.stage_s[g]);
  fprintf(stderr, "  total %.2fs\n", st.total_s);
  fprintf(stderr, "  routing: %d solve(s), %d rows x %d cols (%d integer), %s, objective %.2f us\n",
          st.route_solves, st.route_rows, st.route_cols, st.route_integers,
          st.route_optimal ? "optimal" : "stopped early (time limit or stall)", st.route_bound_us);
  fprintf(stderr, "  schedule: %d transfers, greedy %.2f us, final %.2f us (%s)%s\n", st.transfers,
          st.greedy_us, st.schedule_us,
          st.sched_used_greedy ? "greedy kept" : (st.sched_optimal ? "contiguity optimal" : "contiguity incumbent"),
          st.fused ? ", fused instructions" : "");
  if (st.orderings_cut)
    fprintf(stderr, "  ordering: the time limit cut its variants short (the best so far kept; a faster machine or a "
                    "larger --time-limit may find another plan)\n");
  if (have_sim) {
    fprintf(stderr, "  predicted at %llu bytes: %.2f us", (unsigned long long)ref, sim.time_us);
    if (have_ring) fprintf(stderr, "; NCCL ring %.2f us (speedup %.2fx)", ring.time_us, ring.time_us / sim.time_us);
    if (have_tree) fprintf(stderr, "; NCCL tree %.2f us (speedup %.2fx)", tree.time_us, tree.time_us / sim.time_us);
    fputc('\n', stderr);
  } else {
    fprintf(stderr, "  (simulation failed: %s)\n", kilnLastError());
  }
  rc = 0;
out_free:
  if (plan) kilnPlanFree(plan);
  if (s) kilnSketchFree(s);
  kilnTopologyFree(t);
  return rc;
}
