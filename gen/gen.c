/*
 * The plan -> CUDA source generator. Emits only tables and one-line instantiations; the code
 * that runs is the hand-written template kernels/baked.cuh (see gen.h).
 */
#include "gen.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/passes.h"

/* ---- A growing string. ---- */

typedef struct strbuf {
  char* s;
  size_t len, cap;
  bool oom;
} strbuf;

static void sb_printf(strbuf* b, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sb_printf(strbuf* b, const char* fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = true;
      return;
    }
    if ((size_t)n < room && b->s) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + (size_t)n + 1) cap *= 2;
    char* s = realloc(b->s, cap);
    if (!s) {
      b->oom = true;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
}

static kilnResult_t sb_finish(strbuf* b, char** out) {
  if (b->oom || !b->s) {
    free(b->s);
    return kilnSetError(KILN_ERR_NO_MEMORY, "gen: out of memory building source");
  }
  *out = b->s;
  return KILN_SUCCESS;
}

/* Plans with at most this many steps (all ranks) get their steps inlined with constants folded
 * in; larger ones call one body per step type (compile time: see kernels/baked.cuh). LL and
 * LL128 plans (the line protocols) get the higher bound. LL plans run baked by default and lose
 * most when called: the 4-rank one-shot LL i4 plans (192 and 208
 * steps) took 17.4 µs called where the interpreter took 12.6 (4x H200, CUDA graphs). */
#define KILN_GEN_INLINE_STEPS 96
#define KILN_GEN_INLINE_STEPS_LL 256
/* Plans with more steps than this get no kernel: their registry row has no launch functions and
 * the interpreter runs them (as it runs every plan that is not inlined by default). cicc's time
 * grows faster than the steps there: the 4-rank direct Simple allreduce i32 (2048 steps, 512
 * blocks) had not compiled after 15 minutes where the 896-step rings take seconds, and called-step
 * kernels were slower than the interpreter at every size measured (gen/README.md). */
#define KILN_GEN_KERNEL_STEPS 1024

/* Plans with memory steps get a kernel when their passes (kiln/passes.h, all ranks) are at most
 * this many; every pass is inlined, its operands constants. More passes: the interpreter. */
#define KILN_GEN_MEM_KERNEL_PASSES 512

/* Steps of the plan, all ranks. */
static int plan_nsteps(const kilnPlan* p) {
  int nsteps = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++) nsteps += p->gpus[r].tbs[t].nsteps;
  return nsteps;
}

/* Passes of a plan with memory steps, all ranks; -1 where a rank's passes cannot be made. */
static int plan_npasses(const kilnPlan* p) {
  int n = 0;
  for (int r = 0; r < p->ngpus; r++) {
    kilnRankPasses rp;
    if (kilnPlanMemPasses(p, r, &rp) != KILN_SUCCESS) return -1;
    n += rp.npasses;
    kilnRankPassesFree(&rp);
  }
  return n;
}

/* Whether the plan's steps are inlined (its registry row's `inlined`): a plan with memory steps
 * always (its passes). */
static bool plan_inlined(const kilnPlan* p, int nsteps) {
  if (kilnPlanHasMemorySteps(p)) return true;
  return nsteps <= (p->proto != KILN_PROTO_SIMPLE ? KILN_GEN_INLINE_STEPS_LL : KILN_GEN_INLINE_STEPS);
}

/* Whether the plan gets kernels at all (else its registry row has no launch functions): a plan
 * with memory steps up to KILN_GEN_MEM_KERNEL_PASSES passes (always inlined). */
static bool plan_has_kernels(const kilnPlan* p, const kilnGenOptions* o) {
  if (kilnPlanHasMemorySteps(p)) {
    const int np = plan_npasses(p);
    return np >= 0 && np <= KILN_GEN_MEM_KERNEL_PASSES;
  }
  const int nsteps = plan_nsteps(p);
  return nsteps <= KILN_GEN_KERNEL_STEPS && (!o->inlinedOnly || plan_inlined(p, nsteps));
}

/* ---- Vocabulary as the generated code spells it (kernels/baked.cuh). ---- */

/* The memory steps' spellings are emitted only once kilnPlanCheckRuntime lets such a plan through. */
static const char* const step_enum[] = {"ST_SEND", "ST_RECV", "ST_RCS", "ST_RRS", "ST_RRC",
                                        "ST_RRCS", "ST_CPY",  "ST_RE",  "ST_NOP", "ST_PUT",
                                        "ST_GET",  "ST_GRE",  "ST_SIG", "ST_WAIT"};
