/* Topology model: built-ins, expansion, XML round trips, hostile XML. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/topology.h"
#include "test_files.h"
#include "test_util.h"

static char* topo_xml(const kilnTopology* t) {
  char* s = NULL;
  cr_assert(eq(int, kilnTopologyWriteMemory(t, &s), KILN_SUCCESS), "%s", kilnLastError());
  return s;
}

struct builtin_case {
  const char* name;
  int nodes;
};

/* Cases live in file-scope tables; the parameter is an index (Criterion runs each
 * parameter in a fresh process, where pointers from the parent are not valid). */
static const struct builtin_case builtin_round_trip_cases[] = {
    {"ndv2", 1},    {"ndv2", 2},     {"ndv2", 4},     {"dgx2", 1},     {"dgx2", 2},
    {"dgx2", 3},    {"hgx-h100", 1}, {"hgx-h100", 2}, {"hgx-h100", 8}, {"switch2", 1},
    {"switch5", 3}, {"switch16", 1}, {"torus2x2", 1}, {"torus3x4", 1}, {"torus4x4", 2},
};
#define N_builtin_round_trip (sizeof builtin_round_trip_cases / sizeof builtin_round_trip_cases[0])

KILN_INDEX_PARAMS(topology, builtin_round_trip, N_builtin_round_trip)

/* Written, read back and written again, a built-in gives the same XML and the same expansion. */
ParameterizedTest(int* ci, topology, builtin_round_trip) {
  const struct builtin_case* c = &builtin_round_trip_cases[*ci];
  kilnTopology *t = NULL, *u = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(c->name, c->nodes, &t), KILN_SUCCESS), "%s", kilnLastError());
  char* a = topo_xml(t);
  cr_assert(eq(int, kilnTopologyReadMemory(a, strlen(a), "rt.xml", &u), KILN_SUCCESS), "%s", kilnLastError());
  char* b = topo_xml(u);
  cr_assert(eq(str, a, b));
  cr_assert(eq(int, u->nranks, t->nranks));
  cr_assert(eq(int, u->nlinks, t->nlinks));
  for (int i = 0; i < t->nlinks; i++) {
    cr_assert(eq(int, u->links[i].src, t->links[i].src));
    cr_assert(eq(int, u->links[i].dst, t->links[i].dst));
    cr_assert(eq(int, u->links[i].internode, t->links[i].internode));
  }
  free(a);
  free(b);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
}

static const struct builtin_case index_consistent_cases[] = {
    {"ndv2", 2}, {"dgx2", 2}, {"hgx-h100", 3}, {"switch3", 2}, {"torus2x3", 2},
};
#define N_index_consistent (sizeof index_consistent_cases / sizeof index_consistent_cases[0])

KILN_INDEX_PARAMS(topology, index_consistent, N_index_consistent)

/* link_index and nic_of agree with the link and NIC arrays for every built-in. */
ParameterizedTest(int* ci, topology, index_consistent) {
  const struct builtin_case* c = &index_consistent_cases[*ci];
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin(c->name, c->nodes, &t), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, t->nranks, t->nodes * t->gpus_per_node));
  int found = 0;
  for (int a = 0; a < t->nranks; a++)
    for (int b = 0; b < t->nranks; b++) {
      int i = t->link_index[a * t->nranks + b];
      if (i < 0) continue;
      found++;
      cr_assert(eq(int, t->links[i].src, a));
      cr_assert(eq(int, t->links[i].dst, b));
      cr_assert(eq(int, t->links[i].internode, a / t->gpus_per_node != b / t->gpus_per_node));
    }
  cr_assert(eq(int, found, t->nlinks));
  for (int k = 0; k < t->nnics; k++)
    for (int j = 0; j < t->nics[k].ngpus; j++) cr_assert(eq(int, t->nic_of[t->nics[k].gpus[j]], k));
  kilnTopologyFree(t);
}

/* NDv2: the hybrid cube-mesh gives every V100 6 NVLinks, symmetric, to 4 peers. */
Test(topology, ndv2_cube_mesh) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("ndv2", 1, &t), KILN_SUCCESS));
  for (int a = 0; a < 8; a++) {
    int lanes = 0, peers = 0;
    for (int b = 0; b < 8; b++) {
      const kilnLink* l = kilnTopologyLink(t, a, b);
      const kilnLink* back = kilnTopologyLink(t, b, a);
      cr_assert(eq(int, l != NULL, back != NULL));
      if (!l) continue;
      cr_assert(eq(int, l->mult, back->mult));
      cr_assert(eq(dbl, l->alpha_us, 0.7));
      cr_assert(eq(dbl, l->beta_us_per_mb, 46.0));
      lanes += l->mult;
      peers++;
    }
    cr_assert(eq(int, lanes, 6), "GPU %d has %d NVLinks", a, lanes);
    cr_assert(eq(int, peers, 4));
  }
  cr_assert(eq(int, kilnTopologyLink(t, 0, 1)->mult, 2));
  cr_assert(eq(int, kilnTopologyLink(t, 0, 2)->mult, 1));
  cr_assert(eq(ptr, (void*)kilnTopologyLink(t, 0, 5), NULL));
  cr_assert(eq(int, t->nnics, 1));
  cr_assert(eq(int, t->nics[0].ngpus, 8));
  kilnTopologyFree(t);
}

