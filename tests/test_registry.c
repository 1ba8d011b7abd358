/* The plan registry (host/registry.c): which plan serves a call, on tables of entries and on plans
 * loaded at run time, without CUDA (a build without the GPU runtime has an empty baked table; the
 * tests that need one put their own in its place with kilnRegistryUseTable). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "registry_internal.h"
#include "test_util.h"

static kilnPlan* classic(const char* algo, kilnColl_t coll, int n, kilnProto_t proto, bool inplace) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = proto;
  o.inplace = inplace;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan(algo, coll, n, &o, &p), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

/* ---- selection over a table (kilnRegistryPick) ---- */

static int fake_launch(const void* a, int t, void* s) { return 0; }

/* A registry entry as gen/ writes one, without its XML: ENTRY(name, ident, coll, nranks, minBytes,
 * maxBytes, inplace, outofplace, proto, reduces, launch, inlined). */
#define ENTRY(name, ident, coll, nranks, lo, hi, inpl, outpl, proto, reduces, launch, inlined) \
  { name, ident, coll, nranks, lo, hi, inpl, outpl, proto, reduces, NULL, launch, inlined }

#define KB 1024ull
#define MB (1024ull * 1024ull)
/* A baked table as gen/ would write it: allreduce on 4 ranks in three size bands (out of place),
 * one in-place plan, one for 2 ranks, one alltoall. */
static const kilnRegistryEntry table[] = {
    /* 0 */ ENTRY("ar4-small", "a", KILN_COLL_ALLREDUCE, 4, 0, 64 * KB, false, true, KILN_PROTO_LL, true,
                  {[KILN_FLOAT32] = fake_launch}, true),
    /* 1 */
    ENTRY("ar4-medium", "b", KILN_COLL_ALLREDUCE, 4, 64 * KB + 1, 4 * MB, false, true, KILN_PROTO_SIMPLE,
          true, {[KILN_FLOAT32] = fake_launch}, true),
    /* 2 */
    ENTRY("ar4-large", "c", KILN_COLL_ALLREDUCE, 4, 4 * MB + 1, UINT64_MAX, false, true, KILN_PROTO_SIMPLE,
          true, {[KILN_FLOAT32] = fake_launch}, true),
    /* 3 */
    ENTRY("ar4-inplace", "d", KILN_COLL_ALLREDUCE, 4, 0, UINT64_MAX, true, false, KILN_PROTO_SIMPLE, true,
          {[KILN_FLOAT32] = fake_launch}, true),
    /* 4 */
    ENTRY("ar2", "e", KILN_COLL_ALLREDUCE, 2, 0, UINT64_MAX, false, true, KILN_PROTO_SIMPLE, true,
          {[KILN_FLOAT32] = fake_launch}, true),
    /* 5 */
    ENTRY("a2a4", "f", KILN_COLL_ALLTOALL, 4, 0, UINT64_MAX, true, true, KILN_PROTO_SIMPLE, false,
          {[KILN_FLOAT32] = fake_launch}, true),
    /* 6 */
    ENTRY("ar4-small-half", "g", KILN_COLL_ALLREDUCE, 4, 0, 64 * KB, false, true, KILN_PROTO_LL, true,
          {[KILN_FLOAT16] = fake_launch}, true),
};

typedef struct pick_case {
  kilnColl_t coll;
  int nranks;
  uint64_t bytes;
  bool inplace;
  kilnDataType_t dtype;
  kilnRedOp_t op;
  int want;
} pick_case;

