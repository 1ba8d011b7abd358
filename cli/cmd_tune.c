/*
 * kiln tune: on the local GPUs, times candidate plans of each collective beside NCCL, checks every
 * result, keeps the fastest per size range and writes them, with the table they were chosen from,
 * into a folder that KILN_PLANS loads and the build bakes (docs/TUNE.md). With --model the times
 * are the calibrated simulator's on a topology instead, and no GPU is needed.
 *
 * Candidates: the synthesizer's plans from a sketch (kilnSynthesize, in each protocol of send and
 * receive steps and each instance count) and kiln classic's (solver/tune.h: forms, protocols,
 * instances), each verified and runnable by kiln's runtime. The CPU side is solver/tune.c, the GPU
 * side host/tune_gpu.c.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r, getpid */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/synth.h"
#include "tune.h"

#ifdef KILN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "../host/tune_gpu.h"
#endif

#define TUNE_MAX_SIZES 64

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln tune --out DIR [--ranks N] [--gpus G] [--colls LIST] [--min-bytes SIZE]\n"
          "                 [--max-bytes SIZE] [--factor F] [--topo NAME|FILE.xml] [--sketch NAME|FILE.xml]\n"
          "                 [--no-synth] [--forms LIST] [--protos LIST] [--instances LIST] [--inplace]\n"
          "                 [--tolerance PCT] [--prune X] [--graph-calls N] [--reps N] [--seed S]\n"
          "                 [--list] [--model [--sms N]]\n"
          "On the local GPUs, times every candidate plan of each collective beside NCCL in CUDA graphs\n"
          "(one thread a rank; a call's time: the median of --reps launches of a graph of --graph-calls\n"
          "calls, the slowest rank's), checks each result against a CPU reference on fresh random\n"
          "floats (sum) - a candidate with a wrong result is refused - and keeps the fastest per size\n"
          "range, where it beats NCCL (elsewhere NCCL serves). Writes DIR whole or not at all: each\n"
          "kept plan with its byte range (minBytes, maxBytes) as XML, tune.csv (every time measured,\n"
          "NCCL's beside it) and README (the machine: GPU, driver, NCCL, whether a rehearsal). Use\n"
          "DIR as KILN_PLANS=DIR (the drop-in loads it at run time) or bake it (cmake\n"
          "-DKILN_PLANS_DIR=DIR, or kiln bake DIR/FILE.xml). An existing DIR is replaced only when it\n"
          "is empty or a folder kiln tune wrote (it holds tune.csv).\n"
          "  --ranks N        ranks (default: the GPUs used, at least 2). More ranks than GPUs share\n"
          "                   them (rank r on GPU r mod GPUs): a rehearsal, whose times say nothing\n"
          "                   about speed and which has no NCCL; README and the output say so\n"
          "  --gpus G         use the first G GPUs (default: every one visible)\n"
          "  --colls LIST     of allreduce, allgather, reducescatter, alltoall (default all four)\n"
          "  --min-bytes, --max-bytes, --factor  the sizes: 16 B to 1 GiB by default, each 4 times\n"
          "                   the last (reference bytes: allreduce per-rank input, allgather total\n"
          "                   output, reducescatter and alltoall total input)\n"
          "  --topo, --sketch the synthesizer's topology and sketch (default: the built-in switchN for\n"
          "                   N ranks and kiln's sketch switchN where it ships one, else the\n"
          "                   topology's default sketch; kiln profile writes this machine's topology)\n"
          "  --no-synth       kiln classic's plans only\n"
          "  --forms LIST     kiln classic's forms (default ring,direct; with --no-synth also oneshot,\n"
          "                   twoshot,staged, the memory-step forms the synthesizer writes otherwise)\n"
          "  --protos LIST    protocols (default Simple,LL,LL128,LL12; plans of send and receive\n"
          "                   steps take no LL12)\n"
          "  --instances LIST instance counts (default 1,2,4,8,16,32)\n"
          "  --inplace        tune in-place calls (plans of the in-place form) instead\n"
          "  --tolerance PCT  keep the plan of the size below while within PCT%% of the fastest\n"
          "                   (default 3: fewer ranges for differences timing cannot tell apart)\n"
          "  --prune X        a candidate X times slower than the fastest at a size is not timed at\n"
          "                   the larger ones (default 4; 0: time every candidate at every size)\n"
          "  --graph-calls N  calls captured in a graph (default 10); --reps N launches timed (default 7)\n"
          "  --seed S         the inputs' seed (default: from the clock; printed)\n"
          "  --list           print the candidates and exit (no GPU needed; give --ranks without one)\n"
          "  --model          no GPU: each time is the calibrated simulator's prediction on the topology\n"
          "                   (--topo: its <costs> where it has them, as kiln profile writes them; else\n"
          "                   the built-in table fitted to H200s), NCCL's the faster of its simulated\n"
          "                   ring and tree (allreduce), ring (allgather, reducescatter) or all-pairs\n"
          "                   (alltoall). Ranks: --ranks, else the topology's; they must agree. README\n"
          "                   and tune.csv say the choice is the model's; kiln tune on the GPUs replaces\n"
          "                   it. An LL128 plan of send and receive steps is predicted as it runs, in\n"
          "                   Simple (KILN_LL128 off); one of more threadblocks on a rank than --sms\n"
          "                   (default 132: H100, H200) is left out, as the runtime does not load it.\n"
          "                   --gpus, --graph-calls, --reps, --prune and --seed do not apply\n"
          "Without --model: needs the GPU runtime and a GPU; exits 1 saying why where one is missing.\n");
}