/* DGX-2 on two nodes: 16 GPUs on one switch per node, NIC per GPU pair, IB between nodes. */
Test(topology, dgx2_two_nodes) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &t), KILN_SUCCESS));
  cr_assert(eq(int, t->nranks, 32));
  cr_assert(eq(int, t->nswitches, 2));
  cr_assert(eq(int, t->nnics, 16));
  cr_assert(eq(int, t->nlinks, 2 * 16 * 15 + 32 * 16));
  cr_assert(eq(int, t->nic_of[4], t->nic_of[5]));
  cr_assert(not(eq(int, t->nic_of[5], t->nic_of[6])));
  cr_assert(eq(int, t->nic_of[20], t->nic_of[21]));
  const kilnLink* l = kilnTopologyLink(t, 3, 7);
  cr_assert(not(eq(ptr, (void*)l, NULL)));
  cr_assert(eq(int, l->switch_id, 0));
  cr_assert(eq(dbl, l->beta_us_per_mb, 8.0));
  cr_assert(eq(int, kilnTopologyLink(t, 19, 23)->switch_id, 1));
  const kilnLink* ib = kilnTopologyLink(t, 3, 20);
  cr_assert(not(eq(ptr, (void*)ib, NULL)));
  cr_assert(ib->internode);
  cr_assert(eq(int, ib->kind, KILN_LINK_IB));
  cr_assert(eq(dbl, ib->alpha_us, 1.7));
  cr_assert(eq(dbl, ib->beta_us_per_mb, 106.0));
  kilnTopologyFree(t);
}

/* HGX-H100 carries the figures measured here (NVLink) and NDR InfiniBand. */
Test(topology, hgx_h100_figures) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("hgx-h100", 2, &t), KILN_SUCCESS));
  cr_assert(eq(dbl, kilnTopologyLink(t, 0, 7)->alpha_us, 0.74));
  cr_assert(eq(dbl, kilnTopologyLink(t, 0, 7)->beta_us_per_mb, 2.7));
  cr_assert(eq(dbl, kilnTopologyLink(t, 0, 8)->beta_us_per_mb, 20.0));
  cr_assert(eq(int, t->nnics, 16));
  kilnTopologyFree(t);
}

/* Torus: 4 distinct neighbours with wraparound; a side of 2 gives one neighbour on that axis. */
Test(topology, torus_neighbours) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("torus4x4", 1, &t), KILN_SUCCESS));
  cr_assert(eq(int, t->nlinks, 16 * 4));
  cr_assert(not(eq(ptr, (void*)kilnTopologyLink(t, 0, 3), NULL)));  /* row wraparound */
  cr_assert(not(eq(ptr, (void*)kilnTopologyLink(t, 0, 12), NULL))); /* column wraparound */
  cr_assert(eq(ptr, (void*)kilnTopologyLink(t, 0, 5), NULL));
  cr_assert(eq(int, t->nswitches, 0));
  kilnTopologyFree(t);
  cr_assert(eq(int, kilnTopologyBuiltin("torus2x2", 1, &t), KILN_SUCCESS));
  cr_assert(eq(int, t->nlinks, 4 * 2));
  kilnTopologyFree(t);
}

Test(topology, builtin_names_listed) {
  const char* names = kilnTopologyBuiltinNames();
  cr_assert(contains(names, "ndv2") && contains(names, "dgx2") && contains(names, "hgx-h100") &&
            contains(names, "switchN") && contains(names, "torusRxC"));
}

struct bad_builtin {
  const char* name;
  int nodes;
  const char* msg;
};

static const struct bad_builtin builtin_rejected_cases[] = {
    {"dgx3", 1, "known: ndv2"},          {"switch1", 1, "2 <= N"},     {"switch1025", 1, "KILN_MAX_RANKS"},
    {"switch8", 200, "KILN_MAX_RANKS"},  {"torus1x4", 1, "R, C >= 2"}, {"torus4x", 1, "unknown topology"},
    {"torus40x40", 1, "KILN_MAX_RANKS"}, {"ndv2", 0, "nodes must be"}, {"dgx2", 65, "KILN_MAX_RANKS"},
    {"switch8x", 1, "unknown topology"},
};
#define N_builtin_rejected (sizeof builtin_rejected_cases / sizeof builtin_rejected_cases[0])

KILN_INDEX_PARAMS(topology, builtin_rejected, N_builtin_rejected)

