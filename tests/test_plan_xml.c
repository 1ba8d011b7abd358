/* Plan model and MSCCL plan XML: builders, both dialects, round trips, hostile XML. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/plan.h"
#include "kiln_internal.h" /* kilnXmlFileRoot */
#include "test_files.h"
#include "test_util.h"

static char* plan_xml(const kilnPlan* p) {
  char* s = NULL;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &s), KILN_SUCCESS), "%s", kilnLastError());
  return s;
}

static kilnPlan* read_ok(const char* xml) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(xml, strlen(xml), "p.xml", &p), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

/* A ring allgather on n ranks built with the model helpers (every tb: send right, recv left). */
static kilnPlan* ring_allgather(int n) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("ring-ag", KILN_COLL_ALLGATHER, n, &p), KILN_SUCCESS));
  p->nchunksperloop = n;
  for (int r = 0; r < n; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = n;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, (r + 1) % n, (r + n - 1) % n, 0);
    cr_assert(not(eq(ptr, tb, NULL)));
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_OUTPUT, r, KILN_BUF_OUTPUT, r, 1);
    for (int k = 1; k < n - 1; k++) {
      int c = (r - k + n) % n;
      kilnPlanAddStep(tb, KILN_STEP_RECV_COPY_SEND, KILN_BUF_OUTPUT, c, KILN_BUF_OUTPUT, c, 1);
    }
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, (r + 1) % n, KILN_BUF_OUTPUT, (r + 1) % n, 1);
  }
  return p;
}

