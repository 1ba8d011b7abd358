/* TACCL's JSON files: kiln's JSON reader (strict, every error at its line and column), the
 * topology and sketch readers (the mapping of docs/taccl.md, and their errors naming file, place,
 * key and what is wrong), and the files of plans/taccl/ synthesizing through kiln synth. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../solver/json.h"
#include "cli_run.h"
#include "kiln/synth.h"
#include "test_files.h"
#include "test_util.h"

/* ---- the JSON reader ---- */

typedef struct badJson {
  const char* text;
  const char* where; /* "name:LINE:COL:" */
  const char* what;
} badJson;

static const badJson bad_json[] = {
    {"{\"a\": 1,}", "t.json:1:9:", "a trailing ','"},
    {"[1, 2,]", "t.json:1:7:", "a trailing ','"},
    {"{\"a\": 1 // note\n}", "t.json:1:9:", "a comment"},
    {"{\"a\": \"x", "t.json:1:9:", "a string runs to the end of the file"},
    {"{\"a\": \"\\q\"}", "t.json:1:9:", "an unknown escape"},
    {"{\"a\": 01}", "t.json:1:8:", "a leading zero"},
    {"{\"a\": NaN}", "t.json:1:7:", "NaN and Infinity"},
    {"{\"a\": 1,\n \"a\": 2}", "t.json:2:2:", "the key \"a\" is given twice"},
    {"{\"a\": 1} x", "t.json:1:10:", "after the document's value"},
    {"  \n ", "t.json:2:2:", "an empty document"},
    {"{\"a\": \"x\ty\"}", "t.json:1:9:", "a raw control character"},
    {"{\"a\": \"\\udc00\"}", "t.json:1:14:", "lone low surrogate"},
    {"{\"a\" 1}", "t.json:1:6:", "expected ':'"},
    {"{\"a\": tru}", "t.json:1:7:", "expected a value"},
    {"{\"a\": 1e999}", "t.json:1:12:", "out of range"},
    {"{a: 1}", "t.json:1:2:", "expected a key"},
    {"{\"a\": \"x\xff\"}", "t.json:1:9:", "not UTF-8"},
    {"{\"a\": \"\xc0\xaf\"}", "t.json:1:8:", "not UTF-8"},     /* an overlong '/' */
    {"{\"a\": \"\xed\xa0\x80\"}", "t.json:1:8:", "not UTF-8"}, /* a surrogate */
};
#define NBAD (sizeof bad_json / sizeof bad_json[0])
KILN_INDEX_PARAMS(json, malformed_documents_refused_at_their_place, NBAD)

ParameterizedTest(int* i, json, malformed_documents_refused_at_their_place) {
  const badJson* b = &bad_json[*i];
  jsonValue* v = (jsonValue*)1;
  cr_assert(eq(int, jsonParse(b->text, strlen(b->text), "t.json", &v), KILN_ERR_PARSE), "%s", b->text);
  cr_assert(eq(ptr, v, NULL));
  cr_expect(contains(kilnLastError(), b->where), "%s -> %s", b->text, kilnLastError());
  cr_expect(contains(kilnLastError(), b->what), "%s -> %s", b->text, kilnLastError());
}

Test(json, nesting_past_the_limit_refused) {
  char text[2 * JSON_MAX_DEPTH + 8];
  size_t n = 0;
  for (int i = 0; i <= JSON_MAX_DEPTH; i++) text[n++] = '[';
  for (int i = 0; i <= JSON_MAX_DEPTH; i++) text[n++] = ']';
  jsonValue* v = NULL;
  cr_assert(eq(int, jsonParse(text, n, "deep.json", &v), KILN_ERR_PARSE));
  cr_expect(contains(kilnLastError(), "nesting deeper than"), "%s", kilnLastError());
}