typedef struct tuneOpts {
  int ranks, gpus;
  bool colls[KILN_NUM_COLLS];
  uint64_t minB, maxB;
  int factor;
  kilnTopoArgs ta;
  const char* sketch;
  bool synth, list, model;
  const char* gpuOnly; /* the first option given that only a tune on the GPUs takes */
  kilnTuneSpace space;
  double tolerance, prune;
  int graphCalls, reps;
  int sms; /* --model: the SMs a GPU has */
  uint64_t seed;
  bool seedGiven;
  const char* out;
} tuneOpts;

/* Splits a comma-separated list, calling one(item) on each; false at the first it refuses. */
static bool each_item(const char* list, bool (*one)(const char* item, void* user), void* user) {
  char buf[256];
  if (!list || strlen(list) >= sizeof buf) return false;
  snprintf(buf, sizeof buf, "%s", list);
  char* save = NULL;
  bool any = false;
  for (char* it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
    if (!one(it, user)) return false;
    any = true;
  }
  return any;
}

static bool one_coll(const char* s, void* user) {
  kilnColl_t c;
  if (!kilnCollParse(s, &c) || c == KILN_COLL_CUSTOM) return false;
  ((bool*)user)[c] = true;
  return true;
}
static bool one_form(const char* s, void* user) {
  kilnTuneForm_t f;
  if (!kilnTuneFormParse(s, &f)) return false;
  *(unsigned*)user |= 1u << f;
  return true;
}
static bool one_proto(const char* s, void* user) {
  kilnProto_t p;
  if (!kilnProtoParse(s, &p)) return false;
  *(unsigned*)user |= 1u << p;
  return true;
}
static bool one_instances(const char* s, void* user) {
  kilnTuneSpace* sp = user;
  int v;
  if (!cliParseInt(s, &v) || v < 1 || v > 64 || sp->ninstances == KILN_TUNE_MAX_INSTANCES) return false;
  sp->instances[sp->ninstances++] = v;
  return true;
}