/* A kiln-built plan written, read and written again is byte-identical, in the documented order. */
Test(plan_xml, kiln_plan_byte_identical) {
  kilnPlan* p = ring_allgather(4);
  char* a = plan_xml(p);
  cr_assert(
      eq(int,
         strncmp(a,
                 "<algo name=\"ring-ag\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"4\" ngpus=\"4\" "
                 "coll=\"allgather\" inplace=\"0\" outofplace=\"1\" minBytes=\"0\" "
                 "maxBytes=\"9223372036854775807\">\n",
                 strlen("<algo name=\"ring-ag\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"4\" "
                        "ngpus=\"4\" coll=\"allgather\" inplace=\"0\" outofplace=\"1\" minBytes=\"0\" "
                        "maxBytes=\"9223372036854775807\">\n")),
         0),
      "%s", a);
  kilnPlan* q = read_ok(a);
  char* b = plan_xml(q);
  cr_assert(eq(str, a, b));
  cr_assert(eq(u64, q->max_bytes, UINT64_MAX));
  cr_assert(eq(int, q->gpus[2].tbs[0].nsteps, 5));
  cr_assert(eq(int, q->gpus[2].tbs[0].steps[2].type, KILN_STEP_RECV_COPY_SEND));
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

/* redop is written last, when the plan has one. */
Test(plan_xml, redop_written_last) {
  kilnPlan* p = ring_allgather(2);
  p->has_redop = true;
  strcpy(p->redop, "sum");
  p->max_bytes = 1 << 20;
  p->min_bytes = 4096;
  char* a = plan_xml(p);
  cr_assert(contains(a, "minBytes=\"4096\" maxBytes=\"1048576\" redop=\"sum\">"), "%s", a);
  kilnPlan* q = read_ok(a);
  char* b = plan_xml(q);
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

static const char old_dialect[] =
    "<algo name=\"old_rs\" nchunksperloop=\"2\" nchannels=\"1\" proto=\"LL\" coll=\"reduce_scatter\">\n"
    "  <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"1\">\n"
    "    <tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "    <tb id=\"1\" send=\"-1\" recv=\"1\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"1\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" "
    "depid=\"0\" deps=\"0\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "  </gpu>\n"
    "  <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"1\">\n"
    "    <tb id=\"0\" send=\"0\" recv=\"-1\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "    <tb id=\"1\" send=\"-1\" recv=\"0\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "  </gpu>\n"
    "</algo>\n";

/* Old dialect: reduce_scatter, no ngpus/inplace/min/maxBytes; what was absent stays absent. */
Test(plan_xml, old_dialect) {
  kilnPlan* p = read_ok(old_dialect);
  cr_assert(eq(int, p->coll, KILN_COLL_REDUCESCATTER));
  cr_assert(p->old_coll_name);
  cr_assert(eq(int, p->ngpus, 2));
  cr_assert(not(p->has_ngpus));
  cr_assert(not(p->has_inplace));
  cr_assert(not(p->has_outofplace));
  cr_assert(not(p->has_minmax));
  cr_assert(eq(int, p->proto, KILN_PROTO_LL));
  cr_assert(eq(u64, p->max_bytes, UINT64_MAX));
  cr_assert(eq(int, p->gpus[0].tbs[1].steps[1].srcoff, -1));
  char* a = plan_xml(p);
  cr_assert(contains(a, "coll=\"reduce_scatter\""));
  cr_assert(not(contains(a, "minBytes")));
  cr_assert(not(contains(a, "ngpus")));
  kilnPlan* q = read_ok(a);
  char* b = plan_xml(q);
  cr_assert(eq(str, a, b));
  cr_assert(eq(int, kilnPlanRefChunks(q), 2));
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

/* Newer dialect: reducescatter with the range attributes; huge maxBytes is an open range. */
Test(plan_xml, new_dialect_open_range) {
  static const char xml[] =
      "<algo name=\"n\" proto=\"LL128\" nchannels=\"2\" nchunksperloop=\"1\" ngpus=\"1\" "
      "coll=\"reducescatter\" "
      "inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"99999999999999999999999\">\n"
      "  <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"0\" s_chunks=\"0\">\n"
      "    <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"1\"/>\n"
      "  </gpu>\n</algo>\n";
  kilnPlan* p = read_ok(xml);
  cr_assert(eq(int, p->coll, KILN_COLL_REDUCESCATTER));
  cr_assert(not(p->old_coll_name));
  cr_assert(p->inplace);
  cr_assert(not(p->outofplace));
  cr_assert(eq(u64, p->max_bytes, UINT64_MAX));
  cr_assert(eq(int, p->gpus[0].tbs[0].chan, 1));
  char* a = plan_xml(p);
  cr_assert(contains(a,
                     "coll=\"reducescatter\" inplace=\"1\" outofplace=\"0\" minBytes=\"0\" "
                     "maxBytes=\"9223372036854775807\""),
            "%s", a);
  free(a);
  kilnPlanFree(p);
}

/* Files that omit coll and ngpus read with has_* false; ngpus from the <gpu> elements. */
Test(plan_xml, missing_coll_and_ngpus) {
  static const char xml[] =
      "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\">\n"
      "  <gpu id=\"1\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\"/>\n"
      "  <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\"/>\n"
      "  <gpu id=\"2\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\"/>\n</algo>\n";
  kilnPlan* p = read_ok(xml);
  cr_assert(eq(int, p->ngpus, 3));
  cr_assert(not(p->has_coll));
  cr_assert(eq(int, p->coll, KILN_COLL_CUSTOM));
  cr_assert(not(p->has_inplace));
  for (int r = 0; r < 3; r++) cr_assert(eq(int, p->gpus[r].id, r));
  char* a = plan_xml(p);
  cr_assert(not(contains(a, "coll=")));
  kilnPlan* q = read_ok(a);
  char* b = plan_xml(q);
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

/* Threadblocks listed out of order land at their ids. */
Test(plan_xml, threadblocks_by_id) {
  static const char xml[] =
      "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"1\" coll=\"allreduce\" "
      "inplace=\"1\">\n"
      "  <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"0\" s_chunks=\"0\">\n"
      "    <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "      <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"0\" "
      "depid=\"0\" deps=\"0\" hasdep=\"0\"/>\n"
      "    </tb>\n"
      "    <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "      <step s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"1\"/>\n"
      "    </tb>\n"
      "  </gpu>\n</algo>\n";
  kilnPlan* p = read_ok(xml);
  cr_assert(eq(int, p->gpus[0].ntbs, 2));
  cr_assert(eq(int, p->gpus[0].tbs[0].steps[0].type, KILN_STEP_COPY));
  cr_assert(p->gpus[0].tbs[0].steps[0].hasdep);
  cr_assert(eq(int, p->gpus[0].tbs[1].steps[0].depid, 0));
  kilnPlanFree(p);
}

/* A deep copy writes the same XML, and growing the copy leaves the original alone. */
Test(plan_xml, clone_independent) {
  kilnPlan* p = ring_allgather(8);
  kilnPlan* c = NULL;
  cr_assert(eq(int, kilnPlanClone(p, &c), KILN_SUCCESS));
  char *a = plan_xml(p), *b = plan_xml(c);
  cr_assert(eq(str, a, b));
  kilnThreadblock* tb = &c->gpus[3].tbs[0];
  for (int i = 0; i < 100; i++)
    cr_assert(not(eq(ptr, kilnPlanAddStep(tb, KILN_STEP_NOP, 0, 0, 0, 0, 0), NULL)));
  cr_assert(eq(int, tb->nsteps, 9 + 100));
  cr_assert(eq(int, tb->steps[108].s, 108));
  cr_assert(eq(int, p->gpus[3].tbs[0].nsteps, 9));
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(c);
}

/* Steps can be appended to a plan that was read from XML. */
Test(plan_xml, append_after_read) {
  kilnPlan* p = read_ok(old_dialect);
  kilnThreadblock* tb = &p->gpus[1].tbs[0];
  for (int i = 0; i < 40; i++) kilnPlanAddStep(tb, KILN_STEP_NOP, 0, 0, 0, 0, 0);
  cr_assert(eq(int, tb->nsteps, 41));
  kilnThreadblock* nt = kilnPlanAddThreadblock(p, 1, -1, -1, 0);
  cr_assert(eq(int, nt->id, 2));
  kilnPlanFree(p);
}

Test(plan_xml, step_type_table) {
  for (int t = 0; t < KILN_NUM_STEP_TYPES; t++) {
    kilnStepType_t back;
    cr_assert(kilnStepTypeParse(kilnStepTypeName((kilnStepType_t)t), &back));
    cr_assert(eq(int, back, t));
  }
  cr_assert(kilnStepReceives(KILN_STEP_RECV_REDUCE_COPY_SEND) &&
            kilnStepSends(KILN_STEP_RECV_REDUCE_COPY_SEND) &&
            kilnStepReduces(KILN_STEP_RECV_REDUCE_COPY_SEND));
  cr_assert(not(kilnStepWritesDst(KILN_STEP_RECV_REDUCE_SEND)));
  cr_assert(kilnStepReadsSrc(KILN_STEP_SEND));
  cr_assert(not(kilnStepReceives(KILN_STEP_SEND)));
  cr_assert(not(kilnStepReceives(KILN_STEP_NOP)));
  cr_assert(not(kilnStepSends(KILN_STEP_NOP)));
  kilnStepType_t x;
  cr_assert(not(kilnStepTypeParse("sr", &x)));
  cr_assert(eq(str, (char*)kilnBufferName(KILN_BUF_SCRATCH), "s"));
}

Test(plan_xml, ref_chunks) {
  kilnPlan* p = ring_allgather(4);
  cr_assert(eq(int, kilnPlanRefChunks(p), 4));
  p->coll = KILN_COLL_ALLREDUCE;
  cr_assert(eq(int, kilnPlanRefChunks(p), 1));
  kilnPlanFree(p);
}

Test(plan_xml, create_rejects_bad_sizes) {
  kilnPlan* p = (kilnPlan*)1; /* must come back NULL */
  cr_assert(eq(int, kilnPlanCreate("x", KILN_COLL_ALLREDUCE, 0, &p), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(
      eq(int, kilnPlanCreate("x", KILN_COLL_ALLREDUCE, KILN_MAX_RANKS + 1, &p), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(ptr, p, NULL));
  cr_assert(eq(ptr, kilnPlanAddThreadblock(NULL, 0, -1, -1, 0), NULL));
}

/* Files: atomic write, read back equal; missing file is an I/O error naming it. */
Test(plan_xml, file_round_trip) {
  char dir[] = "/tmp/kiln-plan-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char path[256];
  snprintf(path, sizeof path, "%s/p.xml", dir);
  kilnPlan *p = ring_allgather(3), *q = NULL;
  cr_assert(eq(int, kilnPlanWriteFile(p, path), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanReadFile(path, &q), KILN_SUCCESS), "%s", kilnLastError());
  char *a = plan_xml(p), *b = plan_xml(q);
  cr_assert(eq(str, a, b));
  unlink(path);
  rmdir(dir);
  cr_assert(eq(int, kilnPlanReadFile(path, &q), KILN_ERR_IO));
  cr_assert(contains(kilnLastError(), path));
  free(a);
  free(b);
  kilnPlanFree(p);
}

/* kilnXmlFileRoot names a file's root element past whatever prolog the readers take (what `kiln
 * show` picks its reader by), and refuses, with the file and line, where there is none. */
Test(plan_xml, file_root) {
  static const struct {
    const char* text; /* the file's bytes (NULL: no file) */
    size_t cap;
    kilnResult_t res;
    const char* want; /* the root's name, or a text of the error */
  } cases[] = {
      {"<algo name=\"a\"/>", 32, KILN_SUCCESS, "algo"},
      {"\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- a\n<fake/> -->\n<?pi x?>\n\t<topology>", 32, KILN_SUCCESS,
       "topology"},
      {"<sketch\n name=\"s\">", 32, KILN_SUCCESS, "sketch"},
      {"<sketch>", 6, KILN_ERR_PARSE, "longer than 5 bytes"},
      {"<sketch>", 7, KILN_SUCCESS, "sketch"},
      {"<?xml version=\"1.0\"?>\n<!DOCTYPE algo>\n<algo/>", 32, KILN_ERR_PARSE, "f.xml:2: a DOCTYPE"},
      {"", 32, KILN_ERR_PARSE, "f.xml:1: no root element"},
      {"\n\n<!-- never closed", 32, KILN_ERR_PARSE, "f.xml:3: no root element"},
      {"text <algo/>", 32, KILN_ERR_PARSE, "f.xml:1: no root element where the prolog ends"},
      {"<!ELEMENT algo ANY>", 32, KILN_ERR_PARSE, "no root element where"},
      {NULL, 32, KILN_ERR_IO, "cannot open"},
  };
  char dir[] = "/tmp/kiln-root-XXXXXX", path[256], root[32];
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  snprintf(path, sizeof path, "%s/f.xml", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    unlink(path);
    if (cases[i].text) write_text(path, cases[i].text);
    memset(root, 'x', sizeof root);
    const kilnResult_t r = kilnXmlFileRoot(path, root, cases[i].cap);
    cr_expect(eq(int, r, cases[i].res), "case %zu: %s", i, kilnLastError());
    if (r == KILN_SUCCESS) {
      cr_expect(eq(str, root, (char*)cases[i].want), "case %zu", i);
    } else {
      cr_expect(eq(str, root, ""), "case %zu: a failure leaves an empty name", i);
      cr_expect(contains(kilnLastError(), cases[i].want), "case %zu: %s", i, kilnLastError());
      cr_expect(contains(kilnLastError(), path), "case %zu: %s", i, kilnLastError());
    }
  }
  unlink(path);
  cr_expect(eq(int, kilnXmlFileRoot(dir, root, sizeof root), KILN_ERR_IO)); /* a folder */
  cr_expect(contains(kilnLastError(), "not a regular file"), "%s", kilnLastError());
  cr_expect(eq(int, kilnXmlFileRoot(path, root, 1), KILN_ERR_INVALID_ARGUMENT));
  rmdir(dir);
}

struct bad_plan {
  const char* xml;
  const char* msg;
};

#define ALGO \
  "<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"1\" coll=\"allreduce\">\n"
#define GPU0 "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\">\n"
#define TB0 "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
#define STEP(attrs) "<step " attrs "/>\n"
#define OKSTEP                                                                                       \
  "s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" " \
  "deps=\"-1\" hasdep=\"0\""
#define WRAP(steps) ALGO GPU0 TB0 steps "</tb></gpu></algo>\n"

static const struct bad_plan hostile_cases[] = {
    {"", "bad.xml:1: empty document"},
    {ALGO GPU0, "bad.xml:3: Premature end of data"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"1000000000\"/>",
     "out of range"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"abc\"/>",
     "is not an integer"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"2\">\n" GPU0
     "</gpu></algo>",
     "bad.xml:1: ngpus is 2 but there are 1 <gpu> elements"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\"/>", "0 <gpu> elements"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" inplace=\"0\" "
     "outofplace=\"0\"/>",
     "bad.xml:1: inplace=\"0\" and outofplace=\"0\": the plan serves no call"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"2\">\n" GPU0
     "</gpu>\n" GPU0 "</gpu></algo>",
     "bad.xml:4: gpu id 0 is given twice"},
    {ALGO "<gpu id=\"1\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\"/></algo>",
     "bad.xml:2: attribute id=\"1\" of <gpu> is out of range [0, 0]"},
    {ALGO "<gpu id=\"0\" i_chunks=\"16777217\" o_chunks=\"1\" s_chunks=\"0\"/></algo>",
     "i_chunks=\"16777217\" of <gpu> is out of range"},
    {ALGO "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"-1\" s_chunks=\"0\"/></algo>",
     "o_chunks=\"-1\" of <gpu> is out of range"},
    {ALGO "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\"/></algo>", "lacks the required attribute s_chunks"},
    {"<algo name=\"b\" proto=\"Fast\" nchannels=\"1\" nchunksperloop=\"1\"/>", "unknown proto \"Fast\""},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" coll=\"broadcast\"/>",
     "unknown coll \"broadcast\""},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" inplace=\"2\"/>",
     "inplace=\"2\""},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" minBytes=\"-5\"/>",
     "not a non-negative integer"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" minBytes=\"10\" "
     "maxBytes=\"5\"/>",
     "minBytes is larger"},
    {ALGO GPU0 "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\"/>\n<tb id=\"2\" send=\"-1\" recv=\"-1\" "
               "chan=\"0\"/></gpu></algo>",
     "bad.xml:4: attribute id=\"2\" of <tb> is out of range [0, 1]"},
    {ALGO GPU0 "<tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\"/>\n<tb id=\"1\" send=\"-1\" recv=\"-1\" "
               "chan=\"0\"/></gpu></algo>",
     "bad.xml:4: threadblock id 1 is given twice"},
    {ALGO GPU0 "<tb id=\"0\" send=\"1\" recv=\"-1\" chan=\"0\"/></gpu></algo>",
     "send=\"1\" of <tb> is out of range [-1, 0]"},
    {ALGO GPU0 "<tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"1\"/></gpu></algo>",
     "chan=\"1\" of <tb> is out of range"},
    {WRAP(STEP("s=\"1\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
               "depid=\"-1\" deps=\"-1\"")),
     "bad.xml:4: step s=\"1\" out of order: expected s=\"0\""},
    {WRAP(STEP(OKSTEP) STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" "
                            "cnt=\"1\" depid=\"-1\" deps=\"-1\"")),
     "bad.xml:5: step s=\"0\" out of order: expected s=\"1\""},
    {WRAP(STEP("s=\"0\" type=\"copy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
               "depid=\"-1\" deps=\"-1\"")),
     "unknown step type \"copy\""},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"x\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
               "depid=\"-1\" deps=\"-1\"")),
     "srcbuf=\"x\" is not a buffer"},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
               "depid=\"-1\" deps=\"-1\"")),
     "srcoff=\"-1\" of <step> is out of range"},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"-3\" "
               "depid=\"-1\" deps=\"-1\"")),
     "cnt=\"-3\""},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" depid=\"-1\" "
               "deps=\"-1\"")),
     "bad.xml:4: <step> lacks the required attribute cnt"},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
               "depid=\"3\" deps=\"0\"")),
     "depid=\"3\" of <step> is out of range [-1, 0]"},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1e3\" "
               "depid=\"-1\" deps=\"-1\"")),
     "is not an integer"},
    {WRAP(STEP("s=\"0\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" "
               "cnt=\"99999999999999999999\" depid=\"-1\" deps=\"-1\"")),
     "out of range"},
    {WRAP("<step " OKSTEP "><extra/></step>\n"), "unexpected element <extra> inside <step>"},
    {ALGO "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\"><threadblock/></gpu></algo>",
     "unexpected element <threadblock>"},
    {"<!DOCTYPE algo [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><algo name=\"&x;\"/>", "bad.xml:1: DOCTYPE"},
    {"<topology name=\"x\" gpus_per_node=\"1\"/>", "root element is <topology>, expected <algo>"},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"2000\" nchunksperloop=\"1\"/>", "nchannels=\"2000\""},
    {"<algo name=\"b\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"1\">\n" GPU0
     "</gpu>\n</algo>\n<algo/>",
     "bad.xml:5: Extra content"},
    /* TACCL's <copy>: offsets non-negative and inside the GPU's input and output. */
    {ALGO GPU0 "<copy i_off=\"1\" o_off=\"0\"/></gpu></algo>",
     "bad.xml:3: copy i_off=\"1\" cnt=\"1\" reads past the input of gpu 0 (i_chunks=1)"},
    {ALGO GPU0 "<copy i_off=\"0\" o_off=\"1\"/></gpu></algo>",
     "bad.xml:3: copy o_off=\"1\" cnt=\"1\" writes past the output of gpu 0 (o_chunks=1)"},
    {ALGO GPU0 "<copy i_off=\"0\" o_off=\"0\" cnt=\"2\"/></gpu></algo>",
     "bad.xml:3: copy i_off=\"0\" cnt=\"2\" reads past"},
    {ALGO GPU0 "<copy i_off=\"-1\" o_off=\"0\"/></gpu></algo>",
     "bad.xml:3: attribute i_off=\"-1\" of <copy> is out of range"},
    {ALGO GPU0 "<copy i_off=\"0\" o_off=\"-2\"/></gpu></algo>",
     "bad.xml:3: attribute o_off=\"-2\" of <copy> is out of range"},
    {ALGO GPU0 "<copy i_off=\"0\" o_off=\"0\" cnt=\"0\"/></gpu></algo>",
     "bad.xml:3: attribute cnt=\"0\" of <copy> is out of range"},
    {ALGO GPU0 "<copy i_off=\"0\"/></gpu></algo>", "bad.xml:3: <copy> lacks the required attribute o_off"},
    {ALGO GPU0 "<copy i_off=\"99999999999\" o_off=\"0\"/></gpu></algo>",
     "bad.xml:3: attribute i_off=\"99999999999\""},
    {ALGO GPU0 "<copy i_off=\"0\" o_off=\"0\"><tb/></copy></gpu></algo>",
     "unexpected element <tb> inside <copy>"},
    {ALGO GPU0 TB0 "<copy i_off=\"0\" o_off=\"0\"/></tb></gpu></algo>",
     "bad.xml:4: unexpected element <copy> inside <tb>"},
};
#define N_HOSTILE (sizeof hostile_cases / sizeof hostile_cases[0])

