/* Classic plans: every ring/direct plan verifies, its header says what it is, bad requests fail. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "kiln/plan.h"
#include "test_util.h"

typedef struct classic_case {
  int algo; /* 0 ring, 1 direct */
  kilnColl_t coll;
  int ranks;
} classic_case;

static const char* const algo_names[] = {"ring", "direct"};

/* Every supported (algo, coll) x ranks 2..16; each case covers chunks {1,2,3} x instances
 * {1,2} x in-place (one process per case keeps the suite fast). */
ParameterizedTestParameters(classic, verifies) {
  static const struct {
    int algo;
    kilnColl_t coll;
  } pairs[] = {
      {0, KILN_COLL_ALLGATHER}, {0, KILN_COLL_REDUCESCATTER}, {0, KILN_COLL_ALLREDUCE},
      {1, KILN_COLL_ALLGATHER}, {1, KILN_COLL_ALLTOALL},      {1, KILN_COLL_REDUCESCATTER},
      {1, KILN_COLL_ALLREDUCE},
  };
  const size_t npairs = sizeof pairs / sizeof pairs[0];
  const size_t count = npairs * 15;
  classic_case* cases = cr_malloc(sizeof(classic_case) * count);
  size_t i = 0;
  for (size_t pi = 0; pi < npairs; pi++)
    for (int n = 2; n <= 16; n++) cases[i++] = (classic_case){pairs[pi].algo, pairs[pi].coll, n};
  return cr_make_param_array(classic_case, cases, count);
}

ParameterizedTest(classic_case* c, classic, verifies) {
  for (int k = 1; k <= 3; k++)
    for (int ins = 1; ins <= 2; ins++)
      for (int ip = 0; ip < 2; ip++) {
        kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
        o.chunks = k;
        o.instances = ins;
        o.inplace = ip == 1;
        kilnPlan* p = NULL;
        cr_assert(eq(int, kilnClassicPlan(algo_names[c->algo], c->coll, c->ranks, &o, &p), KILN_SUCCESS),
                  "%s", kilnLastError());
        /* With the FIFO depth each needs: ring k+1 slots, direct k (see classic.c). */
        kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
        vo.fifo_depth = c->algo == 0 ? k + 1 : k;
        cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s: %s", p->name, kilnLastError());
        kilnPlanFree(p);
      }
}

/* The header carries the name, channels, chunk counts and the in-place flags. */
Test(classic, header_fields) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 2;
  o.instances = 3;
  o.proto = KILN_PROTO_LL;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 8, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(eq(str, p->name, "ring-allreduce-n8-c2-i3-LL"));
  cr_expect(eq(int, p->ngpus, 8));
  cr_expect(eq(int, p->nchannels, 3));
  cr_expect(eq(int, p->proto, KILN_PROTO_LL));
  cr_expect(eq(int, p->gpus[0].i_chunks, 8 * 2 * 3));
  cr_expect(eq(int, p->gpus[0].o_chunks, 8 * 2 * 3));
  cr_expect(eq(int, p->nchunksperloop, 48));
  cr_expect(not(p->inplace));
  cr_expect(p->outofplace);
  cr_expect(eq(u64, p->min_bytes, 0));
  cr_expect(eq(u64, p->max_bytes, UINT64_MAX));
  cr_expect(p->has_coll && p->has_inplace && p->has_outofplace && p->has_minmax && p->has_ngpus);
  kilnPlanFree(p);
}

Test(classic, default_name) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 8, NULL, &p), KILN_SUCCESS));
  cr_expect(eq(str, p->name, "ring-allreduce-n8-c1-i1"));
  kilnPlanFree(p);
}

/* In-place allgather has no input buffer; in-place allreduce no output buffer. */
Test(classic, inplace_buffers) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.inplace = true;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_SUCCESS));
  cr_expect(eq(int, p->gpus[1].i_chunks, 0));
  cr_expect(eq(int, p->gpus[1].o_chunks, 4));
  cr_expect(p->inplace && !p->outofplace);
  cr_expect(contains(p->name, "inplace"));
  kilnPlanFree(p);
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_SUCCESS));
  cr_expect(eq(int, p->gpus[2].o_chunks, 0));
  cr_expect(eq(int, p->gpus[2].i_chunks, 4));
  cr_expect(eq(int, p->gpus[2].s_chunks, 3));
  kilnPlanFree(p);
}