static const pick_case pick_cases[] = {
    {KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT32, KILN_SUM, 0},
    {KILN_COLL_ALLREDUCE, 4, 64 * KB, false, KILN_FLOAT32, KILN_SUM, 0},
    {KILN_COLL_ALLREDUCE, 4, 64 * KB + 1, false, KILN_FLOAT32, KILN_SUM, 1},
    {KILN_COLL_ALLREDUCE, 4, 4 * MB, false, KILN_FLOAT32, KILN_SUM, 1},
    {KILN_COLL_ALLREDUCE, 4, 1024 * MB, false, KILN_FLOAT32, KILN_SUM, 2},
    {KILN_COLL_ALLREDUCE, 4, 8, true, KILN_FLOAT32, KILN_SUM, 3},   /* in place */
    {KILN_COLL_ALLREDUCE, 2, 8, false, KILN_FLOAT32, KILN_SUM, 4},  /* ranks */
    {KILN_COLL_ALLREDUCE, 8, 8, false, KILN_FLOAT32, KILN_SUM, -1}, /* no plan for 8 */
    {KILN_COLL_ALLGATHER, 4, 8, false, KILN_FLOAT32, KILN_SUM, -1}, /* no allgather */
    {KILN_COLL_ALLTOALL, 4, 8, false, KILN_FLOAT32, KILN_SUM, 5},
    {KILN_COLL_ALLTOALL, 4, 8, true, KILN_FLOAT32, KILN_SUM, -1},  /* no in-place alltoall */
    {KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT16, KILN_SUM, 6}, /* baked half wins */
    {KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT64, KILN_SUM, 0}, /* neither baked: first */
    {KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT16, KILN_MAX, 0}, /* max not baked */
};
#define N_pick (sizeof pick_cases / sizeof pick_cases[0])

KILN_INDEX_PARAMS(registry, pick, N_pick)

/* The registry picks by collective, ranks, byte range, form, then baked kernel. */
ParameterizedTest(int* ci, registry, pick) {
  const pick_case* c = &pick_cases[*ci];
  int got = kilnRegistryPick(table, (int)(sizeof table / sizeof table[0]), c->coll, c->nranks, c->bytes,
                             c->inplace, c->dtype, c->op);
  cr_assert(eq(int, got, c->want), "case %d", *ci);
}

/* Of two fitting ranges, the narrower one serves the call. */
Test(registry, narrower_range_wins) {
  kilnRegistryEntry t[2] = {
      ENTRY("wide", "w", KILN_COLL_ALLGATHER, 4, 0, UINT64_MAX, false, true, KILN_PROTO_SIMPLE, false, {NULL},
            false),
      ENTRY("narrow", "n", KILN_COLL_ALLGATHER, 4, 0, 1 * MB, false, true, KILN_PROTO_LL, false, {NULL},
            false),
  };
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLGATHER, 4, 1024, false, KILN_FLOAT32, KILN_SUM), 1));
  cr_assert(
      eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLGATHER, 4, 2 * MB, false, KILN_FLOAT32, KILN_SUM), 0));
}

Test(registry, call_bytes) {
  cr_assert(eq(u64, kilnRegistryCallBytes(KILN_COLL_ALLREDUCE, 4, 100, KILN_FLOAT32), 400));
  cr_assert(eq(u64, kilnRegistryCallBytes(KILN_COLL_ALLGATHER, 4, 100, KILN_FLOAT16), 800));
  cr_assert(eq(u64, kilnRegistryCallBytes(KILN_COLL_REDUCESCATTER, 2, 100, KILN_INT8), 200));
  cr_assert(eq(u64, kilnRegistryCallBytes(KILN_COLL_ALLTOALL, 4, 10, KILN_FLOAT64), 320));
  cr_assert(eq(u64, kilnRegistryCallBytes(KILN_COLL_ALLREDUCE, 4, 100, (kilnDataType_t)99), 0));
}

/* The baked kernel serves sum and avg of its dtypes; anything else is interpreted. */
Test(registry, kernel_by_dtype_and_op) {
  const kilnRegistryEntry* e = &table[0];
  cr_assert(eq(ptr, (void*)kilnRegistryKernel(e, KILN_FLOAT32, KILN_SUM), (void*)fake_launch));
  cr_assert(eq(ptr, (void*)kilnRegistryKernel(e, KILN_FLOAT32, KILN_AVG), (void*)fake_launch));
  cr_assert(eq(ptr, (void*)kilnRegistryKernel(e, KILN_FLOAT32, KILN_MAX), NULL));
  cr_assert(eq(ptr, (void*)kilnRegistryKernel(e, KILN_FLOAT64, KILN_SUM), NULL));
  /* A plan that only moves data takes any op. */
  cr_assert(eq(ptr, (void*)kilnRegistryKernel(&table[5], KILN_FLOAT32, KILN_MAX), (void*)fake_launch));
}

/* Plans loaded at run time serve their range before baked ones, run interpreted, and go away
 * on reset. */