KILN_INDEX_PARAMS(plan_xml, hostile, N_HOSTILE)

/* Every malformed plan is a KILN_ERR_PARSE whose message names the file, the line and the fault. */
ParameterizedTest(int* ci, plan_xml, hostile) {
  const struct bad_plan* c = &hostile_cases[*ci];
  kilnPlan* p = (kilnPlan*)1;
  kilnResult_t r = kilnPlanReadMemory(c->xml, strlen(c->xml), "bad.xml", &p);
  cr_assert(eq(int, r, KILN_ERR_PARSE), "case %d: result %s: %s", *ci, kilnResultName(r), kilnLastError());
  cr_assert(eq(ptr, p, NULL));
  cr_assert(contains(kilnLastError(), c->msg), "case %d: message: %s", *ci, kilnLastError());
  cr_assert(eq(int, strncmp(kilnLastError(), "bad.xml:", 8), 0));
}

/* A larger plan (8 GPUs, 4 threadblocks, 200 steps each) survives the round trip. */
Test(plan_xml, large_round_trip) {
  unsigned seed = 12345; /* fixed, printed on failure */
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("big", KILN_COLL_ALLTOALL, 8, &p), KILN_SUCCESS));
  p->nchannels = 4;
  for (int r = 0; r < 8; r++) {
    p->gpus[r].i_chunks = p->gpus[r].o_chunks = 64;
    p->gpus[r].s_chunks = 8;
    for (int t = 0; t < 4; t++) {
      kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, (r + t + 1) % 8, (r + 7 - t) % 8, t);
      for (int s = 0; s < 200; s++) {
        seed = seed * 1103515245u + 12345u;
        kilnStep* st = kilnPlanAddStep(tb, (kilnStepType_t)(seed % KILN_STEP_NOP), KILN_BUF_INPUT,
                                       (int)(seed >> 8) % 64, KILN_BUF_OUTPUT, (int)(seed >> 16) % 64, 1);
        if (s > 0 && seed % 7 == 0) {
          st->depid = (t + 1) % 4;
          st->deps = s - 1;
        }
      }
    }
  }
  char* a = plan_xml(p);
  kilnPlan* q = read_ok(a);
  char* b = plan_xml(q);
  cr_assert(eq(str, a, b), "seed 12345");
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