/* The ring uses the fused steps: an allreduce tb is s, rrs.., rrcs, rcs.., r. */
Test(classic, ring_uses_fused_steps) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, NULL, &p), KILN_SUCCESS));
  const kilnThreadblock* tb = &p->gpus[0].tbs[0];
  cr_assert(eq(int, tb->nsteps, 2 * 4 - 1));
  static const kilnStepType_t want[] = {KILN_STEP_SEND,
                                        KILN_STEP_RECV_REDUCE_SEND,
                                        KILN_STEP_RECV_REDUCE_SEND,
                                        KILN_STEP_RECV_REDUCE_COPY_SEND,
                                        KILN_STEP_RECV_COPY_SEND,
                                        KILN_STEP_RECV_COPY_SEND,
                                        KILN_STEP_RECV};
  for (int s = 0; s < tb->nsteps; s++)
    cr_expect(eq(str, (char*)kilnStepTypeName(tb->steps[s].type), (char*)kilnStepTypeName(want[s])),
              "step %d", s);
  kilnPlanFree(p);
}

/* Direct reductions mark the steps others wait on with hasdep. */
Test(classic, direct_sets_hasdep) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_REDUCESCATTER, 3, NULL, &p), KILN_SUCCESS));
  const kilnGpu* g = &p->gpus[0];
  cr_assert(eq(int, g->ntbs, 3));
  cr_expect(g->tbs[0].steps[1].hasdep);
  cr_expect(g->tbs[1].steps[1].hasdep);
  cr_expect(eq(int, g->tbs[2].send, -1));
  cr_expect(eq(int, g->tbs[2].recv, -1));
  kilnPlanFree(p);
}

/* Direct allgather / alltoall out of place: the first peer block copies this rank's own piece
 * between its sends and its receives (while the peer's data travels), k chunks each. */
Test(classic, direct_copy_between_sends_and_receives) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 2;
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL};
  for (int c = 0; c < 2; c++) {
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnClassicPlan("direct", colls[c], 3, &o, &p), KILN_SUCCESS));
    for (int t = 0; t < p->gpus[1].ntbs; t++) {
      const kilnThreadblock* tb = &p->gpus[1].tbs[t];
      static const kilnStepType_t first[] = {KILN_STEP_SEND, KILN_STEP_SEND, KILN_STEP_COPY,
                                             KILN_STEP_COPY, KILN_STEP_RECV, KILN_STEP_RECV};
      static const kilnStepType_t other[] = {KILN_STEP_SEND, KILN_STEP_SEND, KILN_STEP_RECV, KILN_STEP_RECV};
      const kilnStepType_t* want = t == 0 ? first : other;
      cr_assert(eq(int, tb->nsteps, t == 0 ? 6 : 4), "%s tb %d", p->name, t);
      for (int s = 0; s < tb->nsteps; s++)
        cr_expect(eq(str, (char*)kilnStepTypeName(tb->steps[s].type), (char*)kilnStepTypeName(want[s])),
                  "%s tb %d step %d", p->name, t, s);
    }
    kilnPlanFree(p);
  }
}

/* A classic plan survives the XML round trip and still verifies. */
Test(classic, xml_round_trip_verifies) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 2;
  o.instances = 2;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLREDUCE, 5, &o, &p), KILN_SUCCESS));
  char* xml = NULL;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &xml), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlan* q = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(xml, strlen(xml), "rt.xml", &q), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(int, kilnPlanVerify(q, NULL), KILN_SUCCESS), "%s", kilnLastError());
  free(xml);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

Test(classic, unsupported_pair_names_both) {
  kilnPlan* p = (kilnPlan*)1;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLTOALL, 4, NULL, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(eq(ptr, p, NULL));
  cr_expect(contains(kilnLastError(), "ring"), "%s", kilnLastError());
  cr_expect(contains(kilnLastError(), "alltoall"), "%s", kilnLastError());
}