static int parse_args(int argc, char** argv, tuneOpts* o) {
  memset(o, 0, sizeof *o);
  o->minB = 16;
  o->maxB = (uint64_t)1 << 30;
  o->factor = 4;
  o->synth = true;
  o->space = (kilnTuneSpace)KILN_TUNE_SPACE_INIT;
  o->tolerance = 0.03;
  o->prune = 4;
  o->graphCalls = 10;
  o->reps = 7;
  o->sms = KILN_TUNE_MODEL_SMS;
  bool anyColl = false, forms = false, smsGiven = false;
  for (int i = 1; i < argc; i++) {
    const int used = cliTopoArg(&o->ta, argc, argv, i);
    if (used < 0) return 2;
    if (used > 0) {
      i += used - 1;
      continue;
    }
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-synth")) {
      o->synth = false;
      continue;
    }
    if (!strcmp(a, "--list")) {
      o->list = true;
      continue;
    }
    if (!strcmp(a, "--model")) {
      o->model = true;
      continue;
    }
    if (!strcmp(a, "--inplace")) {
      o->space.inplace = true;
      continue;
    }
    static const char* const valued[] = {
        "--out",    "--ranks",       "--gpus",  "--colls",  "--min-bytes", "--max-bytes",
        "--factor", "--sketch",      "--forms", "--protos", "--instances", "--tolerance",
        "--prune",  "--graph-calls", "--reps",  "--seed",   "--sms"};
    bool known = false;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(a, valued[k]);
    if (!known) {
      fprintf(stderr, "kiln tune: %s '%s'\n", a[0] == '-' ? "unknown option" : "unexpected argument", a);
      help(stderr);
      return 2;
    }
    if (!v) {
      fprintf(stderr, "kiln tune: %s needs a value\n", a);
      return 2;
    }
    i++;
    static const char* const gpuOnly[] = {"--gpus", "--graph-calls", "--reps", "--prune", "--seed"};
    for (size_t k = 0; k < sizeof gpuOnly / sizeof gpuOnly[0]; k++)
      if (!o->gpuOnly && !strcmp(a, gpuOnly[k])) o->gpuOnly = gpuOnly[k];
    bool ok = true;
    if (!strcmp(a, "--out"))
      ok = cliOnce("tune", &o->out, a, v);
    else if (!strcmp(a, "--ranks"))
      ok = cliParseInt(v, &o->ranks) && o->ranks >= 2 && o->ranks <= 64;
    else if (!strcmp(a, "--gpus"))
      ok = cliParseInt(v, &o->gpus) && o->gpus >= 1;
    else if (!strcmp(a, "--colls"))
      ok = anyColl = each_item(v, one_coll, o->colls);
    else if (!strcmp(a, "--min-bytes"))
      ok = kilnParseSize(v, &o->minB) && o->minB >= 1;
    else if (!strcmp(a, "--max-bytes"))
      ok = kilnParseSize(v, &o->maxB) && o->maxB >= 1;
    else if (!strcmp(a, "--factor"))
      ok = cliParseInt(v, &o->factor) && o->factor >= 2;
    else if (!strcmp(a, "--sketch"))
      ok = cliOnce("tune", &o->sketch, a, v);
    else if (!strcmp(a, "--forms")) {
      o->space.forms = 0;
      ok = forms = each_item(v, one_form, &o->space.forms);
    } else if (!strcmp(a, "--protos")) {
      o->space.protos = 0;
      ok = each_item(v, one_proto, &o->space.protos);
    } else if (!strcmp(a, "--instances")) {
      o->space.ninstances = 0;
      ok = each_item(v, one_instances, &o->space);
    } else if (!strcmp(a, "--tolerance")) {
      char* end;
      o->tolerance = strtod(v, &end) / 100.0;
      ok = !*end && o->tolerance >= 0 && o->tolerance < 10;
    } else if (!strcmp(a, "--prune")) {
      char* end;
      o->prune = strtod(v, &end);
      ok = !*end && (o->prune == 0 || o->prune >= 1);
    } else if (!strcmp(a, "--graph-calls"))
      ok = cliParseInt(v, &o->graphCalls) && o->graphCalls >= 1 && o->graphCalls <= 1000;
    else if (!strcmp(a, "--sms")) {
      ok = cliParseInt(v, &o->sms) && o->sms >= 1 && o->sms <= 4096;
      smsGiven = true;
    } else if (!strcmp(a, "--reps"))
      ok = cliParseInt(v, &o->reps) && o->reps >= 1 && o->reps <= 64;
    else if (!strcmp(a, "--seed")) {
      char* end;
      o->seed = strtoull(v, &end, 0);
      ok = o->seedGiven = *v && !*end;
    }
    if (!ok) {
      fprintf(stderr, "kiln tune: bad %s '%s' (see kiln tune --help)\n", a, v);
      return 2;
    }
  }
  /* The synthesizer writes the memory-step forms itself (one-flight, two-shot, direct puts): kiln
   * classic adds its plans through FIFOs. */
  if (o->synth && !forms) o->space.forms = 1u << KILN_TUNE_FORM_RING | 1u << KILN_TUNE_FORM_DIRECT;
  if (!anyColl)
    for (int c = 0; c < KILN_NUM_COLLS; c++) o->colls[c] = c != KILN_COLL_CUSTOM;
  if (!o->out && !o->list) {
    fprintf(stderr, "kiln tune: --out DIR is required (the folder of plans it writes)\n");
    return 2;
  }
  if (smsGiven && !o->model) {
    fprintf(stderr, "kiln tune: --sms is --model's (on the GPUs a tune takes their own)\n");
    return 2;
  }
  if (o->model && o->gpuOnly) {
    fprintf(stderr, "kiln tune: --model times nothing on a GPU: %s does not apply to it\n", o->gpuOnly);
    return 2;
  }
  if (o->model && !o->ranks && !o->ta.name) {
    fprintf(stderr, "kiln tune: --model needs --ranks N (the topology switchN) or --topo NAME|FILE.xml\n");
    return 2;
  }
  if (o->minB > o->maxB) {
    fprintf(stderr, "kiln tune: --min-bytes %llu is above --max-bytes %llu\n", (unsigned long long)o->minB,
            (unsigned long long)o->maxB);
    return 2;
  }
  if (o->space.inplace && o->colls[KILN_COLL_ALLTOALL]) {
    if (anyColl) {
      fprintf(stderr,
              "kiln tune: --inplace: kiln's plans serve no in-place alltoall (leave it out of --colls)\n");
      return 2;
    }
    o->colls[KILN_COLL_ALLTOALL] = false;
  }
  return 0;
}

