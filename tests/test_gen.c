/* gen/: plan -> CUDA source and the registry source it writes (the registry itself: test_registry.c). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "kiln/registry.h"
#include "test_files.h"
#include "test_util.h"

static kilnPlan* classic(const char* algo, kilnColl_t coll, int n, kilnProto_t proto, bool inplace) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = proto;
  o.inplace = inplace;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan(algo, coll, n, &o, &p), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

static char* plan_source(const kilnPlan* p, const char* ident) {
  kilnGenOptions o;
  kilnGenOptionsDefault(&o);
  kilnGenUnit u = {p, "", "plans/baked/x.xml"};
  snprintf(u.ident, sizeof u.ident, "%s", ident);
  char* src = NULL;
  cr_assert(eq(int, kilnGenPlanSource(&u, &o, &src), KILN_SUCCESS), "%s", kilnLastError());
  return src;
}

/* The registry source of one plan baked as `ident` from `origin` (the default dtypes). */
static char* registry_source(const kilnPlan* p, const char* ident, const char* origin) {
  kilnGenOptions o;
  kilnGenOptionsDefault(&o);
  kilnGenUnit u = {p, "", origin};
  snprintf(u.ident, sizeof u.ident, "%s", ident);
  char* reg = NULL;
  cr_assert(eq(int, kilnGenRegistrySource(&u, 1, &o, &reg), KILN_SUCCESS), "%s", kilnLastError());
  return reg;
}

static char* read_all(const char* path) {
  FILE* f = fopen(path, "rb");
  cr_assert(not(eq(ptr, f, NULL)), "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* s = malloc((size_t)n + 1);
  cr_assert(eq(sz, fread(s, 1, (size_t)n, f), (size_t)n));
  s[n] = 0;
  fclose(f);
  return s;
}

static int count_files(const char* dir) {
  DIR* d = opendir(dir);
  int n = 0;
  for (struct dirent* de; d && (de = readdir(d));)
    if (de->d_name[0] != '.') n++;
  if (d) closedir(d);
  return n;
}

/* ---- generated source ---- */

/* The direct LL allreduce on 4 ranks: its step table rows, its protocol and the kernels of the
 * default dtypes (sum), nothing else. */
Test(gen, direct_allreduce_tables_and_kernels) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_LL, false);
  char* src = plan_source(p, "ar4");
  cr_assert(contains(src, "#include \"baked.cuh\""));
  cr_assert(contains(src, "struct plan_ar4 {"));
  cr_assert(contains(src, "static constexpr int nranks = 4;"));
  cr_assert(contains(src, "static constexpr int proto = KILN_DEV_PROTO_LL;"));
  cr_assert(contains(src, "static constexpr int ntbs = 16;"));
  cr_assert(contains(src, "static constexpr int rankTb[] = {0, 4, 8, 12, 16};"));
  /* rank 0, tb 0 sends its input chunk 1 to peer 1's scratch; the reducer waits on receives. */
  cr_assert(contains(src, "/* 0 */ {ST_SEND, BUF_I, 1, BUF_S, 1, 1, -1, -1, 0, 0, 0}, /* rank 0 tb 0 */"),
            "%s", src);
  cr_assert(contains(src, "/* 3 */ {0, 3, -1, -1, 0, 12, 4},"));
  cr_assert(contains(src, "/* 13 */ {ST_RE, BUF_S, 0, BUF_O, 0, 1, 0, 1, 0, 0, 0},"));
  cr_assert(contains(src, "KILN_BAKED_KERNEL(ar4, float, float)\n"));
  cr_assert(contains(src, "KILN_BAKED_KERNEL(ar4, half, __half)\n"));
  cr_assert(contains(src, "KILN_BAKED_KERNEL(ar4, bfloat16, __nv_bfloat16)\n"));
  cr_assert(contains(src, "KILN_BAKED_KERNEL(ar4, int32, int32_t)\n"));
  cr_assert(not(contains(src, "KILN_BAKED_KERNEL(ar4, double")));
  cr_assert(not(contains(src, "for (")), "generated code holds tables, not logic");
  free(src);
  kilnPlanFree(p);
}

