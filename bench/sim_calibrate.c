/*
 * sim_calibrate: the simulator against the GPUs.
 *
 *   sim_calibrate [--tolerance PCT] [--topo FILE.xml] [--set NAME=VALUE]... [--set-nccl NAME=VALUE]...
 *                 [--fit NAME,... [--fit-to sym|plan|nccl]] [--plans DIR] [--nccl] [--failures] TABLE.csv...
 *
 * For every row of coll_bench tables (bench/baselines/<machine>-<date>/<timing>-n<ranks>.csv), the
 * form kiln runs by default for that call - the symmetric kernels' choice at their default
 * settings (host/sym.c: lines LL, LL12 or LL128, the flag form, two-shot, zero copy, the copy
 * engine) - is written as kiln classic's plan of that form (oneshot, twoshot, staged or zerocopy,
 * its protocol, an instance per block of the kernel), simulated on the measuring machine's
 * topology (switchN with the built-in H200 figures, or --topo) with the simulator's calibrated
 * parameters (kiln/topology.h KILN_SIM_PARAMS_INIT, or the topology's <costs>; --set changes one),
 * and the graph's own launch added, spread over its calls (graphN: N calls a graph). Printed: per
 * row the form, the measured time (the kiln-sym column), the predicted one and their ratio; rows
 * off by more than the tolerance (default 25%) are marked, and make the exit status 1.
 *
 * --plans DIR also predicts the plan of each row (the plan column, found by name among DIR's plan
 * files; its time: the baked column for an LL plan, the interpreted one for a Simple plan, as the
 * runtime runs them by default; reported, not judged: they serve no call of 2 or 4 ranks by
 * default); --nccl NCCL's column against the simulator's ring and tree (kilnBaselineSimulate;
 * the faster of the two for allreduce; reported; not in window- tables, where NCCL runs its
 * symmetric kernels). --failures prints only the rows off. --set NAME=VALUE changes a knob of
 * kiln's table, --set-nccl one of NCCL's; --fit NAME,... fits knobs to the rows of --fit-to
 * sym (default), plan or nccl, and prints them.
 *
 * Tables are known by their file names (bench/baselines/README.md): graphN (CUDA graphs of N
 * calls), mp- (a process per GPU: staged forms only), window- (buffers in symmetric windows: zero
 * copy where host/sym.c says), neither (one process driving every GPU: its grouped calls go zero
 * copy as on windows). eager tables time the host's launches, which the simulator does not model:
 * they are refused.
 *
 * Exit status: 0 when every judged row is within the tolerance, 1 when one is not, 2 on bad
 * arguments or a table that cannot be read.
 */
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_csv.h"
#include "kiln/plan.h"

/* CUDA's launch of a graph before its first kernel, spread over the graph's calls: graphs of 10
 * and 20 calls are 0.229 µs a call apart at 16 B-1 KiB (mean of the four collectives, 2x H200,
 * bench/baselines/h200x2-2026-11-29 graph10-n2 and graph20-n2), 4.6 µs a graph. */
#define GRAPH_LAUNCH_US 4.58

/* ---- the symmetric kernels' default choice (host/sym.c kilnSymConfigure, geometry, sym_blocks,
 * direct_wanted, direct_geometry; float data, out of place) ---- */

#define KIB(x) ((uint64_t)(x) << 10)
#define MIB(x) ((uint64_t)(x) << 20)
#define SYM_HALF MIB(64) /* kilnCommConfig.symBytes' default 128 MiB, two halves */
#define SYM_SMS 132      /* an H200's SMs: no call takes more blocks */
#define ES 4             /* float */

typedef enum { ALG_ONESHOT, ALG_TWOSHOT, ALG_RS, ALG_AG, ALG_A2A } symAlgo;
typedef enum { LINES_NONE, LINES_LL, LINES_LL128, LINES_LL12 } symLines;
typedef enum { PLACE_STAGED, PLACE_DIRECT } symPlace; /* where a table's calls may go */

/* The form a call takes, and the kiln classic plan that stands for it. */
typedef struct symForm {
  symAlgo algo;
  symLines lines;
  int blocks, rounds;
  const char* kind;    /* lines, flags, direct (SM stores into the peers' outputs), engine, reduce+engine */
  const char* classic; /* kiln classic's algorithm */
  kilnProto_t proto;
} symForm;

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

static uint64_t line_bytes(symLines ll, uint64_t segBytes) {
  switch (ll) {
    case LINES_LL128: return (segBytes + 119) / 120 * 128;
    case LINES_LL12: return (segBytes + 11) / 12 * 16;
    default: return (segBytes + 7) / 8 * 16;
  }
}

static uint64_t per_region(symAlgo a, int n, uint64_t bytes) {
  return bytes / ((a == ALG_TWOSHOT ? 2u : 1u) * (uint64_t)n) / 256 * 256;
}