_Static_assert(sizeof step_enum / sizeof step_enum[0] == KILN_NUM_STEP_TYPES, "one spelling per step type");
static const char* const buf_enum[] = {"BUF_I", "BUF_O", "BUF_S"};
_Static_assert(sizeof buf_enum / sizeof buf_enum[0] == KILN_NUM_BUFFERS, "one spelling per buffer");

/* CUDA type of each dtype (kilnDataType_t order), and the unsigned type of each element size
 * that plans without reduction are baked for. */
static const char* const dtype_ctype[] = {"int8_t",  "uint8_t",       "int32_t",       "uint32_t",
                                          "int64_t", "uint64_t",      "__half",        "float",
                                          "double",  "__nv_bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2"};
_Static_assert(sizeof dtype_ctype / sizeof dtype_ctype[0] == KILN_NUM_DTYPES, "one C type per dtype");

static const char* size_ctype(size_t es) {
  switch (es) {
    case 1: return "uint8_t";
    case 2: return "uint16_t";
    case 4: return "uint32_t";
    default: return "uint64_t";
  }
}

static bool plan_reduces(const kilnPlan* p) {
  return p->coll == KILN_COLL_ALLREDUCE || p->coll == KILN_COLL_REDUCESCATTER ||
         (p->coll == KILN_COLL_CUSTOM);
}

void kilnGenOptionsDefault(kilnGenOptions* o) {
  memset(o, 0, sizeof *o);
  o->dtypes[KILN_FLOAT32] = o->dtypes[KILN_FLOAT16] = o->dtypes[KILN_BFLOAT16] = true;
  o->dtypes[KILN_INT32] = true;
  kilnVerifyOptions v = KILN_VERIFY_OPTIONS_INIT;
  o->verify = v;
}

kilnResult_t kilnGenParseDtypes(kilnGenOptions* o, const char* list) {
  bool want[KILN_NUM_DTYPES] = {false};
  char item[32];
  const char* p = list;
  if (!list || !*list) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "empty dtype list");
  while (*p) {
    const char* e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 0 || n >= sizeof item)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "bad dtype list '%s'", list);
    memcpy(item, p, n);
    item[n] = 0;
    kilnDataType_t t;
    if (!kilnDataTypeParse(item, &t)) {
      char known[256] = "";
      for (int d = 0; d < KILN_NUM_DTYPES; d++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", d ? ", " : "",
                 kilnDataTypeName((kilnDataType_t)d));
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "unknown dtype '%s' in '%s' (known: %s)", item, list,
                          known);
    }
    want[t] = true;
    p += n;
    if (*p == ',') p++;
  }
  memcpy(o->dtypes, want, sizeof want);
  return KILN_SUCCESS;
}

kilnResult_t kilnGenIdent(const char* path, char out[KILN_GEN_IDENT_MAX]) {
  if (!path) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "gen: no plan path");
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n >= 4 && !strcmp(base + n - 4, ".xml")) n -= 4;
  size_t pre = (n > 0 && base[0] >= '0' && base[0] <= '9') ? 2 : 0;
  if (n == 0 || n + pre >= KILN_GEN_IDENT_MAX)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "%s: a plan file name must have 1..%d characters before .xml", path,
                        KILN_GEN_IDENT_MAX - 1 - (int)pre);
  if (pre) memcpy(out, "p_", 2);
  for (size_t i = 0; i < n; i++) {
    char c = base[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out[pre + i] = ok ? c : '_';
  }
  out[pre + n] = 0;
  return KILN_SUCCESS;
}

static const char* base_name(const char* path) {
  const char* b = path ? strrchr(path, '/') : NULL;
  return b ? b + 1 : (path ? path : "(memory)");
}

/* Writes `s` as a C string literal body (escaped), for comments and names. */
/* s as the inside of a C string literal; also safe inside a comment (no star-slash: the slash
 * after a star as an octal escape) and free of trigraphs (question marks escaped). */
static void sb_cstring(strbuf* b, const char* s) {
  for (const char* q = s; *q; q++) {
    unsigned char c = (unsigned char)*q;
    if (c == '"' || c == '\\' || c == '?')
      sb_printf(b, "\\%c", c);
    else if (c == '\n')
      sb_printf(b, "\\n");
    else if (c < 32 || c >= 127 || (c == '/' && q > s && q[-1] == '*'))
      sb_printf(b, "\\%03o", c);
    else
      sb_printf(b, "%c", c);
  }
}