static void note_skip(const char* name, kilnResult_t r, const char* why, void* user) {
  int* skipped = user;
  (*skipped)++;
  if (r != KILN_ERR_UNSUPPORTED) fprintf(stderr, "kiln tune: %s left out: %s\n", name, why);
}

/* The synthesizer's candidates for coll: the sketch's plan in each protocol of send and receive
 * steps and each instance count, and where the synthesizer writes memory-step forms, those too. */
static void synth_candidates(kilnTuneSet* set, const kilnTopology* t, const kilnSketch* s, kilnColl_t coll,
                             const tuneOpts* o, int* added, int* skipped) {
  static const kilnSynthForm_t forms[] = {KILN_SYNTH_FORM_SKETCH, KILN_SYNTH_FORM_ONEFLIGHT,
                                          KILN_SYNTH_FORM_TWOSHOT, KILN_SYNTH_FORM_DIRECT};
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
    for (int p = 0; p < KILN_NUM_PROTOS; p++) {
      if (!(o->space.protos >> p & 1u)) continue;
      for (int i = 0; i < o->space.ninstances; i++) {
        kilnSynthOptions so = KILN_SYNTH_OPTIONS_INIT;
        so.time_limit_s = 20;
        so.proto = (kilnProto_t)p;
        so.instances = o->space.instances[i];
        so.inplace = o->space.inplace;
        so.floor =
            false; /* NCCL's own algorithms are timed as NCCL, and kiln classic's ring is a candidate */
        so.forms = KILN_SYNTH_FORM_BIT(forms[f]);
        kilnPlan* plan = NULL;
        kilnResult_t r = kilnSynthesize(t, s, coll, &so, &plan, NULL);
        if (r == KILN_SUCCESS) {
          char name[KILN_NAME_MAX];
          snprintf(name, sizeof name, "%s", plan->name);
          r = kilnTuneAdd(set, plan, "synth", true); /* kilnSynthesize verified it */
          if (r == KILN_SUCCESS)
            (*added)++;
          else if (r != KILN_ERR_INVALID_ARGUMENT)
            note_skip(name, r, kilnLastError(), skipped);
          else
            (*skipped)++; /* the same plan as another candidate (the floor's ring, say) */
        } else {
          char name[96];
          snprintf(name, sizeof name, "synth %s %s x%d", kilnCollName(coll), kilnProtoName(so.proto),
                   so.instances);
          note_skip(name, r, kilnLastError(), skipped);
        }
      }
    }
}

/* The tune's topology: given, or switchN for ranks ranks. ranks 0 (--model without --ranks) takes
 * the topology's; otherwise they must agree. */
static int load_topology(const tuneOpts* o, int* ranks, kilnTopology** t) {
  char topoName[32];
  kilnTopoArgs ta = o->ta;
  if (!ta.name) {
    snprintf(topoName, sizeof topoName, "switch%d", *ranks);
    ta.name = topoName;
  }
  const int rc = cliLoadTopo(&ta, t);
  if (rc) {
    if (o->ta.name)
      fprintf(stderr, "kiln tune: --topo %s: not a topology kiln can read (above)\n", o->ta.name);
    return rc;
  }
  if (!*ranks) {
    if ((*t)->nranks < 2 || (*t)->nranks > 64) {
      fprintf(stderr, "kiln tune: the topology %s has %d GPUs: a tune takes 2 to 64 ranks\n", (*t)->name,
              (*t)->nranks);
      return 2;
    }
    *ranks = (*t)->nranks;
  }
  if ((*t)->nranks != *ranks) {
    fprintf(stderr,
            "kiln tune: the tune has %d ranks, but the topology %s has %d GPUs: give --ranks %d or a "
            "topology of %d GPUs\n",
            *ranks, (*t)->name, (*t)->nranks, (*t)->nranks, *ranks);
    return 2;
  }
  return 0;
}

