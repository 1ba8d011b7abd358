/* Plan XML (the MSCCL algorithm format, and TACCL's <copy> elements): reading both dialects with
 * structural validation, and writing the form both MSCCL runtimes accept (copies, when a plan
 * has them, before the threadblocks of their GPU, as TACCL writes them). Semantic checks (offset ranges, send/receive
 * matching, deadlocks) are the verifier's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/plan.h"
#include "plan_model.h"
#include "xml_util.h"

/* Bounds checked before anything is allocated from a count in the file. */
#define MAX_CHUNKS (1 << 24)
#define MAX_CHANNELS KILN_PLAN_MAX_CHANNELS
#define MAX_TBS KILN_PLAN_FILE_MAX_TBS
_Static_assert(KILN_PLAN_DOC_MAX_BYTES == KILN_XML_MAX_BYTES, "plan.h's document limit is the XML readers'");
#define MAX_STEPS (1 << 20)
#define OPEN_MAX_BYTES 9223372036854775807ull /* written for an open byte range (INT64_MAX) */

static kilnResult_t get_buffer(xmlNodePtr n, const char* f, const char* attr, kilnBuffer_t* out) {
  char s[16];
  kilnResult_t r = kilnXmlGetString(n, f, attr, true, NULL, s, sizeof s);
  if (r != KILN_SUCCESS) return r;
  for (int b = 0; b < KILN_NUM_BUFFERS; b++)
    if (!strcmp(s, kilnBufferName((kilnBuffer_t)b))) {
      *out = (kilnBuffer_t)b;
      return KILN_SUCCESS;
    }
  return kilnXmlError(KILN_ERR_PARSE, f, n, "%s=\"%s\" is not a buffer (i, o or s)", attr, s);
}

/* Names of every value of a vocabulary, space-separated, for "known: ..." messages. */
static const char* known_step_types(char* buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int t = 0; t < KILN_NUM_STEP_TYPES && used < cap; t++)
    used +=
        (size_t)snprintf(buf + used, cap - used, "%s%s", t ? " " : "", kilnStepTypeName((kilnStepType_t)t));
  return buf;
}

static const char* known_protos(char* buf, size_t cap) {
  size_t used = 0;
  buf[0] = '\0';
  for (int t = 0; t < KILN_NUM_PROTOS && used < cap; t++)
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", t ? " " : "", kilnProtoName((kilnProto_t)t));
  return buf;
}

/* kiln's step attributes: peer (memory steps, required there) and proto (put only, optional). */
static kilnResult_t read_step_peer(xmlNodePtr n, const char* f, const kilnPlan* p, kilnStep* st) {
  char v[16], known[64];
  kilnResult_t r;
  st->peer = -1;
  st->proto = -1;
  if (kilnStepPeerRole(st->type) != KILN_PEER_NONE) {
    if ((r = kilnXmlGetInt32(n, f, "peer", true, 0, p->ngpus - 1, 0, &st->peer))) return r;
  } else if (kilnXmlHasAttr(n, "peer")) {
    return kilnXmlError(KILN_ERR_PARSE, f, n,
                        "peer applies to memory steps (put get gre sig wait), not to a %s step",
                        kilnStepTypeName(st->type));
  }
  if (!kilnXmlHasAttr(n, "proto")) return KILN_SUCCESS;
  if (st->type != KILN_STEP_PUT)
    return kilnXmlError(KILN_ERR_PARSE, f, n, "proto applies to put steps, not to a %s step",
                        kilnStepTypeName(st->type));
  if ((r = kilnXmlGetString(n, f, "proto", true, NULL, v, sizeof v))) return r;
  kilnProto_t pr;
  if (!kilnProtoParse(v, &pr))
    return kilnXmlError(KILN_ERR_PARSE, f, n, "unknown proto \"%s\" (known: %s)", v,
                        known_protos(known, sizeof known));
  st->proto = (int)pr;
  return KILN_SUCCESS;
}