/* What the template needs beyond a verified plan. */
static kilnResult_t check_bakeable(const kilnGenUnit* u) {
  const kilnPlan* p = u->plan;
  if ((unsigned)p->proto >= KILN_NUM_PROTOS)
    return kilnSetError(KILN_ERR_UNSUPPORTED, "%s: plan %s has an unknown protocol", base_name(u->origin),
                        p->name);
  if (kilnPlanCheckRuntime(p) != KILN_SUCCESS) {
    kilnPrefixError("%s: ", base_name(u->origin));
    return KILN_ERR_UNSUPPORTED;
  }
  if (p->coll == KILN_COLL_CUSTOM)
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "%s: plan %s is a custom collective; the runtime bakes allgather, "
                        "alltoall, reducescatter and allreduce",
                        base_name(u->origin), p->name);
  if (kilnPlanHasCopies(p))
    return kilnSetError(KILN_ERR_UNSUPPORTED,
                        "%s: plan %s has TACCL <copy> elements; bake its kilnPlanLowerCopies form",
                        base_name(u->origin), p->name);
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++)
      if (p->gpus[r].tbs[t].id != t)
        return kilnSetError(KILN_ERR_UNSUPPORTED, "%s: plan %s rank %d: threadblock %d has id %d",
                            base_name(u->origin), p->name, r, t, p->gpus[r].tbs[t].id);
  /* Memory steps run as passes (kiln/passes.h): every rank's must exist. */
  for (int r = 0; kilnPlanHasMemorySteps(p) && r < p->ngpus; r++) {
    kilnRankPasses rp;
    if (kilnPlanMemPasses(p, r, &rp) != KILN_SUCCESS) {
      kilnPrefixError("%s: ", base_name(u->origin));
      return KILN_ERR_UNSUPPORTED;
    }
    const int lp = rp.lineProtos;
    kilnRankPassesFree(&rp);
    if (lp & (lp - 1))
      return kilnSetError(KILN_ERR_UNSUPPORTED,
                          "%s: plan %s: its puts write lines of two protocols; kiln runs one "
                          "line protocol a plan",
                          base_name(u->origin), p->name);
  }
  return KILN_SUCCESS;
}

static const char* dev_proto(int proto) {
  return proto == KILN_PROTO_LL      ? "KILN_DEV_PROTO_LL"
         : proto == KILN_PROTO_LL128 ? "KILN_DEV_PROTO_LL128"
         : proto == KILN_PROTO_LL12  ? "KILN_DEV_PROTO_LL12"
                                     : "KILN_DEV_PROTO_SIMPLE";
}

/* The head of a generated plan source: where it comes from, what it holds (note), the include,
 * and the plan struct opened with its rank count. */
static void emit_prelude(strbuf* b, const kilnGenUnit* u, const char* note) {
  sb_printf(b, "/* Generated by `kiln gen` from ");
  sb_cstring(b, base_name(u->origin));
  sb_printf(b, " (plan \"");
  sb_cstring(b, u->plan->name);
  sb_printf(b,
            "\"). Do not edit: change the plan\n"
            " * and rebuild. %s */\n"
            "#include \"baked.cuh\"\n\n"
            "namespace kiln_baked {\n"
            "using namespace kiln::baked;\n\n"
            "struct plan_%s {\n"
            "  static constexpr int nranks = %d;\n",
            note, u->ident, u->plan->ngpus);
}

static const char* const pass_enum[] = {"PASS_PUT",    "PASS_REDUCE", "PASS_COPY",
                                        "PASS_SIGNAL", "PASS_WAIT",   "PASS_NOP"};
static const char* const opnd_enum[] = {"OP_USER", "OP_SCRATCH", "OP_LINES", "OP_SIGNAL"};

static void baked_dtypes(const kilnPlan* p, const kilnGenOptions* o, bool which[KILN_NUM_DTYPES],
                         bool sizes[9]);

/* The kernels' lines (one per dtype baked, or per element size) of unit u. */
static void kernel_lines(strbuf* b, const kilnGenUnit* u, const kilnGenOptions* o, const char* macro) {
  const kilnPlan* p = u->plan;
  bool which[KILN_NUM_DTYPES], sizes[9];
  baked_dtypes(p, o, which, sizes);
  if (!plan_has_kernels(p, o)) {
    sb_printf(b, "/* No kernel: too many %s (the interpreter runs this plan). */\n",
              kilnPlanHasMemorySteps(p) ? "passes" : "steps");
  } else if (plan_reduces(p)) {
    sb_printf(b, "/* Kernels: dtype x sum (avg divides after a sum). */\n");
    for (int t = 0; t < KILN_NUM_DTYPES; t++)
      if (which[t])
        sb_printf(b, "%s(%s, %s, %s)\n", macro, u->ident, kilnDataTypeName((kilnDataType_t)t),
                  dtype_ctype[t]);
  } else {
    sb_printf(b, "/* Kernels: one per element size (the plan only moves data). */\n");
    for (int es = 1; es <= 8; es *= 2)
      if (sizes[es]) sb_printf(b, "%s(%s, b%d, %s)\n", macro, u->ident, es, size_ctype((size_t)es));
  }
}

