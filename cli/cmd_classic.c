/* kiln classic: write a classic (ring or direct) plan, verified before it is written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "kiln/plan.h"

static void help(FILE* f) {
  fprintf(f,
          "usage: kiln classic ALGO --coll COLL --ranks N [--chunks K] [--instances I]\n"
          "                    [--proto Simple|LL|LL12|LL128] [--inplace] [--fifo-depth D] [--nodes M]\n"
          "                    [-o FILE.xml]\n"
          "Writes a classic plan in the MSCCL format (to FILE.xml, or stdout), after checking it\n"
          "with the verifier, with FIFOs of D slots per connection (default 8, the runtime's\n"
          "default nslots; 0: unbounded). With K chunks a ring needs K+1 slots (K for an allgather\n"
          "or reducescatter of 2 ranks), direct K; a plan that needs more is refused (exit 2).\n"
          "  ALGO         through FIFOs (Simple, LL, LL128):\n"
          "               ring (allgather, reducescatter, allreduce),\n"
          "               direct (allgather, alltoall, reducescatter, allreduce);\n"
          "               with memory steps (puts into the peers' buffers, signals), no FIFOs:\n"
          "               oneshot (allreduce, reducescatter: every rank reduces from every peer's puts),\n"
          "               twoshot (allreduce: reduce a share, put it to every peer),\n"
          "               staged (allgather, alltoall: puts into scratch, copies into place),\n"
          "               zerocopy (allgather, alltoall; Simple: puts into the peers' outputs)\n"
          "  --chunks K   chunks per rank's piece (default 1)\n"
          "  --instances I  copies over I channels, each with its share of the chunks (default 1)\n"
          "  --inplace    the in-place form (default out of place)\n"
          "  --nodes M    name M nodes of N/M consecutive ranks in the plan (nnodes): the runtime\n"
          "               and the drop-in then run it on communicators of that many nodes\n");
}

/* Whether any step of p both receives and sends (rcs, rrs, rrcs). */
static bool has_fused_steps(const kilnPlan* p) {
  for (int r = 0; r < p->ngpus; r++)
    for (int t = 0; t < p->gpus[r].ntbs; t++)
      for (int s = 0; s < p->gpus[r].tbs[t].nsteps; s++) {
        const kilnStepType_t ty = p->gpus[r].tbs[t].steps[s].type;
        if (kilnStepReceives(ty) && kilnStepSends(ty)) return true;
      }
  return false;
}