Test(registry, loaded_plans) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLGATHER, 3, KILN_PROTO_LL, false);
  p->min_bytes = 0;
  p->max_bytes = 1 * MB;
  const kilnRegistryEntry* e = NULL;
  int before = kilnRegistryCount();
  cr_assert(eq(int, kilnRegistryAddPlan(p, &e), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnRegistryCount(), before + 1));
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 3 * KB, false, KILN_FLOAT32, KILN_SUM),
               (void*)e));
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 2 * MB, false, KILN_FLOAT32, KILN_SUM),
               NULL));
  cr_assert(eq(ptr, (void*)kilnRegistryKernel(e, KILN_FLOAT32, KILN_SUM), NULL));
  const kilnPlan* got = NULL;
  cr_assert(eq(int, kilnRegistryPlan(e, &got), KILN_SUCCESS));
  cr_assert(eq(str, (char*)got->name, p->name));
  cr_assert(eq(ptr, (void*)kilnRegistryFind(p->name), (void*)e));
  kilnRegistryReset();
  cr_assert(eq(int, kilnRegistryCount(), before));
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 3 * KB, false, KILN_FLOAT32, KILN_SUM),
               NULL));
  kilnPlanFree(p);
}

/* Of loaded plans that fit a call, the narrowest range serves it, whatever the load order; of
 * equal ranges, the plan loaded last (quickstart loads a folder's small- and large-call plans,
 * whose ranges overlapped: the last loaded took every size). */
Test(registry, loaded_plans_narrowest_then_last) {
  kilnPlan* wide = classic("ring", KILN_COLL_ALLGATHER, 3, KILN_PROTO_SIMPLE, false);
  kilnPlan* narrow = classic("direct", KILN_COLL_ALLGATHER, 3, KILN_PROTO_LL, false);
  wide->min_bytes = 0;
  wide->max_bytes = UINT64_MAX;
  narrow->min_bytes = 0;
  narrow->max_bytes = 256 * KB;
  const kilnRegistryEntry *n = NULL, *w = NULL, *w2 = NULL;
  for (int order = 0; order < 2; order++) {
    cr_assert(eq(int, kilnRegistryAddPlan(order ? wide : narrow, order ? &w : &n), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_assert(eq(int, kilnRegistryAddPlan(order ? narrow : wide, order ? &n : &w), KILN_SUCCESS), "%s",
              kilnLastError());
    cr_expect(
        eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 3 * KB, false, KILN_FLOAT32, KILN_SUM),
           (void*)n),
        "load order %d", order);
    cr_expect(
        eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 256 * KB, false, KILN_FLOAT32, KILN_SUM),
           (void*)n),
        "load order %d", order);
    cr_expect(
        eq(ptr,
           (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 256 * KB + 3, false, KILN_FLOAT32, KILN_SUM),
           (void*)w),
        "load order %d", order);
    kilnRegistryReset();
  }
  /* The same range twice: the later load serves. */
  cr_assert(eq(int, kilnRegistryAddPlan(wide, &w), KILN_SUCCESS));
  cr_assert(eq(int, kilnRegistryAddPlan(wide, &w2), KILN_SUCCESS));
  cr_expect(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLGATHER, 3, 3 * KB, false, KILN_FLOAT32, KILN_SUM),
               (void*)w2));
  kilnRegistryReset();
  kilnPlanFree(wide);
  kilnPlanFree(narrow);
}

/* A broken plan is refused by the registry too, naming it. */
Test(registry, broken_plan_refused) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 2, KILN_PROTO_SIMPLE, false);
  snprintf(p->name, sizeof p->name, "lost-receive");
  p->gpus[1].tbs[0].nsteps = 1;
  cr_assert(eq(int, kilnRegistryAddPlan(p, NULL), KILN_ERR_VERIFY));
  cr_assert(contains(kilnLastError(), "lost-receive"), "%s", kilnLastError());
  p->gpus[1].tbs[0].nsteps = 3;
  kilnPlanFree(p);
}

