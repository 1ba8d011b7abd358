/* CPU verifier: accepts correct plans (kiln's and MSCCL-style ones from other tools) and rejects
 * broken ones with a message that names the rank, threadblock and step. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "kiln/plan.h"
#include "test_util.h"

static kilnPlan* classic(const char* algo, kilnColl_t coll, int n, int k, bool inplace) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.chunks = k;
  o.inplace = inplace;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan(algo, coll, n, &o, &p), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

static kilnPlan* read_xml(const char* xml) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(xml, strlen(xml), "t.xml", &p), KILN_SUCCESS), "%s", kilnLastError());
  return p;
}

/* Verifies p expecting failure; every NULL-terminated substring must appear in the message. */
static void expect_rejected(kilnPlan* p, const char* const* subs) {
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_VERIFY), "accepted: %s", kilnLastError());
  for (int i = 0; subs[i]; i++)
    cr_expect(contains(kilnLastError(), subs[i]), "'%s' missing from: %s", subs[i], kilnLastError());
  kilnPlanFree(p);
}
#define REJECTED(p, ...) expect_rejected((p), (const char* const[]){__VA_ARGS__, NULL})

static void expect_ok(kilnPlan* p) {
  cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* Appends printf-style text to a growing buffer. */
static void cat(char** buf, size_t* len, size_t* cap, const char* fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
    va_end(ap);
    cr_assert(ge(int, n, 0));
    if (*len + (size_t)n < *cap) {
      *len += (size_t)n;
      return;
    }
    *cap = 2 * (*cap + (size_t)n);
    *buf = realloc(*buf, *cap);
    cr_assert(not(eq(ptr, *buf, NULL)));
  }
}

#define STEP                                                                                            \
  "      <step s=\"%d\" type=\"%s\" srcbuf=\"%s\" srcoff=\"%d\" dstbuf=\"%s\" dstoff=\"%d\" cnt=\"1\" " \
  "depid=\"%d\" deps=\"%d\" hasdep=\"%d\"/>\n"

/* ---- MSCCL-style plans from other tools ---- */

/* msccl-tools in-place allreduce: only the input buffer (o_chunks=0), nops carrying
 * dependencies with srcoff/dstoff -1 and cnt 0, no outofplace attribute. */
Test(verify, msccl_inplace_allreduce_with_nops) {
  const char* xml =
      "<algo name=\"ar2\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" "
      "coll=\"allreduce\" inplace=\"1\">\n"
      " <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\">\n"
      "  <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"
      "   <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step s=\"2\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step s=\"3\" type=\"r\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"1\"/>\n"
      "  </tb>\n"
      "  <tb id=\"1\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
      "   <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" "
      "depid=\"0\" deps=\"3\" hasdep=\"0\"/>\n"
      "  </tb>\n"
      " </gpu>\n"
      " <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"0\" s_chunks=\"0\">\n"
      "  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
      "   <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step s=\"2\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"i\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "   <step s=\"3\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"i\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "  </tb>\n"
      " </gpu>\n"
      "</algo>\n";
  expect_ok(read_xml(xml));
}

/* msccl-tools in-place alltoall: both buffers declared, one memory (inplace="1"). The plan is
 * only right with the buffers aliased, which is how the verifier runs an in-place plan. */
static const char* a2a_inplace_xml =
    "<algo name=\"a2a\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" coll=\"alltoall\" "
    "inplace=\"1\">\n"
    " <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "  <tb id=\"0\" send=\"1\" recv=\"1\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>\n"
    "   <step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>\n"
    "  </tb>\n"
    " </gpu>\n"
    " <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "  <tb id=\"0\" send=\"0\" recv=\"0\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>\n"
    "   <step s=\"1\" type=\"r\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
    "deps=\"-1\" hasdep=\"0\"/>\n"
    "  </tb>\n"
    " </gpu>\n"
    "</algo>\n";

Test(verify, msccl_inplace_alltoall_aliases_buffers) { expect_ok(read_xml(a2a_inplace_xml)); }

/* The same plan claimed out of place leaves each rank's own chunk unwritten. */
Test(verify, alltoall_without_local_copy_fails_out_of_place) {
  kilnPlan* p = read_xml(a2a_inplace_xml);
  p->inplace = false;
  p->has_outofplace = true;
  p->outofplace = true;
  REJECTED(p, "rank 0 output chunk 0", "never written", "out of place");
}

/* In-place allgather with no input buffer (i_chunks=0): rank r's data starts at o[r]. */
Test(verify, msccl_inplace_allgather_ring) {
  const char* xml =
      "<algo name=\"ag3\" proto=\"LL\" nchannels=\"1\" nchunksperloop=\"3\" ngpus=\"3\" coll=\"allgather\" "
      "inplace=\"1\">\n"
      " <gpu id=\"0\" i_chunks=\"0\" o_chunks=\"3\" s_chunks=\"0\"><tb id=\"0\" send=\"1\" recv=\"2\" "
      "chan=\"0\">\n"
      "  <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"1\" type=\"rcs\" srcbuf=\"o\" srcoff=\"2\" dstbuf=\"o\" dstoff=\"2\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"2\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      " </tb></gpu>\n"
      " <gpu id=\"1\" i_chunks=\"0\" o_chunks=\"3\" s_chunks=\"0\"><tb id=\"0\" send=\"2\" recv=\"0\" "
      "chan=\"0\">\n"
      "  <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"1\" type=\"rcs\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"2\" type=\"r\" srcbuf=\"o\" srcoff=\"2\" dstbuf=\"o\" dstoff=\"2\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      " </tb></gpu>\n"
      " <gpu id=\"2\" i_chunks=\"0\" o_chunks=\"3\" s_chunks=\"0\"><tb id=\"0\" send=\"0\" recv=\"1\" "
      "chan=\"0\">\n"
      "  <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"2\" dstbuf=\"o\" dstoff=\"2\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"1\" type=\"rcs\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"2\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      " </tb></gpu>\n"
      "</algo>\n";
  expect_ok(read_xml(xml));
}

/* TACCL's layout (ncclize): an in-place allgather that declares its input (i_chunks = k), which
 * then lies at output chunks r*k.., and sends from there; one tb per direction and channel. */
Test(verify, taccl_inplace_allgather_with_declared_input) {
  size_t len = 0, cap = 4096;
  char* b = malloc(cap);
  cat(&b, &len, &cap,
      "<algo name=\"taccl\" nchannels=\"3\" nchunksperloop=\"6\" proto=\"Simple\" "
      "coll=\"allgather\" inplace=\"1\" redop=\"nop\" ngpus=\"2\">\n");
  for (int r = 0; r < 2; r++) {
    cat(&b, &len, &cap, "  <gpu id=\"%d\" i_chunks=\"3\" o_chunks=\"6\" s_chunks=\"0\">\n", r);
    for (int c = 0; c < 3; c++) {
      int off = (1 - r) * 3 + c;
      cat(&b, &len, &cap, "    <tb id=\"%d\" send=\"-1\" recv=\"%d\" chan=\"%d\">\n", c, 1 - r, c);
      cat(&b, &len, &cap, STEP, 0, "r", "o", off, "o", off, -1, -1, 0);
      cat(&b, &len, &cap, "    </tb>\n");
    }
    for (int c = 0; c < 3; c++) {
      int off = r * 3 + c;
      cat(&b, &len, &cap, "    <tb id=\"%d\" send=\"%d\" recv=\"-1\" chan=\"%d\">\n", 3 + c, 1 - r, c);
      cat(&b, &len, &cap, STEP, 0, "s", "o", off, "o", off, -1, -1, 0);
      cat(&b, &len, &cap, "    </tb>\n");
    }
    cat(&b, &len, &cap, "  </gpu>\n");
  }
  cat(&b, &len, &cap, "</algo>\n");
  kilnPlan* p = read_xml(b);
  free(b);
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  /* Read out of place it would need TACCL's pre-copies of the input into the output. */
  p->inplace = false;
  REJECTED(p, "rank 0 output chunk 0", "never written", "out of place");
}