/* The source of a plan with memory steps: its passes (kiln/passes.h) and their operands as tables,
 * every rank's, and kernels/baked.cuh's memory-step template instantiated. */
static kilnResult_t mem_plan_source(const kilnGenUnit* u, const kilnGenOptions* o, char** out) {
  const kilnPlan* p = u->plan;
  const char* id = u->ident;
  strbuf b = {0};
  kilnRankPasses* rp = calloc((size_t)p->ngpus, sizeof *rp);
  if (!rp) return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory generating %s", id);
  kilnResult_t res = KILN_SUCCESS;
  for (int r = 0; r < p->ngpus && res == KILN_SUCCESS; r++) res = kilnPlanMemPasses(p, r, &rp[r]);
  if (res != KILN_SUCCESS) goto out;
  int ntbs = 0, lines = KILN_PROTO_SIMPLE;
  for (int r = 0; r < p->ngpus; r++) ntbs += p->gpus[r].ntbs;
  for (int q = KILN_PROTO_LL; q < KILN_NUM_PROTOS; q++)
    if (rp[0].lineProtos >> q & 1) lines = q;
  emit_prelude(&b, u,
               "Tables only (the passes of kiln/passes.h); the code that runs them is\n"
               " * kernels/baked.cuh's memory-step template over kernels/mem.cuh.");
  sb_printf(&b,
            "  static constexpr int proto = %s; /* the kernel's lines (kilnDevArgs.proto) */\n"
            "  static constexpr int ntbs = %d; /* all ranks */\n"
            "  /* first row of each rank in tbs[], then ntbs */\n"
            "  static constexpr int rankTb[] = {",
            dev_proto(lines), ntbs);
  for (int r = 0, row = 0; r <= p->ngpus; r++) {
    sb_printf(&b, "%s%d", r ? ", " : "", row);
    if (r < p->ngpus) row += p->gpus[r].ntbs;
  }
  sb_printf(
      &b,
      "};\n  /* rank, tb, first pass, passes, steps, the row whose code it runs (its passes but for its\n"
      "   * operands' offsets: kilnPlanMemRowClasses) */\n  static constexpr MemTb tbs[] = {\n");
  int row = 0, pbase = 0, obase = 0;
  for (int r = 0; r < p->ngpus && res == KILN_SUCCESS; r++) {
    const int nt = p->gpus[r].ntbs;
    int* cls = malloc(sizeof(int) * 3 * (size_t)(nt + 1));
    if (!cls) {
      res = kilnSetError(KILN_ERR_NO_MEMORY, "out of memory generating %s", id);
      break;
    }
    kilnPlanMemRowClasses(&rp[r], nt, cls, cls + nt + 1, cls + 2 * (nt + 1));
    for (int t = 0; t < nt; t++, row++) {
      int first = pbase + rp[r].npasses, np = 0;
      for (int i = 0; i < rp[r].npasses; i++)
        if (rp[r].passes[i].tb == t) {
          if (np == 0) first = pbase + i;
          np++;
        }
      sb_printf(&b, "    /* %d */ {%d, %d, %d, %d, %d, %d},\n", row, r, t, first, np,
                p->gpus[r].tbs[t].nsteps, row - t + cls[t]);
    }
    free(cls);
    pbase += rp[r].npasses;
  }
  if (res != KILN_SUCCESS) goto out;
  if (ntbs == 0) sb_printf(&b, "    {0, 0, 0, 0, 0, 0},\n");
  sb_printf(&b,
            "  };\n  /* kind, protocol, operands, flags, chunks, first operand, last step, depid, deps, its "
            "steps, line mask */\n  static constexpr MemPass passes[] = {\n");
  pbase = 0;
  for (int r = 0; r < p->ngpus; r++) {
    for (int i = 0; i < rp[r].npasses; i++) {
      const kilnPass* ps = &rp[r].passes[i];
      const unsigned mask = kilnPassLineMask(&rp[r], ps), flags = kilnPassFlags(ps);
      sb_printf(
          &b,
          "    /* %d */ {%s, %s, %d, %u, %d, %d, %d, %d, %d, %d, 0x%xu}, /* rank %d tb %d, %d step%s */\n",
          pbase + i, pass_enum[ps->kind], dev_proto(ps->proto), ps->nops, flags, ps->cnt, obase + ps->firstOp,
          ps->last, ps->depid, ps->deps, ps->depid >= 0 ? p->gpus[r].tbs[ps->depid].nsteps : 0, mask, r,
          ps->tb, ps->nsteps, ps->nsteps == 1 ? "" : "s");
    }
    pbase += rp[r].npasses;
    obase += rp[r].nops;
  }
  if (pbase == 0) sb_printf(&b, "    {PASS_NOP, KILN_DEV_PROTO_SIMPLE, 0, 0, 0, 0, 0, -1, -1, 0, 0u},\n");
  sb_printf(&b,
            "  };\n  /* kind, rank, buffer (lines: area; signal: channel), offset */\n"
            "  static constexpr MemOp ops[] = {\n");
  obase = 0;
  for (int r = 0; r < p->ngpus; r++) {
    for (int i = 0; i < rp[r].nops; i++) {
      const kilnPassOperand* op = &rp[r].ops[i];
      sb_printf(&b, "    /* %d */ {%s, %d, %d, %d},\n", obase + i, opnd_enum[op->kind], op->rank, op->buf,
                op->off);
    }
    obase += rp[r].nops;
  }
  if (obase == 0) sb_printf(&b, "    {OP_USER, 0, 0, 0},\n");
  sb_printf(&b, "  };\n};\n\n} /* namespace kiln_baked */\n\n");
  kernel_lines(&b, u, o, "KILN_BAKED_MEM_KERNEL");
  res = sb_finish(&b, out);
  b.s = NULL;
out:
  for (int r = 0; r < p->ngpus; r++) kilnRankPassesFree(&rp[r]);
  free(rp);
  free(b.s);
  return res;
}

