/* kiln show: a human summary of a topology, sketch or plan XML file (detected by its root
 * element), or of a built-in topology. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "plan_svg.h"
#include "kiln/plan.h"
#include "kiln/sketch.h"
#include "kiln/topology.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln show FILE.xml\n"
          "       kiln show --topo NAME [--nodes K]\n"
          "       kiln show PLAN.xml --svg OUT.svg [--topo NAME|FILE.xml [--nodes K]] [--bytes SIZE]\n"
          "Prints a summary of a topology (links and switches), a sketch, or a plan (per GPU:\n"
          "threadblocks, steps, peers). The kind of file is found from its root element\n"
          "(<topology>, <sketch> or <algo>).\n"
          "--svg draws the plan's schedule as the simulator runs it: a lane per link that carries\n"
          "data, each transfer a bar labelled with its chunk, over time in us. It runs on --topo\n"
          "(default: the plan's nodes of switchN, N its GPUs per node) for --bytes (the reference\n"
          "size kiln simulate takes; default 1M). The picture is written whole or not at all.\n"
          "built-in topologies: %s\n",
          kilnTopologyBuiltinNames());
}

static void show_topology(const kilnTopology* t) {
  printf("topology %s: %d node%s x %d GPUs = %d ranks\n", t->name, t->nodes, t->nodes == 1 ? "" : "s",
         t->gpus_per_node, t->nranks);
  int intra = 0, inter = 0;
  for (int i = 0; i < t->nlinks; i++) t->links[i].internode ? inter++ : intra++;
  printf("expanded: %d directed links (%d within nodes, %d between nodes), %d switches, %d NICs\n", t->nlinks,
         intra, inter, t->nswitches, t->nnics);
  if (t->ntlinks > 0) {
    printf("\nlinks per node:\n  %4s %4s %9s %12s %5s  %s\n", "src", "dst", "alpha(us)", "beta(us/MB)",
           "mult", "kind");
    for (int i = 0; i < t->ntlinks; i++) {
      const kilnLink* l = &t->tlinks[i];
      printf("  %4d %4d %9g %12g %5d  %s\n", l->src, l->dst, l->alpha_us, l->beta_us_per_mb, l->mult,
             kilnLinkKindName(l->kind));
    }
  }
  if (t->ntswitches > 0) {
    printf("\nswitches per node:\n  %-12s %9s %12s %-7s %s\n", "name", "alpha(us)", "beta(us/MB)", "kind",
           "GPUs");
    for (int s = 0; s < t->ntswitches; s++) {
      const kilnSwitch* sw = &t->tswitches[s];
      printf("  %-12s %9g %12g %-7s", sw->name, sw->alpha_us, sw->beta_us_per_mb, kilnLinkKindName(sw->kind));
      for (int i = 0; i < sw->ngpus; i++) printf(" %d", sw->gpus[i]);
      printf("\n");
    }
  }
  if (t->ntnics > 0) {
    printf("\nNICs per node:\n");
    for (int k = 0; k < t->ntnics; k++) {
      printf("  nic %d: GPUs", t->tnics[k].id);
      for (int i = 0; i < t->tnics[k].ngpus; i++) printf(" %d", t->tnics[k].gpus[i]);
      printf("\n");
    }
  }
  if (t->has_internode)
    printf("\nbetween nodes: alpha %g us, beta %g us/MB, %s, between every pair of GPUs with a NIC\n",
           t->inter_alpha_us, t->inter_beta_us_per_mb, kilnLinkKindName(t->inter_kind));
}

static void print_peers(const char* what, const bool* mark, int n) {
  printf(" %s", what);
  bool any = false;
  for (int r = 0; r < n; r++)
    if (mark[r]) {
      printf(" %d", r);
      any = true;
    }
  if (!any) printf(" -");
}

static int show_plan(const kilnPlan* p) {
  printf("plan %s: %s, %d GPUs, proto %s, %d channel%s, %d chunks per loop", p->name,
         p->has_coll ? kilnCollName(p->coll) : "(no coll)", p->ngpus, kilnProtoName(p->proto), p->nchannels,
         p->nchannels == 1 ? "" : "s", p->nchunksperloop);
  if (p->has_inplace || p->has_outofplace)
    printf(", %s", p->inplace && p->outofplace ? "in and out of place"
                   : p->inplace                ? "in place"
                                               : "out of place");
  if (p->has_minmax) {
    if (p->max_bytes == UINT64_MAX)
      printf(", %llu B and up", (unsigned long long)p->min_bytes);
    else
      printf(", %llu..%llu B", (unsigned long long)p->min_bytes, (unsigned long long)p->max_bytes);
  }
  if (p->has_redop) printf(", redop %s", p->redop);
  printf("\n");
  bool* sends = calloc((size_t)p->ngpus, sizeof *sends);
  bool* recvs = calloc((size_t)p->ngpus, sizeof *recvs);
  if (!sends || !recvs) {
    free(sends);
    free(recvs);
    fprintf(stderr, "kiln show: out of memory\n");
    return 1;
  }
  long total_tbs = 0, total_steps = 0;
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    long steps = 0;
    memset(sends, 0, (size_t)p->ngpus * sizeof *sends);
    memset(recvs, 0, (size_t)p->ngpus * sizeof *recvs);
    for (int i = 0; i < g->ntbs; i++) {
      steps += g->tbs[i].nsteps;
      if (g->tbs[i].send >= 0 && g->tbs[i].send < p->ngpus) sends[g->tbs[i].send] = true;
      if (g->tbs[i].recv >= 0 && g->tbs[i].recv < p->ngpus) recvs[g->tbs[i].recv] = true;
    }
    printf("  gpu %d: chunks i/o/s %d/%d/%d, %d threadblock%s, %ld steps,", r, g->i_chunks, g->o_chunks,
           g->s_chunks, g->ntbs, g->ntbs == 1 ? "" : "s", steps);
    print_peers("sends to", sends, p->ngpus);
    printf(",");
    print_peers("receives from", recvs, p->ngpus);
    if (g->ncopies > 0)
      printf(", %d copy element%s (input to output first)", g->ncopies, g->ncopies == 1 ? "" : "s");
    printf("\n");
    total_tbs += g->ntbs;
    total_steps += steps;
  }
  printf("total: %ld threadblocks, %ld steps\n", total_tbs, total_steps);
  free(sends);
  free(recvs);
  return 0;
}

static void show_sketch(const kilnSketch* s) {
  printf("sketch %s\n", s->name);
  printf("  intra-node: %s", kilnIntraStrategyName(s->intra));
  if (s->nswitches) printf(", %d switch hyperedge%s", s->nswitches, s->nswitches == 1 ? "" : "s");
  if (s->nlinks) printf(", %d links", s->nlinks);
  printf("\n");
  for (int i = 0; i < s->nswitches; i++) {
    printf("    switch %d (%s):", i, kilnHyperPolicyName(s->switches[i].policy));
    for (int j = 0; j < s->switches[i].ngpus; j++) printf(" %d", s->switches[i].gpus[j]);
    printf("\n");
  }
  for (int i = 0; i < s->nlinks; i++) printf("    link %d -> %d\n", s->links[i].src, s->links[i].dst);
  printf("  inter-node: %s\n", kilnInterStrategyName(s->inter));
  for (int i = 0; i < s->nconns; i++) {
    printf("    GPU %d sends to GPU", s->conns[i].src);
    for (int j = 0; j < s->conns[i].ndst; j++) printf(" %d", s->conns[i].dst[j]);
    printf(" of other nodes\n");
  }
  for (int i = 0; i < s->nbeta_split; i++)
    printf("    GPU %d uses 1/%d of the NIC bandwidth\n", s->beta_split_gpu[i], s->beta_split[i]);
  if (s->has_chunk_to_relay)
    printf("    chunk of rank p leaves through GPU (p/%d)*%d + %d\n", s->relay_r1, s->relay_r1, s->relay_r2);
  for (int i = 0; i < s->nsymmetry; i++)
    printf("  symmetry: offset %d, group %d\n", s->symmetry[i].offset, s->symmetry[i].group);
  printf("  input: %d chunk%s per rank, %llu bytes; ordering %s\n", s->input_chunkup,
         s->input_chunkup == 1 ? "" : "s", (unsigned long long)s->input_size, kilnOrderingName(s->ordering));
}

/* kiln show PLAN --svg OUT: the plan's schedule on a topology (--topo, or switchN nodes). */
static int show_svg(const char* file, kilnTopoArgs* ta, const char* svg, uint64_t bytes) {
  kilnPlan* p = NULL;
  if (kilnPlanReadFile(file, &p) != KILN_SUCCESS) {
    cliFileErrorTo(stderr, "kiln show: ", file, kilnLastError());
    return 1;
  }
  kilnTopology* t = NULL;
  int rc = 1;
  if (ta->name) {
    rc = cliLoadTopo(ta, &t);
    if (rc != 0) goto out_free;
  } else {
    const int nodes = p->nnodes > 0 ? p->nnodes : 1, g = p->ngpus / nodes;
    char name[32];
    snprintf(name, sizeof name, "switch%d", g);
    if (g < 2 || kilnTopologyBuiltin(name, nodes, &t) != KILN_SUCCESS) {
      fprintf(stderr, "kiln show: %s: no built-in topology fits %d ranks on %d node%s; give --topo\n", file,
              p->ngpus, nodes, nodes == 1 ? "" : "s");
      rc = 2;
      goto out_free;
    }
  }
  if (t->nranks != p->ngpus) {
    fprintf(stderr, "kiln show: %s has %d ranks but topology %s has %d\n", file, p->ngpus, t->name,
            t->nranks);
    rc = 2;
    goto out_free;
  }
  char err[1024];
  rc = cliPlanSvg(p, t, bytes, svg, err, sizeof err);
  if (rc != 0) fprintf(stderr, "kiln show: %s\n", err);
out_free:
  kilnTopologyFree(t);
  kilnPlanFree(p);
  return rc;
}