/* The older dialect: coll="reduce_scatter", no minBytes/maxBytes, out of place. */
Test(verify, old_dialect_reduce_scatter) {
  const char* xml =
      "<algo name=\"rs2\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" "
      "coll=\"reduce_scatter\" inplace=\"0\">\n"
      " <gpu id=\"0\" i_chunks=\"2\" o_chunks=\"1\" s_chunks=\"0\"><tb id=\"0\" send=\"1\" recv=\"1\" "
      "chan=\"0\">\n"
      "  <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      " </tb></gpu>\n"
      " <gpu id=\"1\" i_chunks=\"2\" o_chunks=\"1\" s_chunks=\"0\"><tb id=\"0\" send=\"0\" recv=\"0\" "
      "chan=\"0\">\n"
      "  <step s=\"0\" type=\"s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"-1\" "
      "deps=\"-1\" hasdep=\"0\"/>\n"
      "  <step s=\"1\" type=\"rrc\" srcbuf=\"i\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" "
      "depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n"
      " </tb></gpu>\n"
      "</algo>\n";
  expect_ok(read_xml(xml));
}

/* An allreduce that receives into o[0] before reducing i[0] into it: right with separate
 * buffers, wrong when o and i are one buffer (it then adds the peer's value twice). */
static kilnPlan* clobbering_allreduce(bool inplace, bool outofplace) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("clobber", KILN_COLL_ALLREDUCE, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = p->gpus[r].o_chunks = 1;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, 1 - r, 1 - r, 0);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 0, KILN_BUF_OUTPUT, 0, 1);
    kilnPlanAddStep(tb, KILN_STEP_REDUCE, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  }
  p->inplace = inplace;
  p->outofplace = outofplace;
  return p;
}

Test(verify, out_of_place_only_plan_passes_out_of_place) { expect_ok(clobbering_allreduce(false, true)); }

Test(verify, out_of_place_only_plan_claiming_inplace_fails) {
  REJECTED(clobbering_allreduce(true, true), "in place", "twice", "tb 0 step 2 (re)");
}

/* Out of place, the input is the caller's read-only send buffer: a ring reducescatter whose
 * receive-reduce-send also keeps its partial sum in the input gives every rank the right result
 * and is still refused, naming the step; in place the same plan is fine. */
static kilnPlan* ring_rs_writing_input(bool inplace) {
  kilnPlan* p = classic("ring", KILN_COLL_REDUCESCATTER, 4, 1, inplace);
  kilnThreadblock* hit = NULL;
  kilnStep* st = NULL;
  for (int t = 0; t < p->gpus[2].ntbs && !st; t++)
    for (int s = 0; s < p->gpus[2].tbs[t].nsteps && !st; s++)
      if (p->gpus[2].tbs[t].steps[s].type == KILN_STEP_RECV_REDUCE_SEND) {
        hit = &p->gpus[2].tbs[t];
        st = &hit->steps[s];
      }
  cr_assert(st != NULL, "no rrs step on rank 2");
  st->type = KILN_STEP_RECV_REDUCE_COPY_SEND;
  st->dstbuf = st->srcbuf;
  st->dstoff = st->srcoff;
  return p;
}
Test(verify, out_of_place_plan_writing_its_input_fails) {
  kilnPlan* p = ring_rs_writing_input(false);
  REJECTED(p, "rank 2 input chunk", "out of place", "send buffer, read only");
}
Test(verify, in_place_plan_writing_its_input_passes) { expect_ok(ring_rs_writing_input(true)); }

/* The layout msccl-tools gives its all-pairs allreduce (8 ranks, LL, in place): per rank a
 * reducer tb without peers whose `re` steps each wait on a peer tb's receive into scratch, and
 * per peer a tb that sends the peer's piece, receives into scratch, sends the reduced piece
 * after the reducer's last step, and receives the peer's reduced piece. */
static char* msccl_allpairs_xml(int n) {
  size_t len = 0, cap = 4096;
  char* b = malloc(cap);
  cat(&b, &len, &cap,
      "<algo name=\"allreduce_pairs\" proto=\"LL\" nchannels=\"1\" nchunksperloop=\"%d\" "
      "ngpus=\"%d\" coll=\"allreduce\" inplace=\"1\">\n",
      n, n);
  for (int r = 0; r < n; r++) {
    cat(&b, &len, &cap, "  <gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"0\" s_chunks=\"%d\">\n", r, n, n - 1);
    cat(&b, &len, &cap, "    <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n");
    for (int m = 0; m < n - 1; m++) cat(&b, &len, &cap, STEP, m, "re", "s", m, "i", r, m + 1, 1, m == n - 2);
    cat(&b, &len, &cap, "    </tb>\n");
    for (int m = 0, d = 0; d < n; d++) {
      if (d == r) continue;
      int slot = r < d ? r : r - 1; /* r's place among d's peers */
      cat(&b, &len, &cap, "    <tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"0\">\n", m + 1, d, d);
      cat(&b, &len, &cap, STEP, 0, "s", "i", d, "s", slot, -1, -1, 0);
      cat(&b, &len, &cap, STEP, 1, "r", "i", r, "s", m, -1, -1, 1);
      cat(&b, &len, &cap, STEP, 2, "s", "i", r, "i", r, 0, n - 2, 0);
      cat(&b, &len, &cap, STEP, 3, "r", "i", d, "i", d, -1, -1, 0);
      cat(&b, &len, &cap, "    </tb>\n");
      m++;
    }
    cat(&b, &len, &cap, "  </gpu>\n");
  }
  cat(&b, &len, &cap, "</algo>\n");
  return b;
}

Test(verify, msccl_allpairs_allreduce) {
  char* xml = msccl_allpairs_xml(8);
  expect_ok(read_xml(xml));
  free(xml);
}

/* Without the reducer's dependency a peer tb may send its piece before it is reduced. */
Test(verify, msccl_allpairs_without_dependency_races) {
  char* xml = msccl_allpairs_xml(4);
  kilnPlan* p = read_xml(xml);
  free(xml);
  p->gpus[0].tbs[1].steps[2].depid = -1;
  p->gpus[0].tbs[1].steps[2].deps = -1;
  REJECTED(p, "data race on rank 0 input chunk 0", "tb 1 step 2 (s) reads it", "tb 0 step 0 (re) writes it");
}

/* The layout msccl-tools gives a ring allreduce with one channel per chunk (8 ranks, LL128, in
 * place): chunk c starts at rank c; its tb on the rank at distance p along the ring runs
 * s,rcs / rrs,rcs / rrs,r / rrcs. */
Test(verify, msccl_channel_per_chunk_ring) {
  const int n = 8;
  size_t len = 0, cap = 4096;
  char* b = malloc(cap);
  cat(&b, &len, &cap,
      "<algo name=\"allreduce_ring\" proto=\"LL128\" nchannels=\"%d\" nchunksperloop=\"%d\" "
      "ngpus=\"%d\" coll=\"allreduce\" inplace=\"1\">\n",
      n, n, n);
  for (int r = 0; r < n; r++) {
    cat(&b, &len, &cap, "  <gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"0\" s_chunks=\"0\">\n", r, n);
    for (int c = 0; c < n; c++) {
      int p = (r - c + n) % n;
      const char* t0 = p == 0 ? "s" : p == n - 1 ? "rrcs" : "rrs";
      const char* t1 = p == 0 ? "rcs" : p == n - 2 ? "r" : p == n - 1 ? NULL : "rcs";
      cat(&b, &len, &cap, "    <tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"%d\">\n", c, (r + 1) % n,
          (r + n - 1) % n, c);
      cat(&b, &len, &cap, STEP, 0, t0, "i", c, "i", c, -1, -1, 0);
      if (t1) cat(&b, &len, &cap, STEP, 1, t1, "i", c, "i", c, -1, -1, 0);
      cat(&b, &len, &cap, "    </tb>\n");
    }
    cat(&b, &len, &cap, "  </gpu>\n");
  }
  cat(&b, &len, &cap, "</algo>\n");
  expect_ok(read_xml(b));
  free(b);
}

/* ---- broken plans: the message names the place ---- */

Test(verify, offset_out_of_range) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 4, 2, false);
  p->gpus[1].tbs[0].steps[3].srcoff = 8;
  REJECTED(p, "rank 1 tb 0 step 3 (rrs): srcoff 8 + cnt 1 exceeds input buffer of 8 chunks");
}

Test(verify, dst_out_of_range) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  p->gpus[2].tbs[0].steps[1].dstoff = 3;
  p->gpus[2].tbs[0].steps[1].cnt = 2;
  REJECTED(p, "rank 2 tb 0 step 1 (rcs)", "dstoff 3 + cnt 2 exceeds output buffer of 4 chunks");
}