/* 10000 nested <gpu> elements end in a clean parse error, not a stack overflow. */
Test(plan_xml, deep_nesting) {
  size_t depth = 10000, n = strlen("<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\">");
  char* x = malloc(n + depth * 5 + 1);
  memcpy(x, "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\">", n);
  for (size_t i = 0; i < depth; i++) memcpy(x + n + 5 * i, "<gpu>", 5);
  x[n + 5 * depth] = '\0';
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(x, strlen(x), "deep.xml", &p), KILN_ERR_PARSE));
  cr_assert(contains(kilnLastError(), "deep.xml:1:"), "%s", kilnLastError());
  free(x);
}

/* TACCL's ncclize output: <copy> children of <gpu> before its threadblocks (no cnt: one chunk). */
static const char taccl_copies[] =
    "<algo name=\"taccl\" nchannels=\"1\" nchunksperloop=\"2\" proto=\"Simple\" coll=\"alltoall\" "
    "inplace=\"0\" "
    "redop=\"nop\" ngpus=\"2\">\n"
    "  <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "    <copy i_off=\"0\" o_off=\"0\"/>\n"
    "    <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "  </gpu>\n"
    "  <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "    <copy i_off=\"1\" o_off=\"1\"/>\n"
    "    <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
    "      <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "      <step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
    "    </tb>\n"
    "  </gpu>\n"
    "</algo>\n";