/* The line protocols of a plan with memory steps (kilnRankPasses.lineProtos), 0 when none or its
 * passes cannot be made. */
static int plan_line_protos(const kilnPlan* p) {
  kilnRankPasses rp;
  if (kilnPlanMemPasses(p, 0, &rp) != KILN_SUCCESS) return 0;
  const int lp = rp.lineProtos;
  kilnRankPassesFree(&rp);
  return lp;
}

/* The dtypes (or element sizes) baked for a plan: fills which[] with true per dtype that gets a
 * kernel of its own (reducing plans) or whose size class gets one (others). */
static void baked_dtypes(const kilnPlan* p, const kilnGenOptions* o, bool which[KILN_NUM_DTYPES],
                         bool sizes[9]) {
  memset(which, 0, sizeof(bool) * KILN_NUM_DTYPES);
  memset(sizes, 0, sizeof(bool) * 9);
  if (!plan_has_kernels(p, o)) return; /* interpreter only */
  /* LL12 lines hold elements of at most 4 bytes. */
  const bool ll12 = kilnPlanHasMemorySteps(p) && plan_line_protos(p) >> KILN_PROTO_LL12 & 1;
  for (int t = 0; t < KILN_NUM_DTYPES; t++) {
    if (!o->dtypes[t] || (ll12 && kilnDataTypeSize((kilnDataType_t)t) > 4)) continue;
    if (plan_reduces(p))
      which[t] = true;
    else
      sizes[kilnDataTypeSize((kilnDataType_t)t)] = true;
  }
  if (!plan_reduces(p))
    for (int t = 0; t < KILN_NUM_DTYPES; t++)
      if (sizes[kilnDataTypeSize((kilnDataType_t)t)]) which[t] = true;
}