Test(verify, wrong_offset_reduces_different_chunks) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 4, 2, false);
  p->gpus[1].tbs[0].steps[3].srcoff = 1; /* should be 7 */
  REJECTED(p, "rank 1 tb 0 step 3 (rrs)", "input chunk 1 with input chunk 7");
}

Test(verify, wrong_offset_in_allgather) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  p->gpus[2].tbs[0].steps[1].dstoff = 3; /* receives chunk 1 into the slot of chunk 3 */
  REJECTED(p, "rank 2 output chunk", "expected input chunk 0 of rank 1");
}

Test(verify, dropped_step) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  p->gpus[2].tbs[0].nsteps = 3; /* drop the last receive and the local copy */
  REJECTED(p, "rank 1 tb 0 step 2 (rcs)", "never received", "rank 2 tb 0 receives only 2 times");
}

Test(verify, dropped_local_copy) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  p->gpus[2].tbs[0].nsteps = 4; /* drop the copy of the own input */
  REJECTED(p, "rank 2 output chunk 2", "never written");
}

Test(verify, swapped_peer) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  p->gpus[2].tbs[0].send = 0;
  REJECTED(p, "rank 3 tb 0 step 1 (rcs): unmatched receive", "rank 2 has no threadblock with send=3");
}

/* Direct allreduce on 4 ranks: peer tbs 0-2 (s, r, s, r), reducer tb 3 (cpy, re x3). */
Test(verify, dependency_cycle) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 4, 1, false);
  /* tb 0 step 2 waits on the reducer's last step; make the reducer's first wait on it. */
  p->gpus[1].tbs[3].steps[0].depid = 0;
  p->gpus[1].tbs[3].steps[0].deps = 2;
  p->gpus[1].tbs[0].steps[2].hasdep = true;
  REJECTED(p, "dependency cycle", "rank 1 tb 3 step 0", "rank 1 tb 0 step 2");
}

Test(verify, self_dependency) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  p->gpus[0].tbs[0].steps[1].depid = 0;
  p->gpus[0].tbs[0].steps[1].deps = 2;
  REJECTED(p, "rank 0 tb 0 step 1 (rcs): dependency cycle");
}

Test(verify, extra_send) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  kilnPlanAddStep(&p->gpus[1].tbs[0], KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  REJECTED(p, "rank 1 tb 0 step 5 (s)", "never received", "unconsumed");
}

Test(verify, send_without_receiver_tb) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  kilnThreadblock* tb = kilnPlanAddThreadblock(p, 0, 2, -1, 0);
  kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0, 1);
  REJECTED(p, "rank 0 tb 1 step 0 (s): unmatched send", "rank 2 has no threadblock with recv=0 chan=0");
}

Test(verify, two_senders_on_one_channel) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  kilnPlanAddThreadblock(p, 0, 1, -1, 0);
  REJECTED(p, "rank 0: tb 0 and tb 1 both send to rank 1 on channel 0");
}

Test(verify, count_mismatch) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  p->gpus[1].tbs[0].steps[1].cnt = 2;
  REJECTED(p, "rank 0 tb 0 step 0 (s) sends 1 chunks", "rank 1 tb 0 step 1 (rcs) receives 2");
}

Test(verify, depid_out_of_range) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  p->gpus[1].tbs[0].steps[2].depid = 9;
  p->gpus[1].tbs[0].steps[2].deps = 0;
  REJECTED(p, "rank 1 tb 0 step 2 (r): depid 9 out of range");
}

/* Direct reduce-scatter on 3 ranks: peer tbs 0-1 (s, r), reducer tb 2 (cpy, re, re). */
Test(verify, deps_past_end) {
  kilnPlan* p = classic("direct", KILN_COLL_REDUCESCATTER, 3, 1, false);
  p->gpus[2].tbs[2].steps[1].deps = 7;
  REJECTED(p, "rank 2 tb 2 step 1 (re): deps 7 points past the end of tb 0");
}

Test(verify, dependency_never_signalled) {
  kilnPlan* p = classic("direct", KILN_COLL_REDUCESCATTER, 3, 1, false);
  p->gpus[0].tbs[1].steps[1].hasdep = false;
  REJECTED(p, "rank 0 tb 2 step 2 (re): waits on tb 1 step 1", "hasdep");
}

Test(verify, receive_without_recv_peer) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  p->gpus[1].tbs[0].recv = -1;
  REJECTED(p, "rank 1 tb 0 step 1 (rcs): receives, but the threadblock has no recv peer");
}

Test(verify, cross_rank_deadlock) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("dl", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, 1 - r, 1 - r, 0);
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1 - r, KILN_BUF_OUTPUT, 1 - r, 1);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
  }
  REJECTED(p, "deadlock", "rank 0 tb 0 step 0 (r) waits to receive from rank 1 tb 0 step 1");
}

/* Without the dependency the reduction may read scratch before the receive fills it: a race,
 * reported whether or not an interleaving run here happens to go wrong. */
Test(verify, dropped_dependency_races) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 4, 1, false);
  p->gpus[2].tbs[3].steps[1].depid = -1;
  p->gpus[2].tbs[3].steps[1].deps = -1;
  REJECTED(p, "data race on rank 2 scratch chunk 0", "tb 3 step 1 (re) reads it",
           "tb 0 step 1 (r) writes it");
}

/* The same in a plan of 3072 threadblocks (32 ranks, 3 instances), past the 2048 to which the
 * race check was once limited: there the dropped dependency passed, the interleavings run
 * happening to order the two steps. */
Test(verify, dropped_dependency_races_in_a_large_plan) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.instances = 3;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLREDUCE, 32, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  int tbs = 0, steps = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++, tbs++) steps += p->gpus[r].tbs[t].nsteps;
  cr_assert(gt(int, tbs, 2048));
  const bool exact = KILN_VERIFY_CHECKS_ALL_RACES(tbs, steps);
  cr_assert(exact);
  kilnStep* last = NULL;
  for (int t = 0; t < p->gpus[0].ntbs; t++)
    for (int s = 0; s < p->gpus[0].tbs[t].nsteps; s++)
      if (p->gpus[0].tbs[t].steps[s].type == KILN_STEP_REDUCE && p->gpus[0].tbs[t].steps[s].depid >= 0)
        last = &p->gpus[0].tbs[t].steps[s];
  cr_assert(last != NULL);
  last->depid = last->deps = -1;
  REJECTED(p, "data race on rank 0");
}

/* A race that every interleaving run here gets right (the writer always runs first in them):
 * rank 0's copy into o[1] and its send of o[1] on another threadblock are unordered. */
Test(verify, race_found_even_when_results_are_right) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("race", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  p->nchannels = 1;
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
    /* tb 0 copies the own input to the output; tb 1 sends it from the output and receives. */
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    tb = kilnPlanAddThreadblock(p, r, 1 - r, 1 - r, 0);
    kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_OUTPUT, r, KILN_BUF_OUTPUT, r, 1);
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1 - r, KILN_BUF_OUTPUT, 1 - r, 1);
  }
  REJECTED(p, "data race on rank 0 output chunk 0", "tb 0 step 0 (cpy) writes it",
           "tb 1 step 0 (s) reads it");
}

/* With the dependency the same plan is right. */
Test(verify, ordered_by_dependency_is_no_race) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("norace", KILN_COLL_ALLGATHER, 2, &p), KILN_SUCCESS));
  for (int r = 0; r < 2; r++) {
    p->gpus[r].i_chunks = 1;
    p->gpus[r].o_chunks = 2;
    kilnThreadblock* tb = kilnPlanAddThreadblock(p, r, -1, -1, 0);
    kilnStep* cp = kilnPlanAddStep(tb, KILN_STEP_COPY, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r, 1);
    cp->hasdep = true;
    tb = kilnPlanAddThreadblock(p, r, 1 - r, 1 - r, 0);
    kilnStep* s = kilnPlanAddStep(tb, KILN_STEP_SEND, KILN_BUF_OUTPUT, r, KILN_BUF_OUTPUT, r, 1);
    s->depid = 0;
    s->deps = 0;
    kilnPlanAddStep(tb, KILN_STEP_RECV, KILN_BUF_OUTPUT, 1 - r, KILN_BUF_OUTPUT, 1 - r, 1);
  }
  expect_ok(p);
}