/* The defaults of kilnSymConfigure for n ranks. */
typedef struct symConfig {
  uint64_t ll, llReduce, ll2, ll12, ll128, ll128Max, ll128Two, ll128TwoMax, rsRound, copyRound, copyRoundMax,
      a2aBig, direct, directA2A, ce, arCe, llHalf, ll128Half;
  int maxBlocks, reduceBlocks, copyBlocks, directBlocks, minRounds;
} symConfig;

static uint64_t line_area(symLines ll, uint64_t maxBytes, uint64_t regions) {
  if (maxBytes > SYM_HALF) maxBytes = SYM_HALF;
  const uint64_t need = regions * round_up(line_bytes(ll, maxBytes), 256);
  return need < SYM_HALF ? need : SYM_HALF;
}

static symConfig sym_defaults(int n) {
  symConfig c;
  c.ll = n == 2 ? KIB(512) : KIB(128);
  c.llReduce = n == 4 ? KIB(256) : c.ll;
  c.ll2 = KIB(128);
  c.ll12 = KIB(8);
  c.ll128 = KIB(128);
  c.ll128Max = n == 2 ? MIB(1) : KIB(256);
  c.ll128Two = c.ll2;
  c.ll128TwoMax = KIB(512);
  c.rsRound = n == 2 ? MIB(8) : 0;
  c.copyRound = MIB(16);
  c.copyRoundMax = n <= 4 ? MIB(32) : c.copyRound;
  c.a2aBig = n == 2 ? UINT64_MAX : MIB(128);
  c.direct = n == 2 ? MIB(16) : n == 4 ? MIB(1) : UINT64_MAX;
  c.directA2A = n == 4 && c.direct < MIB(4) ? MIB(4) : c.direct;
  c.ce = n == 2 || n == 4 ? MIB(128) : UINT64_MAX;
  c.arCe = n == 2 || n == 4 ? MIB(512) : UINT64_MAX;
  c.maxBlocks = 64;
  c.reduceBlocks = 128;
  c.copyBlocks = n <= 4 ? 128 : 64;
  c.directBlocks = 128;
  c.minRounds = 4;
  uint64_t ll = line_area(LINES_LL, c.ll > c.llReduce ? c.ll : c.llReduce, n);
  const uint64_t ll2 = line_area(LINES_LL, c.ll2, 2 * n);
  if (ll2 > ll) ll = ll2;
  uint64_t l128 = line_area(LINES_LL128, c.ll128Max, n);
  const uint64_t l128x2 = line_area(LINES_LL128, c.ll128TwoMax, 2 * n);
  if (l128x2 > l128) l128 = l128x2;
  c.llHalf = round_up(ll, 4096);
  c.ll128Half = round_up(l128, 4096);
  return c;
}

static bool sym_copies(const symConfig* c, symAlgo a, uint64_t pieceBytes) {
  return a == ALG_AG || (a == ALG_A2A && pieceBytes < c->a2aBig);
}

static uint64_t copy_region(const symConfig* c, symAlgo a, int n) {
  const uint64_t cc = per_region(a, n, c->copyRound);
  return cc < 256 ? 256 : cc;
}

/* host/sym.c geometry: lines or rounds of the flag form; seg, total in bytes here. */
static bool geometry(const symConfig* c, symAlgo a, int n, uint64_t count, symForm* f, uint64_t* segBytes,
                     uint64_t* region) {
  const uint64_t vec = 16 / ES;
  uint64_t s = count;
  if (a == ALG_TWOSHOT) s = ((count + n - 1) / n + vec - 1) / vec * vec;
  const uint64_t cap = per_region(a, n, SYM_HALF);
  const uint64_t llMax = a == ALG_TWOSHOT ? c->ll2 : a == ALG_ONESHOT || a == ALG_RS ? c->llReduce : c->ll;
  const bool two = a == ALG_TWOSHOT;
  symLines lines =
      s * ES <= llMax && round_up(line_bytes(LINES_LL, s * ES), 256) <= per_region(a, n, c->llHalf)
          ? LINES_LL
          : LINES_NONE;
  const uint64_t lo128 = two ? c->ll128Two : c->ll128, hi128 = two ? c->ll128TwoMax : c->ll128Max;
  if (lo128 && s * ES > lo128 && s * ES <= hi128 &&
      round_up(line_bytes(LINES_LL128, s * ES), 256) <= per_region(a, n, c->ll128Half))
    lines = LINES_LL128;
  if (lines == LINES_LL && !two && s * ES > c->ll12) lines = LINES_LL12;
  uint64_t w = s, rounds = 1, bytes;
  if (lines) {
    bytes = line_bytes(lines, s * ES);
  } else {
    uint64_t roundCap = cap, cc = copy_region(c, a, n);
    if (sym_copies(c, a, s * ES)) {
      if (c->copyRoundMax > c->copyRound) {
        const uint64_t big = per_region(a, n, c->copyRoundMax), eighth = round_up((s * ES + 7) / 8, 256);
        cc = eighth < cc ? cc : eighth > big ? big : eighth;
      }
      if (cc < roundCap) roundCap = cc;
    } else if (c->minRounds > 0) {
      uint64_t want = round_up((s * ES + (uint64_t)c->minRounds - 1) / (uint64_t)c->minRounds, 256);
      if (want < cc) want = cc;
      if (want < roundCap) roundCap = want;
    }
    if (a == ALG_RS && c->rsRound && c->rsRound < roundCap) roundCap = c->rsRound;
    if (s * ES > roundCap) {
      w = roundCap / ES / vec * vec;
      if (w == 0) return false;
      rounds = (s + w - 1) / w;
    }
    bytes = w * ES;
  }
  const uint64_t half = lines == LINES_LL128 ? c->ll128Half : lines ? c->llHalf : SYM_HALF;
  if (round_up(bytes, 256) > per_region(a, n, half)) return false;
  f->algo = a;
  f->lines = lines;
  f->rounds = (int)rounds;
  *segBytes = w * ES;
  *region = round_up(bytes, 256);
  (void)s;
  return true;
}