/* nchunksperloop must be the most chunks of any rank's input or output, as msccl-tools and
 * TACCL write it: MSCCL's runtimes size a chunk by it, kiln by the buffers, so a plan where the
 * two differ would run differently there; it is refused, naming both. A plan built in memory
 * (nchunksperloop left at 1) is written with the value the reader wants. */
Test(plan_xml, nchunksperloop_must_match_the_buffers) {
  char* x = strdup(taccl_copies);
  memcpy(strstr(x, "nchunksperloop=\"2\"") + 16, "6", 1);
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(x, strlen(x), "m.xml", &p), KILN_ERR_PARSE));
  cr_expect(contains(kilnLastError(), "m.xml:1: nchunksperloop is 6 but the largest input or output holds 2"),
            "%s", kilnLastError());
  free(x);
  p = read_ok(taccl_copies);
  p->nchunksperloop = 1;
  char* a = plan_xml(p);
  cr_expect(contains(a, "nchunksperloop=\"2\""), "%s", a);
  kilnPlan* q = read_ok(a);
  free(a);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

/* Copies are read (cnt 1 when absent), written before the threadblocks, and survive
 * read -> write -> read byte for byte; a cnt other than 1 is written and read back. */
Test(plan_xml, taccl_copies_round_trip) {
  kilnPlan* p = read_ok(taccl_copies);
  cr_assert(eq(int, p->gpus[0].ncopies, 1));
  cr_assert(eq(int, p->gpus[1].copies[0].i_off, 1));
  cr_assert(eq(int, p->gpus[1].copies[0].o_off, 1));
  cr_assert(eq(int, p->gpus[1].copies[0].cnt, 1));
  cr_assert(kilnPlanHasCopies(p));
  char* a = plan_xml(p);
  cr_assert(contains(a, "s_chunks=\"0\">\n    <copy i_off=\"1\" o_off=\"1\"/>\n    <tb id=\"0\""), "%s", a);
  kilnPlan* q = read_ok(a);
  char* b = plan_xml(q);
  cr_assert(eq(str, a, b));
  q->gpus[0].copies[0].cnt = 2;
  q->gpus[0].i_chunks = q->gpus[0].o_chunks = 2;
  char* c = plan_xml(q);
  cr_assert(contains(c, "<copy i_off=\"0\" o_off=\"0\" cnt=\"2\"/>"), "%s", c);
  kilnPlan* r = read_ok(c);
  cr_assert(eq(int, r->gpus[0].copies[0].cnt, 2));
  free(a);
  free(b);
  free(c);
  kilnPlanFree(p);
  kilnPlanFree(q);
  kilnPlanFree(r);
}

/* A clone owns its own copies. */
Test(plan_xml, clone_copies_independent) {
  kilnPlan* p = read_ok(taccl_copies);
  kilnPlan* c = NULL;
  cr_assert(eq(int, kilnPlanClone(p, &c), KILN_SUCCESS));
  cr_assert(not(eq(ptr, c->gpus[1].copies, p->gpus[1].copies)));
  c->gpus[1].copies[0].i_off = 0;
  cr_assert(eq(int, p->gpus[1].copies[0].i_off, 1));
  char *a = plan_xml(p), *b = NULL;
  c->gpus[1].copies[0].i_off = 1;
  b = plan_xml(c);
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  kilnPlanFree(p);
  kilnPlanFree(c);
}