static kilnResult_t read_step(xmlNodePtr n, const char* f, const kilnPlan* p, int pos, int ntbs,
                              kilnStep* st) {
  static const char* const none[] = {NULL};
  kilnResult_t r;
  char type[16], known[128];
  int hasdep = 0;
  if ((r = kilnXmlCheckChildren(n, f, none)) ||
      (r = kilnXmlGetInt32(n, f, "s", true, 0, MAX_STEPS, 0, &st->s)))
    return r;
  if (st->s != pos)
    return kilnXmlError(KILN_ERR_PARSE, f, n, "step s=\"%d\" out of order: expected s=\"%d\"", st->s, pos);
  if ((r = kilnXmlGetString(n, f, "type", true, NULL, type, sizeof type))) return r;
  if (!kilnStepTypeParse(type, &st->type))
    return kilnXmlError(KILN_ERR_PARSE, f, n, "unknown step type \"%s\" (known: %s)", type,
                        known_step_types(known, sizeof known));
  /* nop steps touch no buffer; some generators write -1 offsets for them (kiln for sig and wait). */
  int minoff =
      st->type == KILN_STEP_NOP || st->type == KILN_STEP_SIGNAL || st->type == KILN_STEP_WAIT ? -1 : 0;
  if ((r = get_buffer(n, f, "srcbuf", &st->srcbuf)) ||
      (r = kilnXmlGetInt32(n, f, "srcoff", true, minoff, MAX_CHUNKS, 0, &st->srcoff)) ||
      (r = get_buffer(n, f, "dstbuf", &st->dstbuf)) ||
      (r = kilnXmlGetInt32(n, f, "dstoff", true, minoff, MAX_CHUNKS, 0, &st->dstoff)) ||
      (r = kilnXmlGetInt32(n, f, "cnt", true, 0, MAX_CHUNKS, 0, &st->cnt)) ||
      (r = kilnXmlGetInt32(n, f, "depid", true, -1, ntbs - 1, -1, &st->depid)) ||
      (r = kilnXmlGetInt32(n, f, "deps", true, -1, MAX_STEPS, -1, &st->deps)) ||
      (r = kilnXmlGetInt32(n, f, "hasdep", false, 0, 1, 0, &hasdep)) || (r = read_step_peer(n, f, p, st)))
    return r;
  st->hasdep = hasdep != 0;
  return KILN_SUCCESS;
}

static kilnResult_t read_tb(xmlNodePtr n, const char* f, const kilnPlan* p, int ntbs, kilnThreadblock* tbs,
                            bool* seen) {
  static const char* const kids[] = {"step", NULL};
  kilnResult_t r;
  int id;
  if ((r = kilnXmlCheckChildren(n, f, kids)) || (r = kilnXmlGetInt32(n, f, "id", true, 0, ntbs - 1, 0, &id)))
    return r;
  if (seen[id]) return kilnXmlError(KILN_ERR_PARSE, f, n, "threadblock id %d is given twice", id);
  kilnThreadblock* tb = &tbs[id];
  if ((r = kilnXmlGetInt32(n, f, "send", true, -1, p->ngpus - 1, -1, &tb->send)) ||
      (r = kilnXmlGetInt32(n, f, "recv", true, -1, p->ngpus - 1, -1, &tb->recv)) ||
      (r = kilnXmlGetInt32(n, f, "chan", true, 0, p->nchannels - 1, 0, &tb->chan)))
    return r;
  int ns = kilnXmlCountChildren(n, "step");
  if (ns > MAX_STEPS)
    return kilnXmlError(KILN_ERR_PARSE, f, n, "threadblock has %d steps, more than %d", ns, MAX_STEPS);
  seen[id] = true;
  tb->id = id;
  if (ns > 0) {
    tb->steps = kilnPlanStepsAlloc(ns); /* kilnPlanAddStep may append to a plan that was read */
    if (!tb->steps) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  }
  for (xmlNodePtr c = kilnXmlNextElement(n->children); c; c = kilnXmlNextElement(c->next)) {
    if ((r = read_step(c, f, p, tb->nsteps, ntbs, &tb->steps[tb->nsteps]))) return r;
    tb->nsteps++;
  }
  return KILN_SUCCESS;
}