/* Unknown names and sizes beyond KILN_MAX_RANKS fail with a message saying why. */
ParameterizedTest(int* ci, topology, builtin_rejected) {
  const struct bad_builtin* c = &builtin_rejected_cases[*ci];
  kilnTopology* t = (kilnTopology*)1;
  cr_assert(eq(int, kilnTopologyBuiltin(c->name, c->nodes, &t), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(eq(ptr, t, NULL));
  cr_assert(contains(kilnLastError(), c->msg), "message: %s", kilnLastError());
}

struct bad_xml {
  const char* xml; /* NULL: use the generator named in msg's case */
  const char* msg; /* expected in the error, after "bad.xml:" */
};

#define HDR "<?xml version=\"1.0\"?>\n"
static const struct bad_xml hostile_xml_cases[] = {
    {"", "bad.xml:1: empty document"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\">\n<node>\n", "bad.xml:4: Premature end of data"},
    {HDR "<topology name=\"x\" gpus_per_node=\"abc\"><node/></topology>", "is not an integer"},
    {HDR "<topology name=\"x\" gpus_per_node=\"1000000000\"><node/></topology>", "out of range"},
    {HDR "<topology name=\"x\" gpus_per_node=\"64\" nodes=\"64\"><node/></topology>", "KILN_MAX_RANKS"},
    {HDR "<topology name=\"x\"><node/></topology>", "lacks the required attribute gpus_per_node"},
    {HDR "<topology gpus_per_node=\"2\"><node/></topology>", "lacks the required attribute name"},
    /* a misspelled optional attribute is refused, not ignored for its default */
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node>\n<link src=\"0\" dst=\"1\" alpha=\"1\" beta=\"1\" "
         "mul=\"4\"/>"
         "</node></topology>",
     "bad.xml:3: unknown attribute mul of <link> (known: src dst alpha beta mult kind)"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node><nic id=\"0\" gpus=\"0\" "
         "kind=\"ib\"/></node></topology>",
     "unknown attribute kind of <nic>"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node size=\"2\"/></topology>",
     "unknown attribute size of <node> (known: none)"},
    {HDR "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\n<topology name=\"&e;\" "
         "gpus_per_node=\"2\"><node/></topology>",
     "bad.xml:2: DOCTYPE"},
    {HDR "<!DOCTYPE lolz [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
         "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">"
         "<!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\"><!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\">"
         "<!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\"><!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\">"
         "<!ENTITY i \"&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;\">]>\n<topology name=\"&i;\" "
         "gpus_per_node=\"2\">&i;<node/></topology>",
     "DOCTYPE"},
    {"<!-- c -->\n<!DOCTYPE topology>\n<topology name=\"x\" gpus_per_node=\"2\"><node/></topology>",
     "bad.xml:2: DOCTYPE"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\">\n<node>\n<link src=\"0\" dst=\"2\" alpha=\"1\" "
         "beta=\"1\"/>\n</node></topology>",
     "bad.xml:4: attribute dst=\"2\" of <link> is out of range [0, 1]"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\">\n<node>\n<link src=\"1\" dst=\"1\" alpha=\"1\" "
         "beta=\"1\"/>\n</node></topology>",
     "bad.xml:4: self link"},
    {HDR
     "<topology name=\"x\" gpus_per_node=\"2\"><node>\n<link src=\"0\" dst=\"1\" alpha=\"1\" beta=\"1\"/>\n"
     "<link src=\"0\" dst=\"1\" alpha=\"1\" beta=\"1\"/></node></topology>",
     "bad.xml:4: link 0->1 is given twice"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node><link src=\"0\" dst=\"1\" alpha=\"nan\" "
         "beta=\"1\"/></node></topology>",
     "not a finite number"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node><link src=\"0\" dst=\"1\" alpha=\"-1\" "
         "beta=\"1\"/></node></topology>",
     "out of range"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node><link src=\"0\" dst=\"1\" "
         "alpha=\"1\"/></node></topology>",
     "lacks the required attribute beta"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node><link src=\"0\" dst=\"1\" alpha=\"1\" beta=\"1\" "
         "kind=\"warp\"/></node></topology>",
     "unknown link kind \"warp\""},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node><bogus/></node></topology>",
     "unexpected element <bogus>"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node>text</node></topology>", "unexpected text"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"></topology>", "exactly one <node>"},
    {HDR "<plan/>", "root element is <plan>, expected <topology>"},
    /* the checks of the whole template name the line of the element at fault, not the root's */
    {HDR
     "<topology name=\"x\" gpus_per_node=\"4\">\n<node>\n<switch gpus=\"0 1 1\" alpha=\"1\" beta=\"1\"/>\n"
     "</node></topology>",
     "bad.xml:4: topology x: switch switch lists GPU 1 twice"},
    {HDR "<topology name=\"x\" gpus_per_node=\"4\"><node><switch gpus=\"0 x\" alpha=\"1\" "
         "beta=\"1\"/></node></topology>",
     "not a list of integers"},
    {HDR "<topology name=\"x\" gpus_per_node=\"4\">\n<node>\n<nic id=\"0\" gpus=\"0 1\"/>\n<nic id=\"1\" "
         "gpus=\"1\"/>\n"
         "</node></topology>",
     "bad.xml:5: topology x: GPU 1 is given to more than one NIC"},
    {HDR "<topology name=\"x\" gpus_per_node=\"4\">\n<node>\n<nic id=\"0\" gpus=\"0\"/>\n<nic id=\"0\" "
         "gpus=\"1\"/>\n"
         "</node></topology>",
     "bad.xml:5: topology x: NIC id 0 is given twice"},
    {HDR
     "<topology name=\"x\" gpus_per_node=\"4\">\n<node>\n<link src=\"0\" dst=\"1\" alpha=\"1\" beta=\"1\"/>\n"
     "<switch name=\"s\" gpus=\"0 1\" alpha=\"1\" beta=\"1\"/>\n</node></topology>",
     "bad.xml:5: topology x: GPUs 1 and 0 are joined by switch s"},
    {"<topology name=\"x\" gpus_per_node=\"4\">\n<node>\n<switch name=\"s\" gpus=\"0 1\" alpha=\"1\" "
     "beta=\"1\"/>\n"
     "<switch name=\"u\" gpus=\"2 1 0\" alpha=\"1\" beta=\"1\"/>\n</node></topology>",
     "bad.xml:4: topology x: GPUs 0 and 1 are joined by switch u"}, /* no declaration: the root, on line 1, was named */
    {HDR "<topology name=\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" "
         "gpus_per_node=\"2\"><node/></topology>",
     "longer than 63"},
    /* the simulator's costs: every attribute a knob, each in its range, one <costs> */
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node/>\n<costs lunch=\"1\"/></topology>",
     "bad.xml:3: <costs> has no knob \"lunch\""},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node/>\n<costs launch=\"1\" "
         "put.LL.efficiency=\"1.5\"/></topology>",
     "bad.xml:3: <costs>: simulator parameters: put.LL.efficiency is 1.5"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node/>\n<costs sig=\"-1\"/></topology>",
     "bad.xml:3: attribute sig"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node/><costs/><costs/></topology>",
     "at most one <costs>"},
    {HDR "<topology name=\"x\" gpus_per_node=\"2\"><node/><costs><form/></costs></topology>",
     "unexpected element <form>"},
};
#define N_hostile_xml (sizeof hostile_xml_cases / sizeof hostile_xml_cases[0])