Test(json, values_and_their_places) {
  static const char text[] =
      "{\n  \"n\": -12,\n  \"x\": 2.5e1,\n  \"s\": \"a\\u00e9\\ud83d\\ude00\\n\",\n"
      "  \"l\": [true, false, null, {}]\n}";
  jsonValue* v = NULL;
  cr_assert(eq(int, jsonParse(text, strlen(text), "ok.json", &v), KILN_SUCCESS), "%s", kilnLastError());
  const jsonValue* n = jsonGet(v, "n");
  cr_assert(n && n->type == JSON_NUMBER && n->integral && n->num == -12);
  cr_expect(eq(int, n->line, 2));
  cr_expect(eq(int, n->col, 8));
  const jsonValue* x = jsonGet(v, "x");
  cr_assert(x && !x->integral && x->num == 25);
  const jsonValue* s = jsonGet(v, "s");
  cr_assert(s && s->type == JSON_STRING);
  cr_expect(eq(str, s->str, "a\xc3\xa9\xf0\x9f\x98\x80\n"));
  const jsonValue* l = jsonGet(v, "l");
  cr_assert(l && l->type == JSON_ARRAY && l->n == 4);
  cr_expect(l->items[0].type == JSON_BOOL && l->items[0].b);
  cr_expect(l->items[2].type == JSON_NULL);
  cr_expect(l->items[3].type == JSON_OBJECT && l->items[3].n == 0);
  cr_expect(eq(int, l->items[3].line, 5));
  cr_expect(eq(ptr, (void*)jsonGet(v, "missing"), NULL));
  jsonFree(v);
}

/* ---- TACCL topologies ---- */

static kilnTopology* topo_of(const char* json) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadTacclMemory(json, strlen(json), "topo.json", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  return t;
}

Test(taccl, topology_one_beta_is_a_switch_with_nics) {
  kilnTopology* t = topo_of(
      "{\"name\": \"DGX2_1MB\", \"gpus_per_node\": 16, \"nics_per_node\": 8, \"alpha\": 0.7,"
      " \"node_betas_list\": [8], \"node_invbws_list\": [8], \"remote_invbw\": 107,"
      " \"remote_alpha\": 1.7, \"remote_beta\": 106}");
  cr_expect(eq(str, t->name, "DGX2_1MB"));
  cr_expect(eq(int, t->gpus_per_node, 16));
  cr_expect(eq(int, t->ntswitches, 1));
  cr_expect(eq(int, t->tswitches[0].ngpus, 16));
  cr_expect(eq(dbl, t->tswitches[0].beta_us_per_mb, 8.0));
  cr_expect(eq(int, t->ntnics, 8));
  cr_expect(eq(int, t->tnics[3].ngpus, 2));
  cr_expect(eq(int, t->tnics[3].gpus[0], 6));
  cr_expect(t->has_internode);
  cr_expect(eq(dbl, t->inter_beta_us_per_mb, 106.0));
  /* the same machine as kiln's dgx2: the same links on two nodes */
  kilnTopology* d = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &d), KILN_SUCCESS));
  t->nodes = 2;
  cr_assert(eq(int, kilnTopologyExpand(t), KILN_SUCCESS));
  cr_expect(eq(int, t->nlinks, d->nlinks));
  for (int i = 0; i < d->nlinks; i++) {
    const kilnLink* a = kilnTopologyLink(t, d->links[i].src, d->links[i].dst);
    cr_assert(not(eq(ptr, (void*)a, NULL)));
    cr_expect(eq(dbl, a->beta_us_per_mb, d->links[i].beta_us_per_mb));
  }
  kilnTopologyFree(d);
  kilnTopologyFree(t);
}

Test(taccl, topology_two_betas_is_the_ndv2_cube_mesh) {
  kilnTopology* t = topo_of(
      "{\"name\": \"NDv2\", \"gpus_per_node\": 8, \"nics_per_node\": 1, \"alpha\": 0.7,"
      " \"node_betas_list\": [23, 46], \"node_invbws_list\": [23, 46], \"remote_invbw\": 107,"
      " \"remote_alpha\": 1.7, \"remote_beta\": 106}");
  cr_expect(eq(int, t->ntlinks, 32));
  cr_expect(eq(dbl, kilnTopologyLink(t, 0, 1)->beta_us_per_mb, 23.0)); /* two NVLinks */
  cr_expect(eq(dbl, kilnTopologyLink(t, 0, 2)->beta_us_per_mb, 46.0));
  cr_expect(eq(ptr, (void*)kilnTopologyLink(t, 0, 5), NULL));
  cr_expect(eq(int, t->tnics[0].ngpus, 8));
  kilnTopologyFree(t);
}