/* Every baked entry (if this build has any) parses back into a plan that fits its row. */
Test(registry, baked_entries_parse) {
  int n = 0;
  const kilnRegistryEntry* t = kilnBakedTable(&n);
  if (n == 0) cr_skip_test("no baked plans in this build (built without CUDA)");
  for (int i = 0; i < n; i++) {
    const kilnPlan* p = NULL;
    cr_assert(eq(int, kilnRegistryPlan(&t[i], &p), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, p->ngpus, t[i].nranks));
    cr_assert(eq(int, (int)p->coll, (int)t[i].coll));
    cr_assert(eq(u64, p->min_bytes, t[i].minBytes));
  }
}

/* A plan of a baked shape and protocol finds its baked entry whatever its name and range; another
 * shape finds none, and another protocol never finds an entry of the first one. */
Test(registry, baked_for_same_shape_only) {
  kilnPlan* odd = classic("ring", KILN_COLL_ALLGATHER, 7, KILN_PROTO_SIMPLE, false);
  cr_assert(eq(ptr, (void*)kilnRegistryBakedFor(odd), NULL));
  kilnPlanFree(odd);
  int n = 0;
  const kilnRegistryEntry* t = kilnBakedTable(&n);
  if (n == 0) cr_skip_test("no baked plans in this build (built without CUDA)");
  for (int i = 0; i < n; i++) {
    const kilnPlan* p = NULL;
    cr_assert(eq(int, kilnRegistryPlan(&t[i], &p), KILN_SUCCESS), "%s", kilnLastError());
    kilnPlan* q = NULL;
    cr_assert(eq(int, kilnPlanClone(p, &q), KILN_SUCCESS));
    snprintf(q->name, sizeof q->name, "renamed");
    q->min_bytes = 1;
    q->max_bytes = 2;
    const kilnRegistryEntry* got = kilnRegistryBakedFor(q);
    cr_assert(not(eq(ptr, (void*)got, NULL)), "%s", t[i].name);
    cr_assert(eq(int, (int)got->coll, (int)t[i].coll));
    for (int pr = 0; pr < KILN_NUM_PROTOS; pr++) { /* another protocol: another kernel (LL128 too) */
      if (pr == (int)p->proto) continue;
      q->proto = (kilnProto_t)pr;
      const kilnRegistryEntry* other = kilnRegistryBakedFor(q); /* none, or that protocol's plan */
      cr_assert(other == NULL || other->proto == q->proto, "%s as %s found %s", t[i].name,
                kilnProtoName(q->proto), other ? other->name : "-");
    }
    q->proto = p->proto;
    q->gpus[0].tbs[0].steps[0].srcoff += 1000; /* another shape */
    cr_assert(eq(ptr, (void*)kilnRegistryBakedFor(q), NULL), "%s", t[i].name);
    kilnPlanFree(q);
  }
}

/* In-place calls as NCCL defines them: rank 2, 8 floats a rank. */
Test(registry, call_in_place) {
  static float buf[64];
  const size_t mine = 2 * 8;
  cr_assert(kilnRegistryCallInPlace(KILN_COLL_ALLREDUCE, 2, buf, buf, 8, KILN_FLOAT32));
  cr_assert(not(kilnRegistryCallInPlace(KILN_COLL_ALLREDUCE, 2, buf, buf + 8, 8, KILN_FLOAT32)));
  cr_assert(kilnRegistryCallInPlace(KILN_COLL_ALLGATHER, 2, buf + mine, buf, 8, KILN_FLOAT32));
  cr_assert(not(kilnRegistryCallInPlace(KILN_COLL_ALLGATHER, 2, buf, buf, 8, KILN_FLOAT32)));
  cr_assert(kilnRegistryCallInPlace(KILN_COLL_REDUCESCATTER, 2, buf, buf + mine, 8, KILN_FLOAT32));
  cr_assert(not(kilnRegistryCallInPlace(KILN_COLL_REDUCESCATTER, 2, buf, buf, 8, KILN_FLOAT32)));
  cr_assert(kilnRegistryCallInPlace(KILN_COLL_ALLTOALL, 2, buf, buf, 8, KILN_FLOAT32));
}

/* ---- more of the policy over tables ---- */

/* A reducing entry's baked kernel does sum and avg only: for another op no entry has a kernel, so
 * the narrowest range serves; an entry that only moves data keeps its kernel for every op. */
