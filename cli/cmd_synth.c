/* kiln synth: synthesize a collective from a topology and a communication sketch (TACCL),
 * verify it, and write the plan. Progress on stderr, a summary at the end. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"

static void help(FILE* f) {
  fprintf(
      f,
      "usage: kiln synth --topo NAME|FILE.xml|FILE.json [--nodes K] --sketch SKETCH.xml|SKETCH.json|NAME\n"
      "                  --coll allgather|alltoall|reducescatter|allreduce -o PLAN.xml\n"
      "                  [--size BYTES | --bytes BYTES] [--form auto|FORM[,FORM...]]\n"
      "                  [--proto auto|Simple|LL|LL128|LL12] [--instances auto|N]\n"
      "                  [--time-limit SECONDS] [--stall SECONDS] [--gap G]\n"
      "                  [--ordering auto|shortest-path-first|longest-path-first]\n"
      "                  [--inplace] [--max-tbs N] [--no-symmetry] [--no-contiguity]\n"
      "                  [--no-fuse] [--no-floor] [--node-level auto|on|off] [--keep-on-interrupt]\n"
      "                  [--quiet]\n"
      "Writes the plan of the collective that the simulator predicts fastest at the input size,\n"
      "verified, atomically. Its forms (FORM): sketch - TACCL's: routes (MILP), orders (greedy)\n"
      "and schedules (contiguity MILP) the collective the sketch describes, lowered to send and\n"
      "receive steps; and where the sketch links every pair of ranks of one node (an NVLink\n"
      "domain, where every route is direct), the forms written with memory steps (puts into the\n"
      "peers' scratch) as kiln classic writes them: oneflight (allreduce, reducescatter: every\n"
      "rank reduces from every peer's input), twoshot (allreduce: a reduced share per rank, then\n"
      "put to every peer), direct (allgather, alltoall: puts to every peer). --form auto (the\n"
      "default): the memory forms in an NVLink domain, else sketch; each memory form is tried in\n"
      "every protocol (--proto auto) and in 1, 2, 4 .. 64 instances (--instances auto), and the\n"
      "summary says which won. --size is the bytes of a rank's input (default the sketch's\n"
      "input_size); --bytes the collective's size as kiln simulate takes it (allgather: the\n"
      "output). --time-limit bounds\n"
      "each MILP solve and the greedy ordering's variants of a round (default 60 s; reaching it\n"
      "keeps the best solution found, which then depends on the machine's speed); --stall stops\n"
      "a MILP whose incumbent has not improved for that long (default 5 s, 0: never); --gap is\n"
      "the relative MIP gap (default 0.01). --size overrides the sketch's input size (bytes\n"
      "per rank's input). --inplace writes MSCCL's\n"
      "in-place form (allgather, reducescatter, allreduce). --max-tbs caps threadblocks per rank\n"
      "(a runtime runs one per SM; 0: no cap). --sketch NAME takes a sketch kiln ships\n"
      "(plans/sketches: dgx2-sk-1, dgx2-sk-2, dgx2-sk-3, ndv2, ndv2-sk-1, ndv2-sk-2, hgx-h100,\n"
      "hgx-h100-rails, hgx-h100-direct, switch1, switch2, switch2-rails, switch2-sk-1, switch4,\n"
      "switch4-sk-1, switch4-sk-ndv2, switch8, torus4x4) where no file of that name is here.\n"
      "A FILE.json topology or sketch is TACCL's (taccl solve --topology-file, --sketch-file; the\n"
      "mapping is in docs/taccl.md); a TACCL sketch's nnodes sets the node count unless --nodes does.\n"
      "--instances N lowers N parallel copies over channels, each with threadblocks of its\n"
      "own (one moves ~40 GB/s a connection on an H200); by default the sketch's plan and the\n"
      "floor's take the instances and, of Simple and LL, the protocol the simulator predicts\n"
      "fastest. --ordering\n"
      "picks the greedy ordering's heuristic (default the sketch's); --no-symmetry,\n"
      "--no-contiguity and --no-fuse turn off the sketch's symmetry quotient, the contiguity\n"
      "MILP and fused instructions. --node-level routes on two nodes that stand for all of them\n"
      "and copies the routes onto every node (the MILP stays the size of two nodes; auto: on\n"
      "topologies of 3 nodes or more). The plan is no slower in the simulator than NCCL's ring,\n"
      "its tree (allreduce) or its all-pairs alltoall (up to 181 ranks): where one of them\n"
      "simulates faster than every plan of the forms it is written instead, and the summary says\n"
      "so; --no-floor never writes them. Progress goes to stderr: the step\n"
      "among those planned, an estimate of the time left, and for each MILP its size, incumbent\n"
      "and bound.\n"
      "--keep-on-interrupt: Ctrl-C ends the synthesis early and writes the best plan verified so\n"
      "far (exit 0; a second Ctrl-C quits at once, writing nothing); without it Ctrl-C quits at\n"
      "once. The plan file is never left half-written. --quiet (-q) drops the progress lines,\n"
      "not the closing summary; -o is also --output.\n"
      "built-in topologies: %s\n",
      kilnTopologyBuiltinNames());
}

/* A duration for people: 42s, 3m07s, 1h02m. */
static void format_duration(double s, char* buf, size_t n) {
  if (!(s >= 0))
    snprintf(buf, n, "?");
  else if (s < 60)
    snprintf(buf, n, "%.0fs", s < 1 ? 1 : s);
  else if (s < 3600)
    snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
  else
    snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

/* One line per report: total time, the step among those planned and an estimate of what
 * remains, the stage and what it does, and for a MILP its size, incumbent and bound. */
static void progress(const kilnSynthProgress* p, void* user) {
  (void)user;
  char left[32] = "";
  if (!isnan(p->remaining_s)) {
    char d[16];
    format_duration(p->remaining_s, d, sizeof d);
    snprintf(left, sizeof left, ", ~%s left", d);
  }
  fprintf(stderr, "[%-8s] %7.2fs (step %d/%d%s) %s", kilnSynthStageName(p->stage), p->total_s, p->step,
          p->nsteps, left, p->message);
  if (p->elapsed_s > 0.05 && !strcmp(p->message, "solving")) fprintf(stderr, " for %.1fs", p->elapsed_s);
  if (p->rows >= 0)
    fprintf(stderr, "  rows %d cols %d%s%.0d ints %d", p->rows, p->cols, p->nonzeros >= 0 ? " nnz " : "",
            p->nonzeros >= 0 ? p->nonzeros : 0, p->integers);
  if (!isnan(p->incumbent)) fprintf(stderr, "  incumbent %.3f us", p->incumbent);
  if (!isnan(p->bound)) fprintf(stderr, "  bound %.3f us", p->bound);
  if (!isnan(p->gap)) fprintf(stderr, "  gap %.2f%%", 100.0 * p->gap);
  fputc('\n', stderr);
}

/* TACCL's JSON files go by their ending. */
static bool is_json(const char* path) {
  const size_t n = strlen(path);
  return n > 5 && !strcmp(path + n - 5, ".json");
}

/* --keep-on-interrupt: the first Ctrl-C asks the synthesizer to stop and keep its best plan; the
 * handler then gives SIGINT back to kiln's own (leave no temporary file, die), so a second
 * Ctrl-C stops at once. */
static volatile sig_atomic_t g_stop;
static struct sigaction g_prev_int;

static void on_interrupt(int sig) {
  (void)sig;
  g_stop = 1;
  static const char msg[] =
      "\nkiln synth: interrupted: finishing with the best plan so far (Ctrl-C again to quit now)\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  sigaction(SIGINT, &g_prev_int, NULL);
}

int cmd_synth(int argc, char** argv) {
  kilnTopoArgs ta = {0};
  const char *sketch_path = NULL, *coll_name = NULL, *out = NULL;
  char sketch_buf[4096];
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  const char* size_opt = NULL; /* --size or --bytes, whichever was given */
  bool quiet = false;
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
    if (!strcmp(a, "--no-symmetry")) {
      o.use_symmetry = false;
      continue;
    }
    if (!strcmp(a, "--no-contiguity")) {
      o.contiguity = false;
      continue;
    }
    if (!strcmp(a, "--no-fuse")) {
      o.fuse = false;
      continue;
    }
    if (!strcmp(a, "--no-floor")) {
      o.floor = false;
      continue;
    }
    if (!strcmp(a, "--inplace")) {
      o.inplace = true;
      continue;
    }
    if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
      quiet = true;
      continue;
    }
    if (!strcmp(a, "--keep-on-interrupt")) {
      o.keep_on_stop = true;
      continue;
    }
    static const char* const valued[] = {"--sketch", "--coll",  "-o",         "--output",     "--time-limit",
                                         "--stall",  "--gap",   "--max-tbs",  "--instances",  "--proto",
                                         "--size",   "--bytes", "--ordering", "--node-level", "--form"};
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
      if (*end || !(o.time_limit_s > 0)) {
        fprintf(stderr, "kiln synth: bad --time-limit '%s'\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--stall") || !strcmp(a, "--gap")) {
      char* end;
      double d = strtod(v, &end);
      if (*end || !(d >= 0)) {
        fprintf(stderr, "kiln synth: bad %s '%s'\n", a, v);
        return 2;
      }
      if (!strcmp(a, "--stall"))
        o.stall_s = d;
      else
        o.mip_gap = d;
    } else if (!strcmp(a, "--max-tbs")) {
      if (!cliParseInt(v, &o.max_tbs)) {
        fprintf(stderr, "kiln synth: --max-tbs needs a non-negative integer\n");
        return 2;
      }
    } else if (!strcmp(a, "--instances")) {
      if (!strcmp(v, "auto")) {
        o.instances = 0;
      } else if (!cliParseInt(v, &o.instances) || o.instances < 1 || o.instances > 64) {
        fprintf(stderr, "kiln synth: --instances needs auto or an integer in 1..64\n");
        return 2;
      }
    } else if (!strcmp(a, "--proto")) {
      if (!strcmp(v, "auto"))
        o.proto = KILN_SYNTH_PROTO_AUTO;
      else if (!kilnProtoParse(v, &o.proto)) {
        fprintf(stderr, "kiln synth: unknown protocol '%s' (auto, Simple, LL, LL128, LL12)\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--form")) {
      o.forms = 0;
      if (strcmp(v, "auto")) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        for (char *save = NULL, *f = strtok_r(buf, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
          kilnSynthForm_t fm;
          if (!kilnSynthFormParse(f, &fm) || !(KILN_SYNTH_FORM_BIT(fm) & KILN_SYNTH_FORMS_CHOSEN)) {
            fprintf(stderr,
                    "kiln synth: --form '%s': forms are auto, sketch, oneflight, twoshot and direct\n", f);
            return 2;
          }
          o.forms |= KILN_SYNTH_FORM_BIT(fm);
        }
        if (!o.forms) {
          fprintf(stderr, "kiln synth: --form '%s' names no form\n", v);
          return 2;
        }
      }
    } else if (!strcmp(a, "--size") || !strcmp(a, "--bytes")) {
      if (size_opt && strcmp(size_opt, a)) {
        fprintf(stderr, "kiln synth: --size and --bytes say the same thing; give one\n");
        return 2;
      }
      size_opt = a;
      if (!kilnParseSize(v, &o.input_size) || o.input_size == 0) {
        fprintf(stderr, "kiln synth: bad %s '%s'\n", a, v);
        return 2;
      }
    } else if (!strcmp(a, "--node-level")) {
      if (!strcmp(v, "auto"))
        o.nodes_mode = -1;
      else if (!strcmp(v, "on"))
        o.nodes_mode = 1;
      else if (!strcmp(v, "off"))
        o.nodes_mode = 0;
      else {
        fprintf(stderr, "kiln synth: --node-level is auto, on or off, not '%s'\n", v);
        return 2;
      }
    } else if (!strcmp(a, "--ordering")) {
      kilnOrdering_t h;
      if (!kilnOrderingParse(v, &h)) {
        fprintf(stderr, "kiln synth: unknown ordering '%s'\n", v);
        return 2;
      }
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
    fprintf(
        stderr,
        "kiln synth: unknown sketch '%s': no file of that name here, nor a sketch kiln ships (see --help)\n",
        sketch_name);
    return 2;
  }
  /* Requests synthesis cannot serve, refused as classic and simulate refuse theirs (2, not 1). */
  if (!kilnCollParse(coll_name, &coll) || coll == KILN_COLL_CUSTOM) {
    fprintf(stderr, "kiln synth: --coll is allgather, alltoall, reducescatter or allreduce, not '%s'\n",
            coll_name);
    return 2;
  }
  if (o.inplace && coll == KILN_COLL_ALLTOALL) {
    fprintf(stderr, "kiln synth: in-place alltoall plans are not supported (drop --inplace)\n");
    return 2;
  }
  kilnTopology* t = NULL;
  const bool topo_json = ta.name && is_json(ta.name);
  if (topo_json) { /* TACCL's topology file: one node, --nodes (or the sketch's nnodes) for more */
    if (kilnTopologyReadTacclFile(ta.name, &t) != KILN_SUCCESS) {
      cliFileErrorTo(stderr, "kiln synth: ", ta.name, kilnLastError());
      return 1;
    }
    ta.file = true;
  } else {
    const int trc = cliLoadTopo(&ta, &t);
    if (trc != 0) return trc;
  }
  const char* const ins[] = {sketch_path, ta.file ? ta.name : NULL};
  if (!cliOutputApart("synth", out, ins, 2) || !cliOutputWritable("synth", out)) {
    kilnTopologyFree(t);
    return 2;
  }
  int rc = 1;
  kilnSketch* s = NULL;
  kilnPlan* plan = NULL;
  int nnodes = 0; /* a TACCL sketch's node count */
  if (is_json(sketch_path)
          ? kilnSketchReadTacclFile(sketch_path, t->gpus_per_node, &s, &nnodes) != KILN_SUCCESS
          : kilnSketchReadFile(sketch_path, &s) != KILN_SUCCESS) {
    cliFileErrorTo(stderr, "kiln synth: ", sketch_path, kilnLastError());
    goto out_free;
  }
  /* the node count: --nodes, else a TACCL sketch's nnodes, else the topology's */
  {
    const int want = ta.nodes > 0 ? ta.nodes : nnodes > 0 ? nnodes : t->nodes;
    if (nnodes > 0 && ta.nodes > 0 && nnodes != ta.nodes && !quiet)
      fprintf(stderr,
              "kiln synth: %s was written for %d node%s (its nnodes); synthesizing for the %d of --nodes\n",
              sketch_path, nnodes, nnodes == 1 ? "" : "s", ta.nodes);
    if (want != t->nodes) {
      t->nodes = want;
      const kilnResult_t er = kilnTopologyExpand(t);
      if (er != KILN_SUCCESS) {
        fprintf(stderr, "kiln synth: %s\n", kilnLastError());
        rc = er == KILN_ERR_INVALID_ARGUMENT ? 2 : 1;
        goto out_free;
      }
    }
  }
  /* --bytes: the collective's size as kiln simulate takes it (an allgather's output: n inputs) */
  if (size_opt && !strcmp(size_opt, "--bytes") && coll == KILN_COLL_ALLGATHER) {
    if (o.input_size % (uint64_t)t->nranks) {
      fprintf(stderr,
              "kiln synth: --bytes %llu: an allgather's output of %d ranks is a multiple of %d bytes\n",
              (unsigned long long)o.input_size, t->nranks, t->nranks);
      rc = 2;
      goto out_free;
    }
    o.input_size /= (uint64_t)t->nranks;
  }
  if (!quiet) {
    o.progress = progress;
  }
  if (o.keep_on_stop) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    g_stop = 0;
    o.stop = &g_stop;
    /* a SIGINT the caller ignores (a background job) stays ignored */
    if (sigaction(SIGINT, NULL, &g_prev_int) == 0 && g_prev_int.sa_handler != SIG_IGN)
      sigaction(SIGINT, &sa, NULL);
  }
  kilnSynthStats st;
  kilnResult_t r = kilnSynthesize(t, s, coll, &o, &plan, &st);
  if (o.keep_on_stop && !g_stop) sigaction(SIGINT, &g_prev_int, NULL); /* writing the plan: kiln's handler */
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "kiln synth: %s: %s\n", kilnResultString(r), kilnLastError());
    goto out_free;
  }
  if (st.interrupted)
    fprintf(stderr,
            "kiln synth: interrupted: writing the best plan found so far (verified; a full run may find a "
            "faster one)\n");
  if (kilnPlanWriteFile(plan, out) != KILN_SUCCESS) {
    fprintf(stderr, "kiln synth: %s\n", kilnLastError());
    goto out_free;
  }
  uint64_t insize = o.input_size ? o.input_size : s->input_size;
  uint64_t ref = kilnSynthReferenceBytes(coll, t->nranks, insize);
  kilnSimResult ring = {0}, tree = {0};
  bool have_ring = kilnBaselineSimulate(KILN_BASELINE_RING, coll, t, ref, &ring) == KILN_SUCCESS;
  bool have_tree = coll == KILN_COLL_ALLREDUCE &&
                   kilnBaselineSimulate(KILN_BASELINE_TREE, coll, t, ref, &tree) == KILN_SUCCESS;
  fprintf(stderr, "kiln synth: %s on %s (%d ranks), sketch %s -> %s\n", kilnCollName(coll), t->name,
          t->nranks, s->name, out);
  fprintf(stderr, "  stages:");
  for (int g = 0; g < KILN_SYNTH_NUM_STAGES; g++)
    fprintf(stderr, " %s %.2fs", kilnSynthStageName((kilnSynthStage_t)g), st.stage_s[g]);
  fprintf(stderr, "  total %.2fs\n", st.total_s);
  if (st.route_solves > 0) { /* the sketch's stages ran */
    fprintf(stderr, "  routing: %d solve(s), %d rows x %d cols (%d integer), %s, objective %.2f us\n",
            st.route_solves, st.route_rows, st.route_cols, st.route_integers,
            st.route_optimal ? "optimal" : "stopped early (time limit or stall)", st.route_bound_us);
    fprintf(stderr, "  schedule: %d transfers, greedy %.2f us, final %.2f us (%s)%s\n", st.transfers,
            st.greedy_us, st.schedule_us,
            st.sched_used_greedy ? "greedy kept"
                                 : (st.sched_optimal ? "contiguity optimal" : "contiguity incumbent"),
            st.fused ? ", fused instructions" : "");
  }
  switch (st.form) {
    case KILN_SYNTH_FORM_SKETCH:
      fprintf(stderr, "  plan: the sketch's (%s, %d instance%s)\n", kilnProtoName(st.proto), st.instances,
              st.instances == 1 ? "" : "s");
      break;
    case KILN_SYNTH_FORM_ONEFLIGHT:
    case KILN_SYNTH_FORM_TWOSHOT:
    case KILN_SYNTH_FORM_DIRECT:
      fprintf(stderr,
              "  plan: the %s form in memory steps, %s puts, %d instance%s (the fastest of %d simulated; the "
              "sketch links every pair of ranks of the node)\n",
              kilnSynthFormName(st.form), kilnProtoName(st.proto), st.instances, st.instances == 1 ? "" : "s",
              st.candidates);
      break;
    case KILN_SYNTH_FORM_RING:
      fprintf(stderr,
              "  plan: NCCL's ring on the NIC rails, which simulated faster than every plan of the forms\n");
      break;
    case KILN_SYNTH_FORM_TREE:
      fprintf(stderr,
              "  plan: NCCL's double binary tree, which simulated faster than every plan of the forms\n");
      break;
    default:
      fprintf(stderr,
              "  plan: NCCL's all-pairs alltoall, which simulated faster than every plan of the forms\n");
      break;
  }
  if (st.orderings_cut)
    fprintf(stderr,
            "  ordering: the time limit cut its variants short (the best so far kept; a faster machine or a "
            "larger --time-limit may find another plan)\n");
  /* the synthesizer's prediction of the plan at ref bytes, the time it chose the plan by */
  const double us = st.predicted_us;
  fprintf(stderr, "  predicted at %llu bytes: %.2f us", (unsigned long long)ref, us);
  if (have_ring) fprintf(stderr, "; NCCL ring %.2f us (speedup %.2fx)", ring.time_us, ring.time_us / us);
  if (have_tree) fprintf(stderr, "; NCCL tree %.2f us (speedup %.2fx)", tree.time_us, tree.time_us / us);
  fputc('\n', stderr);
  rc = 0;
out_free:
  if (plan) kilnPlanFree(plan);
  if (s) kilnSketchFree(s);
  kilnTopologyFree(t);
  return rc;
}