int cmd_show(int argc, char** argv) {
  kilnTopoArgs ta = {0};
  const char* file = NULL;
  const char* svg = NULL;
  uint64_t bytes = 1u << 20;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--svg") || !strcmp(argv[i], "--bytes")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "kiln show: %s needs a value\n", argv[i]);
        return 2;
      }
      if (!strcmp(argv[i], "--svg")) {
        svg = argv[++i];
      } else if (!kilnParseSize(argv[++i], &bytes) || bytes == 0) {
        fprintf(stderr, "kiln show: bad --bytes '%s'\n", argv[i]);
        return 2;
      }
      continue;
    }
    int used = cliTopoArg(&ta, argc, argv, i);
    if (used < 0) return 2;
    if (used > 0) {
      i += used - 1;
      continue;
    }
    if (argv[i][0] == '-' || file) {
      fprintf(stderr, "kiln show: unexpected argument '%s'\n", argv[i]);
      help(stderr);
      return 2;
    }
    file = argv[i];
  }
  if (!file && !ta.name) {
    fprintf(stderr, "kiln show: no file given\n");
    help(stderr);
    return 2;
  }
  if (svg) {
    if (!file) {
      fprintf(stderr, "kiln show: --svg draws a plan: give PLAN.xml\n");
      return 2;
    }
    const char* const ins[] = {file, ta.name};
    if (!cliOutputApart("show", svg, ins, ta.name ? 2 : 1) || !cliOutputWritable("show", svg)) return 2;
    return show_svg(file, &ta, svg, bytes);
  }
  if (file && ta.name) {
    fprintf(stderr, "kiln show: give a file or --topo, not both (--topo goes with a plan's --svg)\n");
    return 2;
  }
  if (ta.name) {
    kilnTopology* t = NULL;
    const int trc = cliLoadTopo(&ta, &t);
    if (trc != 0) return trc;
    show_topology(t);
    kilnTopologyFree(t);
    return 0;
  }
  char root[256]; /* kiln's roots are short; a longer name fails here and the plan reader names it */
  if (kilnXmlFileRoot(file, root, sizeof root) != KILN_SUCCESS) {
    /* Let the plan reader say what is wrong (missing file, empty, not XML, a DOCTYPE), in its
     * words; it also reads what only libxml2 can (a UTF-16 plan). */
    kilnPlan* p = NULL;
    if (kilnPlanReadFile(file, &p) == KILN_SUCCESS) {
      int rc = show_plan(p);
      kilnPlanFree(p);
      return rc;
    }
    fprintf(stderr, "kiln show: %s\n", kilnLastError());
    return 1;
  }
  int rc = 0;
  if (!strcmp(root, "topology")) {
    kilnTopology* t = NULL;
    if (kilnTopologyReadFile(file, &t) != KILN_SUCCESS) goto out_error;
    show_topology(t);
    kilnTopologyFree(t);
  } else if (!strcmp(root, "sketch")) {
    kilnSketch* s = NULL;
    if (kilnSketchReadFile(file, &s) != KILN_SUCCESS) goto out_error;
    show_sketch(s);
    kilnSketchFree(s);
  } else if (!strcmp(root, "algo")) {
    kilnPlan* p = NULL;
    if (kilnPlanReadFile(file, &p) != KILN_SUCCESS) goto out_error;
    rc = show_plan(p);
    kilnPlanFree(p);
  } else {
    fprintf(stderr, "kiln show: %s: root element <%s> is not <topology>, <sketch> or <algo>\n", file, root);
    return 1;
  }
  return rc;
out_error:
  fprintf(stderr, "kiln show: %s\n", kilnLastError());
  return 1;
}