Test(registry, op_decides_the_kernel) {
  kilnRegistryEntry t[2] = {
      ENTRY("wide-baked", "w", KILN_COLL_ALLREDUCE, 4, 0, UINT64_MAX, false, true, KILN_PROTO_SIMPLE, true,
            {[KILN_FLOAT32] = fake_launch}, true),
      ENTRY("narrow-plain", "n", KILN_COLL_ALLREDUCE, 4, 0, 1 * MB, false, true, KILN_PROTO_LL, true, {NULL},
            true),
  };
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLREDUCE, 4, 1024, false, KILN_FLOAT32, KILN_SUM), 0));
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLREDUCE, 4, 1024, false, KILN_FLOAT32, KILN_AVG), 0));
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLREDUCE, 4, 1024, false, KILN_FLOAT32, KILN_MAX), 1));
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLREDUCE, 4, 1024, false, KILN_FLOAT32, KILN_PROD), 1));
  kilnRegistryEntry m[2] = {
      ENTRY("wide-baked", "w", KILN_COLL_ALLGATHER, 4, 0, UINT64_MAX, false, true, KILN_PROTO_SIMPLE, false,
            {[KILN_FLOAT32] = fake_launch}, true),
      ENTRY("narrow-plain", "n", KILN_COLL_ALLGATHER, 4, 0, 1 * MB, false, true, KILN_PROTO_LL, false, {NULL},
            true),
  };
  cr_assert(eq(int, kilnRegistryPick(m, 2, KILN_COLL_ALLGATHER, 4, 1024, false, KILN_FLOAT32, KILN_MAX), 0));
}

/* A baked kernel whose steps were not inlined does not run by default (the interpreter does), so
 * it weighs no more than no kernel: the narrower range serves. */
Test(registry, only_inlined_kernels_count) {
  kilnRegistryEntry t[2] = {
      ENTRY("wide-inlined", "w", KILN_COLL_ALLREDUCE, 4, 0, UINT64_MAX, false, true, KILN_PROTO_SIMPLE, true,
            {[KILN_FLOAT32] = fake_launch}, true),
      ENTRY("narrow-called", "n", KILN_COLL_ALLREDUCE, 4, 0, 1 * MB, false, true, KILN_PROTO_LL, true,
            {[KILN_FLOAT32] = fake_launch}, false),
  };
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLREDUCE, 4, 1024, false, KILN_FLOAT32, KILN_SUM), 0));
  t[0].inlined = false;
  cr_assert(eq(int, kilnRegistryPick(t, 2, KILN_COLL_ALLREDUCE, 4, 1024, false, KILN_FLOAT32, KILN_SUM), 1));
}

/* Of entries alike in kernel and range, the first in the table serves; a byte range is inclusive
 * at both ends; an entry serving both forms serves either. */
Test(registry, ties_ends_and_forms) {
  kilnRegistryEntry t[3] = {
      ENTRY("first", "a", KILN_COLL_REDUCESCATTER, 2, 4 * KB, 8 * KB, false, true, KILN_PROTO_LL, true,
            {NULL}, true),
      ENTRY("second", "b", KILN_COLL_REDUCESCATTER, 2, 4 * KB, 8 * KB, false, true, KILN_PROTO_LL, true,
            {NULL}, true),
      ENTRY("both", "c", KILN_COLL_REDUCESCATTER, 2, 0, UINT64_MAX, true, true, KILN_PROTO_SIMPLE, true,
            {NULL}, true),
  };
  cr_assert(
      eq(int, kilnRegistryPick(t, 3, KILN_COLL_REDUCESCATTER, 2, 4 * KB, false, KILN_FLOAT32, KILN_SUM), 0));
  cr_assert(
      eq(int, kilnRegistryPick(t, 3, KILN_COLL_REDUCESCATTER, 2, 8 * KB, false, KILN_FLOAT32, KILN_SUM), 0));
  cr_assert(eq(
      int, kilnRegistryPick(t, 3, KILN_COLL_REDUCESCATTER, 2, 4 * KB - 1, false, KILN_FLOAT32, KILN_SUM), 2));
  cr_assert(eq(
      int, kilnRegistryPick(t, 3, KILN_COLL_REDUCESCATTER, 2, 8 * KB + 1, false, KILN_FLOAT32, KILN_SUM), 2));
  cr_assert(
      eq(int, kilnRegistryPick(t, 3, KILN_COLL_REDUCESCATTER, 2, 4 * KB, true, KILN_FLOAT32, KILN_SUM), 2));
  cr_assert(
      eq(int, kilnRegistryPick(t, 0, KILN_COLL_REDUCESCATTER, 2, 4 * KB, true, KILN_FLOAT32, KILN_SUM), -1));
  cr_assert(eq(
      int, kilnRegistryPick(NULL, 3, KILN_COLL_REDUCESCATTER, 2, 4 * KB, true, KILN_FLOAT32, KILN_SUM), -1));
}

