/* kiln tune's CPU side (solver/tune.h): the candidates it enumerates, the ranges it chooses from a
 * table of times, the folder it writes (whole or not at all, loadable as KILN_PLANS loads it), the
 * command's refusal where there is no GPU, and kiln tune --model, which chooses from the
 * simulator's times without one. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "kiln/plan.h"
#include "kiln/registry.h"
#include "test_files.h"
#include "test_util.h"
#include "tune.h"

/* ---- candidates ---- */

static int g_notes, g_unsupported;
static void count_note(const char* name, kilnResult_t r, const char* why, void* user) {
  (void)name;
  (void)why;
  (void)user;
  g_notes++;
  if (r == KILN_ERR_UNSUPPORTED) g_unsupported++;
}

/* Ring and direct in Simple and LL at 1 and 4 instances: 8 candidates, each verified, runnable by
 * the runtime, of the collective and rank count asked, named apart. */
Test(tune, classic_candidates) {
  kilnTuneSpace sp = KILN_TUNE_SPACE_INIT;
  sp.forms = 1u << KILN_TUNE_FORM_RING | 1u << KILN_TUNE_FORM_DIRECT;
  sp.protos = 1u << KILN_PROTO_SIMPLE | 1u << KILN_PROTO_LL;
  sp.ninstances = 2;
  sp.instances[0] = 1;
  sp.instances[1] = 4;
  kilnTuneSet set = {0};
  int added = -1;
  g_notes = 0;
  cr_assert(
      eq(int, kilnTuneClassic(&set, KILN_COLL_ALLREDUCE, 4, &sp, count_note, NULL, &added), KILN_SUCCESS));
  cr_expect(eq(int, added, 8));
  cr_expect(eq(int, set.n, 8));
  cr_expect(eq(int, g_notes, 0));
  const kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  for (int i = 0; i < set.n; i++) {
    const kilnPlan* p = set.c[i].plan;
    cr_expect(eq(int, p->coll, KILN_COLL_ALLREDUCE));
    cr_expect(eq(int, p->ngpus, 4));
    cr_expect(eq(str, set.c[i].source, "classic", false));
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s: %s", p->name, kilnLastError());
    cr_expect(eq(int, kilnPlanCheckRuntime(p), KILN_SUCCESS), "%s", p->name);
    for (int j = 0; j < i; j++) cr_expect(strcmp(p->name, set.c[j].plan->name) != 0, "%s twice", p->name);
  }
  kilnTuneSetFree(&set);
}

/* The whole default space: what kilnClassicPlan does not make (LL12 through FIFOs, forms without
 * the collective) and what the runtime does not run is left out, reported as unsupported; every
 * candidate kept passes the runtime's check. */
Test(tune, default_space_leaves_out_what_does_not_apply) {
  const kilnTuneSpace sp = KILN_TUNE_SPACE_INIT;
  for (int c = 0; c < KILN_NUM_COLLS; c++) {
    if (c == KILN_COLL_CUSTOM) continue;
    kilnTuneSet set = {0};
    int added = 0;
    g_notes = g_unsupported = 0;
    cr_assert(eq(int, kilnTuneClassic(&set, (kilnColl_t)c, 2, &sp, count_note, NULL, &added), KILN_SUCCESS));
    cr_expect(gt(int, added, 0), "%s", kilnCollName((kilnColl_t)c));
    cr_expect(eq(int, added + g_notes, KILN_TUNE_NUM_FORMS * KILN_NUM_PROTOS * 6), "%s",
              kilnCollName((kilnColl_t)c));
    cr_expect(eq(int, g_unsupported, g_notes), "%s: a plan left out for another reason than unsupported",
              kilnCollName((kilnColl_t)c));
    for (int i = 0; i < set.n; i++) {
      cr_expect(eq(int, kilnPlanCheckRuntime(set.c[i].plan), KILN_SUCCESS), "%s", set.c[i].plan->name);
      cr_expect(set.c[i].plan->proto != KILN_PROTO_LL12 || kilnPlanHasMemorySteps(set.c[i].plan), "%s",
                set.c[i].plan->name);
    }
    kilnTuneSetFree(&set);
  }
}

/* Rank 0's receives land on output chunk 0: rank 1's data goes nowhere (a plan the verifier
 * refuses). */
static void misroute_receives(kilnPlan* p) {
  for (int t = 0; t < p->gpus[0].ntbs; t++)
    for (int s = 0; s < p->gpus[0].tbs[t].nsteps; s++)
      if (p->gpus[0].tbs[t].steps[s].type == KILN_STEP_RECV ||
          p->gpus[0].tbs[t].steps[s].type == KILN_STEP_RECV_COPY_SEND)
        p->gpus[0].tbs[t].steps[s].dstoff = 0;
}