/* A plan that only moves data is baked once per element size and serves every dtype of it. */
Test(gen, allgather_baked_per_element_size) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 2, KILN_PROTO_SIMPLE, false);
  char* src = plan_source(p, "ag2");
  cr_assert(contains(src, "KILN_BAKED_KERNEL(ag2, b4, uint32_t)\n"));
  cr_assert(contains(src, "KILN_BAKED_KERNEL(ag2, b2, uint16_t)\n"));
  cr_assert(not(contains(src, "KILN_BAKED_KERNEL(ag2, float")));
  char* reg = registry_source(p, "ag2", "ag2.xml");
  /* int32, uint32 and float all map to the 4-byte kernel. */
  cr_assert(contains(reg,
                     "{NULL, NULL, kilnBaked_ag2_b4, kilnBaked_ag2_b4, NULL, NULL, kilnBaked_ag2_b2, "
                     "kilnBaked_ag2_b4, NULL, kilnBaked_ag2_b2, NULL, NULL}"),
            "%s", reg);
  cr_assert(contains(reg, "KILN_COLL_ALLGATHER, 2,"));
  free(reg);
  free(src);
  kilnPlanFree(p);
}

/* An LL128 plan's table names the LL128 protocol, which the kernels run as LL128 (not Simple). */
Test(gen, ll128_plan_names_its_protocol) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLGATHER, 2, KILN_PROTO_LL128, false);
  char* src = plan_source(p, "ag2");
  cr_assert(contains(src, "static constexpr int proto = KILN_DEV_PROTO_LL128;"), "%s", src);
  free(src);
  char* reg = registry_source(p, "ag2", "ag2.xml");
  cr_assert(contains(reg, "KILN_PROTO_LL128"), "%s", reg);
  free(reg);
  kilnPlanFree(p);
}

/* An LL12 plan's registry row names LL12, so that the runtime binds a plan of that shape to the
 * kernel (kilnRegistryBakedFor compares protocols): the row once said Simple, and no LL12 plan
 * ran baked. */
Test(gen, ll12_plan_row_names_its_protocol) {
  kilnPlan* p = classic("oneshot", KILN_COLL_ALLREDUCE, 2, KILN_PROTO_LL12, false);
  char* reg = registry_source(p, "ar2", "ar2.xml");
  cr_assert(contains(reg, "KILN_PROTO_LL12,"), "%s", reg);
  free(reg);
  kilnPlanFree(p);
}

/* Steps are inlined up to 256 steps (all ranks) for LL and LL128 and 96 for Simple; the registry row says
 * which (kilnRegistryEntry.inlined: the runtime runs inlined kernels by default). Ring allreduce
 * on 4 ranks has 28 steps per instance: 112 steps at 4 instances, 280 at 10. */
Test(gen, steps_inlined_by_protocol_and_count) {
  static const struct {
    kilnProto_t proto;
    int instances;
    bool inlined;
  } cases[] = {{KILN_PROTO_LL, 4, true},      {KILN_PROTO_LL, 10, false},   {KILN_PROTO_LL128, 4, true},
               {KILN_PROTO_LL128, 10, false}, {KILN_PROTO_SIMPLE, 3, true}, {KILN_PROTO_SIMPLE, 4, false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
    co.proto = cases[i].proto;
    co.instances = cases[i].instances;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &co, &p), KILN_SUCCESS), "%s",
              kilnLastError());
    char* src = plan_source(p, "r");
    cr_assert(contains(src, cases[i].inlined ? "inlineSteps = true;" : "inlineSteps = false;"), "case %zu",
              i);
    char* reg = registry_source(p, "r", "r.xml");
    cr_assert(contains(reg, cases[i].inlined ? "}, true}," : "}, false},"), "case %zu: %s", i, reg);
    free(reg);
    free(src);
    kilnPlanFree(p);
  }
}

/* A plan of more than 1024 steps gets no kernel (its registry row has no launch function, so the
 * interpreter runs it); 1024 steps still get theirs. Ring allreduce on 4 ranks: 28 steps per
 * instance. */