/* TACCL's <copy i_off o_off [cnt]/>: bounded by the GPU's input and output chunk counts. */
static kilnResult_t read_copy(xmlNodePtr n, const char* f, const kilnGpu* g, kilnCopy* cp) {
  static const char* const none[] = {NULL};
  kilnResult_t r;
  if ((r = kilnXmlCheckChildren(n, f, none)) ||
      (r = kilnXmlGetInt32(n, f, "i_off", true, 0, MAX_CHUNKS, 0, &cp->i_off)) ||
      (r = kilnXmlGetInt32(n, f, "o_off", true, 0, MAX_CHUNKS, 0, &cp->o_off)) ||
      (r = kilnXmlGetInt32(n, f, "cnt", false, 1, MAX_CHUNKS, 1, &cp->cnt)))
    return r;
  if (cp->i_off + cp->cnt > g->i_chunks)
    return kilnXmlError(KILN_ERR_PARSE, f, n,
                        "copy i_off=\"%d\" cnt=\"%d\" reads past the input of gpu %d (i_chunks=%d)",
                        cp->i_off, cp->cnt, g->id, g->i_chunks);
  if (cp->o_off + cp->cnt > g->o_chunks)
    return kilnXmlError(KILN_ERR_PARSE, f, n,
                        "copy o_off=\"%d\" cnt=\"%d\" writes past the output of gpu %d (o_chunks=%d)",
                        cp->o_off, cp->cnt, g->id, g->o_chunks);
  return KILN_SUCCESS;
}

static kilnResult_t read_gpu(xmlNodePtr n, const char* f, kilnPlan* p, bool* seen) {
  static const char* const kids[] = {"copy", "tb", NULL};
  kilnResult_t r;
  int id;
  if ((r = kilnXmlCheckChildren(n, f, kids)) ||
      (r = kilnXmlGetInt32(n, f, "id", true, 0, p->ngpus - 1, 0, &id)))
    return r;
  if (seen[id]) return kilnXmlError(KILN_ERR_PARSE, f, n, "gpu id %d is given twice", id);
  kilnGpu* g = &p->gpus[id];
  if ((r = kilnXmlGetInt32(n, f, "i_chunks", true, 0, MAX_CHUNKS, 0, &g->i_chunks)) ||
      (r = kilnXmlGetInt32(n, f, "o_chunks", true, 0, MAX_CHUNKS, 0, &g->o_chunks)) ||
      (r = kilnXmlGetInt32(n, f, "s_chunks", true, 0, MAX_CHUNKS, 0, &g->s_chunks)))
    return r;
  int ntbs = kilnXmlCountChildren(n, "tb");
  if (ntbs > MAX_TBS)
    return kilnXmlError(KILN_ERR_PARSE, f, n, "gpu %d has %d threadblocks, more than %d", id, ntbs, MAX_TBS);
  int ncopies = kilnXmlCountChildren(n, "copy");
  if (ncopies > MAX_CHUNKS)
    return kilnXmlError(KILN_ERR_PARSE, f, n, "gpu %d has %d copies, more than %d", id, ncopies, MAX_CHUNKS);
  seen[id] = true;
  g->id = id;
  if (ncopies > 0) {
    g->copies = calloc((size_t)ncopies, sizeof *g->copies);
    if (!g->copies) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  }
  bool* tbseen = NULL;
  if (ntbs > 0) {
    g->tbs = calloc((size_t)ntbs, sizeof *g->tbs);
    tbseen = calloc((size_t)ntbs, sizeof *tbseen);
    if (!g->tbs || !tbseen) {
      free(tbseen);
      return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
    }
    g->ntbs = ntbs; /* steps of unread threadblocks stay NULL: kilnPlanFree copes */
  }
  r = KILN_SUCCESS;
  for (xmlNodePtr c = kilnXmlNextElement(n->children); c && r == KILN_SUCCESS;
       c = kilnXmlNextElement(c->next)) {
    if (!xmlStrcmp(c->name, (const xmlChar*)"copy"))
      r = read_copy(c, f, g, &g->copies[g->ncopies++]);
    else
      r = read_tb(c, f, p, ntbs, g->tbs, tbseen);
  }
  free(tbseen);
  return r;
}