/* The synthesizer's sketch for t: given, or kiln's sketch switchN where it ships one, or t's
 * default. */
static int load_sketch(const tuneOpts* o, int ranks, const kilnTopology* t, kilnSketch** s) {
  char sketchBuf[4096];
  char shipped[32];
  snprintf(shipped, sizeof shipped, "switch%d", ranks);
  const char* path = cliSketchPath(o->sketch ? o->sketch : shipped, sketchBuf, sizeof sketchBuf);
  if (!path && o->sketch) {
    fprintf(stderr, "kiln tune: unknown sketch '%s': no file of that name here, nor a sketch kiln ships\n",
            o->sketch);
    return 2;
  }
  kilnResult_t r = path ? kilnSketchReadFile(path, s) : kilnSketchDefault(t, s);
  if (r != KILN_SUCCESS) {
    cliFileErrorTo(stderr, "kiln tune: ", path ? path : "default sketch", kilnLastError());
    return 1;
  }
  if (!o->ta.name || !o->sketch)
    printf("synthesizer: topology %s, sketch %s\n", t->name, path ? path : "the topology's default");
  return 0;
}

/* Every candidate of coll into set; prints how many. */
static int candidates(const tuneOpts* o, int ranks, kilnColl_t coll, const kilnTopology* t,
                      const kilnSketch* s, kilnTuneSet* set) {
  int skipped = 0, synthAdded = 0, classicAdded = 0;
  if (t && s) synth_candidates(set, t, s, coll, o, &synthAdded, &skipped);
  if (kilnTuneClassic(set, coll, ranks, &o->space, note_skip, &skipped, &classicAdded) != KILN_SUCCESS) {
    fprintf(stderr, "kiln tune: %s\n", kilnLastError());
    return 1;
  }
  printf(
      "%s: %d candidates (%d synthesized, %d kiln classic), %d left out (forms, protocols or instances that "
      "do "
      "not apply, plans the runtime does not run)\n",
      kilnCollName(coll), set->n, synthAdded, classicAdded, skipped);
  return 0;
}

static void join_args(int argc, char** argv, char* out, size_t n) {
  size_t at = (size_t)snprintf(out, n, "kiln");
  for (int i = 0; i < argc && at < n; i++) at += (size_t)snprintf(out + at, n - at, " %s", argv[i]);
}