/* Plans without copies say so, and a <gpu> may hold copies and no threadblock. */
Test(plan_xml, copies_without_threadblocks) {
  kilnPlan* p = ring_allgather(2);
  cr_assert(not(kilnPlanHasCopies(p)));
  kilnPlanFree(p);
  const char* xml = ALGO
      "<gpu id=\"0\" i_chunks=\"1\" o_chunks=\"1\" s_chunks=\"0\"><copy i_off=\"0\" "
      "o_off=\"0\"/></gpu></algo>";
  p = read_ok(xml);
  cr_assert(eq(int, p->gpus[0].ntbs, 0));
  cr_assert(eq(int, p->gpus[0].ncopies, 1));
  kilnPlanFree(p);
}

/* ---- Folded runs of local reductions (kilnStepFoldable) ---- */

/* One rank's plan (2 GPUs, GPU 0 used) with a local threadblock: waits on tb 0 (nop), then cpy
 * input 0 -> output 0 and `nre` re steps of scratch chunks 0.. into output 0. */
static kilnPlan* fold_plan(int nre, bool inplaceFlag) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("fold", KILN_COLL_ALLREDUCE, 2, &p), KILN_SUCCESS));
  p->inplace = inplaceFlag;
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 1;
    p->gpus[r].s_chunks = nre > 0 ? nre : 1;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, 1 - r, 1 - r, 0);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0, 1);
    kilnStep* rv = kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_SCRATCH, 0, KILN_BUF_SCRATCH, 0, 1);
    rv->hasdep = true;
    tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    kilnStep* w = kilnPlanAddStep(tb, KILN_STEP_NOP, KILN_BUF_INPUT, 0, KILN_BUF_INPUT, 0, 0);
    w->depid = 0;
    w->deps = 1;
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
    for (int k = 0; k < nre; k++)
      kilnPlanAddStep(tb, KILN_STEP_REDUCE, KILN_BUF_SCRATCH, k, KILN_BUF_OUTPUT, 0, 1);
  }
  return p;
}

Test(plan_fold, copy_then_reductions_fold_into_one_pass) {
  kilnPlan* p = fold_plan(3, false);
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 1), 3)); /* cpy + 3 re */
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 2), 2)); /* from the first re: 2 more */
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 0), 0)); /* nop */
  cr_assert(eq(int, kilnStepFoldable(p, 0, 0, 1), 0)); /* a receive */
  cr_assert(eq(int, kilnStepFoldable(p, 0, 5, 0), 0)); /* no such threadblock */
  cr_assert(eq(int, kilnStepFoldable(NULL, 0, 1, 1), 0));
  kilnPlanFree(p);
  p = fold_plan(KILN_FUSE_MAX + 3, false);
  cr_assert(eq(int, kilnStepFoldable(p, 1, 1, 1), KILN_FUSE_MAX - 1));
  kilnPlanFree(p);
}

Test(plan_fold, a_plan_that_may_run_in_place_keeps_user_buffers_apart) {
  /* The cpy reads input, writes output: one buffer in an in-place call. */
  kilnPlan* p = fold_plan(2, true);
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 1), 0));
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 2), 1)); /* re from scratch: still foldable */
  kilnPlanFree(p);
  /* A re from the input into the output: foldable only when the plan never runs in place. */
  p = fold_plan(2, true);
  p->gpus[0].tbs[1].steps[3].srcbuf = KILN_BUF_INPUT;
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 2), 0));
  p->inplace = false;
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 2), 1));
  p->gpus[0].o_chunks = 0; /* the in-place form: output is the input */
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 2), 0));
  kilnPlanFree(p);
}

Test(plan_fold, dependencies_overlap_and_other_destinations_stop_a_run) {
  kilnPlan* p = fold_plan(3, false);
  /* A folded step with a dependency of its own ends the run before it. */
  p->gpus[0].tbs[1].steps[3].depid = 0;
  p->gpus[0].tbs[1].steps[3].deps = 1;
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 1), 1));
  kilnPlanFree(p);
  /* Someone waits on the middle of the run: it ends there. */
  p = fold_plan(3, false);
  p->gpus[0].tbs[0].steps[0].depid = 1;
  p->gpus[0].tbs[0].steps[0].deps = 2;
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 1), 1));
  kilnPlanFree(p);
  /* A re into another destination, or reading its own destination, ends the run. */
  p = fold_plan(3, false);
  p->gpus[0].tbs[1].steps[3].dstoff = 1;
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 1), 1));
  kilnPlanFree(p);
  p = fold_plan(3, false);
  p->gpus[0].tbs[1].steps[4].srcbuf = KILN_BUF_OUTPUT;
  p->gpus[0].tbs[1].steps[4].srcoff = 0;
  cr_assert(eq(int, kilnStepFoldable(p, 0, 1, 1), 2));
  kilnPlanFree(p);
}

Test(plan_fold, rank_steps_flatten_publishing_and_folds) {
  kilnPlan* p = fold_plan(3, false);
  /* rank 0: tb 0 = s, r (hasdep); tb 1 = nop (waits on tb 0 step 1), cpy, re, re, re */
  bool pub[7];
  int fold[7];
  cr_assert(eq(int, kilnPlanRankSteps(p, 0, pub, fold), KILN_SUCCESS));
  const bool wantPub[7] = {false, true, false, false, false, false, false};
  const int wantFold[7] = {0, 0, 0, 3, -1, -1, -1};
  for (int i = 0; i < 7; i++) {
    cr_assert(eq(int, pub[i], wantPub[i]), "step %d publishes", i);
    cr_assert(eq(int, fold[i], wantFold[i]), "step %d fold", i);
  }
  /* A step waited on publishes even without hasdep. */
  p->gpus[0].tbs[0].steps[1].hasdep = false;
  cr_assert(eq(int, kilnPlanRankSteps(p, 0, pub, NULL), KILN_SUCCESS));
  cr_assert(pub[1]);
  cr_assert(eq(int, kilnPlanRankSteps(p, 2, pub, fold), KILN_ERR_INVALID_ARGUMENT));
  kilnPlanFree(p);
}

/* ---- memory steps (kiln's own vocabulary) ---- */

/* A 2-rank allgather that stages through the peer's scratch: a put of the input chunk (proto
 * `proto`, -1: the plan's), then, for Simple, a sig and a wait; then the copies into the output. */