/* ---- loaded plans against a baked table (kilnRegistrySelect) ---- */

/* A plan loaded at run time serves its range before any baked entry, even one with a kernel for
 * the call and a narrower range; outside its range, or for a form it does not serve, the baked
 * table serves as before; after a reset the baked entries serve again. */
Test(registry, loaded_before_baked) {
  kilnRegistryUseTable(table, (int)(sizeof table / sizeof table[0]));
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT32, KILN_SUM),
               (void*)&table[0]));
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_SIMPLE, false);
  p->min_bytes = 0;
  p->max_bytes = 1 * MB;
  const kilnRegistryEntry* e = NULL;
  cr_assert(eq(int, kilnRegistryAddPlan(p, &e), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(e->outofplace && !e->inplace);
  cr_assert(
      eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT32, KILN_SUM), (void*)e));
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLREDUCE, 4, 1 * MB, false, KILN_FLOAT16, KILN_SUM),
               (void*)e));
  cr_assert(eq(ptr,
               (void*)kilnRegistrySelect(KILN_COLL_ALLREDUCE, 4, 1 * MB + 1, false, KILN_FLOAT32, KILN_SUM),
               (void*)&table[1]));
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLREDUCE, 4, 8, true, KILN_FLOAT32, KILN_SUM),
               (void*)&table[3]));
  kilnRegistryReset();
  cr_assert(eq(ptr, (void*)kilnRegistrySelect(KILN_COLL_ALLREDUCE, 4, 8, false, KILN_FLOAT32, KILN_SUM),
               (void*)&table[0]));
  kilnRegistryUseTable(NULL, 0);
  kilnPlanFree(p);
}

/* Enumeration lists the baked table first, in its order, then the loaded plans in load order;
 * a name finds a loaded plan before a baked entry of that name. */
Test(registry, enumeration_baked_then_loaded) {
  const int nt = (int)(sizeof table / sizeof table[0]);
  kilnRegistryUseTable(table, nt);
  cr_assert(eq(int, kilnRegistryCount(), nt));
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_SIMPLE, false);
  snprintf(p->name, sizeof p->name, "%s", table[2].name);
  const kilnRegistryEntry* e = NULL;
  cr_assert(eq(int, kilnRegistryAddPlan(p, &e), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnRegistryCount(), nt + 1));
  for (int i = 0; i < nt; i++) cr_assert(eq(ptr, (void*)kilnRegistryAt(i), (void*)&table[i]), "entry %d", i);
  cr_assert(eq(ptr, (void*)kilnRegistryAt(nt), (void*)e));
  cr_assert(eq(ptr, (void*)kilnRegistryAt(nt + 1), NULL));
  cr_assert(eq(ptr, (void*)kilnRegistryAt(-1), NULL));
  cr_assert(eq(ptr, (void*)kilnRegistryFind(table[2].name), (void*)e));
  cr_assert(eq(ptr, (void*)kilnRegistryFind(table[3].name), (void*)&table[3]));
  cr_assert(eq(ptr, (void*)kilnRegistryFind(table[3].ident), (void*)&table[3]));
  cr_assert(eq(ptr, (void*)kilnRegistryFind("no such plan"), NULL));
  kilnRegistryReset();
  kilnRegistryUseTable(NULL, 0);
  kilnPlanFree(p);
}

/* A baked entry whose plan text is missing is an error, not a crash. */
Test(registry, baked_entry_without_xml_refused) {
  kilnRegistryUseTable(table, 1);
  const kilnPlan* p = NULL;
  cr_assert(eq(int, kilnRegistryPlan(&table[0], &p), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), table[0].name), "%s", kilnLastError());
  kilnRegistryUseTable(NULL, 0);
}