/* kilnTuneAdd refuses a second plan of one name and a plan that fails the verifier, and frees both. */
Test(tune, add_refuses_duplicates_and_wrong_plans) {
  kilnTuneSet set = {0};
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan *a = NULL, *b = NULL, *bad = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &a), KILN_SUCCESS));
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &b), KILN_SUCCESS));
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &bad), KILN_SUCCESS));
  cr_expect(eq(int, kilnTuneAdd(&set, a, "classic", false), KILN_SUCCESS));
  cr_expect(eq(int, kilnTuneAdd(&set, b, "classic", false), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "already"), "%s", kilnLastError());
  snprintf(bad->name, sizeof bad->name, "broken");
  misroute_receives(bad);
  cr_expect(eq(int, kilnTuneAdd(&set, bad, "classic", false), KILN_ERR_VERIFY));
  cr_expect(eq(int, set.n, 1));
  kilnTuneSetFree(&set);
}

/* kilnTuneAdd takes a plan its caller verified as it is: the verifier does not run again. */
Test(tune, add_takes_a_verified_plan_as_it_is) {
  kilnTuneSet set = {0};
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_SUCCESS));
  /* a plan the verifier refuses (rank 0's receives land on output chunk 0) stands for one that
   * the caller's verification passed */
  misroute_receives(p);
  cr_expect(eq(int, kilnTuneAdd(&set, p, "synth", true), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(int, set.n, 1));
  kilnTuneSetFree(&set);
}

Test(tune, sizes) {
  uint64_t s[64];
  int n = 0;
  cr_assert(kilnTuneSizes(16, (uint64_t)1 << 30, 4, s, 64, &n));
  cr_expect(eq(int, n, 14));
  cr_expect(eq(u64, s[0], 16));
  cr_expect(eq(u64, s[13], (uint64_t)1 << 30));
  cr_assert(kilnTuneSizes(16, 100, 4, s, 64, &n));
  cr_expect(eq(int, n, 3));
  cr_expect(eq(u64, s[2], 100));
  cr_expect(not(kilnTuneSizes(16, 1 << 20, 2, s, 4, &n)));
  cr_expect(not(kilnTuneSizes(0, 100, 4, s, 64, &n)));
  cr_expect(not(kilnTuneSizes(200, 100, 4, s, 64, &n)));
}

/* ---- ranges ---- */

static const uint64_t kSizes[4] = {16, 64, 256, 1024};

/* Candidate 0 is fastest at the small sizes, 1 at the large ones, NCCL slower everywhere: two
 * ranges, split at the geometric mean of 64 and 256; the first from 0, the last to 1024. */
Test(tune, choose_crossing_candidates) {
  const double us[2 * 4] = {2, 3, 9, 30, /* candidate 0 */ 5, 6, 7, 10};
  const double nccl[4] = {8, 8, 12, 40};
  kilnTuneRange r[4];
  int n = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, us, 2, nccl, 0.03, r, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 2));
  cr_expect(eq(int, r[0].cand, 0));
  cr_expect(eq(u64, r[0].min_bytes, 0));
  cr_expect(eq(u64, r[0].max_bytes, 128));
  cr_expect(eq(int, r[1].cand, 1));
  cr_expect(eq(u64, r[1].min_bytes, 129));
  cr_expect(eq(u64, r[1].max_bytes, 1024));
  cr_expect(eq(int, r[1].first, 2));
  cr_expect(eq(int, r[1].last, 3));
}

/* Where NCCL is no slower than the fastest candidate, NCCL serves (cand -1): equal counts as NCCL's. */
Test(tune, choose_leaves_nccl_its_sizes) {
  const double us[1 * 4] = {2, 9, 8, 3};
  const double nccl[4] = {4, 5, 8, 4};
  kilnTuneRange r[4];
  int n = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, us, 1, nccl, 0.03, r, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 3));
  cr_expect(eq(int, r[0].cand, 0));
  cr_expect(eq(int, r[1].cand, -1));
  cr_expect(eq(int, r[1].first, 1));
  cr_expect(eq(int, r[1].last, 2));
  cr_expect(eq(u64, r[1].min_bytes, 33));
  cr_expect(eq(u64, r[1].max_bytes, 512));
  cr_expect(eq(int, r[2].cand, 0));
  cr_expect(eq(u64, r[2].min_bytes, 513));
}

/* The candidate chosen below stays while within the tolerance of the fastest. */
Test(tune, choose_keeps_the_plan_within_tolerance) {
  const double us[2 * 4] = {2, 3, 5.1, 9, /* candidate 1 */ 3, 4, 5, 6};
  kilnTuneRange r[4];
  int n = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, us, 2, NULL, 0.03, r, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 2));
  cr_expect(eq(int, r[0].last, 2)); /* 5.1 is within 3% of 5 */
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, us, 2, NULL, 0.01, r, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 2));
  cr_expect(eq(int, r[0].last, 1)); /* not within 1% */
}

/* A candidate with a wrong result at one size is chosen at none, however fast. */
Test(tune, choose_never_takes_a_wrong_candidate) {
  const double us[2 * 4] = {1, 1, KILN_TUNE_WRONG, 1, /* candidate 1 */ 3, 4, 5, 6};
  const double nccl[4] = {9, 9, 9, 9};
  kilnTuneRange r[4];
  int n = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, us, 2, nccl, 0.03, r, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 1));
  cr_expect(eq(int, r[0].cand, 1));
}