Test(classic, bad_requests) {
  kilnPlan* p = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  cr_expect(eq(int, kilnClassicPlan("tree", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "tree"), "%s", kilnLastError());
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 1, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, KILN_MAX_RANKS + 1, &o, &p),
               KILN_ERR_INVALID_ARGUMENT));
  o.chunks = 0;
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  o.chunks = 1;
  o.instances = -1;
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  o.instances = 1;
  cr_expect(eq(int, kilnClassicPlan("direct", KILN_COLL_CUSTOM, 4, &o, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(eq(int, kilnClassicPlan(NULL, KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  o.chunks = 1 << 20;
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 64, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  o.chunks = 1;
  o.instances = KILN_PLAN_MAX_CHANNELS + 1; /* more channels than a plan file holds */
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 2, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "at most 1024 channels"), "%s", kilnLastError());
}

/* The writer refuses a plan the reader would refuse: whatever kiln writes reads back. */
Test(classic, unreadable_plan_not_written) {
  kilnPlan* p = NULL;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.instances = KILN_PLAN_MAX_CHANNELS;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 2, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  char* s = NULL;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &s), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlan* q = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(s, strlen(s), "x.xml", &q), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(q);
  free(s);
  p->nchannels = KILN_PLAN_MAX_CHANNELS + 1;
  cr_expect(eq(int, kilnPlanWriteMemory(p, &s), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "1025 channels"), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* A plan with more threadblocks on a rank than a plan file holds (4096) is refused before it is
 * built: it was built (and, by kiln classic, verified: 61 s for a 1024-rank alltoall) and only
 * the writer refused it. Direct allgather on 5 ranks has 4 threadblocks an instance, allreduce 5. */
Test(classic, threadblocks_past_the_file_limit_refused_up_front) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.instances = 1024;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLGATHER, 5, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(eq(int, p->gpus[0].ntbs, 4096));
  char* s = NULL;
  cr_expect(eq(int, kilnPlanWriteMemory(p, &s), KILN_SUCCESS), "%s",
            kilnLastError()); /* at the limit: written */
  free(s);
  kilnPlanFree(p);
  p = (kilnPlan*)1;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLREDUCE, 5, &o, &p), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(eq(ptr, p, NULL));
  cr_expect(contains(kilnLastError(),
                     "plan direct-allreduce-n5-c1-i1024: each gpu would have 5120 threadblocks, a "
                     "plan file holds 4096"),
            "%s", kilnLastError());
}

/* Larger rings stay quick to build and verify (64 ranks, 4 chunks, 2 instances). */
Test(classic, large_ring_verifies) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = 4;
  o.instances = 2;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 64, &o, &p), KILN_SUCCESS));
  cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* ---- the CLI (build/kiln) ---- */