static void format_size(uint64_t b, char* buf, size_t n) {
  if (b >= (1u << 30) && b % (1u << 30) == 0)
    snprintf(buf, n, "%lluG", (unsigned long long)(b >> 30));
  else if (b >= (1u << 20) && b % (1u << 20) == 0)
    snprintf(buf, n, "%lluM", (unsigned long long)(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    snprintf(buf, n, "%lluK", (unsigned long long)(b >> 10));
  else
    snprintf(buf, n, "%llu", (unsigned long long)b);
}

/* Size k's line: NCCL's time, the fastest candidate's (best; -1: none) and how many of the set
 * `verb` (ran, were predicted). */
static void print_size(kilnColl_t coll, const uint64_t* sizes, int nsizes, int k, const kilnTuneSet* set,
                       const double* us, const double* nccl, int best, int ran, const char* verb) {
  char sz[32];
  format_size(sizes[k], sz, sizeof sz);
  char ncclText[32] = "-";
  if (nccl[k] >= 0) snprintf(ncclText, sizeof ncclText, "%.2f", nccl[k]);
  char speed[32] = "";
  if (best >= 0 && nccl[k] > 0)
    snprintf(speed, sizeof speed, " (%.2fx NCCL)", nccl[k] / us[best * nsizes + k]);
  if (best >= 0)
    printf("%-13s %6s: NCCL %9s us, fastest %9.2f us%s %s (%d of %d %s)\n", kilnCollName(coll), sz, ncclText,
           us[best * nsizes + k], speed, set->c[best].plan->name, ran, set->n, verb);
  else
    printf("%-13s %6s: NCCL %9s us, no candidate %s\n", kilnCollName(coll), sz, ncclText, verb);
  fflush(stdout);
}

/* A candidate the model leaves out: counted where it has more threadblocks than SMs (many do, in 32
 * instances), else named with why. */
static void note_model(const char* name, kilnResult_t r, const char* why, void* user) {
  if (r == KILN_ERR_UNSUPPORTED)
    (*(int*)user)++;
  else
    fprintf(stderr, "kiln tune: %s not predicted: %s\n", name, why);
}

/* The model's times of coll's candidates and NCCL's (kilnTuneModel), a line a size; 0, or 1 after a
 * message. */
static int predict(const kilnTopology* t, int ranks, int sms, kilnColl_t coll, const kilnTuneSet* set,
                   const uint64_t* sizes, int nsizes, double* us, double* nccl) {
  int big = 0;
  if (kilnTuneModel(t, coll, ranks, sms, set, sizes, nsizes, note_model, &big, us, nccl) != KILN_SUCCESS) {
    fprintf(stderr, "kiln tune: %s\n", kilnLastError());
    return 1;
  }
  if (big)
    printf(
        "%s: %d candidates not predicted: more threadblocks on a rank than %d SMs (the runtime does not "
        "load them)\n",
        kilnCollName(coll), big, sms);
  for (int k = 0; k < nsizes; k++) {
    int best = -1, ran = 0;
    for (int c = 0; c < set->n; c++) {
      if (us[c * nsizes + k] < 0) continue;
      ran++;
      if (best < 0 || us[c * nsizes + k] < us[best * nsizes + k]) best = c;
    }
    print_size(coll, sizes, nsizes, k, set, us, nccl, best, ran, "predicted");
  }
  return 0;
}

#ifdef KILN_HAVE_CUDA
static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Times and checks every candidate of coll at every size; fills us and nccl. dropped: [set->n], what
 * is no longer timed: 1 pruned, 2 failed on the GPU. */
static void measure(kilnTuneGpu* g, const tuneOpts* o, kilnColl_t coll, const kilnTuneSet* set,
                    const uint64_t* sizes, int nsizes, double* us, double* nccl, unsigned char* dropped) {
  for (int c = 0; c < set->n; c++) dropped[c] = 0;
  const kilnTuneTiming tm = {2, o->graphCalls, o->reps};
  for (int i = 0; i < set->n * nsizes; i++) us[i] = KILN_TUNE_NOT_RUN;
  for (int k = 0; k < nsizes; k++) nccl[k] = KILN_TUNE_NOT_RUN;
  for (int k = 0; k < nsizes; k++) {
    char sz[32];
    format_size(sizes[k], sz, sizeof sz);
    size_t count = 0;
    if (kilnTuneGpuPrepare(g, coll, sizes[k], o->space.inplace,
                           mix(o->seed ^ ((uint64_t)coll << 56) ^ (uint64_t)k), &count) != KILN_SUCCESS) {
      printf("%-13s %6s: skipped: %s\n", kilnCollName(coll), sz, kilnLastError());
      continue;
    }
    if (kilnTuneGpuHasNccl(g) && kilnTuneGpuRun(g, NULL, &tm, &nccl[k]) != KILN_SUCCESS) {
      fprintf(stderr, "kiln tune: %s %s: NCCL: %s\n", kilnCollName(coll), sz, kilnLastError());
      nccl[k] = KILN_TUNE_FAILED;
    }
    int best = -1, ran = 0;
    for (int c = 0; c < set->n; c++) {
      if (dropped[c]) { /* far slower than the fastest at a smaller size, or failed at one */
        us[c * nsizes + k] = dropped[c] == 1 ? KILN_TUNE_PRUNED : KILN_TUNE_NOT_RUN;
        continue;
      }
      bool wrong = false;
      for (int j = 0; j < k && !wrong; j++) wrong = us[c * nsizes + j] == KILN_TUNE_WRONG;
      if (wrong) continue; /* refused already */
      double t = -1;
      const kilnResult_t r = kilnTuneGpuRun(g, set->c[c].plan, &tm, &t);
      if (r == KILN_SUCCESS) {
        us[c * nsizes + k] = t;
        ran++;
        if (best < 0 || t < us[best * nsizes + k]) best = c;
      } else if (r == KILN_ERR_VERIFY) {
        us[c * nsizes + k] = KILN_TUNE_WRONG;
        fprintf(stderr, "kiln tune: %s refused: %s %s: %s\n", set->c[c].plan->name, kilnCollName(coll), sz,
                kilnLastError());
      } else if (r != KILN_ERR_UNSUPPORTED) {
        us[c * nsizes + k] = KILN_TUNE_FAILED;
        dropped[c] = 2;
        fprintf(stderr, "kiln tune: %s failed: %s %s: %s (not tried at larger sizes)\n", set->c[c].plan->name,
                kilnCollName(coll), sz, kilnLastError());
      }
    }
    if (best >= 0 && o->prune > 0)
      for (int c = 0; c < set->n; c++)
        if (!dropped[c] && us[c * nsizes + k] > o->prune * us[best * nsizes + k]) dropped[c] = 1;
    print_size(coll, sizes, nsizes, k, set, us, nccl, best, ran, "ran");
  }
}
#endif

#ifdef KILN_HAVE_CUDA
/* The GPUs of a tune on them: *g opened and m filled (o's ranks from the GPUs where not given), or
 * for --list only the ranks. 0, or the exit status after a message. */
static int open_gpus(tuneOpts* o, kilnTuneMachine* m, kilnTuneGpu** g) {
  int visible = 0;
  const cudaError_t ce = cudaGetDeviceCount(&visible);
  if (ce != cudaSuccess) visible = 0;
  if (visible < 1 && !o->list) {
    fprintf(stderr, "kiln tune: no CUDA device: %s\n",
            ce != cudaSuccess ? cudaGetErrorString(ce) : "none visible");
    return 1;
  }
  if (!o->ranks && visible < 1) {
    fprintf(stderr, "kiln tune: --list without a GPU needs --ranks\n");
    return 2;
  }
  if (o->gpus > visible && !o->list) {
    fprintf(stderr, "kiln tune: --gpus %d: %d visible here\n", o->gpus, visible);
    return 1;
  }
  const int used = o->gpus ? o->gpus : visible;
  if (!o->ranks) o->ranks = used < 2 ? 2 : used > 64 ? 64 : used;
  if (o->list) return 0;
  if (kilnTuneGpuOpen(o->ranks, o->gpus, m, g) != KILN_SUCCESS) {
    fprintf(stderr, "kiln tune: %s\n", kilnLastError());
    return 1;
  }
  if (!o->seedGiven) o->seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  printf("%d ranks on %d x %s (driver %s, NCCL %s)%s; inputs from seed %llu\n", m->nranks, m->ngpus, m->gpu,
         m->driver, m->nccl,
         m->rehearsal ? ": a REHEARSAL - ranks share GPUs, the times say nothing about speed, no NCCL" : "",
         (unsigned long long)o->seed);
  return 0;
}
#endif

int cmd_tune(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
  tuneOpts o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  uint64_t sizes[TUNE_MAX_SIZES];
  int nsizes = 0;
  if (!kilnTuneSizes(o.minB, o.maxB, o.factor, sizes, TUNE_MAX_SIZES, &nsizes)) {
    fprintf(stderr, "kiln tune: more than %d sizes from %llu to %llu bytes by %d\n", TUNE_MAX_SIZES,
            (unsigned long long)o.minB, (unsigned long long)o.maxB, o.factor);
    return 2;
  }
  if (o.out && !o.list && kilnTuneCheckDir(o.out) != KILN_SUCCESS) {
    fprintf(stderr, "kiln tune: --out %s\n", kilnLastError());
    return 2;
  }
  kilnTuneMachine m;
  memset(&m, 0, sizeof m);
  kilnTopology* t = NULL;
  kilnSketch* s = NULL;
#ifdef KILN_HAVE_CUDA
  kilnTuneGpu* g = NULL;
#endif
  if (o.model) {
    if ((rc = load_topology(&o, &o.ranks, &t)) != 0) goto out_free;
    kilnTuneModelDescribe(t, o.ranks, &m);
    if (!o.list)
      printf("%d ranks, no GPU: every time is the model's - %s; NCCL's is its simulated baseline\n", o.ranks,
             m.model);
  } else {
#ifndef KILN_HAVE_CUDA
    if (!o.list) {
      fprintf(
          stderr,
          "kiln tune: no CUDA device: this kiln was built without the GPU runtime (CUDA, NCCL); kiln tune "
          "--model needs none\n");
      return 1;
    }
    if (!o.ranks) {
      fprintf(stderr, "kiln tune: --list without a GPU needs --ranks\n");
      return 2;
    }
#else
    if ((rc = open_gpus(&o, &m, &g)) != 0) return rc;
#endif
  }
  if (o.synth) {
    if (!t && (rc = load_topology(&o, &o.ranks, &t)) != 0) goto out_free;
    if ((rc = load_sketch(&o, o.ranks, t, &s)) != 0) goto out_free;
  }
  kilnTuneSet sets[KILN_NUM_COLLS];
  memset(sets, 0, sizeof sets);
  double* times[KILN_NUM_COLLS] = {0};
  double* ncclTimes[KILN_NUM_COLLS] = {0};
  kilnTuneRange* ranges[KILN_NUM_COLLS] = {0};
  kilnTuneResult results[KILN_NUM_COLLS];
  int nresults = 0;
  for (int c = 0; c < KILN_NUM_COLLS && rc == 0; c++) {
    if (!o.colls[c]) continue;
    if ((rc = candidates(&o, o.ranks, (kilnColl_t)c, t, s, &sets[c])) != 0) break;
    if (o.list) {
      for (int i = 0; i < sets[c].n; i++) printf("  %-7s %s\n", sets[c].c[i].source, sets[c].c[i].plan->name);
      continue;
    }
    times[c] = malloc((size_t)(sets[c].n ? sets[c].n : 1) * (size_t)nsizes * sizeof(double));
    ncclTimes[c] = malloc((size_t)nsizes * sizeof(double));
    ranges[c] = malloc((size_t)nsizes * sizeof(kilnTuneRange));
    if (!times[c] || !ncclTimes[c] || !ranges[c]) {
      fprintf(stderr, "kiln tune: out of memory\n");
      rc = 1;
      break;
    }
    if (o.model) {
      if ((rc = predict(t, o.ranks, o.sms, (kilnColl_t)c, &sets[c], sizes, nsizes, times[c], ncclTimes[c])) !=
          0)
        break;
    }
#ifdef KILN_HAVE_CUDA
    else {
      unsigned char* dropped = calloc((size_t)sets[c].n + 1, 1);
      if (!dropped) {
        fprintf(stderr, "kiln tune: out of memory\n");
        rc = 1;
        break;
      }
      measure(g, &o, (kilnColl_t)c, &sets[c], sizes, nsizes, times[c], ncclTimes[c], dropped);
      free(dropped);
    }
#endif
    int nr = 0;
    if (kilnTuneChoose(sizes, nsizes, times[c], sets[c].n, ncclTimes[c], o.tolerance, ranges[c], &nr) !=
        KILN_SUCCESS) {
      fprintf(stderr, "kiln tune: %s\n", kilnLastError());
      rc = 1;
      break;
    }
    results[nresults++] =
        (kilnTuneResult){(kilnColl_t)c, &sets[c], nsizes, sizes, times[c], ncclTimes[c], nr, ranges[c]};
    printf("%s: chosen%s\n", kilnCollName((kilnColl_t)c), o.model ? " by the model" : "");
    for (int i = 0; i < nr; i++) {
      const kilnTuneRange* r = &ranges[c][i];
      printf("  %12llu .. %-12llu %s\n", (unsigned long long)r->min_bytes, (unsigned long long)r->max_bytes,
             r->cand < 0 ? "NCCL" : sets[c].c[r->cand].plan->name);
    }
  }
  if (rc == 0 && !o.list) {
    char command[2048];
    join_args(argc, argv, command, sizeof command);
    char full[2200];
    if (o.model)
      snprintf(full, sizeof full, "%s", command);
    else
      snprintf(full, sizeof full, "%s (inputs from seed %llu)", command, (unsigned long long)o.seed);
    if (kilnTuneWriteDir(o.out, &m, results, nresults, full) != KILN_SUCCESS) {
      fprintf(stderr, "kiln tune: writing %s: %s\n", o.out, kilnLastError());
      rc = 1;
    } else {
      printf("wrote %s%s (README, tune.csv, the plans): KILN_PLANS=%s\n", o.out,
             o.model       ? " from the model (nothing measured; kiln tune on the GPUs replaces it)"
             : m.rehearsal ? " from a rehearsal"
                           : "",
             o.out);
    }
  }
  for (int c = 0; c < KILN_NUM_COLLS; c++) {
    kilnTuneSetFree(&sets[c]);
    free(times[c]);
    free(ncclTimes[c]);
    free(ranges[c]);
  }
out_free:
  kilnSketchFree(s);
  kilnTopologyFree(t);
#ifdef KILN_HAVE_CUDA
  kilnTuneGpuClose(g);
#endif
  return rc;
}