/* Sizes no candidate ran at go to NCCL; with no NCCL times (a rehearsal) the fastest candidate serves. */
Test(tune, choose_without_runs_or_nccl) {
  const double none[1 * 4] = {KILN_TUNE_NOT_RUN, KILN_TUNE_FAILED, 2, KILN_TUNE_NOT_RUN};
  kilnTuneRange r[4];
  int n = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, none, 1, NULL, 0.03, r, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 3));
  cr_expect(eq(int, r[0].cand, -1));
  cr_expect(eq(int, r[1].cand, 0));
  cr_expect(eq(int, r[1].first, 2));
  cr_expect(eq(int, r[1].last, 2));
  cr_expect(eq(int, r[2].cand, -1));
  cr_expect(eq(u64, r[2].max_bytes, 1024));
}

Test(tune, choose_refuses_unordered_sizes) {
  const uint64_t sizes[3] = {16, 64, 64};
  const double us[3] = {1, 1, 1};
  kilnTuneRange r[3];
  int n = 0;
  cr_expect(eq(int, kilnTuneChoose(sizes, 3, us, 1, NULL, 0.03, r, &n), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(eq(int, kilnTuneChoose(kSizes, 3, us, 1, NULL, -1, r, &n), KILN_ERR_INVALID_ARGUMENT));
}

/* ---- the folder ---- */

/* Two allgather candidates on 2 ranks (ring Simple and direct LL), timed at 4 sizes: direct LL
 * serves the small ones, NCCL 256, ring the largest. */
typedef struct fixture {
  kilnTuneSet set;
  double us[2 * 4];
  double nccl[4];
  kilnTuneRange ranges[4];
  kilnTuneResult res;
  kilnTuneMachine m;
} fixture;

static void make_fixture(fixture* f) {
  memset(f, 0, sizeof *f);
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan *ring = NULL, *direct = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 2, &o, &ring), KILN_SUCCESS));
  o.proto = KILN_PROTO_LL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLGATHER, 2, &o, &direct), KILN_SUCCESS));
  cr_assert(eq(int, kilnTuneAdd(&f->set, ring, "classic", false), KILN_SUCCESS));
  cr_assert(eq(int, kilnTuneAdd(&f->set, direct, "classic", false), KILN_SUCCESS));
  const double us[8] = {9, 9, 9, 3, /* direct LL */ 2, 2, 9, 9};
  const double nccl[4] = {5, 5, 5, 5};
  memcpy(f->us, us, sizeof us);
  memcpy(f->nccl, nccl, sizeof nccl);
  int n = 0;
  cr_assert(eq(int, kilnTuneChoose(kSizes, 4, f->us, 2, f->nccl, 0.03, f->ranges, &n), KILN_SUCCESS));
  cr_assert(eq(int, n, 3));
  f->res = (kilnTuneResult){KILN_COLL_ALLGATHER, &f->set, 4, kSizes, f->us, f->nccl, n, f->ranges};
  snprintf(f->m.gpu, sizeof f->m.gpu, "Test GPU");
  snprintf(f->m.driver, sizeof f->m.driver, "1.2.3");
  snprintf(f->m.nccl, sizeof f->m.nccl, "2.28.9");
  f->m.ngpus = 1;
  f->m.nranks = 2;
  f->m.rehearsal = true;
}

static bool exists(const char* path) { return access(path, F_OK) == 0; }