Test(gen, no_kernel_past_1024_steps) {
  static const struct {
    int instances;
    bool kernel;
  } cases[] = {{36, true}, {37, false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
    co.instances = cases[i].instances;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &co, &p), KILN_SUCCESS), "%s",
              kilnLastError());
    char* src = plan_source(p, "big");
    char* reg = registry_source(p, "big", "big.xml");
    if (cases[i].kernel) {
      cr_expect(contains(src, "KILN_BAKED_KERNEL(big, float, float)"), "case %zu", i);
      cr_expect(contains(reg, "kilnBaked_big_float"), "case %zu", i);
    } else {
      cr_expect(not(contains(src, "KILN_BAKED_KERNEL(")), "case %zu", i);
      cr_expect(contains(src, "No kernel: more than 1024 steps"), "case %zu", i);
      cr_expect(not(contains(reg, "kilnBaked_big_")), "case %zu", i);
      cr_expect(contains(reg, "{NULL, NULL, NULL"), "case %zu: %s", i, reg);
    }
    free(reg);
    free(src);
    kilnPlanFree(p);
  }
}

/* With inlinedOnly (the build's default), plans whose steps are not inlined get no kernel: ring
 * allreduce on 4 ranks, Simple, 3 instances (84 steps) keeps its kernels, 4 (112 steps) gets none
 * and a registry row without launch functions, as without the option past 1024 steps. */
Test(gen, inlined_only) {
  static const struct {
    int instances;
    bool kernel;
  } cases[] = {{3, true}, {4, false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnClassicOptions co = KILN_CLASSIC_OPTIONS_INIT;
    co.instances = cases[i].instances;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &co, &p), KILN_SUCCESS), "%s",
              kilnLastError());
    kilnGenOptions o;
    kilnGenOptionsDefault(&o);
    o.inlinedOnly = true;
    kilnGenUnit u = {p, "r", "r.xml"};
    char *src = NULL, *reg = NULL;
    cr_assert(eq(int, kilnGenPlanSource(&u, &o, &src), KILN_SUCCESS), "%s", kilnLastError());
    cr_assert(eq(int, kilnGenRegistrySource(&u, 1, &o, &reg), KILN_SUCCESS), "%s", kilnLastError());
    cr_expect(eq(int, contains(src, "KILN_BAKED_KERNEL(r, float, float)"), cases[i].kernel), "case %zu", i);
    cr_expect(eq(int, contains(reg, "kilnBaked_r_float"), cases[i].kernel), "case %zu", i);
    if (!cases[i].kernel) {
      cr_expect(contains(src, "No kernel: steps not inlined"), "case %zu", i);
      cr_expect(contains(reg, "{NULL, NULL, NULL"), "case %zu: %s", i, reg);
    }
    free(reg);
    free(src);
    kilnPlanFree(p);
  }
}

/* The same plan twice gives byte-identical source (no dates, no absolute paths). */
Test(gen, deterministic) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_SIMPLE, false);
  char* a = plan_source(p, "r4");
  char* b = plan_source(p, "r4");
  cr_assert(eq(str, a, b));
  cr_assert(not(contains(a, "/tmp")));
  cr_assert(not(contains(a, "plans/baked/")), "only the file's base name is written");
  free(a);
  free(b);
  kilnPlanFree(p);
}