KILN_INDEX_PARAMS(topology, hostile_xml, N_hostile_xml)

/* Every kind of bad input ends in KILN_ERR_PARSE and a message naming file and line. */
ParameterizedTest(int* ci, topology, hostile_xml) {
  const struct bad_xml* c = &hostile_xml_cases[*ci];
  kilnTopology* t = (kilnTopology*)1;
  kilnResult_t r = kilnTopologyReadMemory(c->xml, strlen(c->xml), "bad.xml", &t);
  cr_assert(eq(int, r, KILN_ERR_PARSE), "result %s: %s", kilnResultName(r), kilnLastError());
  cr_assert(eq(ptr, t, NULL));
  cr_assert(contains(kilnLastError(), c->msg), "message: %s", kilnLastError());
  cr_assert(eq(int, strncmp(kilnLastError(), "bad.xml:", 8), 0), "message: %s", kilnLastError());
}

/* The simulator's costs of a topology: written with every knob, read back the same; the knobs a
 * file leaves out keep the defaults. */
Test(topology, costs_round_trip) {
  const char* xml = HDR
      "<topology name=\"x\" gpus_per_node=\"2\"><node>"
      "<switch name=\"s\" gpus=\"0 1\" alpha=\"0.74\" beta=\"2.7\"/></node>"
      "<costs launch=\"1.5\" put.LL128.efficiency=\"0.625\" tb_beta=\"30\"/></topology>";
  kilnTopology *t = NULL, *u = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(xml, strlen(xml), "c.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(t->has_costs);
  kilnSimParams want = KILN_SIM_PARAMS_INIT;
  want.launch_us = 1.5;
  want.put[KILN_PROTO_LL128].efficiency = 0.625;
  want.tb_us_per_mb = 30;
  for (int i = 0; i < kilnSimParamCount(); i++)
    cr_expect(eq(dbl, *kilnSimParamRef(&t->costs, i), *kilnSimParamRef(&want, i)), "%s", kilnSimParamName(i));
  char* a = topo_xml(t);
  cr_assert(eq(int, kilnTopologyReadMemory(a, strlen(a), "rt.xml", &u), KILN_SUCCESS), "%s", kilnLastError());
  char* b = topo_xml(u);
  cr_expect(eq(str, a, b));
  cr_expect(contains(a, "put.LL128.efficiency=\"0.625\""), "%s", a);
  for (int i = 0; i < kilnSimParamCount(); i++)
    cr_expect(eq(dbl, *kilnSimParamRef(&u->costs, i), *kilnSimParamRef(&want, i)), "%s", kilnSimParamName(i));
  free(a);
  free(b);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
  /* none given, none written */
  cr_assert(eq(int, kilnTopologyBuiltin("switch2", 1, &t), KILN_SUCCESS));
  cr_expect(not(t->has_costs));
  a = topo_xml(t);
  cr_expect(not(contains(a, "<costs")), "%s", a);
  free(a);
  kilnTopologyFree(t);
}

/* 10000 nested elements: libxml2's depth limit gives a clean error. */
Test(topology, deep_nesting) {
  size_t depth = 10000;
  char* x = malloc(depth * 8 + 128);
  cr_assert(not(eq(ptr, x, NULL)));
  strcpy(x, "<topology name=\"x\" gpus_per_node=\"2\">");
  char* p = x + strlen(x);
  for (size_t i = 0; i < depth; i++, p += 6) memcpy(p, "<node>", 7);
  kilnTopology* t = NULL;
  kilnResult_t r = kilnTopologyReadMemory(x, strlen(x), "deep.xml", &t);
  cr_assert(eq(int, r, KILN_ERR_PARSE));
  cr_assert(contains(kilnLastError(), "deep.xml:1:"), "message: %s", kilnLastError());
  cr_assert(contains(kilnLastError(), "nested too deeply"), "message: %s", kilnLastError());
  cr_assert(not(contains(kilnLastError(), "XML_PARSE_HUGE")), "advice the user cannot act on: %s",
            kilnLastError());
  free(x);
}

Test(topology, missing_file) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadFile("/nonexistent/topo.xml", &t), KILN_ERR_IO));
  cr_assert(contains(kilnLastError(), "/nonexistent/topo.xml"));
  cr_assert(eq(int, kilnTopologyReadFile("/tmp", &t), KILN_ERR_IO));
}