/* kiln classic writes a plan that verifies; an unsupported request writes nothing. */
Test(classic, cli_writes_only_verified_plans) {
  char dir[64], out[8192], args[512], path[256];
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/ar4.xml", dir);
  snprintf(args, sizeof args, "classic ring --coll allreduce --ranks 4 --chunks 2 -o %s", path);
  int rc = run_kiln(args, out, sizeof out);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  cr_expect(eq(int, rc, 0), "%s", out);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadFile(path, &p), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(str, p->name, "ring-allreduce-n4-c2-i1"));
  cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  unlink(path);
  /* unsupported pair: usage error, no file */
  expect_kiln(out, sizeof out, 2, "does not implement alltoall",
              "classic ring --coll alltoall --ranks 4 -o %s", path);
  cr_expect(ne(int, access(path, F_OK), 0));
  /* more chunks than the FIFO slots hold (default 8): a bad request (2), no file. A ring's fused
   * receive-and-send steps need a slot more than its chunks, which a ring of 2 ranks has only in
   * its allreduce; a direct plan needs as many as its chunks. */
  static const struct {
    const char* args;
    const char* want;
  } fifo[] = {
      {"ring --coll allgather --ranks 4 --chunks 8", "needs 9 FIFO slots per connection, more than 8"},
      {"ring --coll reducescatter --ranks 2 --chunks 5 --fifo-depth 4",
       "needs 5 FIFO slots per connection, more than 4"},
      {"ring --coll allreduce --ranks 2 --chunks 4 --fifo-depth 4",
       "needs 5 FIFO slots per connection, more than 4"},
      {"direct --coll alltoall --ranks 3 --chunks 6 --fifo-depth 5",
       "needs 6 FIFO slots per connection, more than 5"},
  };
  for (size_t i = 0; i < sizeof fifo / sizeof fifo[0]; i++) {
    expect_kiln(out, sizeof out, 2, fifo[i].want, "classic %s -o %s", fifo[i].args, path);
    cr_expect(ne(int, access(path, F_OK), 0), "%s", fifo[i].args);
  }
  expect_kiln(out, sizeof out, 0, NULL,
              "classic direct --coll alltoall --ranks 3 --chunks 6 --fifo-depth 6 -o %s", path);
  unlink(path);
  expect_kiln(out, sizeof out, 0, NULL, "classic ring --coll allgather --ranks 2 --chunks 8 -o %s", path);
  cr_expect(eq(int, access(path, F_OK), 0));
  unlink(path);
  /* more threadblocks than a plan file holds: refused from the arguments (2), before the plan is
   * built and verified (the write refused it, 1) */
  expect_kiln(out, sizeof out, 2, "5115 threadblocks, a plan file holds 4096",
              "classic direct --coll alltoall --ranks 1024 --instances 5 -o %s", path);
  cr_expect(ne(int, access(path, F_OK), 0));
  /* an output that cannot be written: refused before the plan is built (2, as synth refuses it) */
  expect_kiln(out, sizeof out, 2, "no folder", "classic ring --coll allreduce --ranks 4 -o %s/no/ar4.xml",
              dir);
  cr_expect(eq(int, run_kiln("classic --help", out, sizeof out), 0));
  expect_kiln(out, sizeof out, 2, NULL, "classic ring --coll allreduce");
  cr_expect(
      eq(int,
         run_kiln("classic ring --coll allreduce --ranks 2 -o /tmp/a.xml -o /tmp/b.xml", out, sizeof out), 2),
      "%s", out);
  cr_expect(contains(out, "-o given twice"), "%s", out);
  /* a plan that deadlocks at the runtime's default 8 FIFO slots, written unbounded on request:
   * kiln verify refuses it by default, passes it unbounded (--fifo-depth 0) */
  expect_kiln(out, sizeof out, 0, NULL,
              "classic ring --coll allreduce --ranks 4 --chunks 12 --fifo-depth 0 -o %s", path);
  expect_kiln(out, sizeof out, 1, "deadlock", "verify %s", path);
  expect_kiln(out, sizeof out, 0, NULL, "verify --fifo-depth 0 %s", path);
  /* kiln bake lists the build's folder from anywhere (it looked for plans/baked here) */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "cd %s && %s/kiln bake --list 2>&1", dir, KILN_BINARY_DIR);
  FILE* f = popen(cmd, "r");
  cr_assert(not(eq(ptr, f, NULL)));
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = '\0';
  cr_expect(eq(int, pclose(f), 0), "%s", out);
  cr_expect(contains(out, "collective"), "%s", out);
  unlink(path);
  rmdir(dir);
}

/* kiln bake refuses what the build could not bake: a file name the generator's identifier rule
 * turns into one another plan of the folder has (a-b.xml and a_b.xml are both a_b), or one too long
 * for it; baking the same name again replaces the file. */
Test(cli, bake_refuses_names_the_build_cannot_bake) {
  char dir[64], out[4096], args[1024], plan[128];
  make_tmpdir(dir, sizeof dir);
  snprintf(plan, sizeof plan, "%s/ring.xml", dir);
  snprintf(args, sizeof args, "classic ring --coll allreduce --ranks 2 -o %s", plan);
  if (run_kiln(args, out, sizeof out) < 0) cr_skip_test("kiln not built");
  expect_kiln(out, sizeof out, 0, NULL, "bake -d %s --name a-b %s", dir, plan);
  snprintf(args, sizeof args, "bake -d %s --name a-b %s", dir, plan);
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 0), "baking a-b again: %s", out);
  expect_kiln(out, sizeof out, 2, "would be baked as a_b, as", "bake -d %s --name a_b %s", dir, plan);
  char path[256];
  snprintf(path, sizeof path, "%s/a_b.xml", dir);
  cr_expect(ne(int, access(path, F_OK), 0), "a_b.xml written");
  expect_kiln(out, sizeof out, 2, "characters before .xml", "bake -d %s --name %0100d %s", dir, 0, plan);
  /* a folder that does not exist: a bad -d (2), as gen -o says it (bake exited 1 at the write) */
  expect_kiln(out, sizeof out, 2, "no folder", "bake -d %s/no %s", dir, plan);
  snprintf(path, sizeof path, "%s/a-b.xml", dir);
  unlink(path);
  unlink(plan);
  rmdir(dir);
}

