/* Sketches: XML round trips, the paper's dgx2-sk-1, validation against topologies. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/sketch.h"
#include "test_files.h"
#include "test_util.h"

static kilnTopology* topo(const char* name, int nodes) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(name, nodes, &t), KILN_SUCCESS), "%s", kilnLastError());
  return t;
}

static kilnSketch* sketch_ok(const char* xml) {
  kilnSketch* s = NULL;
  cr_assert(eq(int, kilnSketchReadMemory(xml, strlen(xml), "sk.xml", &s), KILN_SUCCESS), "%s",
            kilnLastError());
  return s;
}

static char* sketch_xml(const kilnSketch* s) {
  char* x = NULL;
  cr_assert(eq(int, kilnSketchWriteMemory(s, &x), KILN_SUCCESS), "%s", kilnLastError());
  return x;
}

/* The paper's Appendix A sketch reads with every field, and holds on 2 DGX-2 nodes. */
Test(sketch, dgx2_sk_1) {
  kilnSketch* s = load_sketch("dgx2-sk-1");
  cr_assert(eq(str, s->name, "dgx2-sk-1"));
  cr_assert(eq(int, s->intra, KILN_INTRA_SWITCH));
  cr_assert(eq(int, s->nswitches, 1));
  cr_assert(eq(int, s->switches[0].ngpus, 16));
  cr_assert(eq(int, s->switches[0].policy, KILN_HYPER_UC_MIN));
  cr_assert(eq(int, s->inter, KILN_INTER_RELAY));
  cr_assert(eq(int, s->nconns, 8));
  cr_assert(eq(int, s->conns[2].src, 5));
  cr_assert(eq(int, s->conns[2].dst[0], 4));
  cr_assert(eq(int, s->nbeta_split, 8));
  cr_assert(s->has_chunk_to_relay);
  cr_assert(eq(int, s->relay_r1, 2));
  cr_assert(eq(int, s->relay_r2, 1));
  cr_assert(eq(int, s->nsymmetry, 2));
  cr_assert(eq(int, s->symmetry[1].offset, 16));
  cr_assert(eq(int, s->symmetry[1].group, 32));
  cr_assert(eq(int, s->input_chunkup, 2));
  cr_assert(eq(u64, s->input_size, 1u << 20));
  kilnTopology* t = topo("dgx2", 2);
  cr_assert(eq(int, kilnSketchValidate(s, t), KILN_SUCCESS), "%s", kilnLastError());
  /* Written and read back: the same XML. */
  char* a = sketch_xml(s);
  kilnSketch* u = sketch_ok(a);
  char* b = sketch_xml(u);
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  kilnSketchFree(u);
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* A symmetry that is not an automorphism is named, with the link it breaks. */
Test(sketch, symmetry_breaks_relay) {
  kilnSketch* s = load_sketch("dgx2-sk-1");
  s->symmetry[0].offset = 1; /* odd senders would map onto even GPUs, which have no relay conn */
  kilnTopology* t = topo("dgx2", 2);
  cr_assert(eq(int, kilnSketchValidate(s, t), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "symmetry offset 1 (group 16)"), "%s", kilnLastError());
  cr_assert(contains(kilnLastError(), "link 1->16 is kept but its image 2->17 is not"), "%s",
            kilnLastError());
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

struct sym_case {
  const char* topo;
  int nodes, offset, group;
  bool ok;
};

static const struct sym_case sym_cases[] = {
    {"ndv2", 1, 4, 8, true},                                    /* the two sockets map onto each other */
    {"ndv2", 1, 1, 8, false},                                   /* 0->3 maps to 1->4, not a link */
    {"ndv2", 2, 8, 16, true},                                   /* node swap */
    {"torus4x4", 1, 4, 16, true},                               /* shift by a row */
    {"torus4x4", 1, 1, 16, false}, {"hgx-h100", 1, 3, 8, true}, /* a switch is symmetric under any rotation */
    {"dgx2", 1, 1, 16, true},      {"hgx-h100", 1, 1, 3, false}, /* 3 does not divide 8 */
};
#define N_SYM (sizeof sym_cases / sizeof sym_cases[0])

KILN_INDEX_PARAMS(sketch, symmetry_default_sketch, N_SYM)

/* Symmetries checked on the default sketch (all physical links kept). */
ParameterizedTest(int* ci, sketch, symmetry_default_sketch) {
  const struct sym_case* c = &sym_cases[*ci];
  kilnTopology* t = topo(c->topo, c->nodes);
  kilnSketch* s = NULL;
  cr_assert(eq(int, kilnSketchDefault(t, &s), KILN_SUCCESS));
  s->symmetry = malloc(sizeof *s->symmetry);
  s->symmetry[0] = (kilnSymmetry){c->offset, c->group};
  s->nsymmetry = 1;
  kilnResult_t r = kilnSketchValidate(s, t);
  if (c->ok) {
    cr_assert(eq(int, r, KILN_SUCCESS), "%s", kilnLastError());
  } else {
    cr_assert(eq(int, r, KILN_ERR_INVALID_ARGUMENT));
    char want[64];
    snprintf(want, sizeof want, "offset %d", c->offset);
    cr_assert(contains(kilnLastError(), want), "%s", kilnLastError());
  }
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

struct builtin_case {
  const char* name;
  int nodes;
};
static const struct builtin_case default_cases[] = {
    {"ndv2", 1},     {"ndv2", 2},     {"dgx2", 1},    {"dgx2", 2},
    {"hgx-h100", 1}, {"hgx-h100", 4}, {"switch3", 1}, {"torus3x3", 2},
};
#define N_DEFAULT (sizeof default_cases / sizeof default_cases[0])

KILN_INDEX_PARAMS(sketch, default_valid, N_DEFAULT)

/* The default sketch of every built-in is valid and round-trips. */
ParameterizedTest(int* ci, sketch, default_valid) {
  const struct builtin_case* c = &default_cases[*ci];
  kilnTopology* t = topo(c->name, c->nodes);
  kilnSketch* s = NULL;
  cr_assert(eq(int, kilnSketchDefault(t, &s), KILN_SUCCESS));
  cr_assert(eq(int, kilnSketchValidate(s, t), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, s->intra, KILN_INTRA_ALL));
  cr_assert(eq(int, s->inter, KILN_INTER_DIRECT));
  cr_assert(eq(int, s->nswitches, t->ntswitches));
  for (int i = 0; i < s->nswitches; i++) cr_assert(eq(int, s->switches[i].policy, KILN_HYPER_UC_MAX));
  char* a = sketch_xml(s);
  kilnSketch* u = sketch_ok(a);
  char* b = sketch_xml(u);
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  kilnSketchFree(s);
  kilnSketchFree(u);
  kilnTopologyFree(t);
}

struct invalid_case {
  const char* topo;
  int nodes;
  const char* xml;
  const char* msg;
};

static const struct invalid_case invalid_cases[] = {
    {"switch4", 1,
     "<sketch name=\"a\"><intranode strategy=\"links\"><link src=\"0\" dst=\"1\"/><link src=\"1\" "
     "dst=\"0\"/></intranode></sketch>",
     "not connected: rank 2 cannot be reached from rank 0"},
    {"switch4", 1,
     "<sketch name=\"a\"><intranode strategy=\"links\"><link src=\"0\" dst=\"1\"/><link src=\"1\" "
     "dst=\"2\"/><link src=\"2\" dst=\"3\"/></intranode></sketch>",
     "rank 1 cannot reach rank 0"},
    {"ndv2", 1,
     "<sketch name=\"a\"><intranode strategy=\"links\"><link src=\"0\" dst=\"5\"/></intranode></sketch>",
     "intranode link keeps link 0->5, but topology ndv2 has no physical link"},
    {"hgx-h100", 1,
     "<sketch name=\"a\"><intranode strategy=\"switch\"><switch gpus=\"0 1 8\"/></intranode></sketch>",
     "switch 0 names GPU 8, outside 0..7"},
    {"ndv2", 1,
     "<sketch name=\"a\"><intranode strategy=\"switch\"><switch gpus=\"0 1 4 5\"/></intranode></sketch>",
     "switch 0 keeps link 0->5, but topology ndv2 has no physical link"},
    {"hgx-h100", 2,
     "<sketch name=\"a\"><intranode strategy=\"switch\"><switch gpus=\"0 1 2 3 4 5 6 7\"/></intranode>"
     "<internode strategy=\"none\"/></sketch>",
     "rank 8 cannot be reached"},
    {"hgx-h100", 2,
     "<sketch name=\"a\"><intranode strategy=\"all\"/><internode strategy=\"relay\"><conn src=\"0\" "
     "dst=\"9\"/></internode></sketch>",
     "conn from GPU 0 names a GPU outside 0..7"},
    {"hgx-h100", 1,
     "<sketch name=\"a\"><internode strategy=\"relay\"><beta_split gpu=\"8\" "
     "split=\"2\"/></internode></sketch>",
     "beta_split gpu=8"},
    {"dgx2", 2, "<sketch name=\"a\"><symmetry offset=\"2\" group=\"5\"/></sketch>",
     "group must divide the 32 ranks"},
};
#define N_INVALID (sizeof invalid_cases / sizeof invalid_cases[0])

KILN_INDEX_PARAMS(sketch, invalid, N_INVALID)

/* Sketches that do not fit their topology are refused with the reason. */
ParameterizedTest(int* ci, sketch, invalid) {
  const struct invalid_case* c = &invalid_cases[*ci];
  kilnTopology* t = topo(c->topo, c->nodes);
  kilnSketch* s = sketch_ok(c->xml);
  cr_assert(eq(int, kilnSketchValidate(s, t), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), c->msg), "case %d: %s", *ci, kilnLastError());
  kilnSketchFree(s);
  kilnTopologyFree(t);
}

/* Relay conns must run over physical links: a GPU without a NIC cannot relay. */
Test(sketch, relay_needs_physical_link) {
  static const char topo_xml[] =
      "<topology name=\"onenic\" nodes=\"2\" gpus_per_node=\"2\"><node>"
      "<switch gpus=\"0 1\" alpha=\"1\" beta=\"1\"/><nic id=\"0\" gpus=\"0\"/></node>"
      "<internode alpha=\"2\" beta=\"3\"/></topology>";
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(topo_xml, strlen(topo_xml), "t.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnSketch* ok = sketch_ok(
      "<sketch name=\"r\"><intranode strategy=\"all\"/><internode strategy=\"relay\"><conn src=\"0\" "
      "dst=\"0\"/></internode></sketch>");
  cr_assert(eq(int, kilnSketchValidate(ok, t), KILN_SUCCESS), "%s", kilnLastError());
  kilnSketch* bad = sketch_ok(
      "<sketch name=\"r\"><intranode strategy=\"all\"/><internode strategy=\"relay\"><conn src=\"1\" "
      "dst=\"0\"/></internode></sketch>");
  cr_assert(eq(int, kilnSketchValidate(bad, t), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(
      contains(kilnLastError(), "relay conn 1->0 keeps link 1->2, but topology onenic has no physical link"),
      "%s", kilnLastError());
  kilnSketchFree(ok);
  kilnSketchFree(bad);
  kilnTopologyFree(t);
}

/* Omitted parts take the documented defaults; sizes and orderings parse. */
Test(sketch, defaults_and_sizes) {
  kilnSketch* s = sketch_ok(
      "<sketch name=\"d\"><hyperparameters input_size=\"64KB\" ordering=\"longest-path-first\"/></sketch>");
  cr_assert(eq(int, s->intra, KILN_INTRA_ALL));
  cr_assert(eq(int, s->inter, KILN_INTER_DIRECT));
  cr_assert(eq(int, s->input_chunkup, 1));
  cr_assert(eq(u64, s->input_size, 65536));
  cr_assert(eq(int, s->ordering, KILN_ORDER_LONGEST_PATH_FIRST));
  char* a = sketch_xml(s);
  cr_assert(contains(a, "input_size=\"64K\""), "%s", a);
  free(a);
  kilnSketchFree(s);
  s = sketch_ok("<sketch name=\"d\"><hyperparameters input_size=\"1000\"/></sketch>");
  a = sketch_xml(s);
  cr_assert(contains(a, "input_size=\"1000\""), "%s", a);
  free(a);
  kilnSketchFree(s);
}

struct bad_xml {
  const char* xml;
  const char* msg;
};

static const struct bad_xml hostile_cases[] = {
    {"", "bad.xml:1: empty document"},
    {"<sketch name=\"a\">\n<intranode strategy=\"ring\"/></sketch>",
     "bad.xml:2: strategy=\"ring\" is not one of: switch links all"},
    {"<sketch name=\"a\"><intranode strategy=\"switch\">\n<switch gpus=\"0 1\" "
     "policy=\"uc-mid\"/></intranode></sketch>",
     "bad.xml:2: policy=\"uc-mid\" is not one of: uc-max uc-min free"},
    {"<sketch name=\"a\"><intranode><switch gpus=\"0\"/></intranode></sketch>", "at least 2 GPUs"},
    {"<sketch name=\"a\"><intranode><link src=\"0\" dst=\"0\"/></intranode></sketch>", "self link"},
    {"<sketch name=\"a\"><intranode><link src=\"0\" dst=\"abc\"/></intranode></sketch>", "is not an integer"},
    {"<sketch name=\"a\"><intranode><link src=\"0\" dst=\"5000\"/></intranode></sketch>", "out of range"},
    {"<sketch name=\"a\"><internode strategy=\"relay\"><conn src=\"1\" dst=\"\"/></internode></sketch>",
     "lists no dst"},
    {"<sketch name=\"a\"><internode strategy=\"relay\"><conn src=\"1\" dst=\"0\"/><conn src=\"1\" "
     "dst=\"2\"/></internode></sketch>",
     "src=\"1\" is given twice"},
    {"<sketch name=\"a\"><internode><beta_split gpu=\"1\" split=\"0\"/></internode></sketch>", "split=\"0\""},
    {"<sketch name=\"a\"><internode><chunk_to_relay r1=\"2\" r2=\"2\"/></internode></sketch>", "r2 < r1"},
    {"<sketch name=\"a\"><symmetry offset=\"1\" group=\"0\"/></sketch>", "group=\"0\""},
    {"<sketch name=\"a\"><symmetry offset=\"1\"/></sketch>", "lacks the required attribute group"},
    {"<sketch name=\"a\"><hyperparameters input_size=\"lots\"/></sketch>",
     "input_size=\"lots\" is not a positive size"},
    {"<sketch name=\"a\"><hyperparameters input_size=\"0\"/></sketch>", "is not a positive size"},
    {"<sketch name=\"a\"><hyperparameters input_chunkup=\"100000\"/></sketch>", "out of range"},
    {"<sketch name=\"a\"><hyperparameters ordering=\"random\"/></sketch>", "ordering=\"random\""},
    {"<sketch name=\"a\"><intranode/><intranode/></sketch>", "may appear once each"},
    {"<sketch name=\"a\"><routing/></sketch>", "unexpected element <routing>"},
    /* a misspelled optional attribute is refused, not ignored for its default */
    {"<sketch name=\"a\"><intranode strategy=\"switch\">\n<switch gpus=\"0 1\" "
     "polcy=\"uc-min\"/></intranode></sketch>",
     "bad.xml:2: unknown attribute polcy of <switch> (known: gpus policy)"},
    {"<sketch name=\"a\"><hyperparameters input_sise=\"64K\"/></sketch>", "unknown attribute input_sise"},
    {"<sketch name=\"a\" version=\"2\"/>", "unknown attribute version of <sketch>"},
    {"<sketch/>", "lacks the required attribute name"},
    {"<!DOCTYPE s [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><sketch name=\"&e;\"/>", "DOCTYPE"},
    {"<sketch name=\"a\">\n<intranode>\n", "bad.xml:3: Premature end of data"},
};
#define N_HOSTILE (sizeof hostile_cases / sizeof hostile_cases[0])

KILN_INDEX_PARAMS(sketch, hostile, N_HOSTILE)

ParameterizedTest(int* ci, sketch, hostile) {
  const struct bad_xml* c = &hostile_cases[*ci];
  kilnSketch* s = (kilnSketch*)1;
  kilnResult_t r = kilnSketchReadMemory(c->xml, strlen(c->xml), "bad.xml", &s);
  cr_assert(eq(int, r, KILN_ERR_PARSE), "case %d: %s: %s", *ci, kilnResultName(r), kilnLastError());
  cr_assert(eq(ptr, s, NULL));
  cr_assert(contains(kilnLastError(), c->msg), "case %d: %s", *ci, kilnLastError());
  cr_assert(eq(int, strncmp(kilnLastError(), "bad.xml:", 8), 0));
}

Test(sketch, policy_names) {
  for (int p = 0; p < KILN_NUM_HYPER_POLICIES; p++) {
    kilnHyperPolicy_t back;
    cr_assert(kilnHyperPolicyParse(kilnHyperPolicyName((kilnHyperPolicy_t)p), &back));
    cr_assert(eq(int, back, p));
  }
  kilnHyperPolicy_t x;
  cr_assert(not(kilnHyperPolicyParse("max", &x)));
}

/* Elements the strategy would ignore are refused, naming the strategy and the element: switches
 * under strategy "links", links under "switch", relay conns under internode "direct". (Switches
 * under "all" give hyperedge policies: kilnSketchDefault's.) */
Test(sketch, elements_the_strategy_ignores_refused) {
  static const struct {
    const char* xml;
    const char* want;
  } cases[] = {
      {"<sketch name=\"a\"><intranode strategy=\"links\"><switch gpus=\"0 1 2 3\" policy=\"uc-max\"/>"
       "<link src=\"0\" dst=\"1\"/></intranode><hyperparameters input_size=\"1M\"/></sketch>",
       "intranode strategy \"links\" ignores the 1 <switch> element given: make the strategy \"switch\""},
      {"<sketch name=\"b\"><intranode strategy=\"switch\"><switch gpus=\"0 1 2 3\"/><link src=\"0\" "
       "dst=\"1\"/>"
       "<link src=\"1\" dst=\"0\"/></intranode><hyperparameters input_size=\"1M\"/></sketch>",
       "intranode strategy \"switch\" ignores the 2 <link> elements given: make the strategy \"links\""},
      {"<sketch name=\"c\"><intranode strategy=\"all\"/><internode strategy=\"direct\"><conn src=\"0\" "
       "dst=\"0\"/>"
       "</internode><hyperparameters input_size=\"1M\"/></sketch>",
       "internode strategy \"direct\" ignores the 1 <conn> element given: make the strategy \"relay\""},
  };
  kilnTopology* t = topo("switch4", 1);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    kilnSketch* s = sketch_ok(cases[i].xml);
    cr_assert(eq(int, kilnSketchValidate(s, t), KILN_ERR_INVALID_ARGUMENT), "case %zu validated", i);
    cr_assert(contains(kilnLastError(), cases[i].want), "case %zu: %s", i, kilnLastError());
    kilnSketchFree(s);
  }
  kilnTopologyFree(t);
}