kilnResult_t kilnGenPlanSource(const kilnGenUnit* u, const kilnGenOptions* o, char** out) {
  if (!u || !u->plan || !o || !out)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnGenPlanSource: NULL argument");
  *out = NULL;
  kilnResult_t res = check_bakeable(u);
  if (res != KILN_SUCCESS) return res;
  if (kilnPlanHasMemorySteps(u->plan)) return mem_plan_source(u, o, out);
  const kilnPlan* p = u->plan;
  const char* id = u->ident;
  strbuf b = {0};

  const int nsteps = plan_nsteps(p);
  int ntbs = 0;
  for (int r = 0; r < p->ngpus; r++) ntbs += p->gpus[r].ntbs;

  emit_prelude(&b, u, "Tables only; the code that runs them is kernels/baked.cuh.");
  sb_printf(&b,
            "  static constexpr int proto = %s;\n"
            "  static constexpr int ntbs = %d; /* all ranks */\n"
            "  static constexpr bool inlineSteps = %s; /* steps inlined (few) or called (many) */\n"
            "  /* first row of each rank in tbs[], then ntbs */\n"
            "  static constexpr int rankTb[] = {",
            dev_proto(p->proto == KILN_PROTO_LL12 ? KILN_PROTO_SIMPLE : p->proto), /* no FIFO LL12 kernel */
            ntbs, plan_inlined(p, nsteps) ? "true" : "false");
  for (int r = 0, row = 0; r <= p->ngpus; r++) {
    sb_printf(&b, "%s%d", r ? ", " : "", row);
    if (r < p->ngpus) row += p->gpus[r].ntbs;
  }
  sb_printf(&b,
            "};\n  /* rank, tb, send, recv, chan, first step, steps */\n"
            "  static constexpr Tb tbs[] = {\n");
  int row = 0, first = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++, row++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[t];
      sb_printf(&b, "    /* %d */ {%d, %d, %d, %d, %d, %d, %d},\n", row, r, t, tb->send, tb->recv, tb->chan,
                first, tb->nsteps);
      first += tb->nsteps;
    }
  if (ntbs == 0) sb_printf(&b, "    {0, 0, -1, -1, 0, 0, 0},\n");
  sb_printf(&b,
            "  };\n  /* type, srcbuf, srcoff, dstbuf, dstoff, cnt, depid, deps, hasdep, fold, folded */\n"
            "  static constexpr Step steps[] = {\n");
  /* What each step publishes and which steps fold, as the runtime's loader finds them
   * (kilnPlanRankSteps, host/exec.c). */
  bool* publishes = malloc((size_t)(nsteps > 0 ? nsteps : 1) * sizeof(bool));
  int* fold = malloc((size_t)(nsteps > 0 ? nsteps : 1) * sizeof(int));
  if (!publishes || !fold) {
    free(publishes);
    free(fold);
    free(b.s);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory generating %s", id);
  }
  int idx = 0;
  for (int r = 0; r < p->ngpus && res == KILN_SUCCESS; r++) {
    res = kilnPlanRankSteps(p, r, publishes + idx, fold + idx);
    for (int t = 0; t < p->gpus[r].ntbs && res == KILN_SUCCESS; t++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[t];
      for (int s = 0; s < tb->nsteps; s++, idx++) {
        const kilnStep* st = &tb->steps[s];
        sb_printf(&b, "    /* %d */ {%s, %s, %d, %s, %d, %d, %d, %d, %d, %d, %d},%s", idx,
                  step_enum[st->type], buf_enum[st->srcbuf], st->srcoff, buf_enum[st->dstbuf], st->dstoff,
                  st->cnt, st->depid >= 0 ? st->depid : -1, st->depid >= 0 ? st->deps : -1,
                  publishes[idx] ? 1 : 0, fold[idx] > 0 ? fold[idx] : 0, fold[idx] < 0 ? 1 : 0,
                  s == 0 ? "" : "\n");
        if (s == 0) sb_printf(&b, " /* rank %d tb %d */\n", r, t);
      }
    }
  }
  free(publishes);
  free(fold);
  if (res != KILN_SUCCESS) {
    free(b.s);
    return res;
  }
  if (nsteps == 0) sb_printf(&b, "    {ST_NOP, BUF_I, 0, BUF_I, 0, 0, -1, -1, 0, 0, 0},\n");
  sb_printf(&b, "  };\n};\n\n} /* namespace kiln_baked */\n\n");

  if (!plan_has_kernels(p, o) && nsteps > KILN_GEN_KERNEL_STEPS)
    sb_printf(&b, "/* No kernel: more than %d steps (the interpreter runs this plan). */\n",
              KILN_GEN_KERNEL_STEPS);
  else if (!plan_has_kernels(p, o))
    sb_printf(&b,
              "/* No kernel: steps not inlined, baked with --inlined-only (the interpreter runs "
              "this plan). */\n");
  else
    kernel_lines(&b, u, o, "KILN_BAKED_KERNEL");
  return sb_finish(&b, out);
}

/* Launch symbol of dtype t for a unit ("kilnBaked_<ident>_<dtype or bN>"). */
static void launch_symbol(strbuf* b, const kilnGenUnit* u, int t) {
  if (plan_reduces(u->plan))
    sb_printf(b, "kilnBaked_%s_%s", u->ident, kilnDataTypeName((kilnDataType_t)t));
  else
    sb_printf(b, "kilnBaked_%s_b%d", u->ident, (int)kilnDataTypeSize((kilnDataType_t)t));
}