/* An output file that exists keeps its mode (it became 0644 whatever it had); a new one gets the
 * umask's (0644 whatever the umask). */
Test(cli, output_keeps_the_files_mode) {
  char dir[64], out[4096], args[512], path[128];
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/t.xml", dir);
  snprintf(args, sizeof args, "topo --topo ndv2 -o %s", path);
  if (run_kiln(args, out, sizeof out) < 0) cr_skip_test("kiln not built");
  cr_assert(eq(int, chmod(path, 0600), 0));
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 0), "%s", out);
  struct stat st;
  cr_assert(eq(int, stat(path, &st), 0));
  cr_expect(eq(int, (int)(st.st_mode & 0777), 0600));
  unlink(path);
  snprintf(args, sizeof args, "topo --topo ndv2 -o %s", path);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "umask 027 && %s/kiln %s", KILN_BINARY_DIR, args);
  cr_expect(eq(int, system(cmd), 0));
  cr_assert(eq(int, stat(path, &st), 0));
  cr_expect(eq(int, (int)(st.st_mode & 0777), 0640));
  unlink(path);
  rmdir(dir);
}

/* An option given twice is refused whatever the command (most took the last value silently). */
Test(cli, repeated_option_refused) {
  char out[2048];
  if (run_kiln("--version", out, sizeof out) < 0) cr_skip_test("kiln not built");
  cr_expect(eq(int,
               run_kiln("classic ring --coll allreduce --coll allgather --ranks 4 -o /tmp/kiln-never.xml",
                        out, sizeof out),
               2),
            "%s", out);
  cr_expect(contains(out, "--coll given twice"), "%s", out);
  cr_expect(ne(int, access("/tmp/kiln-never.xml", F_OK), 0));
  cr_expect(eq(int,
               run_kiln("simulate --topo ndv2 --bytes 1M --bytes 2M --baseline ring --coll allreduce", out,
                        sizeof out),
               2),
            "%s", out);
  cr_expect(contains(out, "--bytes given twice"), "%s", out);
}

/* synth checks its output before it solves: an empty name and a link whose target cannot be
 * reached are refused at once (they failed only at the write, after the synthesis). */
Test(cli, synth_output_checked_first) {
  char out[2048], dir[64], link[128];
  if (run_kiln("--version", out, sizeof out) < 0) cr_skip_test("kiln not built");
  cr_expect(
      eq(int, run_kiln("synth --topo switch2 --sketch switch2 --coll allgather -o ''", out, sizeof out), 2),
      "%s", out);
  cr_expect(contains(out, "empty output file name"), "%s", out);
  make_tmpdir(dir, sizeof dir);
  snprintf(link, sizeof link, "%s/dangling.xml", dir);
  cr_assert(eq(int, symlink("/nonexistent-kiln-folder/x.xml", link), 0));
  expect_kiln(out, sizeof out, 2, "target cannot be reached",
              "synth --topo switch2 --sketch switch2 --coll allgather -o %s", link);
  unlink(link);
  rmdir(dir);
}

/* ---- the memory-step forms (oneshot, twoshot, staged, zerocopy) ---- */

typedef struct mem_case {
  int algo; /* index into mem_algos (a parameter holds no pointers: each runs in a process of its own) */
  kilnColl_t coll;
  int ranks;
} mem_case;

static const char* const mem_algos[] = {"oneshot", "twoshot", "staged", "zerocopy"};

/* Every (form, coll) x ranks 2..8; each case covers chunks {1,2} x instances {1,2} x in place x
 * every protocol the form takes. */