Test(verify, double_count) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 4, 1, false);
  p->gpus[2].tbs[3].steps[2].srcoff = 0; /* reduce the first peer's slot twice */
  REJECTED(p, "rank 2 tb 3 step 2 (re) counts rank 3's contribution to input chunk 2 twice");
}

Test(verify, missing_contribution) {
  kilnPlan* p = classic("ring", KILN_COLL_REDUCESCATTER, 4, 1, false);
  p->gpus[1].tbs[0].steps[1].type = KILN_STEP_RECV_COPY_SEND; /* forwards without adding */
  REJECTED(p, "expected input chunk 3 reduced over all 4 ranks", "rank 1 missing");
}

Test(verify, reduction_in_allgather) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  p->gpus[1].tbs[0].steps[1].type = KILN_STEP_RECV_REDUCE_COPY_SEND;
  REJECTED(p, "rank 1 tb 0 step 1 (rrcs) reduces, but allgather has no reduction");
}

Test(verify, layout_mismatch) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 1, false);
  for (int r = 0; r < 4; r++) p->gpus[r].i_chunks = 2;
  REJECTED(p, "allgather: i_chunks 2, expected o_chunks/ngpus = 1");
}

Test(verify, channel_beyond_nchannels) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  p->gpus[0].tbs[0].chan = 1;
  REJECTED(p, "rank 0 tb 0: chan 1 but the plan declares nchannels=1");
}

/* ---- bounded FIFOs ---- */

/* A ring tb sends its k chunks before its first receive: with FIFOs of k slots every rank
 * waits for room the next rank would only make after its own sends. */
Test(verify, ring_needs_chunks_plus_one_slots) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 4, 3, false);
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.fifo_depth = 4;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  vo.fifo_depth = 3;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_VERIFY));
  cr_expect(contains(kilnLastError(), "deadlock"), "%s", kilnLastError());
  cr_expect(
      contains(kilnLastError(), "rank 0 tb 0 step 3 (rcs) waits for a free slot in the FIFO to rank 1 tb 0"),
      "%s", kilnLastError());
  vo.fifo_depth = 0; /* unbounded */
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  vo.fifo_depth = -1;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_INVALID_ARGUMENT));
  kilnPlanFree(p);
}

/* A direct tb sends its k chunks to its peer, whose tb does the same, before either
 * receives: k slots are enough, k-1 are not. */
Test(verify, direct_needs_chunks_slots) {
  static const kilnColl_t colls[] = {KILN_COLL_ALLGATHER, KILN_COLL_ALLTOALL, KILN_COLL_REDUCESCATTER,
                                     KILN_COLL_ALLREDUCE};
  for (int i = 0; i < 4; i++)
    for (int ip = 0; ip < 2; ip++) {
      kilnPlan* p = classic("direct", colls[i], 5, 4, ip == 1);
      kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
      vo.fifo_depth = 4;
      cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s: %s", p->name, kilnLastError());
      vo.fifo_depth = 3;
      cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_VERIFY), "%s passed with 3 slots", p->name);
      cr_expect(contains(kilnLastError(), "waits for a free slot in the FIFO"), "%s", kilnLastError());
      kilnPlanFree(p);
    }
}

/* ---- options and scale ---- */

Test(verify, bad_options) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.schedules = 0;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(eq(int, kilnPlanVerify(NULL, NULL), KILN_ERR_INVALID_ARGUMENT));
  kilnPlanFree(p);
}

Test(verify, custom_collective_has_no_postcondition) {
  kilnPlan* p = classic("ring", KILN_COLL_ALLGATHER, 3, 1, false);
  p->coll = KILN_COLL_CUSTOM;
  cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_ERR_UNSUPPORTED));
  cr_expect(contains(kilnLastError(), "no postcondition"), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* Random interleavings and values with several seeds, only the sum op, still accept. */
Test(verify, seeds_and_single_op) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 6, 2, true);
  for (uint64_t seed = 1; seed <= 5; seed++) {
    kilnVerifyOptions vo = {8, seed, seed % 2 == 0, 0};
    cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "seed %llu: %s", (unsigned long long)seed,
              kilnLastError());
  }
  kilnPlanFree(p);
}

/* 128-rank plans stay practical (ring allreduce, 2 chunks; direct allgather). */
Test(verify, scale_128_ranks) {
  expect_ok(classic("ring", KILN_COLL_ALLREDUCE, 128, 2, false));
  expect_ok(classic("direct", KILN_COLL_ALLGATHER, 128, 1, true));
}

/* ---- TACCL's <copy> elements and their lowering to steps ---- */

/* TACCL's alltoall on n ranks (ncclize, old format): rank r keeps its own chunk with a
 * <copy i_off=r o_off=r/>, and per peer q one threadblock sends input chunk q and receives
 * output chunk q. */
static char* taccl_alltoall_xml(int n) {
  size_t len = 0, cap = 4096;
  char* b = malloc(cap);
  cat(&b, &len, &cap,
      "<algo name=\"taccl\" nchannels=\"1\" nchunksperloop=\"%d\" proto=\"Simple\" "
      "coll=\"alltoall\" inplace=\"0\" redop=\"nop\" ngpus=\"%d\">\n",
      n, n);
  for (int r = 0; r < n; r++) {
    cat(&b, &len, &cap, "  <gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"0\">\n", r, n, n);
    cat(&b, &len, &cap, "    <copy i_off=\"%d\" o_off=\"%d\"/>\n", r, r);
    for (int q = 0, t = 0; q < n; q++) {
      if (q == r) continue;
      cat(&b, &len, &cap, "    <tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"0\">\n", t++, q, q);
      cat(&b, &len, &cap, STEP, 0, "s", "i", q, "o", r, -1, -1, 0);
      cat(&b, &len, &cap, STEP, 1, "r", "i", r, "o", q, -1, -1, 0);
      cat(&b, &len, &cap, "    </tb>\n");
    }
    cat(&b, &len, &cap, "  </gpu>\n");
  }
  cat(&b, &len, &cap, "</algo>\n");
  return b;
}

static kilnPlan* taccl_alltoall(int n) {
  char* x = taccl_alltoall_xml(n);
  kilnPlan* p = read_xml(x);
  free(x);
  return p;
}

/* With its <copy> the TACCL alltoall is right: the copy puts each rank's own chunk in place. */
Test(verify, taccl_alltoall_with_copy) { expect_ok(taccl_alltoall(4)); }

/* Without the copy each rank's own output chunk is never written, and the message says which. */
Test(verify, taccl_alltoall_without_copy_names_missing_chunk) {
  kilnPlan* p = taccl_alltoall(4);
  for (int r = 0; r < 4; r++) p->gpus[r].ncopies = 0;
  REJECTED(p, "rank 0 output chunk 0", "expected input chunk 0 of rank 0", "never written");
}

/* A copy that reads the wrong input chunk is caught like a wrong step. */
Test(verify, taccl_alltoall_wrong_copy) {
  kilnPlan* p = taccl_alltoall(4);
  p->gpus[2].copies[0].i_off = 1;
  REJECTED(p, "rank 2 output chunk 2", "expected input chunk 2 of rank 2", "got input chunk 1 of rank 2");
}

/* A copy outside the buffers of an in-memory plan is an error, not an out-of-bounds access. */
Test(verify, copy_out_of_range) {
  kilnPlan* p = taccl_alltoall(4);
  p->gpus[3].copies[0].o_off = 4;
  REJECTED(p, "rank 3 copy 0", "o_off=4");
}

/* Lowered, the copies become threadblock 0 of cpy steps, and the plan still verifies. */
Test(verify, taccl_alltoall_lowered) {
  kilnPlan* p = taccl_alltoall(4);
  cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(not(kilnPlanHasCopies(p)));
  for (int r = 0; r < 4; r++) {
    const kilnGpu* g = &p->gpus[r];
    cr_assert(eq(int, g->ntbs, 4));
    cr_assert(eq(int, g->tbs[0].send, -1));
    cr_assert(eq(int, g->tbs[0].recv, -1));
    cr_assert(eq(int, g->tbs[0].nsteps, 1));
    const kilnStep* st = &g->tbs[0].steps[0];
    cr_assert(eq(int, st->type, KILN_STEP_COPY));
    cr_assert(eq(int, st->srcbuf, KILN_BUF_INPUT));
    cr_assert(eq(int, st->srcoff, r));
    cr_assert(eq(int, st->dstbuf, KILN_BUF_OUTPUT));
    cr_assert(eq(int, st->dstoff, r));
    cr_assert(eq(int, g->tbs[1].id, 1));
  }
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.schedules = 8;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  char* x = NULL;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &x), KILN_SUCCESS));
  cr_expect(not(contains(x, "<copy")), "%s", x);
  free(x);
  kilnPlanFree(p);
}