/* Files are written whole or not at all; reading the file gives the same topology. */
Test(topology, file_write_atomic) {
  char dir[] = "/tmp/kiln-topo-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char path[256];
  snprintf(path, sizeof path, "%s/t.xml", dir);
  kilnTopology *t = NULL, *u = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("dgx2", 2, &t), KILN_SUCCESS));
  cr_assert(eq(int, kilnTopologyWriteFile(t, path), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(int, kilnTopologyReadFile(path, &u), KILN_SUCCESS), "%s", kilnLastError());
  char *a = topo_xml(t), *b = topo_xml(u);
  cr_assert(eq(str, a, b));
  char bad[300];
  snprintf(bad, sizeof bad, "%s/missing-dir/t.xml", dir);
  cr_assert(eq(int, kilnTopologyWriteFile(t, bad), KILN_ERR_IO));
  cr_assert(not(eq(int, access(bad, F_OK), 0)));
  unlink(path);
  rmdir(dir);
  free(a);
  free(b);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
}

/* Writing to a symbolic link replaces its target and keeps the link; a pipe (as /dev/null, any
 * path that is not a regular file) is written straight, not replaced by a file; a folder is
 * refused. */
Test(topology, file_write_through_links_and_pipes) {
  char dir[] = "/tmp/kiln-topo-XXXXXX";
  cr_assert(not(eq(ptr, mkdtemp(dir), NULL)));
  char target[300], link[300], fifo[300];
  snprintf(target, sizeof target, "%s/target.xml", dir);
  snprintf(link, sizeof link, "%s/link.xml", dir);
  snprintf(fifo, sizeof fifo, "%s/pipe.xml", dir);
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch2", 1, &t), KILN_SUCCESS));
  char* want = topo_xml(t);
  write_text(target, "old");
  cr_assert(eq(int, symlink("target.xml", link), 0));
  cr_assert(eq(int, kilnTopologyWriteFile(t, link), KILN_SUCCESS), "%s", kilnLastError());
  struct stat st;
  cr_assert(eq(int, lstat(link, &st), 0));
  const bool isLink = S_ISLNK(st.st_mode);
  cr_expect(isLink, "the link is kept");
  kilnTopology* u = NULL;
  cr_assert(eq(int, kilnTopologyReadFile(target, &u), KILN_SUCCESS), "%s", kilnLastError());
  char* got = topo_xml(u);
  cr_expect(eq(str, got, want));
  cr_assert(eq(int, mkfifo(fifo, 0600), 0));
  const int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* a reader, so that the writer's open succeeds */
  cr_assert(rd >= 0);
  cr_assert(eq(int, kilnTopologyWriteFile(t, fifo), KILN_SUCCESS), "%s", kilnLastError());
  char buf[8192];
  const ssize_t n = read(rd, buf, sizeof buf - 1);
  close(rd);
  cr_assert(gt(sz, (size_t)(n > 0 ? n : 0), 0));
  buf[n] = '\0';
  cr_expect(contains(buf, "<topology name=\"switch2\""), "%s", buf);
  cr_assert(eq(int, lstat(fifo, &st), 0));
  const bool isFifo = S_ISFIFO(st.st_mode);
  cr_expect(isFifo, "the pipe is still a pipe");
  cr_expect(eq(int, kilnTopologyWriteFile(t, dir), KILN_ERR_IO));
  cr_expect(contains(kilnLastError(), "is a folder"), "%s", kilnLastError());
  unlink(fifo);
  unlink(link);
  unlink(target);
  rmdir(dir);
  free(want);
  free(got);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
}

/* kiln topo: a built-in name wins over a file of that name in the current folder (--file names
 * the file); a file that
 * cannot be read exits 1 (not 2, bad arguments); two topologies or two outputs are refused. */
Test(topology, cli_names_files_and_options) {
  char dir[64], out[8192], prev[4096];
  cr_assert(not(eq(ptr, getcwd(prev, sizeof prev), NULL)));
  make_tmpdir(dir, sizeof dir);
  cr_assert(eq(int, chdir(dir), 0));
  write_text("ndv2", "junk");
  int rc = run_kiln("topo --topo ndv2", out, sizeof out);
  if (rc < 0) {
    cr_assert(eq(int, chdir(prev), 0));
    cr_skip_test("kiln CLI not built");
  }
  cr_expect(eq(int, rc, 0), "%s", out);
  cr_expect(contains(out, "<topology name=\"ndv2\""), "%s", out);
  expect_kiln(out, sizeof out, 1, "./ndv2", "topo --topo ./ndv2");
  expect_kiln(out, sizeof out, 1, "ndv2", "topo --file ndv2"); /* --file: the file */
  cr_expect(not(contains(out, "<topology")), "%s", out);
  expect_kiln(out, sizeof out, 2, "one topology only", "topo --topo dgx2 --file x.xml");
  expect_kiln(out, sizeof out, 2, "-o given twice", "topo --topo switch2 -o %s/a.xml -o %s/b.xml", dir, dir);
  expect_kiln(out, sizeof out, 2, "-o needs a value", "topo --topo switch2 -o");
  expect_kiln(out, sizeof out, 1, NULL, "show --topo switch2 > /dev/full"); /* printf'd */
  expect_kiln(out, sizeof out, 0, "<topology name=\"switch2\"",
              "topo --topo switch2 -o /dev/stdout"); /* a pipe */
  write_text("log.txt", "kept\n"); /* -o /dev/stdout appended to a file: the file's lines before stay */
  expect_kiln(out, sizeof out, 0, NULL, "topo --topo switch2 -o /dev/stdout >> log.txt");
  FILE* f = fopen("log.txt", "r");
  cr_assert(not(eq(ptr, f, NULL)));
  char first[16] = "";
  cr_expect(not(eq(ptr, fgets(first, sizeof first, f), NULL)));
  fclose(f);
  cr_expect(eq(str, first, "kept\n"));
  unlink("log.txt");
  /* run_kiln's own 2>&1 then applies to `exit`, not to kiln */
  expect_kiln(out, sizeof out, 1, NULL, "topo --topo ./ndv2 >stdout.txt 2>/dev/null; exit $?");
  f = fopen("stdout.txt", "r");
  cr_assert(not(eq(ptr, f, NULL)));
  cr_expect(eq(int, fgetc(f), EOF), "the error goes to stderr, not into the output");
  fclose(f);
  unlink("stdout.txt");
  expect_kiln(out, sizeof out, 0, NULL, "topo --topo ndv2 -o ndv2"); /* a name, not an input */
  unlink("ndv2");
  cr_assert(eq(int, chdir(prev), 0));
  rmdir(dir);
}