/* A kilnXmlDocReader: out is a kilnPlan**. */
/* The most chunks any rank's input or output holds: what nchunksperloop must be (0: none). */
static int buffer_chunks(const kilnPlan* p) {
  int most = 0;
  for (int r = 0; r < p->ngpus; r++) {
    if (p->gpus[r].i_chunks > most) most = p->gpus[r].i_chunks;
    if (p->gpus[r].o_chunks > most) most = p->gpus[r].o_chunks;
  }
  return most;
}

static kilnResult_t read_doc(xmlDocPtr doc, const char* f, void* outp) {
  kilnPlan** out = (kilnPlan**)outp;
  xmlNodePtr root;
  kilnResult_t r = kilnXmlRoot(doc, f, "algo", &root);
  if (r != KILN_SUCCESS) return r;
  static const char* const kids[] = {"gpu", NULL};
  if ((r = kilnXmlCheckChildren(root, f, kids))) return r;
  kilnPlan* p = calloc(1, sizeof *p);
  bool* seen = NULL;
  if (!p) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
  char proto[16], coll[32];
  int inplace = 0, outofplace = 1;
  if ((r = kilnXmlGetString(root, f, "name", true, NULL, p->name, sizeof p->name)) ||
      (r = kilnXmlGetString(root, f, "proto", true, NULL, proto, sizeof proto)) ||
      (r = kilnXmlGetInt32(root, f, "nchannels", true, 1, MAX_CHANNELS, 1, &p->nchannels)) ||
      (r = kilnXmlGetInt32(root, f, "nchunksperloop", true, 1, MAX_CHUNKS, 1, &p->nchunksperloop)))
    goto out_free;
  if (!kilnProtoParse(proto, &p->proto)) {
    char known[64];
    r = kilnXmlError(KILN_ERR_PARSE, f, root, "unknown proto \"%s\" (known: %s)", proto,
                     known_protos(known, sizeof known));
    goto out_free;
  }
  int ngpu_elems = kilnXmlCountChildren(root, "gpu");
  p->has_ngpus = kilnXmlHasAttr(root, "ngpus");
  if ((r = kilnXmlGetInt32(root, f, "ngpus", false, 1, KILN_MAX_RANKS, ngpu_elems, &p->ngpus))) goto out_free;
  p->has_coll = kilnXmlHasAttr(root, "coll");
  p->coll = KILN_COLL_CUSTOM;
  if (p->has_coll) {
    if ((r = kilnXmlGetString(root, f, "coll", true, NULL, coll, sizeof coll))) goto out_free;
    if (!kilnCollParse(coll, &p->coll)) {
      r = kilnXmlError(KILN_ERR_PARSE, f, root,
                       "unknown coll \"%s\" (known: allgather alltoall reducescatter allreduce custom)",
                       coll);
      goto out_free;
    }
    p->old_coll_name = !strcmp(coll, "reduce_scatter");
  }
  p->has_inplace = kilnXmlHasAttr(root, "inplace");
  if ((r = kilnXmlGetInt32(root, f, "inplace", false, 0, 1, 0, &inplace))) goto out_free;
  p->inplace = inplace != 0;
  p->has_outofplace = kilnXmlHasAttr(root, "outofplace");
  if ((r = kilnXmlGetInt32(root, f, "outofplace", false, 0, 1, !p->inplace, &outofplace))) goto out_free;
  p->outofplace = outofplace != 0;
  if (!p->inplace && !p->outofplace) {
    r = kilnXmlError(KILN_ERR_PARSE, f, root, "inplace=\"0\" and outofplace=\"0\": the plan serves no call");
    goto out_free;
  }
  p->has_minmax = kilnXmlHasAttr(root, "minBytes") || kilnXmlHasAttr(root, "maxBytes");
  if ((r = kilnXmlGetU64Sat(root, f, "minBytes", false, UINT64_MAX, 0, &p->min_bytes)) ||
      (r = kilnXmlGetU64Sat(root, f, "maxBytes", false, OPEN_MAX_BYTES, UINT64_MAX, &p->max_bytes)))
    goto out_free;
  if (p->min_bytes > p->max_bytes) {
    r = kilnXmlError(KILN_ERR_PARSE, f, root, "minBytes is larger than maxBytes");
    goto out_free;
  }
  p->has_redop = kilnXmlHasAttr(root, "redop");
  if ((r = kilnXmlGetString(root, f, "redop", false, "", p->redop, sizeof p->redop))) goto out_free;
  if ((r = kilnXmlGetInt32(root, f, "nnodes", false, 1, KILN_MAX_RANKS, 0, &p->nnodes))) goto out_free;
  if (p->nnodes > 0 && p->ngpus % p->nnodes != 0) {
    r = kilnXmlError(KILN_ERR_PARSE, f, root, "nnodes is %d, which does not divide ngpus (%d)", p->nnodes,
                     p->ngpus);
    goto out_free;
  }

  if (p->ngpus != ngpu_elems || ngpu_elems < 1 || ngpu_elems > KILN_MAX_RANKS) {
    r = kilnXmlError(KILN_ERR_PARSE, f, root, "ngpus is %d but there are %d <gpu> elements (1..%d allowed)",
                     p->ngpus, ngpu_elems, KILN_MAX_RANKS);
    goto out_free;
  }
  p->gpus = calloc((size_t)p->ngpus, sizeof *p->gpus);
  seen = calloc((size_t)p->ngpus, sizeof *seen);
  if (!p->gpus || !seen) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", f);
    goto out_free;
  }
  for (xmlNodePtr c = kilnXmlNextElement(root->children); c; c = kilnXmlNextElement(c->next))
    if ((r = read_gpu(c, f, p, seen))) goto out_free;
  /* MSCCL's runtimes size a chunk as the buffer over nchunksperloop, kiln by the chunk counts of
   * the buffers: where the two differ the plan does one thing there and another here. */
  const int most = buffer_chunks(p);
  if (most > 0 && p->nchunksperloop != most) {
    r = kilnXmlError(
        KILN_ERR_PARSE, f, root,
        "nchunksperloop is %d but the largest input or output holds %d chunks: "
        "MSCCL's runtimes size chunks by nchunksperloop, kiln by the buffers, so the plan would not "
        "do the same on both",
        p->nchunksperloop, most);
    goto out_free;
  }
  free(seen);
  *out = p;
  return KILN_SUCCESS;
