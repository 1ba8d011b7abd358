/*
 * The selector's rule (host/select.c; kiln/registry.h, "The selector"), on the CPU: a view of a
 * communicator whose answers each test sets (host/select.h), candidate plans from a table of
 * "baked" entries of the test's own and plans loaded into the registry, and the symmetric
 * kernels' ranges. The choice between plans by kilnRegistryPrefer is test_registry's subject;
 * here: which kind of candidate serves, when NCCL does, and why.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln/plan.h"
#include "kiln/registry.h"
#include "params.h"
#include "select.h"

#define KB ((uint64_t)1 << 10)
#define MB ((uint64_t)1 << 20)
#define GB ((uint64_t)1 << 30)

/* The view's answers. */
typedef struct {
  bool symFits, zeroCopy;
  bool runs[8], holds[8];
  int asked; /* how many times plan_holds was asked */
} answers;

static bool sym_fits(void* ctx, kilnSymAlgo_t a) {
  (void)a;
  return ((answers*)ctx)->symFits;
}
static bool zero_copy(void* ctx) { return ((answers*)ctx)->zeroCopy; }
static bool plan_runs(void* ctx, int i) { return ((answers*)ctx)->runs[i]; }
static bool plan_holds(void* ctx, int i) {
  answers* a = ctx;
  a->asked++;
  return a->holds[i];
}

static answers ans;

static kilnSelectView view(int nranks) {
  ans.symFits = true;
  ans.zeroCopy = false;
  ans.asked = 0;
  for (int i = 0; i < 8; i++) ans.runs[i] = ans.holds[i] = true;
  kilnSelectView v = {.nranks = nranks,
                      .rank = 0,
                      .symOn = true,
                      .alone = false,
                      .ctx = &ans,
                      .symFits = sym_fits,
                      .zeroCopy = zero_copy,
                      .planRuns = plan_runs,
                      .planHolds = plan_holds};
  return v;
}

/* A baked entry of `coll` for nranks ranks over [lo, hi], out of place. */
static kilnRegistryEntry baked(const char* name, kilnColl_t coll, int nranks, uint64_t lo, uint64_t hi) {
  kilnRegistryEntry e = {.name = name,
                         .ident = name,
                         .coll = coll,
                         .nranks = nranks,
                         .minBytes = lo,
                         .maxBytes = hi,
                         .inplace = false,
                         .outofplace = true,
                         .proto = KILN_PROTO_SIMPLE,
                         .reduces = coll == KILN_COLL_ALLREDUCE || coll == KILN_COLL_REDUCESCATTER};
  return e;
}

/* Loads a classic direct plan of coll for n ranks over [lo, hi] into the registry. */
static const kilnRegistryEntry* load(kilnColl_t coll, int n, uint64_t lo, uint64_t hi, const char* name) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", coll, n, &o, &p), KILN_SUCCESS), "%s", kilnLastError());
  p->min_bytes = lo;
  p->max_bytes = hi;
  snprintf(p->name, sizeof p->name, "%s", name);
  const kilnRegistryEntry* e = NULL;
  cr_assert(eq(int, kilnRegistryAddPlan(p, &e), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  return e;
}

/* An out-of-place call of `bytes` reference bytes of float. */
static kilnCall call(kilnColl_t coll, int nranks, uint64_t bytes) {
  const size_t count = coll == KILN_COLL_ALLREDUCE ? bytes / 4 : bytes / 4 / (uint64_t)nranks;
  kilnCall c = {.coll = coll,
                .sendbuf = (void*)(uintptr_t)0x100000,
                .recvbuf = (void*)(uintptr_t)0x900000000,
                .count = count,
                .dtype = KILN_FLOAT32,
                .op = KILN_SUM,
                .captured = false};
  return c;
}

static void reset(void) { kilnRegistryReset(); }

Test(select, symmetric_kernels_serve_their_measured_ranges) {
  kilnSelectView v = view(4);
  kilnCall c = call(KILN_COLL_ALLREDUCE, 4, 256 * KB);
  kilnChoice ch = kilnSelectRule(&v, NULL, 0, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_SYM));
  cr_assert(eq(int, ch.sym, KILN_SYM_ALLREDUCE_ONESHOT));
  cr_assert(eq(int, ch.reason, KILN_SELECT_SYM_RANGE));
  c = call(KILN_COLL_ALLREDUCE, 4, 256 * KB + 4);
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).sym, KILN_SYM_ALLREDUCE_TWOSHOT));
  v = view(2);
  c = call(KILN_COLL_ALLREDUCE, 2, 4 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).sym, KILN_SYM_ALLREDUCE_ONESHOT));
  c = call(KILN_COLL_ALLGATHER, 2, 1 * GB);
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).sym, KILN_SYM_ALLGATHER));
}