Test(taccl, topology_custom_matrices_and_units) {
  /* links[dst][src]: 0 -> 1 two lanes, 1 -> 0 one; costs in tens of ns at 1 KB */
  kilnTopology* t = topo_of(
      "{\"name\": \"c\", \"gpus_per_node\": 2, \"alpha\": 30,"
      " \"links\": [[0, 1], [2, 0]], \"betas\": [[0, 4], [8, 0]], \"invbws\": [[0, 34], [38, 0]],"
      " \"kiln_time_unit_us\": 0.01, \"kiln_beta_bytes\": \"1K\"}");
  const kilnLink* a = kilnTopologyLink(t, 0, 1);
  cr_assert(not(eq(ptr, (void*)a, NULL)));
  cr_expect(eq(int, a->mult, 2));
  cr_expect(epsilon_eq(dbl, a->alpha_us, 0.3, 1e-12));
  cr_expect(epsilon_eq(dbl, a->beta_us_per_mb, 8 * 0.01 * 1e6 / 1024, 1e-9));
  cr_expect(eq(int, kilnTopologyLink(t, 1, 0)->mult, 1));
  cr_expect(not(t->has_internode));
  kilnTopologyFree(t);
}

typedef struct badFile {
  const char* json;
  const char* where;
  const char* what;
} badFile;

#define TOPO_OK_TAIL \
  "\"nics_per_node\": 8, \"remote_alpha\": 1.7, \"remote_beta\": 106, \"remote_invbw\": 107}"
static const badFile bad_topos[] = {
    {"{\"gpus_per_node\": 16}", "topo.json:1:1:", "the key \"name\" is missing"},
    {"{\"name\": \"x\", \"gpus_per_node\": 16, \"alpha\": 0.7, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8],"
     " \"remote_beat\": 1}",
     "topo.json:1:114:", "unknown key \"remote_beat\""},
    {"{\"name\": \"x\", \"gpus_per_node\": 16, \"alpha\": -1, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8]}",
     "topo.json:1:45:", "alpha is -1"},
    {"{\"name\": \"x\", \"gpus_per_node\": 2.5, \"alpha\": 1}",
     "topo.json:1:32:", "gpus_per_node must be an integer"},
    {"{\"name\": \"x\", \"gpus_per_node\": 16, \"alpha\": 0.7, \"node_betas_list\": [8, 9], "
     "\"node_invbws_list\": [8, 9]}",
     "topo.json:1:69:", "two betas describe TACCL's NDv2 (8 GPUs a node)"},
    {"{\"name\": \"x\", \"gpus_per_node\": 16, \"alpha\": 0.7, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8],"
     " \"nics_per_node\": 8}",
     "topo.json:1:1:", "the key \"remote_alpha\" is missing"},
    {"{\"name\": \"x\", \"gpus_per_node\": 16, \"alpha\": 0.7, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8],"
     " \"remote_alpha\": 1}",
     "topo.json:1:115:", "remote_alpha describes the links between nodes, which need nics_per_node"},
    {"{\"name\": \"x\", \"gpus_per_node\": 6, \"alpha\": 0.7, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8], " TOPO_OK_TAIL,
     "topo.json:1:115:", "nics_per_node is 8; it must be in 1..6"},
    {"{\"name\": \"x\", \"gpus_per_node\": 6, \"alpha\": 0.7, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8], "
     "\"nics_per_node\": 4, \"remote_alpha\": 1.7, \"remote_beta\": 106, \"remote_invbw\": 107}",
     "topo.json:1:115:", "does not divide the 6 GPUs"},
    {"{\"name\": \"x\", \"gpus_per_node\": 4, \"alpha\": 0.7, \"node_betas_list\": [8], "
     "\"node_invbws_list\": [8], "
     "\"nics_per_node\": 2, \"kiln_nics\": [[0, 1], [1, 2]], \"remote_alpha\": 1.7, \"remote_beta\": 106, "
     "\"remote_invbw\": 107}",
     "topo.json:1:141:", "GPU 1 is given to more than one NIC"},
    {"{\"name\": \"x\", \"gpus_per_node\": 2, \"alpha\": 1, \"links\": [[0, 1]], \"betas\": [[0, 1], [1, 0]],"
     " \"invbws\": [[0, 1], [1, 0]]}",
     "topo.json:1:56:", "links has 1 entries; it needs 2"},
    {"{\"name\": \"x\", \"gpus_per_node\": 2, \"alpha\": 1, \"links\": [[1, 1], [1, 0]], \"betas\": [[0, 1], "
     "[1, 0]],"
     " \"invbws\": [[0, 1], [1, 0]]}",
     "topo.json:1:58:", "the diagonal must be 0"},
    {"{\"name\": \"x\", \"gpus_per_node\": 2, \"alpha\": 1, \"links\": [[0, 1], [1, 0]], \"betas\": [[0, 1], "
     "[1, 0]]}",
     "topo.json:1:1:", "the key \"invbws\" is missing"},
    {"{\"name\": \"x\", \"gpus_per_node\": 8, \"alpha\": 1, \"node_betas_list\": [8], \"node_invbws_list\": "
     "[8],"
     " \"kiln_kind\": \"DGX1\"}",
     "topo.json:1:109:", "kiln_kind must be one of"},
    {"{\"name\": \"a\\u0001b\", \"gpus_per_node\": 8}", "topo.json:1:10:", "no control characters"},
};
#define NBADT (sizeof bad_topos / sizeof bad_topos[0])
KILN_INDEX_PARAMS(taccl, bad_topologies_refused_naming_place_and_key, NBADT)