/* Allgather (2 ranks, out of place) whose send of the copied chunk already waits on a nop
 * threadblock, and whose receive waits on that send. */
static const char* ag_copy_dep_xml =
    "<algo name=\"agc\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"2\" ngpus=\"2\" coll=\"allgather\" "
    "inplace=\"0\">\n"
    " <gpu id=\"0\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "  <copy i_off=\"0\" o_off=\"0\"/>\n"
    "  <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"1\"/>\n"
    "  </tb>\n"
    "  <tb id=\"1\" send=\"1\" recv=\"-1\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"0\" "
    "deps=\"0\" hasdep=\"1\"/>\n"
    "  </tb>\n"
    "  <tb id=\"2\" send=\"-1\" recv=\"1\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"r\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"1\" "
    "deps=\"0\" hasdep=\"0\"/>\n"
    "  </tb>\n"
    " </gpu>\n"
    " <gpu id=\"1\" i_chunks=\"1\" o_chunks=\"2\" s_chunks=\"0\">\n"
    "  <copy i_off=\"0\" o_off=\"1\"/>\n"
    "  <tb id=\"0\" send=\"-1\" recv=\"-1\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"nop\" srcbuf=\"i\" srcoff=\"-1\" dstbuf=\"o\" dstoff=\"-1\" cnt=\"0\" "
    "depid=\"-1\" deps=\"-1\" hasdep=\"1\"/>\n"
    "  </tb>\n"
    "  <tb id=\"1\" send=\"0\" recv=\"-1\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"s\" srcbuf=\"o\" srcoff=\"1\" dstbuf=\"o\" dstoff=\"1\" cnt=\"1\" depid=\"0\" "
    "deps=\"0\" hasdep=\"1\"/>\n"
    "  </tb>\n"
    "  <tb id=\"2\" send=\"-1\" recv=\"0\" chan=\"0\">\n"
    "   <step s=\"0\" type=\"r\" srcbuf=\"o\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" cnt=\"1\" depid=\"1\" "
    "deps=\"0\" hasdep=\"0\"/>\n"
    "  </tb>\n"
    " </gpu>\n"
    "</algo>\n";

/* Lowering orders the send of a copied chunk after the copy through a nop in front of it (the
 * send has a dependency already), and the dependency on the send moves with it. */
Test(verify, lowered_copy_dependency_through_nop) {
  expect_ok(read_xml(ag_copy_dep_xml));
  kilnPlan* p = read_xml(ag_copy_dep_xml);
  cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS), "%s", kilnLastError());
  const kilnGpu* g = &p->gpus[0];
  cr_assert(eq(int, g->ntbs, 4));
  cr_assert(g->tbs[0].steps[0].hasdep);
  cr_assert(eq(int, g->tbs[1].steps[0].depid, -1)); /* the nop threadblock touches no chunk */
  const kilnThreadblock* send = &g->tbs[2];
  cr_assert(eq(int, send->nsteps, 2));
  cr_assert(eq(int, send->steps[0].type, KILN_STEP_NOP));
  cr_assert(eq(int, send->steps[0].depid, 0));
  cr_assert(eq(int, send->steps[0].deps, 0));
  cr_assert(eq(int, send->steps[1].type, KILN_STEP_SEND));
  cr_assert(eq(int, send->steps[1].s, 1));
  cr_assert(eq(int, send->steps[1].depid, 1));
  cr_assert(eq(int, send->steps[1].deps, 0));
  cr_assert(send->steps[1].hasdep);
  cr_assert(eq(int, g->tbs[3].steps[0].depid, 2));
  cr_assert(eq(int, g->tbs[3].steps[0].deps, 1));
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.schedules = 8;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  /* Without the nop's dependency the send races with the copy. */
  p->gpus[0].tbs[2].steps[0].depid = p->gpus[0].tbs[2].steps[0].deps = -1;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_VERIFY), "a race went unnoticed");
  kilnPlanFree(p);
}

/* A step without a dependency gets the copy's directly; a plan without copies is unchanged. */
Test(verify, lowered_copy_dependency_direct) {
  kilnPlan* p = read_xml(ag_copy_dep_xml);
  for (int r = 0; r < 2; r++) p->gpus[r].tbs[1].steps[0].depid = p->gpus[r].tbs[1].steps[0].deps = -1;
  cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, p->gpus[1].tbs[2].nsteps, 1));
  cr_assert(eq(int, p->gpus[1].tbs[2].steps[0].depid, 0));
  cr_assert(eq(int, p->gpus[1].tbs[2].steps[0].deps, 0));
  cr_assert(eq(int, p->gpus[1].tbs[3].steps[0].deps, 0));
  char *a = NULL, *b = NULL;
  cr_assert(eq(int, kilnPlanWriteMemory(p, &a), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS));
  cr_assert(eq(int, kilnPlanWriteMemory(p, &b), KILN_SUCCESS));
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  expect_ok(p);
}

/* TACCL's in-place allgather with its copies (input chunk j to output chunk r*k+j): right in
 * place and, thanks to the copies, out of place too; lowered, every step that touches the
 * aliased buffers waits for the copies, and both forms still verify. */
Test(verify, taccl_inplace_allgather_copies_lowered) {
  size_t len = 0, cap = 4096;
  char* b = malloc(cap);
  cat(&b, &len, &cap,
      "<algo name=\"taccl\" nchannels=\"1\" nchunksperloop=\"6\" proto=\"Simple\" "
      "coll=\"allgather\" inplace=\"1\" outofplace=\"1\" redop=\"nop\" ngpus=\"2\">\n");
  for (int r = 0; r < 2; r++) {
    cat(&b, &len, &cap, "  <gpu id=\"%d\" i_chunks=\"3\" o_chunks=\"6\" s_chunks=\"0\">\n", r);
    for (int c = 0; c < 3; c++) cat(&b, &len, &cap, "    <copy i_off=\"%d\" o_off=\"%d\"/>\n", c, r * 3 + c);
    cat(&b, &len, &cap, "    <tb id=\"0\" send=\"%d\" recv=\"%d\" chan=\"0\">\n", 1 - r, 1 - r);
    for (int c = 0; c < 3; c++) cat(&b, &len, &cap, STEP, c, "s", "o", r * 3 + c, "o", r * 3 + c, -1, -1, 0);
    for (int c = 0; c < 3; c++)
      cat(&b, &len, &cap, STEP, 3 + c, "r", "o", (1 - r) * 3 + c, "o", (1 - r) * 3 + c, -1, -1, 0);
    cat(&b, &len, &cap, "    </tb>\n  </gpu>\n");
  }
  cat(&b, &len, &cap, "</algo>\n");
  kilnPlan* p = read_xml(b);
  free(b);
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, p->gpus[1].tbs[0].nsteps, 3));
  cr_assert(eq(int, p->gpus[1].tbs[1].steps[0].depid, 0));
  cr_assert(eq(int, p->gpus[1].tbs[1].steps[0].deps, 2));
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* Lowering checks the copies of an in-memory plan and leaves the plan as it was on failure. */
Test(verify, lowering_rejects_bad_copy) {
  kilnPlan* p = taccl_alltoall(4);
  p->gpus[1].copies[0].cnt = 4;
  cr_assert(eq(int, kilnPlanLowerCopies(p), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "rank 1 copy 0"), "%s", kilnLastError());
  cr_assert(eq(int, p->gpus[1].ncopies, 1));
  cr_assert(eq(int, p->gpus[1].ntbs, 3));
  kilnPlanFree(p);
}

/* ---- the CLI (build/kiln) ---- */