static kilnPlan* staged_allgather2(kilnProto_t plan_proto, int proto) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("staged-ag2", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  p->proto = plan_proto;
  p->nchunksperloop = 2;
  const bool simple = (proto >= 0 ? (kilnProto_t)proto : plan_proto) == KILN_PROTO_SIMPLE;
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
    p->gpus[r].s_chunks = 1;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    kilnStep* put = kilnPlanAddStep(tb, KILN_STEP_PUT, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0, 1);
    put->peer = 1 - r;
    put->proto = proto;
    if (simple) {
      kilnPlanAddStep(tb, KILN_STEP_SIGNAL, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0)->peer = 1 - r;
      kilnPlanAddStep(tb, KILN_STEP_WAIT, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0)->peer = 1 - r;
    }
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 1 - r, 1);
  }
  return p;
}

/* Every memory step type and attribute is written in the documented form and reads back to the
 * same document. */
Test(plan_mem, every_type_and_attribute_round_trips) {
  kilnPlan* p = staged_allgather2(KILN_PROTO_SIMPLE, -1);
  kilnThreadblock* tb = &p->gpus[0].tbs[0];
  kilnPlanAddStep(tb, KILN_STEP_GET, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0, 1)->peer = 1;
  kilnPlanAddStep(tb, KILN_STEP_GET_REDUCE, KILN_BUF_OUTPUT, 1, KILN_BUF_SCRATCH, 0, 1)->peer = 1;
  for (int pr = 0; pr < KILN_NUM_PROTOS; pr++) {
    kilnStep* put = kilnPlanAddStep(tb, KILN_STEP_PUT, KILN_BUF_OUTPUT, 0, KILN_BUF_SCRATCH, 0, 1);
    put->peer = 1;
    put->proto = pr;
  }
  char* a = plan_xml(p);
  const char* const lines[] = {
      "<step s=\"0\" type=\"put\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" "
      "hasdep=\"0\" peer=\"1\"/>\n",
      "<step s=\"1\" type=\"sig\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"i\" dstoff=\"-1\" cnt=\"0\" "
      "depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\" peer=\"1\"/>\n",
      "<step s=\"2\" type=\"wait\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"i\" dstoff=\"-1\" cnt=\"0\" "
      "depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\" peer=\"1\"/>\n",
      "<step s=\"3\" type=\"cpy\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" "
      "hasdep=\"0\"/>\n",
      "<step s=\"5\" type=\"get\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" "
      "hasdep=\"0\" peer=\"1\"/>\n",
      "<step s=\"6\" type=\"gre\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" "
      "hasdep=\"0\" peer=\"1\"/>\n",
      "<step s=\"7\" type=\"put\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" "
      "hasdep=\"0\" peer=\"1\" proto=\"Simple\"/>\n",
      "hasdep=\"0\" peer=\"1\" proto=\"LL\"/>\n",
      "hasdep=\"0\" peer=\"1\" proto=\"LL128\"/>\n",
      "hasdep=\"0\" peer=\"1\" proto=\"LL12\"/>\n",
      NULL};
  for (int i = 0; lines[i]; i++) cr_expect(contains(a, lines[i]), "missing %s in:\n%s", lines[i], a);
  kilnPlan* q = read_ok(a);
  cr_expect(eq(int, q->gpus[0].tbs[0].steps[0].peer, 1));
  cr_expect(eq(int, q->gpus[0].tbs[0].steps[0].proto, -1));
  cr_expect(eq(int, q->gpus[0].tbs[0].steps[10].proto, KILN_PROTO_LL12));
  char* b = plan_xml(q);
  cr_expect(eq(str, a, b));
  kilnPlan* k = NULL;
  cr_assert(eq(int, kilnPlanClone(q, &k), KILN_SUCCESS));
  char* c = plan_xml(k);
  cr_expect(eq(str, a, c));
  free(a);
  free(b);
  free(c);
  kilnPlanFree(p);
  kilnPlanFree(q);
  kilnPlanFree(k);
}

/* The LL12 protocol reads and writes at the plan's level too. */
Test(plan_mem, ll12_plan_protocol_round_trips) {
  kilnPlan* p = staged_allgather2(KILN_PROTO_LL12, -1);
  char* a = plan_xml(p);
  cr_expect(contains(a, "proto=\"LL12\" nchannels"), "%s", a);
  kilnPlan* q = read_ok(a);
  cr_expect(eq(int, q->proto, KILN_PROTO_LL12));
  cr_expect(eq(int, kilnStepProtocol(q, &q->gpus[1].tbs[0].steps[0]), KILN_PROTO_LL12));
  free(a);
  kilnPlanFree(p);
  kilnPlanFree(q);
}