/* kilnGenFiles writes one .cu per plan plus the registry, and the same again on a second run. */
Test(gen, files_written_and_stable) {
  char dir[] = "/tmp/kiln-gen-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char plan1[300], plan2[300], path[400];
  snprintf(plan1, sizeof plan1, "%s/ar-direct.ll4.xml", dir);
  snprintf(plan2, sizeof plan2, "%s/4ag.xml", dir);
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 4, KILN_PROTO_LL, false);
  kilnPlan* q = classic("direct", KILN_COLL_ALLGATHER, 4, KILN_PROTO_LL, false);
  cr_assert(eq(int, kilnPlanWriteFile(p, plan1), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanWriteFile(q, plan2), KILN_SUCCESS));
  const char* paths[] = {plan1, plan2};
  cr_assert(eq(int, kilnGenFiles(dir, paths, 2, NULL), KILN_SUCCESS), "%s", kilnLastError());
  snprintf(path, sizeof path, "%s/plan_ar_direct_ll4.cu", dir);
  char* a = read_all(path);
  snprintf(path, sizeof path, "%s/plan_p_4ag.cu", dir);
  char* b = read_all(path);
  snprintf(path, sizeof path, "%s/baked_registry.c", dir);
  char* r = read_all(path);
  cr_assert(contains(a, "struct plan_ar_direct_ll4 {"));
  cr_assert(contains(b, "struct plan_p_4ag {"));
  cr_assert(contains(r, "static const char xml_ar_direct_ll4[] ="));
  cr_assert(contains(r, "*n = 2;"));
  cr_assert(eq(int, kilnGenFiles(dir, paths, 2, NULL), KILN_SUCCESS), "%s", kilnLastError());
  char* r2 = read_all(path);
  cr_assert(eq(str, r, r2));
  cr_assert(eq(int, count_files(dir), 5));
  free(a);
  free(b);
  free(r);
  free(r2);
  kilnPlanFree(p);
  kilnPlanFree(q);
  rm_tree(dir);
}

/* A plan that fails the verifier is refused with its file and plan name, and nothing is written
 * (not even for the good plan before it). */
Test(gen, broken_plan_refused_by_name) {
  char dir[] = "/tmp/kiln-gen-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char good[300], bad[300];
  snprintf(good, sizeof good, "%s/good.xml", dir);
  snprintf(bad, sizeof bad, "%s/broken.xml", dir);
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 2, KILN_PROTO_SIMPLE, false);
  cr_assert(eq(int, kilnPlanWriteFile(p, good), KILN_SUCCESS));
  snprintf(p->name, sizeof p->name, "lost-receive");
  p->gpus[1].tbs[0].nsteps = 1; /* rank 1 never receives what rank 0 sends */
  cr_assert(eq(int, kilnPlanWriteFile(p, bad), KILN_SUCCESS));
  const char* paths[] = {good, bad};
  cr_assert(eq(int, kilnGenFiles(dir, paths, 2, NULL), KILN_ERR_VERIFY));
  cr_assert(contains(kilnLastError(), "broken.xml"), "%s", kilnLastError());
  cr_assert(contains(kilnLastError(), "lost-receive"), "%s", kilnLastError());
  cr_assert(eq(int, count_files(dir), 2), "no output written");
  p->gpus[1].tbs[0].nsteps = 3;
  kilnPlanFree(p);
  rm_tree(dir);
}

/* An output that cannot be written (the registry's name taken by a folder) fails the whole set:
 * no plan source is left in the folder, and no temporary file. */
Test(gen, failed_write_leaves_nothing) {
  char dir[] = "/tmp/kiln-gen-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char plan[300], reg[300];
  snprintf(plan, sizeof plan, "%s/ag.xml", dir);
  snprintf(reg, sizeof reg, "%s/baked_registry.c", dir);
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 2, KILN_PROTO_SIMPLE, false);
  cr_assert(eq(int, kilnPlanWriteFile(p, plan), KILN_SUCCESS));
  cr_assert(eq(int, mkdir(reg, 0700), 0));
  const char* paths[] = {plan};
  cr_assert(eq(int, kilnGenFiles(dir, paths, 1, NULL), KILN_ERR_IO));
  cr_assert(contains(kilnLastError(), "baked_registry.c"), "%s", kilnLastError());
  cr_assert(eq(int, count_files(dir), 2), "only the plan and the folder: nothing written");
  rmdir(reg);
  kilnPlanFree(p);
  rm_tree(dir);
}

/* A file that is not a plan is refused naming the file; so are two files with one identifier. */
Test(gen, unreadable_and_duplicate_refused) {
  char dir[] = "/tmp/kiln-gen-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char junk[300], a[300], b[300];
  snprintf(junk, sizeof junk, "%s/junk.xml", dir);
  write_text(junk, "<algo name=\"x\"");
  const char* paths[] = {junk};
  cr_assert(not(eq(int, kilnGenFiles(dir, paths, 1, NULL), KILN_SUCCESS)));
  cr_assert(contains(kilnLastError(), "junk.xml"), "%s", kilnLastError());
  snprintf(a, sizeof a, "%s/a-b.xml", dir);
  snprintf(b, sizeof b, "%s/a_b.xml", dir);
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 2, KILN_PROTO_SIMPLE, false);
  cr_assert(eq(int, kilnPlanWriteFile(p, a), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanWriteFile(p, b), KILN_SUCCESS));
  const char* dup[] = {a, b};
  cr_assert(eq(int, kilnGenFiles(dir, dup, 2, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "a_b"), "%s", kilnLastError());
  kilnPlanFree(p);
  rm_tree(dir);
}