/* kiln verify: one line per file, exit 0 only when all pass, 2 on bad usage. */
Test(verify, cli_reports_each_file) {
  char dir[64], out[8192], args[1024], good[256], bad[256];
  make_tmpdir(dir, sizeof dir);
  snprintf(good, sizeof good, "%s/good.xml", dir);
  snprintf(bad, sizeof bad, "%s/bad.xml", dir);
  kilnPlan* p = classic("ring", KILN_COLL_ALLREDUCE, 4, 1, false);
  cr_assert(eq(int, kilnPlanWriteFile(p, good), KILN_SUCCESS), "%s", kilnLastError());
  p->gpus[1].tbs[0].steps[2].srcoff = 0; /* rrs of the wrong chunk */
  cr_assert(eq(int, kilnPlanWriteFile(p, bad), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  snprintf(args, sizeof args, "verify %s", good);
  int rc = run_kiln(args, out, sizeof out);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  cr_expect(eq(int, rc, 0), "%s", out);
  cr_expect(contains(out, ": OK (allreduce, 4 ranks, 4 tbs, 28 steps)"), "%s", out);
  expect_kiln(out, sizeof out, 1, "good.xml: OK", "verify --schedules 2 --seed 9 --fifo-depth 2 %s %s", good,
              bad);
  cr_expect(contains(out, "bad.xml: rank"), "%s", out);
  cr_expect(contains(out, "tb 0 step 2 (rrs)"), "%s", out);
  expect_kiln(out, sizeof out, 2, NULL, "verify");
  expect_kiln(out, sizeof out, 2, NULL, "verify --schedules 0 x.xml");
  cr_expect(eq(int, run_kiln("verify --help", out, sizeof out), 0));
  unlink(good);
  unlink(bad);
  rmdir(dir);
}

/* ---- Every plan file the project ships ---- */

#include <dirent.h>

/* Verifies every *.xml of KILN_SOURCE_DIR/rel with the runtime's FIFO depth (8 slots) and checks
 * what the runtime needs besides (channels < 32, at most 132 threadblocks per rank: an H100's
 * SMs); returns how many it checked. */
static int verify_shipped(const char* rel) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", KILN_SOURCE_DIR, rel);
  DIR* d = opendir(dir);
  cr_assert(d != NULL, "no folder %s", dir);
  int n = 0;
  struct dirent* de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len < 5 || strcmp(de->d_name + len - 4, ".xml")) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    kilnPlan* p = NULL;
    cr_assert(eq(int, kilnPlanReadFile(path, &p), KILN_SUCCESS), "%s", kilnLastError());
    kilnVerifyOptions o = KILN_VERIFY_OPTIONS_INIT;
    o.fifo_depth = 8;
    cr_assert(eq(int, kilnPlanVerify(p, &o), KILN_SUCCESS), "%s: %s", path, kilnLastError());
    for (int r = 0; r < p->ngpus; r++) {
      cr_assert(le(int, p->gpus[r].ntbs, 132), "%s: rank %d has %d threadblocks", path, r, p->gpus[r].ntbs);
      for (int t = 0; t < p->gpus[r].ntbs; t++)
        cr_assert(lt(int, p->gpus[r].tbs[t].chan, 32), "%s: rank %d tb %d: channel %d", path, r, t,
                  p->gpus[r].tbs[t].chan);
    }
    kilnPlanFree(p);
    n++;
  }
  closedir(d);
  return n;
}

Test(verify, shipped_plans_verify_at_the_runtime_fifo_depth, .timeout = 120) {
  cr_assert(gt(int, verify_shipped("plans/baked"), 0));
  cr_assert(gt(int, verify_shipped("plans/n8"), 0));
  cr_assert(gt(int, verify_shipped("plans/n8/synth"), 0));
}

/* Appends printf-formatted text to a growing heap string. */
static void grow_printf(char** s, size_t* len, size_t* cap, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int need = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (*len + (size_t)need + 1 > *cap) {
    *cap = (*len + (size_t)need + 1) * 2;
    *s = realloc(*s, *cap);
    cr_assert(ne(ptr, (void*)*s, NULL));
  }
  va_start(ap, fmt);
  vsnprintf(*s + *len, *cap - *len, fmt, ap);
  va_end(ap);
  *len += (size_t)need;
}

/* Plans whose chunk slots or message chunks do not fit the verifier's int counts are refused
 * with their numbers (wrapped, a 17 KB and a 119 KB file would crash kiln verify, gen and bake):
 * a 256-rank allgather of 16776960 output chunks a rank and no steps;
 * a 2-rank alltoall of 256 sends of 2^24 chunks a rank. */
Test(verify, counts_past_the_verifiers_ints_refused) {
  char* s = NULL;
  size_t len = 0, cap = 0;
  const int n = 256, k = 65535;
  grow_printf(&s, &len, &cap,
              "<algo name=\"big\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"%d\" ngpus=\"%d\" "
              "coll=\"allgather\">\n",
              n * k, n);
  for (int r = 0; r < n; r++)
    grow_printf(&s, &len, &cap, "<gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"0\"/>\n", r, k,
                n * k);
  grow_printf(&s, &len, &cap, "</algo>\n");
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadMemory(s, len, "big.xml", &p), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanVerify(p, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "chunk slots"), "%s", kilnLastError());
  kilnPlanFree(p);
  len = 0;
  const int C = 1 << 24;
  grow_printf(&s, &len, &cap,
              "<algo name=\"wrap\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"%d\" ngpus=\"2\" "
              "coll=\"alltoall\">\n",
              C);
  for (int g = 0; g < 2; g++) {
    grow_printf(&s, &len, &cap, "<gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"0\">", g, C, C);
    for (int t = 0; t < 2; t++) {
      grow_printf(&s, &len, &cap, "<tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"0\">\n", t, t ? -1 : 1 - g,
                  t ? 1 - g : -1);
      for (int i = 0; i < 256; i++)
        grow_printf(&s, &len, &cap,
                    "<step s=\"%d\" type=\"%s\" srcbuf=\"i\" srcoff=\"0\" dstbuf=\"o\" dstoff=\"0\" "
                    "cnt=\"%d\" depid=\"-1\" deps=\"-1\" hasdep=\"0\"/>\n",
                    i, t ? "r" : "s", C);
      grow_printf(&s, &len, &cap, "</tb>");
    }
    grow_printf(&s, &len, &cap, "</gpu>\n");
  }
  grow_printf(&s, &len, &cap, "</algo>\n");
  cr_assert(eq(int, kilnPlanReadMemory(s, len, "wrap.xml", &p), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnPlanVerify(p, NULL), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "chunks in all"), "%s", kilnLastError());
  kilnPlanFree(p);
  free(s);
}

/* A FIFO given as a plan (or any input) is refused as not a regular file, at once: opening it
 * waited for a writer for ever. */
Test(verify, fifo_input_refused) {
  char dir[64], path[128], out[2048], args[256];
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/f.xml", dir);
  cr_assert(eq(int, mkfifo(path, 0600), 0));
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanReadFile(path, &p), KILN_ERR_IO));
  cr_assert(contains(kilnLastError(), "not a regular file"), "%s", kilnLastError());
  snprintf(args, sizeof args, "show %s", path);
  const int rc = run_kiln(args, out, sizeof out);
  if (rc >= 0) {
    cr_expect(eq(int, rc, 1), "%s", out);
    cr_expect(contains(out, "not a regular file"), "%s", out);
  }
  unlink(path);
  rmdir(dir);
}

/* ---- plans with memory steps: several calls and iterations, signals, lines ---- */

/* A plan of coll on n ranks, every rank with buffers of i, o and s chunks and `tbs` threadblocks
 * without peers (threadblock t on channel t). */
static kilnPlan* mem_plan(kilnColl_t coll, int n, int i, int o, int s, int tbs) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnPlanCreate("mem", coll, n, &p), KILN_SUCCESS));
  p->nchannels = tbs;
  for (int r = 0; r < n; r++) {
    p->gpus[r].i_chunks = i;
    p->gpus[r].o_chunks = o;
    p->gpus[r].s_chunks = s;
    for (int t = 0; t < tbs; t++) cr_assert(not(eq(ptr, kilnPlanAddThreadblock(p, r, -1, -1, t), NULL)));
  }
  return p;
}

static kilnStep* mstep(kilnPlan* p, int r, int t, kilnStepType_t type, int peer, kilnBuffer_t sb, int so,
                       kilnBuffer_t db, int dof) {
  kilnStep* s = kilnPlanAddStep(&p->gpus[r].tbs[t], type, sb, so, db, dof, 1);
  cr_assert(not(eq(ptr, s, NULL)));
  s->peer = peer;
  return s;
}
#define SIG(p, r, t, peer) \
  (mstep((p), (r), (t), KILN_STEP_SIGNAL, (peer), KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1)->cnt = 0)