ParameterizedTest(int* i, taccl, bad_topologies_refused_naming_place_and_key) {
  const badFile* b = &bad_topos[*i];
  kilnTopology* t = (kilnTopology*)1;
  cr_assert(eq(int, kilnTopologyReadTacclMemory(b->json, strlen(b->json), "topo.json", &t), KILN_ERR_PARSE),
            "%s", b->json);
  cr_assert(eq(ptr, t, NULL));
  cr_expect(contains(kilnLastError(), b->where), "%s -> %s", b->json, kilnLastError());
  cr_expect(contains(kilnLastError(), b->what), "%s -> %s", b->json, kilnLastError());
}

/* ---- TACCL sketches ---- */

/* The paper's dgx2-sk-1 as TACCL's sketch file writes it, and the same topology as TACCL's profile:
 * kiln synthesizes the same plan from them as from its own XML sketch and built-in dgx2. */
static const char sk1[] =
    "{\n"
    "  \"nnodes\": 2,\n"
    "  \"intranode_sketch\": {\"strategy\": \"switch\",\n"
    "    \"switches\": [[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]], \"switch_hyperedge_strategy\": "
    "[\"uc-min\"]},\n"
    "  \"internode_sketch\": {\"strategy\": \"relay\",\n"
    "    \"internode_conn\": {\"1\": [0], \"3\": [2], \"5\": [4], \"7\": [6], \"9\": [8], \"11\": [10], "
    "\"13\": [12], "
    "\"15\": [14]},\n"
    "    \"gpus_to_sender_rev_map\": {\"1\": [0, 1], \"3\": [2, 3], \"5\": [4, 5], \"7\": [6, 7], \"9\": [8, "
    "9],"
    " \"11\": [10, 11], \"13\": [12, 13], \"15\": [14, 15]},\n"
    "    \"enforce_ordering\": true},\n"
    "  \"symmetry_offsets\": [[2, 16], [16, 32]],\n"
    "  \"hyperparameters\": {\"input_chunkup\": 2}\n"
    "}\n";