kilnResult_t kilnGenRegistrySource(const kilnGenUnit* units, int n, const kilnGenOptions* o, char** out) {
  if ((n > 0 && !units) || !o || !out || n < 0)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnGenRegistrySource: bad argument");
  *out = NULL;
  strbuf b = {0};
  sb_printf(&b,
            "/* Generated by `kiln gen`: the registry of baked plans. Do not edit. */\n"
            "#include <stddef.h>\n\n"
            "#include \"registry_internal.h\"\n\n");
  /* Declarations of every launch function, once each. */
  for (int i = 0; i < n; i++) {
    bool which[KILN_NUM_DTYPES], sizes[9];
    baked_dtypes(units[i].plan, o, which, sizes);
    bool declared[9] = {false};
    for (int t = 0; t < KILN_NUM_DTYPES; t++) {
      if (!which[t]) continue;
      size_t es = kilnDataTypeSize((kilnDataType_t)t);
      if (!plan_reduces(units[i].plan)) {
        if (declared[es]) continue;
        declared[es] = true;
      }
      sb_printf(&b, "int ");
      launch_symbol(&b, &units[i], t);
      sb_printf(&b, "(const void* args, int threads, void* stream);\n");
    }
  }
  /* The plans themselves, as XML (the host builds its connections from them). */
  for (int i = 0; i < n; i++) {
    char* xml = NULL;
    kilnResult_t res = kilnPlanWriteMemory(units[i].plan, &xml);
    if (res != KILN_SUCCESS) {
      free(b.s);
      kilnPrefixError("%s: ", base_name(units[i].origin));
      return res;
    }
    sb_printf(&b, "\n/* ");
    sb_cstring(&b, base_name(units[i].origin));
    sb_printf(&b, " */\nstatic const char xml_%s[] =\n", units[i].ident);
    const char* line = xml;
    while (*line) {
      const char* nl = strchr(line, '\n');
      size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
      char* one = malloc(len + 1);
      if (!one) {
        b.oom = true;
        break;
      }
      memcpy(one, line, len);
      one[len] = 0;
      sb_printf(&b, "    \"");
      sb_cstring(&b, one);
      sb_printf(&b, "\"\n");
      free(one);
      line += len;
    }
    sb_printf(&b, "    ;\n");
    free(xml);
  }
  sb_printf(&b, "\nstatic const kilnRegistryEntry entries[] = {\n");
  for (int i = 0; i < n; i++) {
    const kilnPlan* p = units[i].plan;
    bool which[KILN_NUM_DTYPES], sizes[9];
    baked_dtypes(p, o, which, sizes);
    sb_printf(&b, "    /* %d */ {\"", i);
    sb_cstring(&b, p->name);
    sb_printf(&b,
              "\", \"%s\", KILN_COLL_%s, %d, %lluull, %lluull, %s, %s, KILN_PROTO_%s, %s, xml_%s,\n"
              "        {",
              units[i].ident,
              p->coll == KILN_COLL_ALLGATHER       ? "ALLGATHER"
              : p->coll == KILN_COLL_ALLTOALL      ? "ALLTOALL"
              : p->coll == KILN_COLL_REDUCESCATTER ? "REDUCESCATTER"
                                                   : "ALLREDUCE",
              p->ngpus, (unsigned long long)p->min_bytes, (unsigned long long)p->max_bytes,
              kilnPlanServes(p, true) ? "true" : "false", kilnPlanServes(p, false) ? "true" : "false",
              p->proto == KILN_PROTO_LL      ? "LL"
              : p->proto == KILN_PROTO_LL128 ? "LL128"
              : p->proto == KILN_PROTO_LL12  ? "LL12"
                                             : "SIMPLE",
              plan_reduces(p) ? "true" : "false", units[i].ident);
    for (int t = 0; t < KILN_NUM_DTYPES; t++) {
      if (t) sb_printf(&b, ", ");
      if (which[t])
        launch_symbol(&b, &units[i], t);
      else
        sb_printf(&b, "NULL");
    }
    sb_printf(&b, "}, %s},\n", plan_inlined(p, plan_nsteps(p)) ? "true" : "false");
  }
  if (n == 0)
    sb_printf(&b,
              "    {NULL, NULL, KILN_COLL_ALLREDUCE, 0, 0, 0, false, false, KILN_PROTO_SIMPLE, false, NULL, "
              "{NULL}, false},\n");
  sb_printf(&b,
            "};\n\n"
            "const kilnRegistryEntry* kilnBakedTable(int* n) {\n"
            "  *n = %d;\n"
            "  return entries;\n"
            "}\n",
            n);
  return sb_finish(&b, out);
}

/* One output file of kilnGenFiles: written to a temporary file beside it first (stage_file),
 * renamed over it once every file is staged (commit_files), so that a failure to write leaves the
 * folder as it was (a rename that fails, rarer, leaves the files renamed before it). A file already holding exactly its text is left untouched (tmp empty), so that
 * builds do not recompile it. */
typedef struct genOut {
  char path[4096];
  char tmp[4200];
} genOut;