out_free:
  free(seen);
  if (!p->gpus) p->ngpus = 0;
  kilnPlanFree(p);
  return r;
}

kilnResult_t kilnPlanReadMemory(const char* xml, size_t len, const char* name, kilnPlan** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanReadMemory: NULL out");
  *out = NULL;
  return kilnXmlReadMemory(xml, len, name, read_doc, out);
}

kilnResult_t kilnPlanReadFile(const char* path, kilnPlan** out) {
  if (!out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanReadFile: NULL out");
  *out = NULL;
  return kilnXmlReadFile(path, read_doc, out);
}

/* A plan is written only within the bounds the reader accepts (counts and forms; what the
 * verifier checks is the verifier's), so that what kiln writes (classic, synth, bake) reads back. */
static kilnResult_t writable(const kilnPlan* p) {
  if (!p->inplace && !p->outofplace)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                        "plan %s: neither in place nor out of place: it serves no call", p->name);
  if ((unsigned)p->proto >= KILN_NUM_PROTOS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: proto %d is not a kilnProto_t", p->name,
                        (int)p->proto);
  if ((unsigned)p->coll >= KILN_NUM_COLLS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: collective %d is not a kilnColl_t", p->name,
                        (int)p->coll);
  if (p->nchannels < 1 || p->nchannels > MAX_CHANNELS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: %d channels, a plan file holds 1..%d", p->name,
                        p->nchannels, MAX_CHANNELS);
  if (p->nchunksperloop < 1 || p->nchunksperloop > MAX_CHUNKS)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: %d chunks per loop, a plan file holds 1..%d",
                        p->name, p->nchunksperloop, MAX_CHUNKS);
  if (p->nnodes < 0 || (p->nnodes > 0 && p->ngpus % p->nnodes != 0))
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: %d nodes do not divide its %d ranks", p->name,
                        p->nnodes, p->ngpus);
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    if (g->ntbs > MAX_TBS)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                          "plan %s: gpu %d has %d threadblocks, a plan file holds %d", p->name, r, g->ntbs,
                          MAX_TBS);
    if (g->i_chunks > MAX_CHUNKS || g->o_chunks > MAX_CHUNKS || g->s_chunks > MAX_CHUNKS)
      return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: gpu %d has buffers of more than %d chunks",
                          p->name, r, MAX_CHUNKS);
    for (int t = 0; t < g->ntbs; t++) {
      if (g->tbs[t].nsteps > MAX_STEPS)
        return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                            "plan %s: gpu %d tb %d has %d steps, a plan file holds %d", p->name, r, t,
                            g->tbs[t].nsteps, MAX_STEPS);
      for (int s = 0; s < g->tbs[t].nsteps; s++) {
        const kilnStep* st = &g->tbs[t].steps[s];
        if (kilnStepPeerRole(st->type) != KILN_PEER_NONE && (st->peer < 0 || st->peer >= p->ngpus))
          return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                              "plan %s: gpu %d tb %d step %d (%s): peer %d is not a rank of 0..%d", p->name,
                              r, t, s, kilnStepTypeName(st->type), st->peer, p->ngpus - 1);
        if (st->type == KILN_STEP_PUT && (st->proto < -1 || st->proto >= KILN_NUM_PROTOS))
          return kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                              "plan %s: gpu %d tb %d step %d (put): proto %d is not a kilnProto_t", p->name,
                              r, t, s, st->proto);
      }
    }
  }
  return KILN_SUCCESS;
}