/* host/sym.c sym_blocks for a staged call (direct: false) or a direct copy's piece. */
static int sym_blocks(const symConfig* c, symAlgo a, int n, uint64_t pieceBytes, uint64_t totalBytes,
                      int rounds, uint64_t region, bool copyDirect) {
  const uint64_t bb = !copyDirect ? 2048 : pieceBytes >= MIB(1) ? 16384 : 8192;
  uint64_t nb = (pieceBytes + bb - 1) / bb;
  const bool copies = sym_copies(c, a, totalBytes);
  const uint64_t cc = copy_region(c, a, n);
  const bool grown = rounds > 1 && (n == 2 || region > cc);
  const int cap = copyDirect              ? c->directBlocks
                  : rounds > 1 && !copies ? c->reduceBlocks
                  : grown                 ? c->copyBlocks
                                          : c->maxBlocks;
  if (nb < 1) nb = 1;
  if (nb > (uint64_t)cap) nb = (uint64_t)cap;
  if (nb > SYM_SMS) nb = SYM_SMS;
  return (int)nb;
}

static const char* algo_name(symAlgo a) {
  static const char* const names[] = {"oneshot", "twoshot", "oneshot", "staged", "staged"};
  return names[a];
}

static kilnProto_t lines_proto(symLines l) {
  return l == LINES_LL      ? KILN_PROTO_LL
         : l == LINES_LL128 ? KILN_PROTO_LL128
         : l == LINES_LL12  ? KILN_PROTO_LL12
                            : KILN_PROTO_SIMPLE;
}

/* The form of a call of `bytes` reference bytes of coll on n ranks, where place allows. false: the
 * symmetric kernels do not serve it. */
static bool sym_form_of(kilnColl_t coll, int n, uint64_t bytes, symPlace place, symForm* f) {
  if (n != 2 && n != 4) return false;
  const symConfig c = sym_defaults(n);
  symAlgo a;
  uint64_t count;
  switch (coll) {
    case KILN_COLL_ALLREDUCE:
      a = bytes <= (n == 4 ? KIB(256) : MIB(4)) ? ALG_ONESHOT : ALG_TWOSHOT;
      count = bytes / ES;
      break;
    case KILN_COLL_REDUCESCATTER:
      a = ALG_RS;
      count = bytes / ES / (uint64_t)n;
      break;
    case KILN_COLL_ALLGATHER:
      a = ALG_AG;
      count = bytes / ES / (uint64_t)n;
      break;
    case KILN_COLL_ALLTOALL:
      a = ALG_A2A;
      count = bytes / ES / (uint64_t)n;
      break;
    default: return false;
  }
  if (count == 0) return false;
  memset(f, 0, sizeof *f);
  uint64_t seg = 0, region = 0;
  /* direct_wanted and direct_geometry */
  if (place == PLACE_DIRECT && a != ALG_RS && bytes >= (a == ALG_A2A ? c.directA2A : c.direct)) {
    if (coll == KILN_COLL_ALLREDUCE) {
      if (bytes >= c.arCe && count % (uint64_t)n == 0 && count / n * ES % 16 == 0 &&
          geometry(&c, ALG_RS, n, count / n, f, &seg, &region)) {
        f->blocks = sym_blocks(&c, ALG_RS, n, seg, count / n * ES, f->rounds, region, false);
        f->algo = ALG_TWOSHOT;
        f->kind = "reduce+engine";
        f->classic = "twoshot";
        f->proto = KILN_PROTO_SIMPLE;
        return true;
      }
      if (geometry(&c, ALG_TWOSHOT, n, count, f, &seg, &region) && !f->lines) {
        f->blocks = sym_blocks(&c, ALG_TWOSHOT, n, seg, seg * f->rounds, f->rounds, region, false);
        f->kind = "direct";
        f->classic = "twoshot";
        f->proto = KILN_PROTO_SIMPLE;
        return true;
      }
    } else {
      const uint64_t piece = count * ES;
      f->algo = a;
      f->rounds = 1;
      f->blocks = sym_blocks(&c, a, n, piece, piece, 1, 0, true);
      f->kind = bytes >= c.ce ? "engine" : "direct";
      f->classic = "zerocopy";
      f->proto = KILN_PROTO_SIMPLE;
      return true;
    }
  }
  if (!geometry(&c, a, n, count, f, &seg, &region)) return false;
  const uint64_t total = a == ALG_TWOSHOT ? seg * f->rounds : count * ES;
  f->blocks = sym_blocks(&c, a, n, seg, total, f->rounds, region, false);
  f->kind = f->lines ? "lines" : "flags";
  f->classic = algo_name(a);
  f->proto = lines_proto(f->lines);
  return true;
}