Test(gen, identifiers) {
  char id[KILN_GEN_IDENT_MAX];
  cr_assert(eq(int, kilnGenIdent("plans/baked/ar-direct.ll.xml", id), KILN_SUCCESS));
  cr_assert(eq(str, id, "ar_direct_ll"));
  cr_assert(eq(int, kilnGenIdent("4gpu.xml", id), KILN_SUCCESS));
  cr_assert(eq(str, id, "p_4gpu"));
  cr_assert(eq(int, kilnGenIdent("dir/.xml", id), KILN_ERR_INVALID_ARGUMENT));
}

Test(gen, dtype_list) {
  kilnGenOptions o;
  kilnGenOptionsDefault(&o);
  cr_assert(eq(int, kilnGenParseDtypes(&o, "double,int8"), KILN_SUCCESS));
  cr_assert(o.dtypes[KILN_FLOAT64] && o.dtypes[KILN_INT8] && !o.dtypes[KILN_FLOAT32]);
  cr_assert(eq(int, kilnGenParseDtypes(&o, "float,quad"), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "quad"));
}

/* ---- the tables say exactly what the plan says ---- */

typedef struct table_case {
  const char* algo;
  kilnColl_t coll;
  int n, chunks, instances;
  kilnProto_t proto;
  bool inplace;
} table_case;

static const table_case table_cases[] = {
    {"ring", KILN_COLL_ALLREDUCE, 4, 1, 16, KILN_PROTO_SIMPLE, false},
    {"ring", KILN_COLL_ALLREDUCE, 3, 2, 2, KILN_PROTO_LL, true},
    {"ring", KILN_COLL_ALLGATHER, 8, 1, 2, KILN_PROTO_SIMPLE, true},
    {"ring", KILN_COLL_REDUCESCATTER, 5, 3, 1, KILN_PROTO_SIMPLE, false},
    {"direct", KILN_COLL_ALLREDUCE, 4, 1, 4, KILN_PROTO_LL, false},
    {"direct", KILN_COLL_ALLREDUCE, 2, 2, 1, KILN_PROTO_SIMPLE, true},
    {"direct", KILN_COLL_ALLTOALL, 6, 1, 2, KILN_PROTO_SIMPLE, false},
    {"direct", KILN_COLL_REDUCESCATTER, 4, 2, 2, KILN_PROTO_LL, false},
    {"direct", KILN_COLL_ALLGATHER, 3, 1, 1, KILN_PROTO_LL, true},
};
#define N_table (sizeof table_cases / sizeof table_cases[0])

KILN_INDEX_PARAMS(gen, tables_match_plan, N_table)