#define WAIT(p, r, t, peer) \
  (mstep((p), (r), (t), KILN_STEP_WAIT, (peer), KILN_BUF_INPUT, -1, KILN_BUF_INPUT, -1)->cnt = 0)

/* A 2-rank allgather that reads the peer's input in place (zero copy): with arrival it verifies;
 * without, the first get reads the peer's input before the peer signalled that its call began. */
static kilnPlan* get_allgather(bool arrival) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 0, 1);
  for (int r = 0; r < 2; r++) {
    if (arrival) {
      SIG(p, r, 0, 1 - r);
      WAIT(p, r, 0, 1 - r);
    }
    mstep(p, r, 0, KILN_STEP_GET, 1 - r, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1 - r);
    mstep(p, r, 0, KILN_STEP_COPY, -1, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r);
    SIG(p, r, 0, 1 - r); /* done: the peer may end its call */
    WAIT(p, r, 0, 1 - r);
  }
  return p;
}

Test(verify_mem, get_after_arrival_verifies) { expect_ok(get_allgather(true)); }

Test(verify_mem, read_before_the_peers_signal_refused) {
  REJECTED(get_allgather(false),
           "rank 0 tb 0 step 0 (get) in call 0 iteration 0 reads rank 1's input chunk 0 before rank 1 "
           "signalled that "
           "its call 0 began: wait for a signal rank 1 raises in that call first [out of place]");
}

/* The peer ends its call (and its caller writes the next input) while a get may still read it. */
Test(verify_mem, peer_ending_before_a_get_refused) {
  kilnPlan* p = get_allgather(true);
  for (int r = 0; r < 2; r++) p->gpus[r].tbs[0].nsteps -= 2; /* no done signal */
  REJECTED(
      p,
      "rank 1 tb 0 step 2 (get) in call 0 iteration 2 may still read rank 0's input chunk 0 when rank 0's "
      "call 0 ends and its caller writes the next call's input: rank 0 must wait on a signal rank 1 raises "
      "after that read");
}

/* Rank 0 puts into rank 1's scratch from a threadblock that never hears from rank 1, so in the
 * epoch after next (same scratch half) it may overwrite what rank 1 has not copied out yet. */
Test(verify_mem, write_over_what_a_peer_may_still_read_refused) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 1, 2);
  /* rank 0 -> rank 1 through rank 1's scratch (threadblocks 1) */
  mstep(p, 0, 1, KILN_STEP_PUT, 1, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0);
  SIG(p, 0, 1, 1);
  WAIT(p, 1, 1, 0);
  mstep(p, 1, 1, KILN_STEP_COPY, -1, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 0);
  /* rank 1 -> rank 0 by a get after rank 1's arrival, then done (threadblocks 0) */
  SIG(p, 1, 0, 0);
  mstep(p, 1, 0, KILN_STEP_COPY, -1, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1);
  WAIT(p, 1, 0, 0);
  WAIT(p, 0, 0, 1);
  mstep(p, 0, 0, KILN_STEP_GET, 1, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 1);
  mstep(p, 0, 0, KILN_STEP_COPY, -1, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, 0);
  SIG(p, 0, 0, 1);
  REJECTED(
      p,
      "rank 0 tb 1 step 0 (put) in call 0 iteration 2 writes rank 1's scratch chunk 0 (half 0) while rank 1 "
      "tb 1 step 1 (cpy) in call 0 iteration 0 may still read what it held: nothing orders that read before "
      "the write");
}

/* A zero-copy allgather whose puts do not wait for the peer's arrival, or whose peer does not wait
 * for them to be done. */
static kilnPlan* zerocopy_allgather(int n) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("zerocopy", KILN_COLL_ALLGATHER, n, &o, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  return p;
}

/* Removes step s of rank r's threadblock 0 (a plan of no dependencies). */
static void drop_step(kilnPlan* p, int r, int s) {
  kilnThreadblock* tb = &p->gpus[r].tbs[0];
  memmove(&tb->steps[s], &tb->steps[s + 1], sizeof(kilnStep) * (size_t)(tb->nsteps - s - 1));
  tb->nsteps--;
  for (int i = 0; i < tb->nsteps; i++) tb->steps[i].s = i;
}

Test(verify_mem, put_before_the_peers_arrival_refused) {
  kilnPlan* p = zerocopy_allgather(2); /* sig, cpy, wait, put, sig, wait */
  for (int r = 0; r < 2; r++) {
    drop_step(p, r, 2); /* the arrival wait */
    drop_step(p, r, 0); /* and its sig */
  }
  REJECTED(
      p,
      "rank 0 tb 0 step 1 (put) in call 0 iteration 0 writes rank 1's output chunk 0 before rank 1's call 0 "
      "began (its caller may still read what the call before left there): wait for a signal rank 1 raises in "
      "that call first [out of place]");
}

Test(verify_mem, call_ending_before_a_peers_put_refused) {
  kilnPlan* p = zerocopy_allgather(2);
  for (int r = 0; r < 2; r++) {
    drop_step(p, r, 5); /* the done wait */
    drop_step(p, r, 4); /* and its sig */
  }
  REJECTED(p,
           "rank 0's call 0 ends before rank 1 tb 0 step 3 (put) in call 0 iteration 2, which writes rank "
           "0's output "
           "chunk 1, is ordered before its end: rank 0 must wait on a signal rank 1 raises after that write");
}

/* A Simple put read without a signal in between. */
Test(verify_mem, simple_put_read_without_signal_refused) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 1, 1);
  for (int r = 0; r < 2; r++) {
    mstep(p, r, 0, KILN_STEP_PUT, 1 - r, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0);
    mstep(p, r, 0, KILN_STEP_COPY, -1, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r);
    mstep(p, r, 0, KILN_STEP_COPY, -1, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 1 - r);
  }
  REJECTED(p,
           "rank 0 tb 0 step 2 (cpy) in call 0 iteration 0 reads rank 0's scratch chunk 0 (half 0), written "
           "by rank "
           "1 tb 0 step 0 (put) in call 0 iteration 0, but nothing orders the write before the read (a "
           "Simple put is "
           "seen only through a sig its threadblock raises after it, and the matching wait)");
}

/* The same plan with LL puts needs no signal: a line read waits for its lines. */
Test(verify_mem, line_puts_need_no_signal) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 1, 1);
  p->proto = KILN_PROTO_LL;
  for (int r = 0; r < 2; r++) {
    mstep(p, r, 0, KILN_STEP_PUT, 1 - r, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0);
    mstep(p, r, 0, KILN_STEP_COPY, -1, KILN_BUF_INPUT, 0, KILN_BUF_OUTPUT, r);
    mstep(p, r, 0, KILN_STEP_COPY, -1, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 1 - r);
  }
  expect_ok(p);
}

/* The static rules of line puts and signal streams. */
Test(verify_mem, line_put_to_a_user_buffer_refused) {
  kilnPlan* p = zerocopy_allgather(2);
  p->gpus[0].tbs[0].steps[3].proto = KILN_PROTO_LL128;
  REJECTED(p,
           "rank 0 tb 0 step 3 (put): an LL128 put writes rank 1's output buffer; line puts (LL, LL12, "
           "LL128) write "
           "only the peer's scratch");
}

Test(verify_mem, two_line_puts_to_one_scratch_chunk_refused) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 3, 1, 3, 2, 1);
  p->proto = KILN_PROTO_LL12;
  for (int r = 0; r < 3; r++)
    for (int m = 1; m < 3; m++)
      mstep(p, r, 0, KILN_STEP_PUT, (r + m) % 3, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0);
  REJECTED(p,
           "rank 2 scratch chunk 0 is written by two line puts, rank 0 tb 0 step 1 and rank 1 tb 0 step 0: a "
           "reader "
           "could not tell whose lines it holds");
}

Test(verify_mem, other_writer_of_a_line_chunk_refused) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 1, 1);
  mstep(p, 0, 0, KILN_STEP_PUT, 1, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0)->proto = KILN_PROTO_LL;
  mstep(p, 1, 0, KILN_STEP_COPY, -1, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0);
  REJECTED(
      p,
      "rank 1 tb 0 step 0 (cpy) writes rank 1 scratch chunk 0, which rank 0 tb 0 step 0's LL put writes as "
      "lines: a line chunk has no other writer");
}