/* ---- tables ---- */

typedef struct table {
  const char* path;
  char label[96]; /* machine folder / file */
  int graph;      /* calls a graph */
  symPlace place;
  bool window; /* buffers in symmetric windows */
  benchCsv t;
  int coll, nranks, size, sym, symUs, plan, baked, interp, nccl, inplace, dtype;
} table;

/* What a table's file name says (bench/baselines/README.md); false with a message for a name
 * that says nothing usable. */
static bool table_kind(table* x) {
  const char* slash = strrchr(x->path, '/');
  const char* base = slash ? slash + 1 : x->path;
  const char* dir = x->path;
  int dirlen = 0;
  if (slash) {
    const char* s2 = slash;
    while (s2 > x->path && s2[-1] != '/') s2--;
    dir = s2;
    dirlen = (int)(slash - s2);
  }
  snprintf(x->label, sizeof x->label, "%.*s%s%s", dirlen, dir, dirlen ? "/" : "", base);
  const char* p = base;
  x->place = PLACE_DIRECT;
  if (!strncmp(p, "mp-", 3)) {
    x->place = PLACE_STAGED;
    p += 3;
  } else if (!strncmp(p, "window-", 7)) {
    x->window = true;
    p += 7;
  }
  if (!strncmp(p, "eager", 5)) {
    fprintf(stderr,
            "sim_calibrate: %s: an eager table times the host's launches, which the simulator does not "
            "model (give graphN tables)\n",
            x->path);
    return false;
  }
  if (sscanf(p, "graph%d-n", &x->graph) != 1 || x->graph < 1) {
    fprintf(stderr,
            "sim_calibrate: %s: the name says neither graphN nor mp-graphN nor window-graphN "
            "(bench/baselines/README.md)\n",
            x->path);
    return false;
  }
  return true;
}

static bool open_table(table* x, const char* path) {
  char err[512];
  x->path = path;
  if (!table_kind(x)) return false;
  if (benchCsvRead(path, &x->t, err, sizeof err) != 0) {
    fprintf(stderr, "sim_calibrate: %s\n", err);
    return false;
  }
  static const char* const need[] = {"coll",        "nranks",  "size",          "sym",
                                     "kiln-sym_us", "plan",    "kiln-baked_us", "kiln-interp_us",
                                     "nccl_us",     "inplace", "dtype"};
  int* cols[] = {&x->coll,  &x->nranks, &x->size, &x->sym,     &x->symUs, &x->plan,
                 &x->baked, &x->interp, &x->nccl, &x->inplace, &x->dtype};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if ((*cols[i] = benchCsvColumn(&x->t, need[i])) < 0) {
      fprintf(stderr, "sim_calibrate: %s: no column %s\n", path, need[i]);
      return false;
    }
  return true;
}

/* ---- plans by name (--plans) ---- */

typedef struct planSet {
  int n;
  kilnPlan** p;
} planSet;

static bool read_plans(const char* dir, planSet* s) {
  DIR* d = opendir(dir);
  if (!d) {
    fprintf(stderr, "sim_calibrate: --plans %s: cannot open the folder\n", dir);
    return false;
  }
  struct dirent* e;
  bool ok = true;
  while (ok && (e = readdir(d))) {
    const size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 4, ".xml")) continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    kilnPlan* p = NULL;
    if (kilnPlanReadFile(path, &p) != KILN_SUCCESS) {
      fprintf(stderr, "sim_calibrate: %s\n", kilnLastError());
      ok = false;
      break;
    }
    kilnPlan** more = realloc(s->p, sizeof *more * (size_t)(s->n + 1));
    if (!more) {
      kilnPlanFree(p);
      ok = false;
      break;
    }
    s->p = more;
    s->p[s->n++] = p;
  }
  closedir(d);
  return ok;
}

static const kilnPlan* find_plan(const planSet* s, const char* name) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->p[i]->name, name)) return s->p[i];
  return NULL;
}

/* ---- the rows ---- */

typedef enum { ROW_SYM, ROW_PLAN, ROW_NCCL, ROW_KINDS } rowKind;
static const char* const rowKindNames[ROW_KINDS] = {"sym", "plan", "nccl"};

/* One measured time and what predicts it. */
typedef struct row {
  rowKind kind;
  int table; /* index into the tables */
  kilnColl_t coll;
  int n, graph;
  uint64_t size;
  char form[96];
  double measured, predicted;
  const kilnPlan* plan; /* the plan simulated (sym: owned by the row; plan: the plan set's) */
  kilnPlan* own;
} row;