static int parse_enum(const char* s, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* Reading the generated tbs[] and steps[] rows back gives every threadblock and step of the plan,
 * in order, field for field (hasdep may only be added, for steps that others wait on). */
ParameterizedTest(int* ci, gen, tables_match_plan) {
  const table_case* c = &table_cases[*ci];
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = c->chunks;
  o.instances = c->instances;
  o.proto = c->proto;
  o.inplace = c->inplace;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan(c->algo, c->coll, c->n, &o, &p), KILN_SUCCESS), "%s", kilnLastError());
  char* src = plan_source(p, "t");
  static const char* const stn[] = {"ST_SEND", "ST_RECV", "ST_RCS", "ST_RRS", "ST_RRC",
                                    "ST_RRCS", "ST_CPY",  "ST_RE",  "ST_NOP"};
  static const char* const bn[] = {"BUF_I", "BUF_O", "BUF_S"};
  const char* tb_sec = strstr(src, "static constexpr Tb tbs[] = {");
  const char* st_sec = strstr(src, "static constexpr Step steps[] = {");
  cr_assert(tb_sec && st_sec);
  int row = 0, idx = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++, row++) {
      const kilnThreadblock* tb = &p->gpus[r].tbs[t];
      char pat[32];
      snprintf(pat, sizeof pat, "/* %d */ {", row);
      const char* at = strstr(tb_sec, pat);
      cr_assert(at && at < st_sec, "row %d", row);
      int v[7];
      cr_assert(eq(int,
                   sscanf(at + strlen(pat), "%d, %d, %d, %d, %d, %d, %d", &v[0], &v[1], &v[2], &v[3], &v[4],
                          &v[5], &v[6]),
                   7));
      cr_assert(v[0] == r && v[1] == t && v[2] == tb->send && v[3] == tb->recv && v[4] == tb->chan &&
                    v[5] == idx && v[6] == tb->nsteps,
                "tb row %d", row);
      for (int s = 0; s < tb->nsteps; s++, idx++) {
        const kilnStep* st = &tb->steps[s];
        snprintf(pat, sizeof pat, "/* %d */ {", idx);
        at = strstr(st_sec, pat);
        cr_assert(not(eq(ptr, (void*)at, NULL)), "step row %d", idx);
        char ty[16], sb[8], db[8];
        int so, dof, cnt, dep, deps, hd;
        cr_assert(eq(int,
                     sscanf(at + strlen(pat), "%15[A-Z_], %7[A-Z_], %d, %7[A-Z_], %d, %d, %d, %d, %d", ty, sb,
                            &so, db, &dof, &cnt, &dep, &deps, &hd),
                     9),
                  "step row %d", idx);
        cr_assert(eq(int, parse_enum(ty, stn, 9), (int)st->type), "step row %d", idx);
        cr_assert(eq(int, parse_enum(sb, bn, 3), (int)st->srcbuf));
        cr_assert(eq(int, parse_enum(db, bn, 3), (int)st->dstbuf));
        cr_assert(so == st->srcoff && dof == st->dstoff && cnt == st->cnt, "step row %d", idx);
        cr_assert(eq(int, dep, st->depid >= 0 ? st->depid : -1));
        if (st->depid >= 0) cr_assert(eq(int, deps, st->deps));
        if (st->hasdep) cr_assert(eq(int, hd, 1), "step row %d", idx);
      }
    }
  free(src);
  kilnPlanFree(p);
}

/* The forms a plan serves come from its buffers where they leave only the in-place reading
 * (kilnPlanServes), not from attributes that say otherwise: the shipped one-shot in-place
 * allreduce (no output chunks) read as a file without inplace/outofplace (outofplace then reads
 * as 1) is baked and registered for in-place calls only, as the runtime runs it; it was offered
 * for out-of-place calls it cannot run and never for in-place ones. */