Test(select, no_candidate_goes_to_nccl_saying_so) {
  kilnSelectView v = view(8); /* no symmetric range for 8 ranks */
  kilnCall c = call(KILN_COLL_ALLREDUCE, 8, 64 * KB);
  kilnChoice ch = kilnSelectRule(&v, NULL, 0, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_NCCL));
  cr_assert(eq(int, ch.reason, KILN_SELECT_NO_PLAN));
  cr_assert(eq(str, (char*)kilnChoiceName(&ch), "nccl"));
}

Test(select, an_op_kiln_does_not_have_goes_to_nccl) {
  kilnSelectView v = view(4);
  kilnCall c = call(KILN_COLL_ALLREDUCE, 4, 64 * KB);
  c.op = (kilnRedOp_t)KILN_NUM_REDOPS; /* NCCL's PreMulSum ops lie past kiln's */
  kilnChoice ch = kilnSelectRule(&v, NULL, 0, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_NCCL));
  cr_assert(eq(int, ch.reason, KILN_SELECT_OP_UNKNOWN));
}

Test(select, in_place_alltoall_has_no_candidate) {
  kilnSelectView v = view(4);
  kilnCall c = call(KILN_COLL_ALLTOALL, 4, 64 * KB);
  c.recvbuf = c.sendbuf;
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).serve, KILN_SERVE_NCCL));
}

Test(select, baked_plans_serve_where_the_symmetric_kernels_do_not) {
  kilnRegistryEntry t[] = {baked("ar8", KILN_COLL_ALLREDUCE, 8, 0, 1 * MB),
                           baked("ar4", KILN_COLL_ALLREDUCE, 4, 0, 1 * MB)};
  const kilnRegistryEntry* plans[] = {&t[0], &t[1]};
  kilnSelectView v = view(8);
  kilnCall c = call(KILN_COLL_ALLREDUCE, 8, 64 * KB);
  kilnChoice ch = kilnSelectRule(&v, plans, 2, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_PLAN));
  cr_assert(eq(int, ch.plan, 0));
  cr_assert(eq(ptr, (void*)ch.entry, (void*)&t[0]));
  cr_assert(eq(int, ch.reason, KILN_SELECT_BAKED));
  /* 4 ranks: the symmetric kernels come first of the defaults. */
  v = view(4);
  c = call(KILN_COLL_ALLREDUCE, 4, 64 * KB);
  cr_assert(eq(int, kilnSelectRule(&v, plans, 2, &c).serve, KILN_SERVE_SYM));
  /* Past the baked range: NCCL. */
  v = view(8);
  c = call(KILN_COLL_ALLREDUCE, 8, 2 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, plans, 2, &c).serve, KILN_SERVE_NCCL));
}

/* The symmetric kernels' retirement: without them (symOn false, as KILN_SYM=0 or taking their line
 * out of the defaults), the same calls go to the plans by the same rules. */
Test(select, without_the_symmetric_kernels_the_plans_serve) {
  kilnRegistryEntry t[] = {baked("ar4-small", KILN_COLL_ALLREDUCE, 4, 0, 256 * KB),
                           baked("ar4-large", KILN_COLL_ALLREDUCE, 4, 256 * KB + 1, UINT64_MAX)};
  const kilnRegistryEntry* plans[] = {&t[0], &t[1]};
  kilnSelectView v = view(4);
  v.symOn = false;
  kilnCall c = call(KILN_COLL_ALLREDUCE, 4, 64 * KB);
  cr_assert(eq(ptr, (void*)kilnSelectRule(&v, plans, 2, &c).entry, (void*)&t[0]));
  c = call(KILN_COLL_ALLREDUCE, 4, 64 * MB);
  cr_assert(eq(ptr, (void*)kilnSelectRule(&v, plans, 2, &c).entry, (void*)&t[1]));
  /* Where the staging cannot hold the call, too. */
  v = view(4);
  ans.symFits = false;
  cr_assert(eq(ptr, (void*)kilnSelectRule(&v, plans, 2, &c).entry, (void*)&t[1]));
}