typedef struct rowSet {
  int n, cap;
  row* r;
} rowSet;

static row* add_row(rowSet* s) {
  if (s->n == s->cap) {
    const int nc = s->cap ? 2 * s->cap : 256;
    row* m = realloc(s->r, sizeof *m * (size_t)nc);
    if (!m) return NULL;
    s->r = m;
    s->cap = nc;
  }
  row* r = &s->r[s->n++];
  memset(r, 0, sizeof *r);
  return r;
}

/* The rows of table x (index ti) into s; 0, or 2 after a message. */
static int table_rows(table* x, int ti, const planSet* plans, bool nccl, rowSet* s) {
  for (int r = 0; r < x->t.nrows; r++) {
    const char* collName = benchCsvCell(&x->t, r, x->coll);
    kilnColl_t coll;
    double nd, sd, meas;
    if (!kilnCollParse(collName, &coll) || !benchCsvNumber(benchCsvCell(&x->t, r, x->nranks), &nd) ||
        !benchCsvNumber(benchCsvCell(&x->t, r, x->size), &sd) || nd < 2 || nd > KILN_MAX_RANKS || sd < 1) {
      fprintf(stderr, "sim_calibrate: %s:%d: collective, ranks or size unreadable\n", x->path, x->t.lines[r]);
      return 2;
    }
    const int n = (int)nd;
    const uint64_t size = (uint64_t)sd;
    if (strcmp(benchCsvCell(&x->t, r, x->dtype), "float") ||
        strcmp(benchCsvCell(&x->t, r, x->inplace), "0")) {
      fprintf(stderr, "sim_calibrate: %s:%d: only float, out of place is modelled\n", x->path, x->t.lines[r]);
      return 2;
    }
    /* the symmetric kernel, where it is the default ('*') */
    const char* sym = benchCsvCell(&x->t, r, x->sym);
    symForm f;
    if (sym[0] && sym[strlen(sym) - 1] == '*' && benchCsvNumber(benchCsvCell(&x->t, r, x->symUs), &meas) &&
        meas > 0 && sym_form_of(coll, n, size, x->place, &f)) {
      kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
      co.proto = f.proto;
      co.instances = f.blocks;
      kilnPlan* p = NULL;
      if (kilnClassicPlan(f.classic, coll, n, &co, &p) != KILN_SUCCESS) {
        fprintf(stderr, "sim_calibrate: kiln classic %s %s: %s\n", f.classic, collName, kilnLastError());
        return 2;
      }
      row* w = add_row(s);
      if (!w) {
        kilnPlanFree(p);
        fprintf(stderr, "sim_calibrate: out of memory\n");
        return 2;
      }
      *w = (row){ROW_SYM, ti, coll, n, x->graph, size, "", meas, 0, p, p};
      snprintf(w->form, sizeof w->form, "%s %s %s x%d", f.kind, f.classic, kilnProtoName(f.proto), f.blocks);
      if (f.rounds > 1)
        snprintf(w->form + strlen(w->form), sizeof w->form - strlen(w->form), " r%d", f.rounds);
    }
    /* the plan of the plan column, in the runtime's default implementation (host/exec.c: the
     * baked kernel where gen/ inlined its steps, LL plans; the interpreter for Simple plans) */
    const kilnPlan* pl = plans ? find_plan(plans, benchCsvCell(&x->t, r, x->plan)) : NULL;
    const bool baked = pl && pl->proto != KILN_PROTO_SIMPLE;
    if (pl && benchCsvNumber(benchCsvCell(&x->t, r, baked ? x->baked : x->interp), &meas) && meas > 0) {
      row* w = add_row(s);
      if (!w) return 2;
      *w = (row){ROW_PLAN, ti, coll, n, x->graph, size, "", meas, 0, pl, NULL};
      snprintf(w->form, sizeof w->form, "%s (%s)", pl->name, baked ? "baked" : "interp");
    }
    /* NCCL (not on windows: there it runs its symmetric kernels, which the baseline does not model) */
    if (nccl && !x->window && benchCsvNumber(benchCsvCell(&x->t, r, x->nccl), &meas) && meas > 0) {
      row* w = add_row(s);
      if (!w) return 2;
      *w = (row){ROW_NCCL, ti, coll, n, x->graph, size, "", meas, 0, NULL, NULL};
    }
  }
  return 0;
}

/* The topologies of the machines, by rank count (built once). */
typedef struct machines {
  kilnTopology* t[KILN_MAX_RANKS + 1];
} machines;

static kilnTopology* machine(machines* m, const char* topo, int n) {
  if (m->t[n]) return m->t[n];
  char name[32];
  snprintf(name, sizeof name, "switch%d", n);
  kilnTopology* t = NULL;
  const kilnResult_t r = topo ? kilnTopologyReadFile(topo, &t) : kilnTopologyBuiltin(name, 1, &t);
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "sim_calibrate: %s\n", kilnLastError());
    return NULL;
  }
  if (t->nranks != n) {
    fprintf(stderr, "sim_calibrate: topology %s has %d ranks, a table has %d\n", t->name, t->nranks, n);
    kilnTopologyFree(t);
    return NULL;
  }
  return m->t[n] = t;
}