static bool same_steps(const kilnPlan* a, const kilnPlan* b) {
  if (a->ngpus != b->ngpus || a->coll != b->coll) return false;
  for (int r = 0; r < a->ngpus; r++) {
    const kilnGpu *x = &a->gpus[r], *y = &b->gpus[r];
    if (x->ntbs != y->ntbs || x->s_chunks != y->s_chunks) return false;
    for (int t = 0; t < x->ntbs; t++) {
      const kilnThreadblock *p = &x->tbs[t], *q = &y->tbs[t];
      if (p->send != q->send || p->recv != q->recv || p->nsteps != q->nsteps) return false;
      for (int s = 0; s < p->nsteps; s++) {
        const kilnStep *u = &p->steps[s], *w = &q->steps[s];
        if (u->type != w->type || u->srcbuf != w->srcbuf || u->dstbuf != w->dstbuf ||
            u->srcoff != w->srcoff || u->dstoff != w->dstoff || u->cnt != w->cnt || u->depid != w->depid ||
            u->deps != w->deps)
          return false;
      }
    }
  }
  return true;
}

Test(taccl, dgx2_sk1_synthesizes_as_kilns_own_sketch, .timeout = 120) {
  kilnSketch* s = NULL;
  int nnodes = 0;
  cr_assert(
      eq(int, kilnSketchReadTacclMemory(sk1, strlen(sk1), "sk1-dgx2-n2.json", 16, &s, &nnodes), KILN_SUCCESS),
      "%s", kilnLastError());
  cr_expect(eq(int, nnodes, 2));
  cr_expect(eq(str, s->name, "sk1-dgx2-n2"));
  cr_expect(s->has_chunk_to_relay);
  cr_expect(eq(int, s->relay_r1, 2));
  cr_expect(eq(int, s->relay_r2, 1));
  cr_expect(eq(int, s->nconns, 8));
  kilnTopology* t = topo_of(
      "{\"name\": \"dgx2\", \"gpus_per_node\": 16, \"nics_per_node\": 8, \"alpha\": 0.7,"
      " \"node_betas_list\": [8], \"node_invbws_list\": [8], \"remote_invbw\": 107,"
      " \"remote_alpha\": 1.7, \"remote_beta\": 106}");
  t->nodes = nnodes;
  cr_assert(eq(int, kilnTopologyExpand(t), KILN_SUCCESS));
  kilnTopology* d = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &d), KILN_SUCCESS));
  kilnSketch* x = load_sketch("dgx2-sk-1");
  kilnSynthOptions o = KILN_SYNTH_OPTIONS_INIT;
  o.time_limit_s = 30;
  o.stall_s = 1;
  kilnPlan *pj = NULL, *px = NULL;
  cr_assert(eq(int, kilnSynthesize(t, s, KILN_COLL_ALLGATHER, &o, &pj, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(eq(int, kilnSynthesize(d, x, KILN_COLL_ALLGATHER, &o, &px, NULL), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_expect(same_steps(pj, px), "the TACCL files and kiln's give different plans");
  kilnPlanFree(pj);
  kilnPlanFree(px);
  kilnSketchFree(x);
  kilnSketchFree(s);
  kilnTopologyFree(d);
  kilnTopologyFree(t);
}

#define SK_HEAD                                                                                     \
  "{\"nnodes\": 2, \"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0, 1, 2, 3]], " \
  "\"switch_hyperedge_strategy\": [\"uc-max\"]}, "
#define SK_TAIL "\"symmetry_offsets\": [], \"hyperparameters\": {\"input_chunkup\": 1}}"
static const struct {
  const char* json;
  kilnResult_t r;
  const char* where;
  const char* what;
} bad_sketches[] = {
    {"{\"intranode_sketch\": {\"strategy\": \"none\"}}", KILN_ERR_PARSE,
     "sk.json:1:1:", "the key \"nnodes\" is missing"},
    {SK_HEAD "\"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"9\": [0]}}, " SK_TAIL,
     KILN_ERR_PARSE, "sk.json:1:194:", "the key \"9\" is not a GPU of a node (0..3)"},
    {SK_HEAD "\"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": {\"1\": [4]}}, " SK_TAIL,
     KILN_ERR_PARSE, "sk.json:1:195:", "internode_conn[\"1\"] (a GPU of a node) is 4"},
    {SK_HEAD "\"internode_sketch\": {\"strategy\": \"direct\", \"internode_conn\": \"direct-map\"}, " SK_TAIL,
     KILN_ERR_PARSE, "sk.json:1:161:", "internode_sketch.strategy must be \"relay\""},
    {SK_HEAD "\"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"all\"}, " SK_TAIL,
     KILN_ERR_PARSE, "sk.json:1:188:", "internode_conn \"all\" is not"},
    {SK_HEAD "\"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\","
             " \"gpus_to_sender_rev_map\": {\"0\": [0, 3], \"1\": [1, 2]}}, " SK_TAIL,
     KILN_ERR_UNSUPPORTED, "sk.json:1:228:", "gpus_to_sender_rev_map is not of the form kiln takes"},
    {SK_HEAD "\"internode_sketch\": {\"strategy\": \"relay\", \"internode_conn\": \"direct-map\", "
             "\"relays\": 1}, " SK_TAIL,
     KILN_ERR_PARSE, "sk.json:1:212:", "unknown key \"relays\""},
    {SK_HEAD SK_TAIL, KILN_ERR_PARSE,
     "sk.json:1:1:", "nnodes is 2 but the key \"internode_sketch\" is missing"},
    {"{\"nnodes\": 1, \"intranode_sketch\": {\"strategy\": \"minmax\"}, " SK_TAIL, KILN_ERR_UNSUPPORTED,
     "sk.json:1:48:", "TACCL's strategy \"minmax\" is not supported by kiln"},
    {"{\"nnodes\": 1, \"intranode_sketch\": {\"strategy\": \"switch\", \"switches\": [[0, 1]], "
     "\"switch_hyperedge_strategy\": [\"uc-most\"]}, " SK_TAIL,
     KILN_ERR_PARSE,
     "sk.json:1:110:", "switch_hyperedge_strategy[0] must be \"uc-max\", \"uc-min\" or \"free\""},
    {"{\"nnodes\": 1, \"intranode_sketch\": {\"strategy\": \"none\"}, \"symmetry_offsets\": [[1]], "
     "\"hyperparameters\": {\"input_chunkup\": 1}}",
     KILN_ERR_PARSE, "sk.json:1:78:", "symmetry_offsets[0] ([offset, group]) has 1 entries; it needs 2"},
    {"{\"nnodes\": 1, \"intranode_sketch\": {\"strategy\": \"none\"}, \"symmetry_offsets\": [], "
     "\"hyperparameters\": {\"input_chunkup\": 0}}",
     KILN_ERR_PARSE, "sk.json:1:118:", "input_chunkup is 0"},
    {"{\"nnodes\": 1, \"intranode_sketch\": {\"strategy\": \"none\"}, \"symmetry_offsets\": [], "
     "\"hyperparameters\": {\"input_chunkup\": 1, \"input_size\": \"lots\"}}",
     KILN_ERR_PARSE, "sk.json:1:135:", "input_size must be a positive size"},
};
#define NBADS (sizeof bad_sketches / sizeof bad_sketches[0])
KILN_INDEX_PARAMS(taccl, bad_sketches_refused_naming_place_and_key, NBADS)

ParameterizedTest(int* i, taccl, bad_sketches_refused_naming_place_and_key) {
  const char* json = bad_sketches[*i].json;
  kilnSketch* s = (kilnSketch*)1;
  cr_assert(
      eq(int, kilnSketchReadTacclMemory(json, strlen(json), "sk.json", 4, &s, NULL), bad_sketches[*i].r),
      "%s: %s", json, kilnLastError());
  cr_assert(eq(ptr, s, NULL));
  cr_expect(contains(kilnLastError(), bad_sketches[*i].where), "%s -> %s", json, kilnLastError());
  cr_expect(contains(kilnLastError(), bad_sketches[*i].what), "%s -> %s", json, kilnLastError());
}

Test(taccl, sketch_connections_and_paper_keys) {
  static const char json[] =
      "{\"nnodes\": 3, \"intranode_sketch\": {\"strategy\": \"none\"}, \"internode_sketch\": {\"strategy\": "
      "\"relay\","
      " \"internode_conn\": \"fully-connected\", \"beta_split\": {\"2\": 4}, \"chunk_to_relay_map\": [4, 3]},"
      " \"symmetry_offsets\": [[1, 4]], \"hyperparameters\": {\"input_chunkup\": 3, \"input_size\": "
      "\"64K\"}}";
  kilnSketch* s = NULL;
  int nnodes = 0;
  cr_assert(
      eq(int, kilnSketchReadTacclMemory(json, strlen(json), "dir/fc.json", 4, &s, &nnodes), KILN_SUCCESS),
      "%s", kilnLastError());
  cr_expect(eq(int, nnodes, 3));
  cr_expect(eq(str, s->name, "fc"));
  cr_expect(eq(int, (int)s->intra, (int)KILN_INTRA_ALL));
  cr_expect(eq(int, s->nswitches, 0));
  cr_expect(eq(int, s->nconns, 4));
  cr_expect(eq(int, s->conns[2].ndst, 4));
  cr_expect(eq(int, s->nbeta_split, 1));
  cr_expect(eq(int, s->beta_split_gpu[0], 2));
  cr_expect(eq(int, s->beta_split[0], 4));
  cr_expect(eq(int, s->relay_r1, 4));
  cr_expect(eq(int, s->relay_r2, 3));
  cr_expect(eq(int, s->nsymmetry, 1));
  cr_expect(eq(int, s->input_chunkup, 3));
  cr_expect(eq(u64, s->input_size, (uint64_t)64 << 10));
  kilnSketchFree(s);
}

/* ---- through kiln synth ---- */

/* The topology and sketch of plans/taccl/ (written as TACCL's README describes them) synthesize
 * every collective through kiln synth, and on 4 nodes as well; a bad file ends with its place
 * named, a non-zero exit and no plan written. */
Test(taccl, cli_synthesizes_taccl_files, .timeout = 240) {
  char dir[64], out[16384], args[1024];
  make_tmpdir(dir, sizeof dir);
  static const char* const colls[] = {"allgather", "alltoall", "reducescatter", "allreduce"};
  for (int c = 0; c < 4; c++)
    for (int nodes = 2; nodes <= 4; nodes += 2) {
      snprintf(
          args, sizeof args,
          "synth --topo %s/plans/taccl/topo-hgx-h100.json --sketch %s/plans/taccl/sk-hgx-h100-n2.json %s "
          "--coll %s -o %s/p.xml -q --time-limit 10 --stall 0.5",
          KILN_SOURCE_DIR, KILN_SOURCE_DIR, nodes == 2 ? "" : "--nodes 4", colls[c], dir);
      int rc = run_kiln(args, out, sizeof out);
      if (rc < 0) cr_skip_test("kiln CLI not built");
      cr_expect(eq(int, rc, 0), "%s: %s", args, out);
      snprintf(args, sizeof args, "%s/p.xml", dir);
      kilnPlan* p = NULL;
      cr_assert(eq(int, kilnPlanReadFile(args, &p), KILN_SUCCESS), "%s", kilnLastError());
      cr_expect(eq(int, p->ngpus, 8 * nodes));
      kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
      cr_expect(eq(int, kilnPlanVerify(p, &vo), KILN_SUCCESS), "%s %d nodes: %s", colls[c], nodes,
                kilnLastError());
      kilnPlanFree(p);
      unlink(args);
    }
  snprintf(args, sizeof args, "%s/bad.json", dir);
  write_text(args, "{\n  \"name\": \"x\",\n  \"gpus_per_node\": 8,\n  \"alpha\": \"fast\"\n}\n");
  expect_kiln(out, sizeof out, 1, "bad.json:4:12: alpha must be a number, not a string",
              "synth --topo %s/bad.json --sketch hgx-h100 --coll allgather -o %s/p.xml", dir, dir);
  snprintf(args, sizeof args, "%s/p.xml", dir);
  cr_expect(not(eq(int, access(args, F_OK), 0)), "a plan was written");
  snprintf(args, sizeof args, "%s/bad.json", dir);
  unlink(args);
  rmdir(dir);
}