ParameterizedTestParameters(classic, memory_forms_verify) {
  static const struct {
    int algo;
    kilnColl_t coll;
  } pairs[] = {
      {0, KILN_COLL_ALLREDUCE}, {0, KILN_COLL_REDUCESCATTER}, {1, KILN_COLL_ALLREDUCE},
      {2, KILN_COLL_ALLGATHER}, {2, KILN_COLL_ALLTOALL},      {3, KILN_COLL_ALLGATHER},
      {3, KILN_COLL_ALLTOALL},
  };
  const size_t npairs = sizeof pairs / sizeof pairs[0];
  const size_t count = npairs * 7;
  mem_case* cases = cr_malloc(sizeof(mem_case) * count);
  size_t i = 0;
  for (size_t pi = 0; pi < npairs; pi++)
    for (int n = 2; n <= 8; n++) cases[i++] = (mem_case){pairs[pi].algo, pairs[pi].coll, n};
  return cr_make_param_array(mem_case, cases, count);
}

ParameterizedTest(mem_case* c, classic, memory_forms_verify) {
  const char* algo = mem_algos[c->algo];
  const bool zc = c->algo == 3;
  for (int k = 1; k <= 2; k++)
    for (int ins = 1; ins <= 2; ins++)
      for (int ip = 0; ip < 2; ip++)
        for (int pr = 0; pr < (zc ? 1 : KILN_NUM_PROTOS); pr++) {
          if (zc && ip && c->coll == KILN_COLL_ALLTOALL) continue;
          kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
          o.chunks = k;
          o.instances = ins;
          o.inplace = ip == 1;
          o.proto = (kilnProto_t)pr;
          kilnPlan* p = NULL;
          cr_assert(eq(int, kilnClassicPlan(algo, c->coll, c->ranks, &o, &p), KILN_SUCCESS), "%s",
                    kilnLastError());
          cr_expect(kilnPlanHasMemorySteps(p));
          cr_expect(eq(int, p->gpus[0].ntbs, ins), "%s: a threadblock per instance", p->name);
          cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_SUCCESS), "%s: %s", p->name, kilnLastError());
          kilnPlanFree(p);
        }
}