int cmd_classic(int argc, char** argv) {
  const char* algo = NULL;
  const char* out = NULL;
  kilnColl_t coll = KILN_NUM_COLLS;
  int ranks = 0;
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  int fifo_depth = KILN_FIFO_DEPTH_DEFAULT;
  int nodes = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      help(stdout);
      return 0;
    }
    if (!strcmp(a, "--inplace")) {
      o.inplace = true;
      continue;
    }
    if (!strcmp(a, "--coll") || !strcmp(a, "--ranks") || !strcmp(a, "--chunks") ||
        !strcmp(a, "--instances") || !strcmp(a, "--proto") || !strcmp(a, "--fifo-depth") ||
        !strcmp(a, "--nodes") || !strcmp(a, "-o")) {
      if (!v) {
        fprintf(stderr, "kiln classic: %s needs a value\n", a);
        help(stderr);
        return 2;
      }
      i++;
      bool ok = true;
      if (!strcmp(a, "--coll"))
        ok = kilnCollParse(v, &coll) && coll != KILN_COLL_CUSTOM;
      else if (!strcmp(a, "--ranks"))
        ok = cliParseInt(v, &ranks) && ranks >= 2;
      else if (!strcmp(a, "--chunks"))
        ok = cliParseInt(v, &o.chunks) && o.chunks >= 1;
      else if (!strcmp(a, "--instances"))
        ok = cliParseInt(v, &o.instances) && o.instances >= 1;
      else if (!strcmp(a, "--proto"))
        ok = kilnProtoParse(v, &o.proto);
      else if (!strcmp(a, "--fifo-depth"))
        ok = cliParseInt(v, &fifo_depth);
      else if (!strcmp(a, "--nodes"))
        ok = cliParseInt(v, &nodes) && nodes >= 1;
      else if (!cliOnce("classic", &out, "-o", v))
        return 2;
      if (!ok) {
        fprintf(stderr, "kiln classic: bad value '%s' for %s\n", v, a);
        help(stderr);
        return 2;
      }
      continue;
    }
    if (a[0] == '-' || algo) {
      fprintf(stderr, "kiln classic: unexpected argument '%s'\n", a);
      help(stderr);
      return 2;
    }
    algo = a;
  }
  if (!algo || coll == KILN_NUM_COLLS || ranks < 2) {
    fprintf(stderr, "kiln classic: need ALGO, --coll and --ranks (>= 2)\n");
    help(stderr);
    return 2;
  }
  if (nodes > 0 && ranks % nodes != 0) {
    fprintf(stderr, "kiln classic: --nodes %d does not divide --ranks %d\n", nodes, ranks);
    return 2;
  }
  if (!cliOutputWritable("classic", out)) return 2;
  kilnPlan* p = NULL;
  kilnResult_t r = kilnClassicPlan(algo, coll, ranks, &o, &p);
  if (r != KILN_SUCCESS) {
    fprintf(stderr, "kiln classic: %s\n", kilnLastError());
    return r == KILN_ERR_INVALID_ARGUMENT || r == KILN_ERR_UNSUPPORTED ? 2 : 1;
  }
  p->nnodes = nodes;
  /* The document is made once, before verification: one larger than kiln writes (many ranks,
   * instances or chunks) is refused from the plan as built, before verification takes its time
   * (a 1024-rank direct alltoall with 2 instances: 19 s to fail at the write); a verified plan's
   * is what gets written. */
  char* doc = NULL;
  if ((r = kilnPlanWriteMemory(p, &doc)) != KILN_SUCCESS) {
    fprintf(stderr, "kiln classic: %s\n", kilnLastError());
    kilnPlanFree(p);
    return 1;
  }
  const size_t docBytes = strlen(doc);
  if (docBytes > KILN_PLAN_DOC_MAX_BYTES) {
    fprintf(stderr,
            "kiln classic: plan %s: a document of %zu bytes, more than the %zu kiln writes and reads "
            "(use fewer ranks, instances or chunks)\n",
            p->name, docBytes, KILN_PLAN_DOC_MAX_BYTES);
    free(doc);
    kilnPlanFree(p);
    return 2;
  }
  int rc = 0;
  kilnVerifyOptions vo = KILN_VERIFY_OPTIONS_INIT;
  vo.fifo_depth = fifo_depth;
  if (kilnPlanVerify(p, &vo) != KILN_SUCCESS) {
    /* A plan that verifies with unbounded FIFOs asked for more chunks than the slots hold: the
     * request is what is wrong (2). A threadblock sends its k chunks before its first receive;
     * fused receive-and-send steps (rcs, rrs, rrcs: a ring's, but for a ring of 2 ranks outside
     * allreduce) need one slot more (solver/classic.c). */
    kilnVerifyOptions unbounded = vo;
    unbounded.fifo_depth = 0;
    const int need = o.chunks + (has_fused_steps(p) ? 1 : 0);
    if (fifo_depth > 0 && kilnPlanVerify(p, &unbounded) == KILN_SUCCESS) {
      if (need > fifo_depth)
        fprintf(stderr,
                "kiln classic: %s needs %d FIFO slots per connection, more than %d: use fewer "
                "chunks (more instances) or --fifo-depth\n",
                p->name, need, fifo_depth);
      else
        fprintf(stderr,
                "kiln classic: %s deadlocks with %d FIFO slots per connection (it verifies with "
                "unbounded ones): use fewer chunks (more instances) or --fifo-depth\n",
                p->name, fifo_depth);
      rc = 2;
    } else {
      fprintf(stderr, "kiln classic: internal error, plan %s fails verification: %s\n", p->name,
              kilnLastError());
      rc = 1;
    }
    free(doc);
  } else if (kilnPlanWriteDocument(doc, out ? out : "-") != KILN_SUCCESS) {
    fprintf(stderr, "kiln classic: %s\n", kilnLastError());
    rc = 1;
  }
  kilnPlanFree(p);
  return rc;
}