Test(verify_mem, remote_read_of_lines_refused) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 1, 1);
  mstep(p, 0, 0, KILN_STEP_PUT, 1, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0)->proto = KILN_PROTO_LL;
  mstep(p, 0, 0, KILN_STEP_GET, 1, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 0);
  REJECTED(p,
           "rank 0 tb 0 step 1 (get) reads rank 1 scratch chunk 0, which holds LL lines (rank 0 tb 0 step "
           "0's put): "
           "lines are read only by the rank that holds them");
}

Test(verify_mem, step_reading_lines_and_plain_chunks_refused) {
  kilnPlan* p = mem_plan(KILN_COLL_ALLGATHER, 2, 1, 2, 2, 1);
  mstep(p, 0, 0, KILN_STEP_PUT, 1, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 0)->proto = KILN_PROTO_LL;
  kilnStep* s = mstep(p, 1, 0, KILN_STEP_COPY, -1, KILN_BUF_SCRATCH, 0, KILN_BUF_OUTPUT, 0);
  s->cnt = 2;
  REJECTED(
      p,
      "rank 1 tb 0 step 0 (cpy) reads scratch chunks 0..1, some of them lines and some not, or lines of two "
      "protocols: a step reads lines of one protocol or plain chunks");
}

Test(verify_mem, unmatched_wait_refused) {
  kilnPlan* p = get_allgather(true);
  WAIT(p, 1, 0, 0);
  REJECTED(p,
           "rank 1 tb 0 step 6 (wait): unmatched wait: wait 3 for rank 0 on channel 0, but rank 0 signals "
           "rank 1 on "
           "channel 0 only 2 times an epoch");
}

Test(verify_mem, unmatched_sig_refused) {
  kilnPlan* p = get_allgather(true);
  SIG(p, 0, 0, 1);
  REJECTED(
      p,
      "rank 0 tb 0 step 6 (sig): unmatched sig: sig 3 to rank 1 on channel 0, but rank 1 waits for rank 0 on "
      "channel 0 only 2 times an epoch");
}

Test(verify_mem, signals_of_one_stream_from_two_threadblocks_refused) {
  kilnPlan* p = get_allgather(true);
  cr_assert(not(eq(ptr, kilnPlanAddThreadblock(p, 0, -1, -1, 0), NULL)));
  SIG(p, 0, 1, 1);
  REJECTED(
      p,
      "rank 0 tb 1 step 0 (sig): rank 0 tb 0 also signals rank 1 on channel 0: the signals from one rank to "
      "another on a channel are steps of one threadblock");
}

Test(verify_mem, bad_peers_and_remote_ranges_refused) {
  kilnPlan* p = get_allgather(true);
  p->gpus[0].tbs[0].steps[2].peer = 0;
  REJECTED(p, "rank 0 tb 0 step 2 (get): peer 0 is not another rank of 0..1");
  p = get_allgather(true);
  p->gpus[1].s_chunks = 1;
  mstep(p, 0, 0, KILN_STEP_PUT, 1, KILN_BUF_INPUT, 0, KILN_BUF_SCRATCH, 1);
  REJECTED(p, "rank 0 tb 0 step 6 (put): dstoff 1 + cnt 1 exceeds rank 1's scratch buffer of 1 chunks");
}

Test(verify_mem, deadlock_names_the_signals_waited_for) {
  kilnPlan* p = get_allgather(true);
  for (int r = 0; r < 2; r++) { /* wait before signalling */
    kilnStep t = p->gpus[r].tbs[0].steps[0];
    p->gpus[r].tbs[0].steps[0] = p->gpus[r].tbs[0].steps[1];
    p->gpus[r].tbs[0].steps[1] = t;
    p->gpus[r].tbs[0].steps[0].s = 0;
    p->gpus[r].tbs[0].steps[1].s = 1;
  }
  REJECTED(
      p,
      "deadlock (4 threadblocks blocked): rank 0 tb 0 step 0 (wait) in call 0 iteration 0 waits for rank 1's "
      "signal on channel 0 (rank 1 tb 0 step 1 (sig) in call 0 iteration 0); rank 1 tb 0 step 0 (wait) in "
      "call "
      "0 iteration 0 waits for rank 0's signal on channel 0 (rank 0 tb 0 step 1 (sig) in call 0 iteration "
      "0)");
}

/* A put into a peer's input of an out-of-place call. */
Test(verify_mem, put_into_a_peers_input_refused) {
  kilnPlan* p = get_allgather(true);
  mstep(p, 0, 0, KILN_STEP_PUT, 1, KILN_BUF_OUTPUT, 0, KILN_BUF_INPUT, 0);
  REJECTED(p,
           "rank 1 input chunk 0 written by rank 0 tb 0 step 6 (put) in call 0 iteration 0 out of place: the "
           "input "
           "is the caller's send buffer, read only");
}

/* Every epoch's values are its own: a reduction whose sum misses a peer is named with its call
 * and iteration. */
Test(verify_mem, wrong_result_names_call_and_iteration) {
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  o.proto = KILN_PROTO_LL;
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("oneshot", KILN_COLL_ALLREDUCE, 3, &o, &p), KILN_SUCCESS));
  kilnThreadblock* tb = &p->gpus[1].tbs[0];
  tb->steps[tb->nsteps - 1].type = KILN_STEP_COPY; /* rank 1 copies rank 2's operand over the sum */
  REJECTED(
      p,
      "rank 1 output chunk 0 after call 0 iteration 0 (last written by rank 1 tb 0 step 4 (cpy) in call 0 "
      "iteration 0): expected input chunk 0 reduced over all 3 ranks, got input chunk 0 of call 0 iteration "
      "0 "
      "reduced over 1 of 3 ranks (rank 0 missing)");
}

/* The caller's messages: a call's inputs are written before it, its results read after it. */
Test(verify_mem, custom_collective_with_memory_steps_checks_structure_only) {
  kilnPlan* p = get_allgather(true);
  p->coll = KILN_COLL_CUSTOM;
  cr_expect(eq(int, kilnPlanVerify(p, NULL), KILN_ERR_UNSUPPORTED), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* Plans of MSCCL's steps are judged by the one-call verifier exactly as before: its messages name
 * no call or iteration. */
Test(verify_mem, plans_without_memory_steps_keep_their_messages) {
  kilnPlan* p = classic("direct", KILN_COLL_ALLREDUCE, 3, 1, false);
  p->gpus[0].tbs[0].nsteps--;
  REJECTED(
      p,
      "rank 1 tb 1 step 2 (s): send 2 to rank 0 on channel 0 is never received (rank 0 tb 0 receives only 1 "
      "times); it would stay unconsumed");
}

/* Past the clocks' limit, races are checked rank by rank: a 128-rank direct allreduce (32 512
 * threadblocks) verifies as it is, and with one dependency dropped it is refused, the check saying
 * it went by the rank's own order. */
Test(verify, races_rank_by_rank_past_the_clocks_limit, .timeout = 120) {
  kilnPlan* p = NULL;
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLREDUCE, 128, NULL, &p), KILN_SUCCESS), "%s",
            kilnLastError());
  int tbs = 0, steps = 0;
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++, tbs++) steps += p->gpus[r].tbs[t].nsteps;
  const bool exact = KILN_VERIFY_CHECKS_ALL_RACES(tbs, steps);
  cr_assert(not(exact));
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.schedules = 1;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s", kilnLastError());
  kilnStep* last = NULL;
  for (int t = 0; t < p->gpus[5].ntbs; t++)
    for (int s = 0; s < p->gpus[5].tbs[t].nsteps; s++)
      if (p->gpus[5].tbs[t].steps[s].type == KILN_STEP_REDUCE && p->gpus[5].tbs[t].steps[s].depid >= 0)
        last = &p->gpus[5].tbs[t].steps[s];
  cr_assert(last != NULL);
  last->depid = last->deps = -1;
  cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_ERR_VERIFY));
  cr_expect(contains(kilnLastError(), "data race on rank 5"), "%s", kilnLastError());
  cr_expect(contains(kilnLastError(), "rank by rank"), "%s", kilnLastError());
  kilnPlanFree(p);
}