/* The forms refuse what they cannot write, naming why. */
Test(classic, memory_forms_refuse_what_they_cannot_write) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  o.proto = KILN_PROTO_LL;
  cr_expect(eq(int, kilnClassicPlan("zerocopy", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(contains(kilnLastError(), "LL puts write only the peers' scratch: zerocopy is Simple"), "%s",
            kilnLastError());
  o.proto = KILN_PROTO_LL12;
  cr_expect(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(contains(kilnLastError(), "LL12 is a protocol of put steps"), "%s", kilnLastError());
  o.proto = KILN_PROTO_SIMPLE;
  o.inplace = true;
  cr_expect(eq(int, kilnClassicPlan("zerocopy", KILN_COLL_ALLTOALL, 4, &o, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(contains(kilnLastError(), "no in-place alltoall"), "%s", kilnLastError());
  o.inplace = false;
  cr_expect(eq(int, kilnClassicPlan("twoshot", KILN_COLL_ALLGATHER, 4, &o, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(contains(kilnLastError(), "'twoshot' does not implement allgather"), "%s", kilnLastError());
  cr_expect(eq(int, kilnClassicPlan("oneshot", KILN_COLL_ALLTOALL, 4, &o, &p), KILN_ERR_UNSUPPORTED));
  cr_expect(eq(ptr, p, NULL));
}

/* One-shot: every rank reduces in rank order 0..n-1 (a copy of rank 0's operand, then re of the
 * others), so every rank computes the same sums in the same order. */
Test(classic, oneshot_reduces_in_rank_order) {
  const int n = 4;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = KILN_PROTO_LL;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("oneshot", KILN_COLL_ALLREDUCE, n, &o, &p), KILN_SUCCESS));
  int proto[8];
  for (int r = 0; r < n; r++) {
    const kilnThreadblock* tb = &p->gpus[r].tbs[0];
    cr_assert(eq(int, tb->nsteps, (n - 1) + n), "rank %d: a put per peer, then the reduction", r);
    for (int m = 0; m < n - 1; m++) {
      cr_expect(eq(int, tb->steps[m].type, KILN_STEP_PUT));
      cr_expect(eq(int, tb->steps[m].peer, (r + 1 + m) % n), "peers from r+1 on");
    }
    for (int q = 0; q < n; q++) {
      const kilnStep* st = &tb->steps[n - 1 + q];
      cr_expect(eq(int, st->type, q == 0 ? KILN_STEP_COPY : KILN_STEP_REDUCE), "rank %d operand %d", r, q);
      if (q == r) {
        cr_expect(eq(int, st->srcbuf, KILN_BUF_INPUT));
      } else {
        cr_expect(eq(int, st->srcbuf, KILN_BUF_SCRATCH));
        cr_expect(eq(int, st->srcoff, q < r ? q : q - 1), "rank %d reads rank %d's region", r, q);
      }
    }
    cr_assert(eq(int, kilnPlanLineChunks(p, r, proto), KILN_SUCCESS), "%s", kilnLastError());
    for (int ch = 0; ch < p->gpus[r].s_chunks; ch++) cr_expect(eq(int, proto[ch], KILN_PROTO_LL));
  }
  kilnPlanFree(p);
}

/* Simple forms signal every peer once per phase: one-shot and staged once, two-shot and zerocopy
 * twice (the second phase, or done after arrival). */
Test(classic, simple_forms_signal_each_peer_per_phase) {
  const struct {
    const char* algo;
    kilnColl_t coll;
    int per_epoch;
  } cases[] = {{"oneshot", KILN_COLL_REDUCESCATTER, 1},
               {"staged", KILN_COLL_ALLTOALL, 1},
               {"twoshot", KILN_COLL_ALLREDUCE, 2},
               {"zerocopy", KILN_COLL_ALLGATHER, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
    o.instances = 2;
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnClassicPlan(cases[i].algo, cases[i].coll, 3, &o, &p), KILN_SUCCESS));
    int ord[256], per[256], steps = 0, sigs = 0;
    for (int t = 0; t < p->gpus[1].ntbs; t++) steps += p->gpus[1].tbs[t].nsteps;
    cr_assert(le(int, steps, 256));
    cr_assert(eq(int, kilnPlanSignalOrdinals(p, 1, ord, per), KILN_SUCCESS), "%s", kilnLastError());
    for (int s = 0; s < steps; s++)
      if (per[s] >= 0) {
        sigs++;
        cr_expect(eq(int, per[s], cases[i].per_epoch), "%s step %d", p->name, s);
      }
    /* 2 peers x 2 instances x (sig + wait) per phase */
    cr_expect(eq(int, sigs, 2 * 2 * 2 * cases[i].per_epoch), "%s", p->name);
    kilnPlanFree(p);
  }
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = KILN_PROTO_LL128;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("twoshot", KILN_COLL_ALLREDUCE, 3, &o, &p), KILN_SUCCESS));
  for (int s = 0; s < p->gpus[0].tbs[0].nsteps; s++)
    cr_expect(eq(int,
                 kilnStepPeerRole(p->gpus[0].tbs[0].steps[s].type) == KILN_PEER_SIGNAL ||
                     kilnStepPeerRole(p->gpus[0].tbs[0].steps[s].type) == KILN_PEER_WAIT,
                 0),
              "line puts need no signals");
  kilnPlanFree(p);
}

/* The CLI writes the forms after verifying them, and refuses a protocol a form does not take. */
Test(classic, cli_writes_memory_forms) {
  char dir[64], path[128], args[256], out[4096];
  snprintf(dir, sizeof dir, "/tmp/kiln-classic-mem-XXXXXX");
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  snprintf(path, sizeof path, "%s/p.xml", dir);
  snprintf(args, sizeof args, "classic twoshot --coll allreduce --ranks 4 --instances 2 --proto LL12 -o %s",
           path);
  int rc = run_kiln(args, out, sizeof out);
  if (rc < 0) {
    rm_tree(dir);
    cr_skip_test("the kiln CLI was not built");
  }
  cr_expect(eq(int, rc, 0), "%s", out);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadFile(path, &p), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(str, p->name, "twoshot-allreduce-n4-c1-i2-LL12"));
  cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  snprintf(args, sizeof args, "verify %s", path);
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 0), "%s", out);
  cr_expect(contains(out, "2 calls of 3 iterations"), "%s", out);
  unlink(path);
  snprintf(args, sizeof args, "classic zerocopy --coll alltoall --ranks 4 --proto LL128 -o %s", path);
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 2), "%s", out);
  cr_expect(contains(out, "zerocopy is Simple"), "%s", out);
  cr_expect(not(eq(int, access(path, F_OK), 0)), "nothing written");
  rm_tree(dir);
}