/* A hand-written file: nodes default to 1, internode links only between GPUs with NICs. */
Test(topology, custom_file_expansion) {
  const char* xml = HDR
      "<topology name=\"pair\" nodes=\"3\" gpus_per_node=\"2\">\n"
      "  <node>\n"
      "    <link src=\"0\" dst=\"1\" alpha=\"0.5\" beta=\"10\" mult=\"3\" kind=\"pcie\"/>\n"
      "    <nic id=\"7\" gpus=\"1\"/>\n"
      "  </node>\n"
      "  <internode alpha=\"2\" beta=\"50\"/>\n"
      "</topology>\n";
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(xml, strlen(xml), "pair.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(eq(int, t->nranks, 6));
  cr_assert(eq(int, t->nlinks, 3 + 3 * 2));
  cr_assert(eq(int, kilnTopologyLink(t, 2, 3)->mult, 3));
  cr_assert(eq(int, kilnTopologyLink(t, 2, 3)->kind, KILN_LINK_PCIE));
  cr_assert(eq(ptr, (void*)kilnTopologyLink(t, 3, 2), NULL));
  cr_assert(not(eq(ptr, (void*)kilnTopologyLink(t, 1, 5), NULL)));
  cr_assert(eq(ptr, (void*)kilnTopologyLink(t, 0, 3), NULL));
  cr_assert(eq(int, kilnTopologyLink(t, 1, 5)->kind, KILN_LINK_IB));
  cr_assert(eq(int, t->nic_of[0], -1));
  cr_assert(eq(ptr, (void*)kilnTopologyLink(t, -1, 0), NULL));
  cr_assert(eq(ptr, (void*)kilnTopologyLink(t, 0, 6), NULL));
  kilnTopologyFree(t);
}

/* Changing nodes and expanding again follows the template. */
Test(topology, reexpand) {
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("hgx-h100", 1, &t), KILN_SUCCESS));
  t->nodes = 4;
  cr_assert(eq(int, kilnTopologyExpand(t), KILN_SUCCESS));
  cr_assert(eq(int, t->nranks, 32));
  t->nodes = 129;
  cr_assert(eq(int, kilnTopologyExpand(t), KILN_ERR_INVALID_ARGUMENT));
  cr_assert(contains(kilnLastError(), "KILN_MAX_RANKS"));
  kilnTopologyFree(t);
}

/* Doubles survive the text form exactly. */
Test(topology, doubles_exact) {
  kilnTopology *t = NULL, *u = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch2", 1, &t), KILN_SUCCESS));
  t->tswitches[0].alpha_us = 0.1 + 0.2;
  t->tswitches[0].beta_us_per_mb = 1.0 / 3.0;
  cr_assert(eq(int, kilnTopologyExpand(t), KILN_SUCCESS));
  char* a = topo_xml(t);
  cr_assert(eq(int, kilnTopologyReadMemory(a, strlen(a), "d.xml", &u), KILN_SUCCESS));
  cr_assert(eq(dbl, u->tswitches[0].alpha_us, 0.1 + 0.2));
  cr_assert(eq(dbl, u->tswitches[0].beta_us_per_mb, 1.0 / 3.0));
  free(a);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
}

/* Converts ASCII to UTF-16LE with a byte order mark, so the DOCTYPE is not visible as ASCII. */
static char* utf16(const char* s, size_t* len) {
  size_t n = strlen(s);
  char* o = malloc(2 * n + 2);
  o[0] = (char)0xFF;
  o[1] = (char)0xFE;
  for (size_t i = 0; i < n; i++) {
    o[2 + 2 * i] = s[i];
    o[3 + 2 * i] = 0;
  }
  *len = 2 * n + 2;
  return o;
}