/* Bad memory-step attributes are refused with the element's line and what is wrong. */
Test(plan_mem, reader_refuses_misplaced_attributes) {
  const char* head =
      "<algo name=\"x\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"1\" ngpus=\"2\" "
      "coll=\"allgather\">\n"
      " <gpu id=\"0\" i_chunks=\"0\" o_chunks=\"2\" s_chunks=\"1\">\n  <tb id=\"0\" send=\"-1\" recv=\"-1\" "
      "chan=\"0\">\n";
  const char* tail =
      "  </tb>\n </gpu>\n <gpu id=\"1\" i_chunks=\"0\" o_chunks=\"2\" s_chunks=\"1\"/>\n</algo>\n";
  const struct {
    const char* step;
    const char* msg;
  } cases[] = {
      {"<step s=\"0\" type=\"put\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
       "depid=\"-1\" deps=\"-1\"/>",
       "p.xml:4: <step> lacks the required attribute peer"},
      {"<step s=\"0\" type=\"cpy\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
       "depid=\"-1\" deps=\"-1\" peer=\"1\"/>",
       "p.xml:4: peer applies to memory steps (put get gre sig wait), not to a cpy step"},
      {"<step s=\"0\" type=\"get\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
       "depid=\"-1\" deps=\"-1\" peer=\"1\" proto=\"LL\"/>",
       "p.xml:4: proto applies to put steps, not to a get step"},
      {"<step s=\"0\" type=\"put\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"s\" dstoff=\"0\" cnt=\"1\" "
       "depid=\"-1\" deps=\"-1\" peer=\"1\" proto=\"LL64\"/>",
       "p.xml:4: unknown proto \"LL64\" (known: Simple LL LL128 LL12)"},
      {"<step s=\"0\" type=\"sig\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"i\" dstoff=\"-1\" cnt=\"0\" "
       "depid=\"-1\" deps=\"-1\" peer=\"2\"/>",
       "p.xml:4: attribute peer=\"2\" of <step> is out of range [0, 1]"},
      {"<step s=\"0\" type=\"push\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
       "depid=\"-1\" deps=\"-1\"/>",
       "(known: s r rcs rrs rrc rrcs cpy re nop put get gre sig wait)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char xml[2048];
    snprintf(xml, sizeof xml, "%s   %s\n%s", head, cases[i].step, tail);
    kilnPlan* p = NULL;
    cr_expect(eq(int, kilnPlanReadMemory(xml, strlen(xml), "p.xml", &p), KILN_ERR_PARSE), "case %zu read", i);
    cr_expect(eq(ptr, p, NULL));
    cr_expect(contains(kilnLastError(), cases[i].msg), "case %zu: '%s' not in: %s", i, cases[i].msg,
              kilnLastError());
  }
}

/* A plan held in memory with a peer or protocol the reader would refuse is not written. */
Test(plan_mem, writer_refuses_what_would_not_read_back) {
  kilnPlan* p = staged_allgather2(KILN_PROTO_SIMPLE, -1);
  char* s = NULL;
  p->gpus[0].tbs[0].steps[0].peer = 2;
  cr_expect(eq(int, kilnPlanWriteMemory(p, &s), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "gpu 0 tb 0 step 0 (put): peer 2 is not a rank of 0..1"), "%s",
            kilnLastError());
  p->gpus[0].tbs[0].steps[0].peer = 1;
  p->gpus[0].tbs[0].steps[0].proto = KILN_NUM_PROTOS;
  cr_expect(eq(int, kilnPlanWriteMemory(p, &s), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(contains(kilnLastError(), "step 0 (put): proto 4 is not a kilnProto_t"), "%s", kilnLastError());
  cr_expect(eq(ptr, s, NULL));
  kilnPlanFree(p);
}

/* The memory steps' table columns, and the one question the GPU runtime asks. */
Test(plan_mem, table_and_runtime_check) {
  cr_expect(eq(int, kilnStepPeerRole(KILN_STEP_PUT), KILN_PEER_WRITE));
  cr_expect(eq(int, kilnStepPeerRole(KILN_STEP_GET), KILN_PEER_READ));
  cr_expect(eq(int, kilnStepPeerRole(KILN_STEP_GET_REDUCE), KILN_PEER_READ));
  cr_expect(eq(int, kilnStepPeerRole(KILN_STEP_SIGNAL), KILN_PEER_SIGNAL));
  cr_expect(eq(int, kilnStepPeerRole(KILN_STEP_WAIT), KILN_PEER_WAIT));
  cr_expect(eq(int, kilnStepPeerRole(KILN_STEP_SEND), KILN_PEER_NONE));
  cr_expect(kilnStepReduces(KILN_STEP_GET_REDUCE) && !kilnStepSends(KILN_STEP_PUT) &&
            !kilnStepReceives(KILN_STEP_GET));
  for (int t = 0; t < KILN_NUM_STEP_TYPES; t++)
    cr_expect(kilnStepRuntimeRuns((kilnStepType_t)t), "step type %d", t);
  kilnPlan* ring = ring_allgather(3);
  cr_expect(not(kilnPlanHasMemorySteps(ring)));
  cr_expect(eq(int, kilnPlanCheckRuntime(ring), KILN_SUCCESS));
  ring->proto = KILN_PROTO_LL12;
  cr_expect(eq(int, kilnPlanCheckRuntime(ring), KILN_ERR_UNSUPPORTED));
  cr_expect(
      contains(kilnLastError(), "plan ring-ag rank 0 tb 0 step 1: kiln's GPU runtime has no LL12 protocol"),
      "%s", kilnLastError());
  kilnPlanFree(ring);
  kilnPlan* p = staged_allgather2(KILN_PROTO_LL, -1);
  cr_expect(kilnPlanHasMemorySteps(p));
  cr_expect(eq(int, kilnPlanCheckRuntime(p), KILN_SUCCESS));
  p->proto = KILN_PROTO_LL12; /* the puts' protocol: a plan of LL12 puts runs */
  cr_expect(eq(int, kilnPlanCheckRuntime(p), KILN_SUCCESS));
  kilnPlanFree(p);
}

/* What a runtime reads to run the steps: each sig's and wait's place in its stream, and which
 * scratch chunks hold lines of which protocol. */
Test(plan_mem, signal_ordinals_and_line_chunks) {
  kilnPlan* p = staged_allgather2(KILN_PROTO_SIMPLE, -1);
  kilnThreadblock* tb = &p->gpus[1].tbs[0];
  kilnPlanAddStep(tb, KILN_STEP_SIGNAL, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0)->peer = 0;
  tb = &p->gpus[0].tbs[0];
  kilnPlanAddStep(tb, KILN_STEP_WAIT, KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1, 0)->peer = 1;
  int ord[6], per[6];
  cr_assert(eq(int, kilnPlanSignalOrdinals(p, 0, ord, per), KILN_SUCCESS), "%s", kilnLastError());
  const int want_ord[6] = {-1, 0, 0, -1, -1, 1}, want_per[6] = {-1, 1, 2, -1, -1, 2};
  for (int i = 0; i < 6; i++) {
    cr_expect(eq(int, ord[i], want_ord[i]), "step %d", i);
    cr_expect(eq(int, per[i], want_per[i]), "step %d", i);
  }
  int proto[1];
  cr_assert(eq(int, kilnPlanLineChunks(p, 0, proto), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(int, proto[0], -1));
  kilnPlanFree(p);
  p = staged_allgather2(KILN_PROTO_SIMPLE, KILN_PROTO_LL128);
  cr_assert(eq(int, kilnPlanLineChunks(p, 1, proto), KILN_SUCCESS), "%s", kilnLastError());
  cr_expect(eq(int, proto[0], KILN_PROTO_LL128));
  kilnPlanFree(p);
}