static kilnResult_t stage_file(genOut* o, const char* text) {
  o->tmp[0] = '\0';
  struct stat st;
  if (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode))
    return kilnSetError(KILN_ERR_IO, "%s: exists and is not a regular file", o->path);
  size_t len = strlen(text);
  FILE* f = fopen(o->path, "rb");
  if (f) {
    char* old = malloc(len + 2);
    size_t got = old ? fread(old, 1, len + 1, f) : 0;
    fclose(f);
    bool same = old && got == len && !memcmp(old, text, len);
    free(old);
    if (same) return KILN_SUCCESS;
  }
  if (snprintf(o->tmp, sizeof o->tmp, "%s.tmp%ld", o->path, (long)getpid()) >= (int)sizeof o->tmp) {
    o->tmp[0] = '\0';
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "gen: path too long: %s", o->path);
  }
  f = fopen(o->tmp, "wb");
  if (!f) {
    kilnResult_t r = kilnSetError(KILN_ERR_IO, "%s: cannot create it (a temporary file beside it): %s",
                                  o->path, strerror(errno));
    o->tmp[0] = '\0';
    return r;
  }
  bool ok = fwrite(text, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (!ok) return kilnSetError(KILN_ERR_IO, "%s: cannot write: %s", o->path, strerror(errno));
  return KILN_SUCCESS;
}

/* Renames the n staged files into place (res: how staging went; on failure only removes them). */
static kilnResult_t commit_files(genOut* outs, int n, kilnResult_t res) {
  for (int i = 0; i < n; i++) {
    if (!outs[i].tmp[0]) continue;
    if (res == KILN_SUCCESS && rename(outs[i].tmp, outs[i].path) != 0)
      res = kilnSetError(KILN_ERR_IO, "%s: cannot write: %s", outs[i].path, strerror(errno));
    if (res != KILN_SUCCESS) remove(outs[i].tmp);
  }
  return res;
}

kilnResult_t kilnGenFiles(const char* dir, const char* const* paths, int n, const kilnGenOptions* o) {
  kilnGenOptions defaults;
  if (!o) {
    kilnGenOptionsDefault(&defaults);
    o = &defaults;
  }
  if (!dir || n < 0 || (n > 0 && !paths))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnGenFiles: bad argument");
  kilnResult_t res = KILN_SUCCESS;
  kilnGenUnit* units = calloc((size_t)n + 1, sizeof *units);
  char** sources = calloc((size_t)n + 1, sizeof *sources);
  genOut* outs = calloc((size_t)n + 1, sizeof *outs);
  char* reg = NULL;
  if (!units || !sources || !outs) {
    res = kilnSetError(KILN_ERR_NO_MEMORY, "gen: out of memory");
    goto out_free;
  }
  /* Read, verify and generate everything before writing anything. */
  for (int i = 0; i < n; i++) {
    kilnPlan* p = NULL;
    units[i].origin = paths[i];
    if ((res = kilnGenIdent(paths[i], units[i].ident)) != KILN_SUCCESS) goto out_free;
    for (int j = 0; j < i; j++)
      if (!strcmp(units[j].ident, units[i].ident)) {
        res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "%s and %s would both be baked as %s", paths[j],
                           paths[i], units[i].ident);
        goto out_free;
      }
    if ((res = kilnPlanReadFile(paths[i], &p)) != KILN_SUCCESS) {
      kilnPrefixError("cannot bake %s: ", paths[i]);
      goto out_free;
    }
    units[i].plan = p;
    /* TACCL's copies are baked as the cpy threadblock the runtime also makes of them;
     * what is verified is what is baked. */
    if ((res = kilnPlanLowerCopies(p)) != KILN_SUCCESS) {
      kilnPrefixError("cannot bake %s (plan %s): ", paths[i], p->name);
      goto out_free;
    }
    if ((res = kilnPlanVerify(p, &o->verify)) != KILN_SUCCESS) {
      kilnPrefixError("cannot bake %s (plan %s): ", paths[i], p->name);
      goto out_free;
    }
    if ((res = kilnGenPlanSource(&units[i], o, &sources[i])) != KILN_SUCCESS) goto out_free;
  }
  if ((res = kilnGenRegistrySource(units, n, o, &reg)) != KILN_SUCCESS) goto out_free;
  int staged = 0;
  for (; staged <= n && res == KILN_SUCCESS; staged++) {
    genOut* f = &outs[staged];
    const int w = staged < n ? snprintf(f->path, sizeof f->path, "%s/plan_%s.cu", dir, units[staged].ident)
                             : snprintf(f->path, sizeof f->path, "%s/baked_registry.c", dir);
    if (w >= (int)sizeof f->path)
      res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "gen: output path too long in %s", dir);
    else
      res = stage_file(f, staged < n ? sources[staged] : reg);
  }
  res = commit_files(outs, staged, res);
out_free:
  for (int i = 0; units && sources && i < n; i++) {
    kilnPlanFree((kilnPlan*)units[i].plan);
    free(sources[i]);
  }
  free(reg);
  free(sources);
  free(units);
  free(outs);
  return res;
}