/* Entity tricks in UTF-16 (past the ASCII prolog check) still fail cleanly, never expanded. */
Test(topology, utf16_entities_rejected) {
  const char* xxe =
      "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<!DOCTYPE t [<!ENTITY e SYSTEM "
      "\"file:///etc/passwd\">]>\n"
      "<topology name=\"x\" gpus_per_node=\"2\">&e;<node/></topology>\n";
  const char* laughs =
      "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<!DOCTYPE t [<!ENTITY a \"aaaaaaaaaa\">"
      "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">"
      "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\">"
      "<!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\"><!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\">"
      "<!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\">]>\n"
      "<topology name=\"&h;\" gpus_per_node=\"2\">&h;&h;&h;<node/></topology>\n";
  const char* docs[] = {xxe, laughs};
  for (int i = 0; i < 2; i++) {
    size_t len;
    char* x = utf16(docs[i], &len);
    kilnTopology* t = NULL;
    cr_assert(eq(int, kilnTopologyReadMemory(x, len, "u16.xml", &t), KILN_ERR_PARSE), "doc %d", i);
    cr_assert(eq(ptr, t, NULL));
    cr_assert(contains(kilnLastError(), "u16.xml:"), "%s", kilnLastError());
    cr_assert(not(contains(kilnLastError(), "root:")), "%s", kilnLastError());
    free(x);
  }
}

/* An empty file on disk is an error naming the file and line 1. */
Test(topology, empty_file) {
  char path[] = "/tmp/kiln-empty-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadFile(path, &t), KILN_ERR_PARSE));
  char want[64];
  snprintf(want, sizeof want, "%s:1: empty document", path);
  cr_assert(contains(kilnLastError(), want), "%s", kilnLastError());
  unlink(path);
}

/* Names with markup characters and non-ASCII text survive the round trip unchanged (found by
 * fuzzing: the reader used to re-escape attribute text). */
Test(topology, name_escaping_round_trip) {
  const char* xml =
      "<topology name=\"a&amp;b &lt;c&gt; &quot;q&quot; \xd8\x87 &#10;x\" "
      "gpus_per_node=\"1\"><node/></topology>";
  kilnTopology *t = NULL, *u = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(xml, strlen(xml), "n.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  cr_assert(eq(str, t->name, "a&b <c> \"q\" \xd8\x87 \nx"));
  char* a = topo_xml(t);
  cr_assert(eq(int, kilnTopologyReadMemory(a, strlen(a), "n2.xml", &u), KILN_SUCCESS), "%s", kilnLastError());
  cr_assert(eq(str, u->name, t->name));
  char* b = topo_xml(u);
  cr_assert(eq(str, a, b));
  free(a);
  free(b);
  kilnTopologyFree(t);
  kilnTopologyFree(u);
}

/* The name parsers and the file writers of every model: a NULL argument is refused, not
 * dereferenced (kilnParseSize("1M", NULL) crashed). */