static int entries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static char* slurp(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* The folder holds a plan per range a candidate serves (with its byte range), tune.csv and README
 * (the machine, the rehearsal); the registry loads it as KILN_PLANS does, and selects each plan in
 * its own range and none where NCCL serves. Nothing is left beside it. */
Test(tune, writes_a_folder_the_registry_loads) {
  fixture f;
  make_fixture(&f);
  char tmp[64], dir[128];
  make_tmpdir(tmp, sizeof tmp);
  snprintf(dir, sizeof dir, "%s/plans", tmp);
  cr_assert(eq(int, kilnTuneWriteDir(dir, &f.m, &f.res, 1, "kiln tune --test"), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(eq(int, entries(tmp), 1), "something left beside the folder");
  cr_expect(eq(int, entries(dir), 4)); /* two plans, tune.csv, README */
  char path[256];
  snprintf(path, sizeof path, "%s/README", dir);
  const char* readme = slurp(path);
  cr_assert(readme != NULL);
  cr_expect(contains(readme, "Test GPU") && contains(readme, "2.28.9") && contains(readme, "rehearsal: yes"),
            "%s", readme);
  cr_expect(contains(readme, "kiln tune --test"), "%s", readme);
  snprintf(path, sizeof path, "%s/tune.csv", dir);
  const char* csv = slurp(path);
  cr_assert(csv != NULL);
  cr_expect(contains(csv, "coll,ranks,bytes,candidate,source,us,nccl_us,status,kept,timed_by\n"), "%s", csv);
  cr_expect(contains(csv, "allgather,2,16,direct-allgather-n2-c1-i1-LL,classic,2.00,5.00,ok,1,gpu\n"), "%s",
            csv);
  cr_expect(contains(csv, "allgather,2,256,direct-allgather-n2-c1-i1-LL,classic,9.00,5.00,ok,0,gpu\n"), "%s",
            csv);
  cr_expect(not(contains(readme, "model")), "%s", readme);

  kilnRegistryReset();
  cr_assert(eq(int, kilnRegistryLoadPath(dir), KILN_SUCCESS), "%s", kilnLastError());
  const kilnRegistryEntry* e = kilnRegistrySelect(KILN_COLL_ALLGATHER, 2, 64, false, KILN_FLOAT32, KILN_SUM);
  cr_assert(not(eq(ptr, (void*)e, NULL)));
  cr_expect(eq(str, (char*)e->name, "direct-allgather-n2-c1-i1-LL-r0"));
  cr_expect(eq(u64, e->minBytes, 0));
  cr_expect(eq(u64, e->maxBytes, 128));
  const kilnRegistryEntry* mid =
      kilnRegistrySelect(KILN_COLL_ALLGATHER, 2, 256, false, KILN_FLOAT32, KILN_SUM);
  cr_expect(mid == NULL || !kilnRegistryIsLoaded(mid), "a loaded plan where NCCL is faster");
  e = kilnRegistrySelect(KILN_COLL_ALLGATHER, 2, 1024, false, KILN_FLOAT32, KILN_SUM);
  cr_assert(not(eq(ptr, (void*)e, NULL)));
  cr_expect(eq(str, (char*)e->name, "ring-allgather-n2-c1-i1-r2"));
  cr_expect(eq(u64, e->minBytes, 513));
  cr_expect(eq(u64, e->maxBytes, 1024));
  e = kilnRegistrySelect(KILN_COLL_ALLGATHER, 2, 4096, false, KILN_FLOAT32, KILN_SUM);
  cr_expect(e == NULL || !kilnRegistryIsLoaded(e), "a loaded plan above the sizes measured");
  kilnRegistryReset();
  kilnTuneSetFree(&f.set);
  rm_tree(tmp);
}

/* Each plan of the folder is input to kiln bake, which keeps its range. */
Test(tune, folder_plans_bake_with_their_ranges) {
  fixture f;
  make_fixture(&f);
  char tmp[64], dir[128], baked[128], out[8192];
  make_tmpdir(tmp, sizeof tmp);
  snprintf(dir, sizeof dir, "%s/plans", tmp);
  snprintf(baked, sizeof baked, "%s/baked", tmp);
  cr_assert(eq(int, mkdir(baked, 0755), 0));
  cr_assert(eq(int, kilnTuneWriteDir(dir, &f.m, &f.res, 1, NULL), KILN_SUCCESS), "%s", kilnLastError());
  if (expect_kiln(out, sizeof out, 0, NULL, "bake -d %s %s/ring-allgather-n2-c1-i1-r2.xml", baked, dir) < 0)
    cr_skip_test("the kiln CLI is not built");
  expect_kiln(out, sizeof out, 0, "ring-allgather-n2-c1-i1-r2.xml", "bake --list -d %s", baked);
  cr_expect(contains(out, "513") && contains(out, "1024"), "%s", out);
  kilnTuneSetFree(&f.set);
  rm_tree(tmp);
}

/* A folder kiln tune wrote is replaced whole; any other folder with files is refused and kept. */
Test(tune, replaces_only_its_own_folders) {
  fixture f;
  make_fixture(&f);
  char tmp[64], dir[128], path[256];
  make_tmpdir(tmp, sizeof tmp);
  snprintf(dir, sizeof dir, "%s/plans", tmp);
  cr_assert(eq(int, mkdir(dir, 0755), 0));
  snprintf(path, sizeof path, "%s/mine.txt", dir);
  write_text(path, "user data\n");
  cr_expect(eq(int, kilnTuneCheckDir(dir), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(eq(int, kilnTuneWriteDir(dir, &f.m, &f.res, 1, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "did not write"), "%s", kilnLastError());
  cr_expect(exists(path));
  cr_expect(eq(int, entries(tmp), 1));
  /* a folder of kiln tune's: tune.csv beside the user's file marks it, and it is replaced whole */
  snprintf(path, sizeof path, "%s/tune.csv", dir);
  write_text(path, "");
  cr_expect(eq(int, kilnTuneWriteDir(dir, &f.m, &f.res, 1, NULL), KILN_SUCCESS), "%s", kilnLastError());
  snprintf(path, sizeof path, "%s/mine.txt", dir);
  cr_expect(not(exists(path)));
  cr_expect(eq(int, entries(dir), 4));
  cr_expect(eq(int, entries(tmp), 1), "the old folder left beside the new one");
  kilnTuneSetFree(&f.set);
  rm_tree(tmp);
}

/* A write that fails part way (a range naming a candidate that is not there) leaves nothing: no
 * folder, no temporary one; and a folder whose parent does not exist is refused. */
Test(tune, a_failed_write_leaves_nothing) {
  fixture f;
  make_fixture(&f);
  char tmp[64], dir[128];
  make_tmpdir(tmp, sizeof tmp);
  snprintf(dir, sizeof dir, "%s/plans", tmp);
  f.ranges[f.res.nranges - 1].cand = 7;
  cr_expect(eq(int, kilnTuneWriteDir(dir, &f.m, &f.res, 1, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(eq(int, entries(tmp), 0), "a failed write left something");
  snprintf(dir, sizeof dir, "%s/no/plans", tmp);
  f.ranges[f.res.nranges - 1].cand = 0;
  cr_expect(eq(int, kilnTuneWriteDir(dir, &f.m, &f.res, 1, NULL), KILN_ERR_IO));
  cr_expect(contains(kilnLastError(), "does not exist"), "%s", kilnLastError());
  cr_expect(eq(int, entries(tmp), 0));
  kilnTuneSetFree(&f.set);
  rm_tree(tmp);
}

/* ---- the command ---- */

/* With no GPU visible (CUDA_VISIBLE_DEVICES empty: no GPU even on a GPU machine; or a build without
 * CUDA) kiln tune refuses with exit 1 and writes nothing, with --ranks or without. */
/* The driver's version as /proc/driver/nvidia/version writes it (open and proprietary modules),
 * not the word after "Kernel Module"; none where the line has no version. */
Test(tune, driver_version_from_the_proc_line) {
  char v[32];
  cr_assert(
      kilnTuneDriverVersion("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release "
                            "Build  (dvs-builder@U16-I3-B07-1-1)  Thu Sep 25 2025\n",
                            v, sizeof v));
  cr_expect(eq(str, v, "580.95.05"));
  cr_assert(kilnTuneDriverVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 2024\n", v, sizeof v));
  cr_expect(eq(str, v, "550.54.15"));
  cr_assert(kilnTuneDriverVersion("Kernel Module 1234567890123", v, 6));
  cr_expect(eq(str, v, "12345"));
  cr_expect(not(kilnTuneDriverVersion("NVRM version: NVIDIA UNIX Kernel Module for x86_64\n", v, sizeof v)));
  cr_expect(eq(str, v, ""));
  cr_expect(not(kilnTuneDriverVersion(NULL, v, sizeof v)));
}

Test(tune_cli, refuses_without_a_gpu) {
  char out[8192], tmp[64];
  make_tmpdir(tmp, sizeof tmp);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  const int rc = expect_kiln(out, sizeof out, 1, "kiln tune: no CUDA device: ",
                             "tune --ranks 2 --colls allreduce --max-bytes 1K --out %s/plans", tmp);
  if (rc < 0) cr_skip_test("the kiln CLI is not built");
  expect_kiln(out, sizeof out, 1, "kiln tune: no CUDA device: ", "tune --out %s/plans", tmp);
  cr_expect(eq(int, entries(tmp), 0));
  rm_tree(tmp);
}

/* --list needs no GPU: it prints the verified candidates, synthesized and classic. */
Test(tune_cli, lists_candidates) {
  char out[1 << 16];
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  if (expect_kiln(out, sizeof out, 0,
                  "allreduce: ", "tune --list --ranks 2 --colls allreduce --instances 1,4") < 0)
    cr_skip_test("the kiln CLI is not built");
  cr_expect(contains(out, "synth   kiln-switch2-allreduce\n"), "%s", out);
  cr_expect(contains(out, "classic ring-allreduce-n2-c1-i4-LL\n"), "%s", out);
  expect_kiln(out, sizeof out, 2, "--list without a GPU needs --ranks", "tune --list");
}

Test(tune_cli, refuses_bad_arguments) {
  char out[8192];
  if (expect_kiln(out, sizeof out, 2, "--out DIR is required", "tune --ranks 2") < 0)
    cr_skip_test("the kiln CLI is not built");
  expect_kiln(out, sizeof out, 2, "bad --ranks", "tune --ranks 1 --out /tmp/x");
  expect_kiln(out, sizeof out, 2, "bad --colls", "tune --colls allreduce,custom --out /tmp/x");
  expect_kiln(out, sizeof out, 2, "bad --forms", "tune --forms zerocopy --out /tmp/x");
  expect_kiln(out, sizeof out, 2, "above --max-bytes", "tune --min-bytes 2K --max-bytes 1K --out /tmp/x");
  expect_kiln(out, sizeof out, 2, "no in-place alltoall", "tune --inplace --colls alltoall --out /tmp/x");
  expect_kiln(out, sizeof out, 2, "does not exist", "tune --ranks 2 --out /nonexistent-kiln/plans");
}

/* ---- kiln tune --model ---- */

/* The model's times of kiln classic's allreduce ring on switch4 are kilnPlanSimulate's, NCCL's the
 * faster of the simulated ring and tree; a size below a float per rank is predicted for nothing;
 * a topology of another rank count is refused. */
Test(tune_model, times_are_the_simulators) {
  kilnTuneSpace sp = KILN_TUNE_SPACE_INIT;
  sp.forms = 1u << KILN_TUNE_FORM_RING;
  sp.protos = 1u << KILN_PROTO_SIMPLE;
  sp.ninstances = 1;
  sp.instances[0] = 1;
  kilnTuneSet set = {0};
  cr_assert(eq(int, kilnTuneClassic(&set, KILN_COLL_ALLGATHER, 4, &sp, NULL, NULL, NULL), KILN_SUCCESS));
  cr_assert(eq(int, set.n, 1));
  kilnTopology *t = NULL, *t8 = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch4", 1, &t), KILN_SUCCESS));
  const uint64_t sizes[3] = {8, 4096, 1 << 20}; /* allgather of 8 bytes on 4 ranks: no float per rank */
  double us[3], nccl[3];
  cr_assert(eq(int, kilnTuneModel(t, KILN_COLL_ALLGATHER, 4, 0, &set, sizes, 3, NULL, NULL, us, nccl),
               KILN_SUCCESS),
            "%s", kilnLastError());
  cr_expect(eq(dbl, us[0], KILN_TUNE_NOT_RUN));
  cr_expect(eq(dbl, nccl[0], KILN_TUNE_NOT_RUN));
  for (int k = 1; k < 3; k++) {
    kilnSimResult r, ring;
    cr_assert(eq(int, kilnPlanSimulate(set.c[0].plan, t, sizes[k], &r), KILN_SUCCESS));
    cr_expect(eq(dbl, us[k], r.time_us));
    cr_assert(eq(int,
                 kilnBaselineSimulateWith(KILN_BASELINE_RING, KILN_COLL_ALLGATHER, t, sizes[k], NULL, &ring),
                 KILN_SUCCESS));
    cr_expect(eq(dbl, nccl[k], ring.time_us));
  }
  cr_assert(eq(int, kilnTopologyBuiltin("switch8", 1, &t8), KILN_SUCCESS));
  cr_expect(eq(int, kilnTuneModel(t8, KILN_COLL_ALLGATHER, 4, 0, &set, sizes, 3, NULL, NULL, us, nccl),
               KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "has 8 GPUs"), "%s", kilnLastError());
  kilnTuneSetFree(&set);
  kilnTopologyFree(t);
  kilnTopologyFree(t8);
}

/* As the runtime runs them: an LL128 plan of send and receive steps is predicted as its Simple twin
 * (the runtime runs it in Simple unless KILN_LL128=1), and a plan of more threadblocks on a rank than
 * the SMs given is predicted at no size and reported as unsupported. */
static int g_model_notes;
static void count_model_note(const char* name, kilnResult_t r, const char* why, void* user) {
  (void)name;
  (void)why;
  (void)user;
  cr_expect(eq(int, r, KILN_ERR_UNSUPPORTED));
  g_model_notes++;
}

Test(tune_model, predicts_plans_as_the_runtime_runs_them) {
  kilnTuneSpace sp = KILN_TUNE_SPACE_INIT;
  sp.forms = 1u << KILN_TUNE_FORM_RING;
  sp.protos = 1u << KILN_PROTO_SIMPLE | 1u << KILN_PROTO_LL128;
  sp.ninstances = 1;
  sp.instances[0] = 2;
  kilnTuneSet set = {0};
  cr_assert(eq(int, kilnTuneClassic(&set, KILN_COLL_ALLREDUCE, 4, &sp, NULL, NULL, NULL), KILN_SUCCESS));
  cr_assert(eq(int, set.n, 2));
  cr_assert(eq(int, set.c[0].plan->proto, KILN_PROTO_SIMPLE));
  cr_assert(eq(int, set.c[1].plan->proto, KILN_PROTO_LL128));
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch4", 1, &t), KILN_SUCCESS));
  const uint64_t sizes[2] = {4096, 64 << 20};
  double us[4], nccl[2];
  g_model_notes = 0;
  cr_assert(
      eq(int, kilnTuneModel(t, KILN_COLL_ALLREDUCE, 4, 0, &set, sizes, 2, count_model_note, NULL, us, nccl),
         KILN_SUCCESS),
      "%s", kilnLastError());
  cr_expect(eq(int, g_model_notes, 0));
  for (int k = 0; k < 2; k++) {
    cr_expect(gt(dbl, us[k], 0.0));
    cr_expect(eq(dbl, us[2 + k], us[k]), "LL128 through FIFOs at %llu: %f, Simple %f",
              (unsigned long long)sizes[k], us[2 + k], us[k]);
  }
  int most = 0;
  for (int r = 0; r < 4; r++)
    if (set.c[0].plan->gpus[r].ntbs > most) most = set.c[0].plan->gpus[r].ntbs;
  cr_assert(gt(int, most, 1));
  cr_assert(
      eq(int,
         kilnTuneModel(t, KILN_COLL_ALLREDUCE, 4, most - 1, &set, sizes, 2, count_model_note, NULL, us, nccl),
         KILN_SUCCESS));
  cr_expect(eq(int, g_model_notes, 2));
  for (int i = 0; i < 4; i++) cr_expect(eq(dbl, us[i], KILN_TUNE_NOT_RUN));
  cr_expect(gt(dbl, nccl[0], 0.0));
  kilnTuneSetFree(&set);
  kilnTopologyFree(t);
}

/* The ranges README lists for coll, in order: min, max and the plan's name ("NCCL" where NCCL
 * serves). */
typedef struct readme_range {
  unsigned long long min, max;
  char name[128];
} readme_range;

static int readme_ranges(const char* readme, const char* coll, readme_range* out, int cap) {
  char head[64];
  snprintf(head, sizeof head, "\n%s:\n", coll);
  const char* at = strstr(readme, head);
  if (!at) return 0;
  at += strlen(head);
  int n = 0;
  while (n < cap && sscanf(at, " %llu .. %llu %127s", &out[n].min, &out[n].max, out[n].name) == 3) {
    n++;
    at = strchr(at, '\n');
    if (!at) break;
    at++;
  }
  return n;
}

static const char* const kModelColls[] = {"allreduce", "allgather", "reducescatter", "alltoall"};

/* kiln tune --model on switch2, switch4 and switch8, all four collectives from 16 B to 16 MiB: every
 * collective's ranges cover 0 to 16 MiB without a gap or overlap; the folder loads through the
 * registry, which selects each range's plan across its range (its first, middle and last byte) and
 * none of the folder's where NCCL serves; every plan passes kilnPlanVerify; README and tune.csv say
 * the choice is the model's. On switch8 a 1 KiB allreduce gets a one-flight plan of memory steps. */
static const int kModelRanks[] = {2, 4, 8};
KILN_INDEX_PARAMS(tune_model, folder_covers_and_loads, 3)
ParameterizedTest(int* idx, tune_model, folder_covers_and_loads, .timeout = 300) {
  const int n = kModelRanks[*idx];
  const unsigned long long maxB = 16ull << 20;
  char out[1 << 16], tmp[64], dir[128], path[256];
  make_tmpdir(tmp, sizeof tmp);
  snprintf(dir, sizeof dir, "%s/model", tmp);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  if (expect_kiln(out, sizeof out, 0, "from the model", "tune --model --ranks %d --max-bytes 16M --out %s", n,
                  dir) < 0)
    cr_skip_test("the kiln CLI is not built");
  snprintf(path, sizeof path, "%s/README", dir);
  const char* text = slurp(path);
  char* readme = strdup(text ? text : "");
  cr_expect(contains(readme, "kiln tune --model chose") && contains(readme, "nothing was\nmeasured") &&
                contains(readme, "built-in table fitted to H200s (KILN_SIM_PARAMS_INIT") &&
                contains(readme, "KILN_SIM_PARAMS_NCCL") && contains(readme, "replaces this folder"),
            "%s", readme);
  snprintf(path, sizeof path, "%s/tune.csv", dir);
  const char* csv = slurp(path);
  cr_expect(contains(csv, ",predicted,1,model:h200-fit\n") && !contains(csv, ",ok,"), "%s", csv);

  kilnRegistryReset();
  cr_assert(eq(int, kilnRegistryLoadPath(dir), KILN_SUCCESS), "%s", kilnLastError());
  int plans = 0;
  for (size_t c = 0; c < sizeof kModelColls / sizeof kModelColls[0]; c++) {
    kilnColl_t coll;
    cr_assert(kilnCollParse(kModelColls[c], &coll));
    readme_range rg[64];
    const int nr = readme_ranges(readme, kModelColls[c], rg, 64);
    cr_assert(gt(int, nr, 0), "%s: no ranges in README", kModelColls[c]);
    cr_expect(eq(u64, rg[0].min, 0), "%s", kModelColls[c]);
    cr_expect(eq(u64, rg[nr - 1].max, maxB), "%s", kModelColls[c]);
    for (int i = 0; i < nr; i++) {
      if (i > 0)
        cr_expect(eq(u64, rg[i].min, rg[i - 1].max + 1), "%s range %d: a gap or overlap", kModelColls[c], i);
      cr_expect(le(u64, rg[i].min, rg[i].max), "%s range %d", kModelColls[c], i);
      const bool nccl = !strcmp(rg[i].name, "NCCL");
      const unsigned long long probe[3] = {rg[i].min ? rg[i].min : 1, rg[i].min + (rg[i].max - rg[i].min) / 2,
                                           rg[i].max};
      for (int j = 0; j < 3; j++) {
        const kilnRegistryEntry* e = kilnRegistrySelect(coll, n, probe[j], false, KILN_FLOAT32, KILN_SUM);
        if (nccl) {
          cr_expect(e == NULL || !kilnRegistryIsLoaded(e), "%s %llu: a loaded plan where NCCL serves",
                    kModelColls[c], probe[j]);
          continue;
        }
        cr_assert(e != NULL && kilnRegistryIsLoaded(e), "%s %llu: no loaded plan", kModelColls[c], probe[j]);
        cr_expect(eq(str, (char*)e->name, rg[i].name), "%s %llu", kModelColls[c], probe[j]);
        cr_expect(eq(u64, e->minBytes, rg[i].min));
        cr_expect(eq(u64, e->maxBytes, rg[i].max));
      }
      if (nccl) continue;
      plans++;
      const kilnRegistryEntry* e = kilnRegistryFind(rg[i].name);
      cr_assert(e != NULL, "%s", rg[i].name);
      const kilnPlan* p = NULL;
      cr_assert(eq(int, kilnRegistryPlan(e, &p), KILN_SUCCESS), "%s", kilnLastError());
      const kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
      cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s: %s", p->name, kilnLastError());
    }
    const kilnRegistryEntry* above = kilnRegistrySelect(coll, n, maxB + 1, false, KILN_FLOAT32, KILN_SUM);
    cr_expect(above == NULL || !kilnRegistryIsLoaded(above), "%s: a loaded plan above the sizes",
              kModelColls[c]);
  }
  cr_expect(eq(int, entries(dir), plans + 2), "a plan per range, README and tune.csv");
  if (n == 8) {
    const kilnRegistryEntry* e =
        kilnRegistrySelect(KILN_COLL_ALLREDUCE, 8, 1024, false, KILN_FLOAT32, KILN_SUM);
    cr_assert(e != NULL && kilnRegistryIsLoaded(e), "allreduce 1 KiB: NCCL kept");
    const kilnPlan* p = NULL;
    cr_assert(eq(int, kilnRegistryPlan(e, &p), KILN_SUCCESS), "%s", kilnLastError());
    cr_expect(kilnPlanHasMemorySteps(p) && contains(p->name, "-oneflight"), "%s", p->name);
  }
  kilnRegistryReset();
  free(readme);
  rm_tree(tmp);
}

/* With a topology of measured costs (<costs>, as kiln profile writes them) the model takes them
 * and README and tune.csv name them; without --ranks the topology's rank count is the tune's. */
Test(tune_model, takes_the_topologys_costs) {
  char out[1 << 16], tmp[64], topo[128], dir[128], path[256];
  make_tmpdir(tmp, sizeof tmp);
  snprintf(topo, sizeof topo, "%s/local.xml", tmp);
  write_text(topo,
             "<topology name=\"local\" nodes=\"1\" gpus_per_node=\"4\"><node>"
             "<switch name=\"sw\" gpus=\"0 1 2 3\" alpha=\"0.74\" beta=\"2.7\" kind=\"nvlink\"/></node>"
             "<costs launch=\"3\" fifo_launch=\"6\"/></topology>\n");
  snprintf(dir, sizeof dir, "%s/model", tmp);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  if (expect_kiln(out, sizeof out, 0, "from the model",
                  "tune --model --topo %s --colls allreduce --max-bytes 1M --out %s", topo, dir) < 0)
    cr_skip_test("the kiln CLI is not built");
  snprintf(path, sizeof path, "%s/README", dir);
  const char* readme = slurp(path);
  cr_expect(contains(readme, "for 4 ranks") && contains(readme, "topology local with its measured costs"),
            "%s", readme);
  snprintf(path, sizeof path, "%s/tune.csv", dir);
  const char* csv = slurp(path);
  cr_expect(contains(csv, "allreduce,4,1024,") && contains(csv, ",model:local-costs\n"), "%s", csv);
  rm_tree(tmp);
}

/* A topology kiln cannot read, --ranks unlike the topology's, options that only time on GPUs and
 * --model without ranks or a topology are refused, naming why, and nothing is written. */
Test(tune_model, refuses_bad_input) {
  char out[8192], tmp[64], bad[128];
  make_tmpdir(tmp, sizeof tmp);
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  if (expect_kiln(out, sizeof out, 1, "cannot open",
                  "tune --model --topo /nonexistent-kiln/topo.xml --out %s/a", tmp) < 0)
    cr_skip_test("the kiln CLI is not built");
  snprintf(bad, sizeof bad, "%s/bad.xml", tmp);
  write_text(bad, "<topology name=\"x\" gpus_per_node=\"2\"><node/>\n<costs lunch=\"1\"/></topology>\n");
  const int rc =
      expect_kiln(out, sizeof out, 1, "no knob \"lunch\"", "tune --model --topo %s --out %s/a", bad, tmp);
  cr_expect(ne(int, rc, 0));
  cr_expect(contains(out, "kiln tune: --topo") && contains(out, "not a topology kiln can read"), "%s", out);
  expect_kiln(out, sizeof out, 2, "unknown", "tune --model --topo switchX --out %s/a", tmp);
  expect_kiln(out, sizeof out, 2, "the tune has 4 ranks, but the topology switch8 has 8 GPUs",
              "tune --model --ranks 4 --topo switch8 --out %s/a", tmp);
  expect_kiln(out, sizeof out, 2, "--gpus does not apply", "tune --model --ranks 4 --gpus 2 --out %s/a", tmp);
  expect_kiln(out, sizeof out, 2, "--model needs --ranks N", "tune --model --out %s/a", tmp);
  expect_kiln(out, sizeof out, 2, "--sms is --model's", "tune --ranks 2 --sms 100 --out %s/a", tmp);
  unlink(bad);
  cr_expect(eq(int, entries(tmp), 0), "something written");
  rm_tree(tmp);
}
