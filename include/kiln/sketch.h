/*
 * Communication sketches (TACCL, paper section 3 and Appendix A): the user's intuition that
 * narrows the synthesizer's search.
 *
 * Ownership: a kilnSketch returned by a constructor is owned by the caller and freed with
 * kilnSketchFree(); everything it points to is owned by it.
 *
 * XML:
 *   <sketch name="dgx2-sk-1">
 *     <intranode strategy="switch">            strategy: switch | links | all
 *       <switch gpus="0 1 ... 15" policy="uc-min"/>      policy: uc-max | uc-min | free
 *       <link src="0" dst="1"/>                (strategy="links": node-local logical links kept)
 *     </intranode>
 *       switch: the links among each <switch>'s GPUs kept, as its hyperedge; links: the <link>s;
 *       all: every intra-node link, those among a <switch>'s GPUs (if any) as its hyperedge.
 *       An element the strategy ignores (<link> under switch or all, <switch> under links,
 *       <conn> under an internode strategy other than relay) is refused by kilnSketchValidate.
 *     <internode strategy="relay">             strategy: relay | direct | none
 *       <conn src="1" dst="0"/>                local GPU src sends to local GPU dst of other nodes
 *       <beta_split gpu="1" split="1"/>        sends from GPU 1 use 1/split of the NIC bandwidth
 *       <chunk_to_relay r1="2" r2="1"/>        chunk with precondition rank p goes out via
 *                                              (p / r1) * r1 + r2 (node-local)
 *     </internode>
 *     <symmetry offset="2" group="16"/>        send(c,s,r) == send(c+o, s+o, r+o) within groups
 *     <hyperparameters input_chunkup="2" input_size="1M" ordering="shortest-path-first"/>
 *   </sketch>
 */
#ifndef KILN_SKETCH_H
#define KILN_SKETCH_H

#include "kiln/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_HYPER_POLICIES(X)   \
  X(KILN_HYPER_UC_MAX, "uc-max") \
  X(KILN_HYPER_UC_MIN, "uc-min") \
  X(KILN_HYPER_FREE, "free")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_HYPER_POLICIES(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_HYPER_POLICIES
} kilnHyperPolicy_t;

#define KILN_INTRA_STRATEGIES(X) \
  X(KILN_INTRA_SWITCH, "switch") \
  X(KILN_INTRA_LINKS, "links")   \
  X(KILN_INTRA_ALL, "all")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_INTRA_STRATEGIES(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_INTRA_STRATEGIES
} kilnIntraStrategy_t;

#define KILN_INTER_STRATEGIES(X) \
  X(KILN_INTER_RELAY, "relay")   \
  X(KILN_INTER_DIRECT, "direct") \
  X(KILN_INTER_NONE, "none")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_INTER_STRATEGIES(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_INTER_STRATEGIES
} kilnInterStrategy_t;

/* Ordering heuristics of the paper's B.2 ("auto" tries each and keeps the best). */
#define KILN_ORDERINGS(X)                                  \
  X(KILN_ORDER_AUTO, "auto")                               \
  X(KILN_ORDER_SHORTEST_PATH_FIRST, "shortest-path-first") \
  X(KILN_ORDER_LONGEST_PATH_FIRST, "longest-path-first")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_ORDERINGS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_ORDERINGS
} kilnOrdering_t;

typedef struct kilnSketchSwitch {
  int ngpus;
  int* gpus; /* node-local ids */
  kilnHyperPolicy_t policy;
} kilnSketchSwitch;

typedef struct kilnSketchLink {
  int src, dst;
} kilnSketchLink; /* node-local */

typedef struct kilnSketchConn {
  int src; /* node-local sender */
  int ndst;
  int* dst; /* node-local receivers in other nodes */
} kilnSketchConn;

typedef struct kilnSymmetry {
  int offset, group;
} kilnSymmetry;

typedef struct kilnSketch {
  char name[KILN_NAME_MAX];

  kilnIntraStrategy_t intra;
  int nswitches;
  kilnSketchSwitch* switches;
  int nlinks;
  kilnSketchLink* links;

  kilnInterStrategy_t inter;
  int nconns;
  kilnSketchConn* conns;
  int nbeta_split;
  int* beta_split_gpu; /* [nbeta_split] node-local GPU */
  int* beta_split;     /* [nbeta_split] divisor >= 1 */
  bool has_chunk_to_relay;
  int relay_r1, relay_r2;

  int nsymmetry;
  kilnSymmetry* symmetry;

  int input_chunkup;   /* >= 1 chunks per rank's input */
  uint64_t input_size; /* bytes, > 0 */
  kilnOrdering_t ordering;
} kilnSketch;

KILN_API kilnResult_t kilnSketchReadFile(const char* path, kilnSketch** out);
KILN_API kilnResult_t kilnSketchReadMemory(const char* xml, size_t len, const char* name, kilnSketch** out);
KILN_API kilnResult_t kilnSketchWriteFile(const kilnSketch* s, const char* path);
KILN_API kilnResult_t kilnSketchWriteMemory(const kilnSketch* s, char** out);

/* A default sketch for a topology: every physical link kept, every switch uc-max,
 * direct inter-node, no symmetry, one chunk per rank, 1 MB. */
KILN_API kilnResult_t kilnSketchDefault(const kilnTopology* t, kilnSketch** out);

/* Checks the sketch against a topology: ids in range, logical topology connected (every rank
 * reaches every other), each symmetry an automorphism of the logical topology (the message
 * names the offending offset), relay connections over existing links. */
KILN_API kilnResult_t kilnSketchValidate(const kilnSketch* s, const kilnTopology* t);

KILN_API void kilnSketchFree(kilnSketch* s);

KILN_API const char* kilnHyperPolicyName(kilnHyperPolicy_t p);
KILN_API bool kilnHyperPolicyParse(const char* s, kilnHyperPolicy_t* out);
/* Names as the sketch XML spells them ("unknown" out of range); kilnOrderingParse reads one. */
KILN_API const char* kilnIntraStrategyName(kilnIntraStrategy_t v);
KILN_API const char* kilnInterStrategyName(kilnInterStrategy_t v);
KILN_API const char* kilnOrderingName(kilnOrdering_t v);
KILN_API bool kilnOrderingParse(const char* s, kilnOrdering_t* out);

#ifdef __cplusplus
}
#endif
#endif /* KILN_SKETCH_H */