Test(select, loaded_plans_replace_the_defaults_in_their_range_and_extend_them_elsewhere, .fini = reset) {
  const kilnRegistryEntry* l = load(KILN_COLL_ALLREDUCE, 4, 1 * KB, 1 * MB, "mine");
  kilnRegistryEntry t[] = {baked("ar4", KILN_COLL_ALLREDUCE, 4, 0, UINT64_MAX)};
  const kilnRegistryEntry* plans[] = {&t[0], l};
  kilnSelectView v = view(4);
  kilnCall c = call(KILN_COLL_ALLREDUCE, 4, 64 * KB);
  kilnChoice ch = kilnSelectRule(&v, plans, 2, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_PLAN));
  cr_assert(eq(int, ch.plan, 1));
  cr_assert(eq(int, ch.reason, KILN_SELECT_LOADED));
  cr_assert(eq(str, (char*)kilnChoiceName(&ch), "mine"));
  /* Outside its range the defaults serve. */
  c = call(KILN_COLL_ALLREDUCE, 4, 4 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, plans, 2, &c).serve, KILN_SERVE_SYM));
  /* A loaded plan that cannot run the call leaves it to the defaults. */
  c = call(KILN_COLL_ALLREDUCE, 4, 64 * KB);
  ans.runs[1] = false;
  cr_assert(eq(int, kilnSelectRule(&v, plans, 2, &c).serve, KILN_SERVE_SYM));
}

Test(select, of_loaded_plans_the_narrowest_range_then_the_last_loaded, .fini = reset) {
  const kilnRegistryEntry* wide = load(KILN_COLL_ALLGATHER, 2, 0, 1 * GB, "wide");
  const kilnRegistryEntry* narrow = load(KILN_COLL_ALLGATHER, 2, 0, 1 * MB, "narrow");
  const kilnRegistryEntry* again = load(KILN_COLL_ALLGATHER, 2, 0, 1 * MB, "again");
  const kilnRegistryEntry* plans[] = {wide, narrow, again};
  kilnSelectView v = view(2);
  kilnCall c = call(KILN_COLL_ALLGATHER, 2, 64 * KB);
  cr_assert(eq(int, kilnSelectRule(&v, plans, 3, &c).plan, 2));
  c = call(KILN_COLL_ALLGATHER, 2, 64 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, plans, 3, &c).plan, 0));
}

Test(select, a_large_staged_allreduce_of_a_rank_alone_goes_to_nccl, .fini = reset) {
  kilnSelectView v = view(4);
  v.alone = true;
  kilnCall c = call(KILN_COLL_ALLREDUCE, 4, 1 * GB);
  kilnChoice ch = kilnSelectRule(&v, NULL, 0, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_NCCL));
  cr_assert(eq(int, ch.reason, KILN_SELECT_STAGED_AR));
  /* At the limit, with the ranks in one process, or zero copy: the symmetric kernels. */
  c = call(KILN_COLL_ALLREDUCE, 4, 512 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).serve, KILN_SERVE_SYM));
  c = call(KILN_COLL_ALLREDUCE, 4, 1 * GB);
  ans.zeroCopy = true;
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).serve, KILN_SERVE_SYM));
  ans.zeroCopy = false;
  v.alone = false;
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).serve, KILN_SERVE_SYM));
  /* No limit on 2 ranks. */
  kilnSelectView v2 = view(2);
  v2.alone = true;
  kilnCall c2 = call(KILN_COLL_ALLREDUCE, 2, 1 * GB);
  cr_assert(eq(int, kilnSelectRule(&v2, NULL, 0, &c2).serve, KILN_SERVE_SYM));
  /* A plan the user loaded for those sizes still serves them. */
  v.alone = true;
  const kilnRegistryEntry* l = load(KILN_COLL_ALLREDUCE, 4, 0, UINT64_MAX, "mine");
  const kilnRegistryEntry* plans[] = {l};
  cr_assert(eq(int, kilnSelectRule(&v, plans, 1, &c).reason, KILN_SELECT_LOADED));
}

Test(select, the_staged_allreduce_limit_is_a_setting) {
  setenv("KILN_STAGED_AR_MAX_BYTES", "1M", 1);
  kilnParamsReload();
  kilnSelectView v = view(2);
  v.alone = true;
  kilnCall c = call(KILN_COLL_ALLREDUCE, 2, 1 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).serve, KILN_SERVE_SYM));
  c = call(KILN_COLL_ALLREDUCE, 2, 2 * MB);
  cr_assert(eq(int, kilnSelectRule(&v, NULL, 0, &c).reason, KILN_SELECT_STAGED_AR));
  cr_assert(eq(u64, kilnSelectStagedARMax(4), 1 * MB));
}