/* Predicts every row with parameters sp (NULL: the topology's or the defaults); 0, or 2 after a
 * message. */
static int predict_rows(rowSet* s, machines* m, const char* topo, const kilnSimParams* sp,
                        const kilnSimParams* ncclSp, bool quiet) {
  for (int i = 0; i < s->n; i++) {
    row* w = &s->r[i];
    kilnTopology* t = machine(m, topo, w->n);
    if (!t) return 2;
    kilnSimResult r;
    kilnResult_t res;
    if (w->kind == ROW_NCCL) {
      res = kilnBaselineSimulateWith(KILN_BASELINE_RING, w->coll, t, w->size, ncclSp, &r);
      snprintf(w->form, sizeof w->form, "%s", w->coll == KILN_COLL_ALLTOALL ? "all-pairs" : "ring");
      kilnSimResult tree;
      if (res == KILN_SUCCESS && w->coll == KILN_COLL_ALLREDUCE &&
          kilnBaselineSimulateWith(KILN_BASELINE_TREE, w->coll, t, w->size, ncclSp, &tree) == KILN_SUCCESS &&
          tree.time_us < r.time_us) {
        r = tree;
        snprintf(w->form, sizeof w->form, "tree");
      }
    } else {
      res =
          sp ? kilnPlanSimulateWith(w->plan, t, w->size, sp, &r) : kilnPlanSimulate(w->plan, t, w->size, &r);
    }
    if (res != KILN_SUCCESS) {
      if (quiet) return 2;
      fprintf(stderr, "sim_calibrate: %s of %s at %llu bytes: %s\n", rowKindNames[w->kind],
              kilnCollName(w->coll), (unsigned long long)w->size, kilnLastError());
      return 2;
    }
    w->predicted = r.time_us + GRAPH_LAUNCH_US / w->graph;
  }
  return 0;
}

/* Sum of squared log ratios of the rows of kind k. */
static double misfit(const rowSet* s, rowKind k) {
  double e = 0;
  for (int i = 0; i < s->n; i++)
    if (s->r[i].kind == k) {
      const double l = log(s->r[i].predicted / s->r[i].measured);
      e += l * l;
    }
  return e;
}

/* Nelder-Mead over the knobs k[0..nk) of sp (kiln's table, or NCCL's: ncclSp, when fitting
 * NCCL's rows), from their values there, minimizing the misfit of the rows of kind `to`; the table
 * gets the best point. 0, or 2 after a message. */
static int fit(rowSet* s, machines* m, const char* topo, kilnSimParams* sp, kilnSimParams* ncclSp,
               const int* k, int nk, rowKind to) {
  enum { MAXK = 16 };
  double x[MAXK + 1][MAXK], f[MAXK + 1];
  kilnSimParams* fitted = to == ROW_NCCL ? ncclSp : sp;
  kilnSimParams trial = *fitted;
  const kilnSimParams* kilnT = to == ROW_NCCL ? sp : &trial;
  const kilnSimParams* ncclT = to == ROW_NCCL ? &trial : ncclSp;
  for (int j = 0; j <= nk; j++) {
    for (int i = 0; i < nk; i++) {
      const double v = *kilnSimParamRef(fitted, k[i]);
      x[j][i] = v * (j == i + 1 ? 1.25 : 1.0) + (j == i + 1 && v == 0 ? 0.1 : 0);
    }
  }
/* A point's misfit, its knobs first brought into their ranges (an efficiency in (0, 1], the
   * others >= 0). */
#define EVAL(pt, out)                                                                \
  do {                                                                               \
    trial = *fitted;                                                                 \
    for (int i_ = 0; i_ < nk; i_++) {                                                \
      const bool eff_ = strstr(kilnSimParamName(k[i_]), ".efficiency") != NULL;      \
      double v_ = (pt)[i_];                                                          \
      v_ = v_ < (eff_ ? 0.01 : 0) ? (eff_ ? 0.01 : 0) : eff_ && v_ > 1 ? 1 : v_;     \
      (pt)[i_] = v_;                                                                 \
      *kilnSimParamRef(&trial, k[i_]) = v_;                                          \
    }                                                                                \
    (out) = predict_rows(s, m, topo, kilnT, ncclT, true) ? HUGE_VAL : misfit(s, to); \
  } while (0)
  for (int j = 0; j <= nk; j++) EVAL(x[j], f[j]);
  for (int it = 0; it < 400 * nk; it++) {
    int hi = 0, lo = 0;
    for (int j = 1; j <= nk; j++) {
      if (f[j] > f[hi]) hi = j;
      if (f[j] < f[lo]) lo = j;
    }
    int nh = lo;
    for (int j = 0; j <= nk; j++)
      if (j != hi && f[j] > f[nh]) nh = j;
    if (f[hi] - f[lo] < 1e-9 * (1 + f[lo])) break;
    double c[MAXK] = {0}, r[MAXK], e[MAXK], fr, fe;
    for (int j = 0; j <= nk; j++)
      if (j != hi)
        for (int i = 0; i < nk; i++) c[i] += x[j][i] / nk;
    for (int i = 0; i < nk; i++) r[i] = c[i] + (c[i] - x[hi][i]);
    EVAL(r, fr);
    if (fr < f[lo]) {
      for (int i = 0; i < nk; i++) e[i] = c[i] + 2 * (c[i] - x[hi][i]);
      EVAL(e, fe);
      if (fe < fr) {
        memcpy(x[hi], e, sizeof e);
        f[hi] = fe;
      } else {
        memcpy(x[hi], r, sizeof r);
        f[hi] = fr;
      }
    } else if (fr < f[nh]) {
      memcpy(x[hi], r, sizeof r);
      f[hi] = fr;
    } else {
      for (int i = 0; i < nk; i++) e[i] = c[i] + 0.5 * (x[hi][i] - c[i]);
      EVAL(e, fe);
      if (fe < f[hi]) {
        memcpy(x[hi], e, sizeof e);
        f[hi] = fe;
      } else {
        for (int j = 0; j <= nk; j++)
          if (j != lo) {
            for (int i = 0; i < nk; i++) x[j][i] = x[lo][i] + 0.5 * (x[j][i] - x[lo][i]);
            EVAL(x[j], f[j]);
          }
      }
    }
  }
#undef EVAL
  int lo = 0;
  for (int j = 1; j <= nk; j++)
    if (f[j] < f[lo]) lo = j;
  for (int i = 0; i < nk; i++) *kilnSimParamRef(fitted, k[i]) = x[lo][i];
  return predict_rows(s, m, topo, sp, ncclSp, false);
}