Test(registry, forms_from_the_buffers) {
  kilnPlan* p = NULL;
  cr_assert(
      eq(int,
         kilnPlanReadFile(KILN_SOURCE_DIR "/plans/baked/allreduce-n2-oneshot-ll-chain-inplace-i1.xml", &p),
         KILN_SUCCESS),
      "%s", kilnLastError());
  cr_assert(eq(int, p->gpus[0].o_chunks, 0));
  p->inplace = false;
  p->outofplace = true;
  p->has_inplace = p->has_outofplace = false;
  cr_assert(kilnPlanServes(p, true));
  cr_assert(not(kilnPlanServes(p, false)));
  char* reg = registry_source(p, "ar_inplace", "plans/baked/ar.xml");
  cr_assert(not(eq(ptr, strstr(reg, "true, false, KILN_PROTO_LL"), NULL)), "%s", reg);
  free(reg);
  const kilnRegistryEntry* e = NULL;
  cr_assert(eq(int, kilnRegistryAddPlan(p, &e), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(e->inplace && !e->outofplace);
  kilnRegistryReset();
  /* An alltoall never serves in place; a plan of both buffers serves what it claims. */
  kilnPlan* a = classic("direct", KILN_COLL_ALLTOALL, 2, KILN_PROTO_SIMPLE, false);
  cr_assert(not(kilnPlanServes(a, true)));
  cr_assert(kilnPlanServes(a, false));
  kilnPlan* r = classic("ring", KILN_COLL_ALLREDUCE, 2, KILN_PROTO_SIMPLE, false);
  r->inplace = true;
  r->outofplace = false;
  cr_assert(kilnPlanServes(r, true));
  cr_assert(not(kilnPlanServes(r, false)));
  kilnPlanFree(r);
  kilnPlanFree(a);
  kilnPlanFree(p);
}

/* Generated sources hold whatever a plan's name or file name says without it turning into code:
 * a name closing the header comment ("*" "/"), trigraph-like "??/" and quotes are escaped; a file
 * named like a C++ keyword or one of baked.cuh's names (new, Tb, BUF_I) gets a struct of its own
 * name space (plan_new), which nvcc compiles (written as plain identifiers, they would fail the
 * build). */
Test(gen, names_stay_text) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 2, KILN_PROTO_SIMPLE, false);
  snprintf(p->name, sizeof p->name, "%s", "evil*/ int x = ; /*?\?/\"");
  char* src = plan_source(p, "new");
  cr_assert(contains(src, "struct plan_new {"));
  cr_assert(not(contains(src, "*/ int x")), "%s", src);
  cr_assert(not(contains(src, "?\?/")), "%s", src);
  char* reg = registry_source(p, "new", "plans/baked/a?\?=b*.xml"); /* the file's name is written too */
  cr_assert(contains(reg, "/* a\\?\\?=b*.xml */"), "%s", reg);
  cr_assert(not(contains(reg, "?\?=")), "%s", reg);
  cr_assert(not(contains(reg, "*/ int x")), "%s", reg);
  free(reg);
  free(src);
  kilnPlanFree(p);
}

/* Plans with memory steps bake as tables of their passes (kiln/passes.h): a one-shot LL allreduce
 * of 2 ranks has, per rank, one put pass and one reduction of two operands (the peer's lines in
 * rank order), and a memory-step kernel per baked dtype; the registry loads it. */
Test(gen, memory_step_plans_bake_as_passes) {
  char dir[] = "/tmp/kiln-gen-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char path[300], out[320];
  snprintf(path, sizeof path, "%s/oneshot.xml", dir);
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = KILN_PROTO_LL;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("oneshot", KILN_COLL_ALLREDUCE, 2, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(eq(int, kilnPlanWriteFile(p, path), KILN_SUCCESS));
  const char* paths[] = {path};
  cr_assert(eq(int, kilnGenFiles(dir, paths, 1, NULL), KILN_SUCCESS), "%s", kilnLastError());
  snprintf(out, sizeof out, "%s/plan_oneshot.cu", dir);
  char* src = read_all(out);
  cr_assert(not(eq(ptr, src, NULL)));
  cr_expect(contains(src, "static constexpr int proto = KILN_DEV_PROTO_LL;"), "%s", src);
  cr_expect(contains(src,
                     "static constexpr MemPass passes[] = {\n"
                     "    /* 0 */ {PASS_PUT, KILN_DEV_PROTO_LL, 2, 4, 1, 0, 0, -1, -1, 0, 0x0u}, /* rank 0 "
                     "tb 0, 1 step */\n"
                     "    /* 1 */ {PASS_REDUCE, KILN_DEV_PROTO_LL, 3, 8, 1, 2, 2, -1, -1, 0, 0x2u}, /* rank "
                     "0 tb 0, 2 steps */\n"),
            "%s", src);
  cr_expect(contains(src, "    /* 0 */ {OP_LINES, 1, 0, 0},\n    /* 1 */ {OP_USER, 0, 0, 0},\n"), "%s", src);
  cr_expect(contains(src, "KILN_BAKED_MEM_KERNEL(oneshot, float, float)\n"), "%s", src);
  cr_expect(not(contains(src, "KILN_BAKED_KERNEL(")), "%s", src);
  free(src);
  const kilnRegistryEntry* e = NULL;
  cr_expect(eq(int, kilnRegistryLoadFile(path, &e), KILN_SUCCESS), "%s", kilnLastError());
  kilnRegistryReset();
  kilnPlanFree(p);
  rm_tree(dir);
}