Test(topology, parsers_and_writers_refuse_null) {
  cr_expect(not(kilnParseSize("1M", NULL)));
  cr_expect(not(kilnParseSize(NULL, NULL)));
  cr_expect(not(kilnCollParse("allgather", NULL)));
  cr_expect(not(kilnDataTypeParse("float", NULL)));
  cr_expect(not(kilnRedOpParse("sum", NULL)));
  cr_expect(not(kilnProtoParse("LL", NULL)));
  cr_expect(not(kilnStepTypeParse("s", NULL)));
  cr_expect(not(kilnHyperPolicyParse("free", NULL)));
  cr_expect(not(kilnOrderingParse("auto", NULL)));
  cr_expect(not(kilnLinkKindParse("nvlink", NULL)));
  uint64_t v = 0;
  cr_expect(kilnParseSize("1M", &v) && v == 1u << 20);
  cr_expect(eq(int, kilnTopologyWriteFile(NULL, "-"), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(strstr(kilnLastError(), "kilnTopologyWriteFile") != NULL, "%s", kilnLastError());
  cr_expect(eq(int, kilnPlanWriteFile(NULL, "-"), KILN_ERR_INVALID_ARGUMENT));
  cr_expect(strstr(kilnLastError(), "kilnPlanWriteFile") != NULL, "%s", kilnLastError());
  cr_expect(eq(int, kilnSketchWriteFile(NULL, "-"), KILN_ERR_INVALID_ARGUMENT));
}

/* A NUL byte in a document is refused with its line and offset (libxml2 stopped at it and what
 * followed was dropped: `<topology .../>` NUL `<garbage` read as a topology); a denormal cost
 * reads as its value (it was "out of range" by strtod's underflow). */
Test(topology, nul_byte_refused_denormal_read) {
  static const char doc[] =
      "<topology name=\"n\" gpus_per_node=\"2\">\n"
      "  <node><switch name=\"s\" gpus=\"0 1\" alpha=\"0.7\" beta=\"46\"/></node>\n"
      "</topology>\n\0<garbage";
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(doc, sizeof doc - 1, "nul.xml", &t), KILN_ERR_PARSE));
  cr_assert(contains(kilnLastError(), "nul.xml:4: a NUL byte"), "%s", kilnLastError());
  cr_assert(eq(int, kilnTopologyReadMemory(doc, strlen(doc), "ok.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnTopologyFree(t);
  static const char tiny[] =
      "<topology name=\"d\" gpus_per_node=\"2\">\n"
      "  <node><switch name=\"s\" gpus=\"0 1\" alpha=\"5e-324\" beta=\"46\"/></node>\n"
      "</topology>\n";
  t = NULL;
  cr_assert(eq(int, kilnTopologyReadMemory(tiny, strlen(tiny), "tiny.xml", &t), KILN_SUCCESS), "%s",
            kilnLastError());
  kilnTopologyFree(t);
}

/* kiln show finds a file's kind by its root element however much comment or blank comes before
 * it (it looked at the first 64 KB only, and read a topology past them as a plan). */
Test(topology, cli_show_finds_the_root_past_64k) {
  char dir[64], path[128], out[8192], args[256];
  if (run_kiln("--version", out, sizeof out) < 0) cr_skip_test("kiln CLI not built");
  kilnTopology* t = NULL;
  cr_assert(eq(int, kilnTopologyBuiltin("switch2", 1, &t), KILN_SUCCESS));
  char* xml = topo_xml(t);
  kilnTopologyFree(t);
  const char* root = strstr(xml, "<topology");
  cr_assert(not(eq(ptr, (void*)root, NULL)));
  static const char* const leads[] = {"a comment of 70000 bytes", "70000 blanks"};
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/late-root.xml", dir);
  for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++) {
    FILE* f = fopen(path, "w");
    cr_assert(not(eq(ptr, f, NULL)));
    fwrite(xml, 1, (size_t)(root - xml), f); /* the XML declaration */
    if (i == 0) fputs("<!--", f);
    for (int k = 0; k < 70000; k++) fputc(k % 80 == 79 ? '\n' : ' ', f);
    if (i == 0) fputs("-->\n", f);
    fputs(root, f);
    fclose(f);
    snprintf(args, sizeof args, "show %s", path);
    cr_expect(eq(int, run_kiln(args, out, sizeof out), 0), "%s: %s", leads[i], out);
    cr_expect(contains(out, "topology switch2: 1 node x 2 GPUs"), "%s: %s", leads[i], out);
  }
  free(xml);
  unlink(path);
  rmdir(dir);
}

/* A --nodes past KILN_MAX_RANKS is a bad argument (2) whether the topology is a built-in or a
 * file (a file's exited 1, as if the file were at fault); so is an output no file can be written
 * to (2, as synth says it: topo found it only when writing, and exited 1). */
Test(topology, cli_bad_requests_exit_2) {
  char dir[64], path[128], out[8192], args[512];
  make_tmpdir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/ndv2.xml", dir);
  snprintf(args, sizeof args, "topo --topo ndv2 -o %s", path);
  const int rc = run_kiln(args, out, sizeof out);
  if (rc < 0) cr_skip_test("kiln CLI not built");
  cr_assert(eq(int, rc, 0), "%s", out);
  expect_kiln(out, sizeof out, 2, "KILN_MAX_RANKS", "topo --topo ndv2 --nodes 200");
  expect_kiln(out, sizeof out, 2, "KILN_MAX_RANKS", "topo --file %s --nodes 200", path);
  expect_kiln(out, sizeof out, 2, NULL,
              "simulate --file %s --nodes 200 --bytes 1M --baseline ring --coll allgather", path);
  snprintf(args, sizeof args, "topo --file %s --nodes 2", path); /* a --nodes it takes */
  cr_expect(eq(int, run_kiln(args, out, sizeof out), 0), "%s", out);
  cr_expect(contains(out, "nodes=\"2\""), "%s", out);
  expect_kiln(out, sizeof out, 2, "no folder", "topo --topo ndv2 -o %s/no/t.xml", dir);
  expect_kiln(out, sizeof out, 2, "is a folder", "topo --topo ndv2 -o %s", dir);
  unlink(path);
  rmdir(dir);
}

/* kiln profile's help says what alpha and beta measure; its bad arguments are usage errors (2)
 * before it looks for GPUs, and without GPUs (or without the GPU runtime) it fails saying why,
 * writing nothing. */
Test(topology, cli_profile_arguments) {
  char dir[64], out[8192];
  if (run_kiln("--version", out, sizeof out) < 0) cr_skip_test("kiln CLI not built");
  expect_kiln(out, sizeof out, 0, "beta: the link's", "profile --help");
  expect_kiln(out, sizeof out, 0, "threadblocks", "profile --help");
  make_tmpdir(dir, sizeof dir);
  char args[256], path[128];
  snprintf(path, sizeof path, "%s/t.xml", dir);
  snprintf(args, sizeof args, "profile --gpus 2 -o %s", path);
  const int rc = run_kiln(args, out, sizeof out); /* 0 only where 2 GPUs are: it measures them */
  if (strstr(out, "without the GPU runtime")) {   /* a CPU-only build: every run is refused */
    cr_expect(eq(int, rc, 1), "%s", out);
  } else {
    expect_kiln(out, sizeof out, 2, "--reps 0", "profile --reps 0");
    expect_kiln(out, sizeof out, 2, "--gpus 17", "profile --gpus 17");
    expect_kiln(out, sizeof out, 2, "twice", "profile -o %s/a.xml -o %s/b.xml", dir, dir);
    expect_kiln(out, sizeof out, 2, NULL, "profile --bogus");
    if (strstr(out, "visible here") || strstr(out, "no GPU here")) cr_expect(eq(int, rc, 1), "%s", out);
  }
  if (rc != 0) cr_expect(access(path, F_OK) != 0, "a failed profile left %s", path);
  unlink(path);
  rmdir(dir);
}