static void usage(FILE* f) {
  fprintf(
      f,
      "usage: sim_calibrate [--tolerance PCT] [--topo FILE.xml] [--set NAME=VALUE]... [--set-nccl "
      "NAME=VALUE]...\n"
      "                     [--fit NAME,... [--fit-to sym|plan|nccl]] [--plans DIR] [--nccl] [--failures]\n"
      "                     TABLE.csv...\n"
      "  the simulator's prediction of every row of coll_bench tables (graphN, mp-graphN, window-graphN)\n"
      "  against the measured time of the form kiln runs by default; exit 1 when a row is off by more\n"
      "  than PCT per cent (default 25). NAME: a knob of the simulator's table (kiln/topology.h\n"
      "  kilnSimParamName), e.g. launch, tb_beta, put.LL.alpha; --fit fits the knobs named to the\n"
      "  rows of --fit-to (default: the default forms'; least squares of the log ratios) and prints\n"
      "  their values. --plans DIR: also the plan column's plans, --nccl: NCCL's column (reported).\n");
}

typedef struct tally {
  int rows, off;
  double worstRatio;
  const row* worst;
} tally;

int main(int argc, char** argv) {
  double tolerance = 0.25;
  const char *topo = NULL, *plansDir = NULL, *fitList = NULL;
  rowKind fitTo = ROW_SYM;
  kilnSimParams sp = KILN_SIM_PARAMS_INIT, ncclSp = KILN_SIM_PARAMS_NCCL;
  bool spSet = false, nccl = false, failures = false;
  int first = argc;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--tolerance") && v) {
      char* end = NULL;
      tolerance = strtod(v, &end) / 100;
      if (!end || *end || !(tolerance > 0 && tolerance < 10)) {
        fprintf(stderr, "sim_calibrate: --tolerance %s: a per cent above 0\n", v);
        return 2;
      }
      i++;
    } else if (!strcmp(a, "--topo") && v) {
      topo = v;
      i++;
    } else if (!strcmp(a, "--plans") && v) {
      plansDir = v;
      i++;
    } else if (!strcmp(a, "--fit") && v) {
      fitList = v;
      i++;
    } else if (!strcmp(a, "--fit-to") && v) {
      int k = 0;
      while (k < ROW_KINDS && strcmp(v, rowKindNames[k])) k++;
      if (k == ROW_KINDS) {
        fprintf(stderr, "sim_calibrate: --fit-to %s: sym, plan or nccl\n", v);
        return 2;
      }
      fitTo = (rowKind)k;
      i++;
    } else if ((!strcmp(a, "--set") || !strcmp(a, "--set-nccl")) && v) {
      char name[64];
      double val = 0;
      const char* eq = strchr(v, '=');
      char* end = NULL;
      if (eq) val = strtod(eq + 1, &end);
      if (!eq || (size_t)(eq - v) >= sizeof name || !end || *end || end == eq + 1) {
        fprintf(stderr, "sim_calibrate: --set %s: wants NAME=VALUE\n", v);
        return 2;
      }
      snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
      const int k = kilnSimParamFind(name);
      if (k < 0) {
        fprintf(stderr, "sim_calibrate: --set %s: no knob %s (kiln/topology.h kilnSimParamName)\n", v, name);
        return 2;
      }
      if (!strcmp(a, "--set")) {
        *kilnSimParamRef(&sp, k) = val;
        spSet = true;
      } else {
        *kilnSimParamRef(&ncclSp, k) = val;
      }
      i++;
    } else if (!strcmp(a, "--nccl")) {
      nccl = true;
    } else if (!strcmp(a, "--failures")) {
      failures = true;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "sim_calibrate: unknown option or missing value: %s\n", a);
      usage(stderr);
      return 2;
    } else {
      first = i;
      break;
    }
  }
  if (first >= argc) {
    usage(stderr);
    return 2;
  }
  int fitK[16], nfit = 0;
  for (const char* p = fitList; p && *p;) {
    const char* e = strchr(p, ',');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), p);
    const int k = kilnSimParamFind(name);
    if (k < 0 || nfit == 16) {
      fprintf(stderr, "sim_calibrate: --fit: %s (at most 16 knobs of kilnSimParamName)\n",
              k < 0 ? "no such knob" : "too many knobs");
      return 2;
    }
    fitK[nfit++] = k;
    p = e ? e + 1 : p + len;
  }
  const int ntables = argc - first;
  table* tables = calloc((size_t)ntables, sizeof *tables);
  planSet plans = {0, NULL};
  rowSet rows = {0, 0, NULL};
  machines m;
  memset(&m, 0, sizeof m);
  int rc = tables ? 0 : 2;
  if (rc == 0 && plansDir && !read_plans(plansDir, &plans)) rc = 2;
  for (int i = 0; i < ntables && rc == 0; i++) {
    if (!open_table(&tables[i], argv[first + i]))
      rc = 2;
    else
      rc = table_rows(&tables[i], i, plansDir ? &plans : NULL, nccl, &rows);
  }
  if (rc == 0 && nfit) {
    /* from the table given: the topology's costs where it has them and nothing was set */
    kilnTopology* t0 = topo && !spSet && rows.n ? machine(&m, topo, rows.r[0].n) : NULL;
    if (t0 && t0->has_costs) sp = t0->costs;
    rc = fit(&rows, &m, topo, &sp, &ncclSp, fitK, nfit, fitTo);
    spSet = true;
    if (rc == 0) {
      printf("fitted (misfit %.4f over the %s rows):\n", misfit(&rows, fitTo), rowKindNames[fitTo]);
      for (int i = 0; i < nfit; i++)
        printf("  %s = %.4g\n", kilnSimParamName(fitK[i]),
               *kilnSimParamRef(fitTo == ROW_NCCL ? &ncclSp : &sp, fitK[i]));
    }
  } else if (rc == 0) {
    rc = predict_rows(&rows, &m, topo, spSet ? &sp : NULL, &ncclSp, false);
  }
  tally tl[ROW_KINDS];
  memset(tl, 0, sizeof tl);
  if (rc == 0) {
    printf("%-36s %-6s %-13s %2s %11s  %-34s %10s %10s %6s\n", "table", "what", "collective", "n", "bytes",
           "form", "measured", "predicted", "ratio");
    for (int i = 0; i < rows.n; i++) {
      const row* w = &rows.r[i];
      const double ratio = w->predicted / w->measured;
      const bool off = fabs(ratio - 1) > tolerance, judged = w->kind == ROW_SYM;
      tally* t = &tl[w->kind];
      t->rows++;
      if (off) t->off++;
      if (!t->worst || fabs(log(ratio)) > fabs(log(t->worstRatio))) {
        t->worst = w;
        t->worstRatio = ratio;
      }
      if (failures && !off) continue;
      printf("%-36s %-6s %-13s %2d %11llu  %-34s %10.3f %10.3f %6.3f%s\n", tables[w->table].label,
             rowKindNames[w->kind], kilnCollName(w->coll), w->n, (unsigned long long)w->size, w->form,
             w->measured, w->predicted, ratio, off ? (judged ? "  OFF" : "  (off)") : "");
    }
    for (int k = 0; k < ROW_KINDS; k++)
      if (tl[k].rows)
        printf("%s%s: %d rows, %d within %.0f%%; worst ratio %.3f (%s %s %d ranks %llu B)\n", rowKindNames[k],
               k == ROW_SYM ? " (judged)" : " (reported)", tl[k].rows, tl[k].rows - tl[k].off,
               tolerance * 100, tl[k].worstRatio, tables[tl[k].worst->table].label,
               kilnCollName(tl[k].worst->coll), tl[k].worst->n, (unsigned long long)tl[k].worst->size);
  }
  for (int i = 0; i < rows.n; i++) kilnPlanFree(rows.r[i].own);
  free(rows.r);
  for (int i = 0; i < plans.n; i++) kilnPlanFree(plans.p[i]);
  free(plans.p);
  for (int i = 0; i < ntables; i++) benchCsvFree(&tables[i].t);
  free(tables);
  for (int n = 0; n <= KILN_MAX_RANKS; n++) kilnTopologyFree(m.t[n]);
  if (rc) return rc;
  return tl[ROW_SYM].off ? 1 : 0;
}