kilnResult_t kilnPlanWriteMemory(const kilnPlan* p, char** out) {
  if (!p || !out) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanWriteMemory: NULL argument");
  *out = NULL;
  if (p->ngpus < 1 || !p->gpus)
    return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "plan %s: has no GPUs to write", p->name);
  kilnResult_t wr = writable(p);
  if (wr != KILN_SUCCESS) return wr;
  kilnBuf b = {0};
  kilnBufPrintf(&b, "<algo name=\"");
  kilnBufEscaped(&b, p->name);
  const int most = buffer_chunks(p); /* what the reader requires (plans built in memory may hold 1) */
  kilnBufPrintf(&b, "\" proto=\"%s\" nchannels=\"%d\" nchunksperloop=\"%d\"", kilnProtoName(p->proto),
                p->nchannels, most > 0 ? most : p->nchunksperloop);
  if (p->has_ngpus) kilnBufPrintf(&b, " ngpus=\"%d\"", p->ngpus);
  if (p->nnodes > 0) kilnBufPrintf(&b, " nnodes=\"%d\"", p->nnodes);
  if (p->has_coll)
    kilnBufPrintf(
        &b, " coll=\"%s\"",
        p->old_coll_name && p->coll == KILN_COLL_REDUCESCATTER ? "reduce_scatter" : kilnCollName(p->coll));
  if (p->has_inplace) kilnBufPrintf(&b, " inplace=\"%d\"", p->inplace ? 1 : 0);
  if (p->has_outofplace) kilnBufPrintf(&b, " outofplace=\"%d\"", p->outofplace ? 1 : 0);
  if (p->has_minmax)
    kilnBufPrintf(&b, " minBytes=\"%llu\" maxBytes=\"%llu\"", (unsigned long long)p->min_bytes,
                  (unsigned long long)(p->max_bytes >= OPEN_MAX_BYTES ? OPEN_MAX_BYTES : p->max_bytes));
  if (p->has_redop) {
    kilnBufPrintf(&b, " redop=\"");
    kilnBufEscaped(&b, p->redop);
    kilnBufPrintf(&b, "\"");
  }
  kilnBufPrintf(&b, ">\n");
  for (int r = 0; r < p->ngpus; r++) {
    const kilnGpu* g = &p->gpus[r];
    kilnBufPrintf(&b, "  <gpu id=\"%d\" i_chunks=\"%d\" o_chunks=\"%d\" s_chunks=\"%d\">\n", r, g->i_chunks,
                  g->o_chunks, g->s_chunks);
    for (int i = 0; i < g->ncopies; i++) {
      const kilnCopy* cp = &g->copies[i];
      kilnBufPrintf(&b, "    <copy i_off=\"%d\" o_off=\"%d\"", cp->i_off, cp->o_off);
      if (cp->cnt != 1) kilnBufPrintf(&b, " cnt=\"%d\"", cp->cnt);
      kilnBufPrintf(&b, "/>\n");
    }
    for (int i = 0; i < g->ntbs; i++) {
      const kilnThreadblock* tb = &g->tbs[i];
      kilnBufPrintf(&b, "    <tb id=\"%d\" send=\"%d\" recv=\"%d\" chan=\"%d\">\n", i, tb->send, tb->recv,
                    tb->chan);
      for (int s = 0; s < tb->nsteps; s++) {
        const kilnStep* st = &tb->steps[s];
        kilnBufPrintf(
            &b,
            "      <step s=\"%d\" type=\"%s\" srcbuf=\"%s\" srcoff=\"%d\" dstbuf=\"%s\" dstoff=\"%d\" "
            "cnt=\"%d\" depid=\"%d\" deps=\"%d\" hasdep=\"%d\"",
            s, kilnStepTypeName(st->type), kilnBufferName(st->srcbuf), st->srcoff, kilnBufferName(st->dstbuf),
            st->dstoff, st->cnt, st->depid, st->deps, st->hasdep ? 1 : 0);
        /* kiln's attributes, only on the steps that take them (a plan without them is MSCCL's). */
        if (kilnStepPeerRole(st->type) != KILN_PEER_NONE) kilnBufPrintf(&b, " peer=\"%d\"", st->peer);
        if (st->type == KILN_STEP_PUT && st->proto >= 0)
          kilnBufPrintf(&b, " proto=\"%s\"", kilnProtoName((kilnProto_t)st->proto));
        kilnBufPrintf(&b, "/>\n");
      }
      kilnBufPrintf(&b, "    </tb>\n");
    }
    kilnBufPrintf(&b, "  </gpu>\n");
  }
  kilnBufPrintf(&b, "</algo>\n");
  return kilnBufFinish(&b, out);
}

kilnResult_t kilnPlanWriteFile(const kilnPlan* p, const char* path) {
  if (!p) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanWriteFile: NULL plan");
  char* s = NULL;
  kilnResult_t r = kilnPlanWriteMemory(p, &s);
  return kilnWriteDocument(r, s, path);
}

kilnResult_t kilnPlanWriteDocument(char* doc, const char* path) {
  if (!doc) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnPlanWriteDocument: NULL document");
  return kilnWriteDocument(KILN_SUCCESS, doc, path);
}