/* A captured call whose plan would grow its scratch passes that plan over: to the next candidate,
 * else NCCL; the same call not captured, or once the scratch holds it, runs the plan. */
Test(select, a_captured_call_that_would_grow_scratch_passes_the_plan_over) {
  kilnRegistryEntry t[] = {baked("ar8", KILN_COLL_ALLREDUCE, 8, 0, 1 * GB)};
  const kilnRegistryEntry* plans[] = {&t[0]};
  kilnSelectView v = view(8);
  kilnCall c = call(KILN_COLL_ALLREDUCE, 8, 64 * MB);
  c.captured = true;
  ans.holds[0] = false;
  kilnChoice ch = kilnSelectRule(&v, plans, 1, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_NCCL));
  cr_assert(eq(int, ch.reason, KILN_SELECT_CAPTURE_GROW));
  cr_assert(eq(str, (char*)kilnSelectReasonText(ch.reason),
               "captured, and the plan's scratch would have to grow inside the capture"));
  c.captured = false;
  const int asked = ans.asked;
  cr_assert(eq(int, kilnSelectRule(&v, plans, 1, &c).serve, KILN_SERVE_PLAN));
  cr_assert(eq(int, ans.asked, asked), "an eager call asked whether the scratch holds it");
  c.captured = true;
  ans.holds[0] = true;
  cr_assert(eq(int, kilnSelectRule(&v, plans, 1, &c).serve, KILN_SERVE_PLAN));
}

Test(select, a_plan_that_cannot_run_the_call_says_so) {
  kilnRegistryEntry t[] = {baked("ag8", KILN_COLL_ALLGATHER, 8, 0, 1 * GB)};
  const kilnRegistryEntry* plans[] = {&t[0]};
  kilnSelectView v = view(8);
  kilnCall c = call(KILN_COLL_ALLGATHER, 8, 64 * KB);
  ans.runs[0] = false;
  kilnChoice ch = kilnSelectRule(&v, plans, 1, &c);
  cr_assert(eq(int, ch.serve, KILN_SERVE_NCCL));
  cr_assert(eq(int, ch.reason, KILN_SELECT_CANNOT_RUN));
}

/* Every rank of a call decides alike: the same call as each rank makes it (in-place buffers at
 * each rank's offset, as NCCL defines them). */
Test(select, every_rank_decides_alike) {
  kilnRegistryEntry t[] = {baked("ag4", KILN_COLL_ALLGATHER, 4, 0, 1 * GB)};
  t[0].inplace = true;
  const kilnRegistryEntry* plans[] = {&t[0]};
  for (int symOn = 0; symOn < 2; symOn++)
    for (uint64_t bytes = 64; bytes <= 1 * GB; bytes *= 16) {
      kilnChoice first = {0};
      for (int r = 0; r < 4; r++) {
        kilnSelectView v = view(4);
        v.rank = r;
        v.symOn = symOn;
        kilnCall c = call(KILN_COLL_ALLGATHER, 4, bytes);
        c.sendbuf = (const char*)c.recvbuf + (size_t)r * c.count * 4; /* in place */
        const kilnChoice ch = kilnSelectRule(&v, plans, 1, &c);
        if (r == 0) first = ch;
        cr_assert(eq(int, ch.serve, first.serve), "rank %d, %llu B", r, (unsigned long long)bytes);
        cr_assert(eq(int, ch.sym, first.sym));
        cr_assert(eq(int, ch.plan, first.plan));
      }
      cr_assert(eq(int, first.serve, symOn ? KILN_SERVE_SYM : KILN_SERVE_PLAN));
    }
}

Test(select, symmetric_algorithm_names) {
  cr_assert(eq(str, (char*)kilnSymAlgoName(KILN_SYM_ALLREDUCE_TWOSHOT), "sym-allreduce-twoshot"));
  cr_assert(eq(str, (char*)kilnSymAlgoName(KILN_SYM_NONE), "none"));
  cr_assert(eq(int, kilnSymAlgoColl(KILN_SYM_REDUCESCATTER), KILN_COLL_REDUCESCATTER));
  for (int r = 0; r < KILN_NUM_SELECT_REASONS; r++)
    cr_assert(strlen(kilnSelectReasonText((kilnSelectReason_t)r)) > 0);
  cr_assert(eq(str, (char*)kilnSelectReasonText(KILN_NUM_SELECT_REASONS), "unknown reason"));
}
