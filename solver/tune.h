/*
 * kiln tune, its CPU side: the candidate plans of a collective, the choice of which of them serves
 * each size range from their times, the simulator's times where no GPU measures them (kiln tune
 * --model), and the folder of plans it writes. The GPU side (each candidate timed and checked on
 * the local GPUs beside NCCL) is host/tune_gpu.h; the command is cli/cmd_tune.c, docs/TUNE.md
 * describes both.
 *
 * Internal to kiln: not a public header; its functions leave libkiln for the CLI and the tests
 * (KILN_INTERNAL).
 *
 * Ownership: a kilnTuneSet owns its candidates' plans (kilnTuneAdd takes the plan it is given,
 * added or not); kilnTuneSetFree frees them.
 */
#ifndef KILN_TUNE_H
#define KILN_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln/plan.h"
#include "kiln/topology.h"
#include "kiln_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kiln classic's forms a tune tries, X(enum, kilnClassicPlan's name). Not "zerocopy": it puts into
 * the peers' outputs, which the runtime reaches only in symmetric windows, and an application's
 * buffers are plain. */
#define KILN_TUNE_FORMS(X)             \
  X(KILN_TUNE_FORM_RING, "ring")       \
  X(KILN_TUNE_FORM_DIRECT, "direct")   \
  X(KILN_TUNE_FORM_ONESHOT, "oneshot") \
  X(KILN_TUNE_FORM_TWOSHOT, "twoshot") \
  X(KILN_TUNE_FORM_STAGED, "staged")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_TUNE_FORMS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_TUNE_NUM_FORMS
} kilnTuneForm_t;

KILN_INTERNAL const char* kilnTuneFormName(kilnTuneForm_t f);
KILN_INTERNAL bool kilnTuneFormParse(const char* s, kilnTuneForm_t* out);

/* The most instance counts a space lists. */
#define KILN_TUNE_MAX_INSTANCES 8

/* Which of kiln classic's plans are candidates: every form (a bit per kilnTuneForm_t) in every
 * protocol (a bit per kilnProto_t) and instance count, in the in-place or the out-of-place form. */
typedef struct kilnTuneSpace {
  unsigned forms;
  unsigned protos;
  int ninstances;
  int instances[KILN_TUNE_MAX_INSTANCES];
  bool inplace;
} kilnTuneSpace;
/* Every form and protocol, 1, 2, 4, 8, 16 and 32 instances (32: the runtime's channels per peer
 * by default, kilnCommConfig.maxChannels), out of place. */
#define KILN_TUNE_SPACE_INIT \
  { (1u << KILN_TUNE_NUM_FORMS) - 1, (1u << KILN_NUM_PROTOS) - 1, 6, {1, 2, 4, 8, 16, 32}, false }

/* One candidate: a plan that passed kilnPlanVerify and that kiln's runtime runs
 * (kilnPlanCheckRuntime). source says where it came from ("classic", "synth"). */
typedef struct kilnTuneCandidate {
  kilnPlan* plan;
  char source[16];
} kilnTuneCandidate;

typedef struct kilnTuneSet {
  int n, cap;
  kilnTuneCandidate* c;
} kilnTuneSet;

/* Called for each plan left out, with the plan's name (or what it would have been) and why. */
typedef void (*kilnTuneNoteFn)(const char* name, kilnResult_t r, const char* why, void* user);

/* Adds plan to the set when kiln's runtime runs it (kilnPlanCheckRuntime), it passes
 * kilnPlanVerify (the runtime's FIFO depth) and no candidate of that name is in the set yet;
 * otherwise frees it and returns why (KILN_ERR_UNSUPPORTED, KILN_ERR_VERIFY, KILN_ERR_INVALID_ARGUMENT
 * naming the duplicate). verified: the caller has verified the plan for every FIFO depth (as
 * kilnSynthesize does: unbounded and one slot a connection), and kilnPlanVerify is not run again.
 * Takes plan in every case. */
KILN_INTERNAL kilnResult_t kilnTuneAdd(kilnTuneSet* set, kilnPlan* plan, const char* source, bool verified);
/* Adds kiln classic's plans of the space for coll on nranks ranks, in form, protocol and instance
 * order. A plan kilnClassicPlan does not make (a form without this collective, LL12 through FIFOs)
 * or kilnTuneAdd refuses is left out and reported to note (may be NULL); *added (may be NULL)
 * counts those added. Fails only for a bad space or when out of memory. */
KILN_INTERNAL kilnResult_t kilnTuneClassic(kilnTuneSet* set, kilnColl_t coll, int nranks,
                                           const kilnTuneSpace* space, kilnTuneNoteFn note, void* user,
                                           int* added);
KILN_INTERNAL void kilnTuneSetFree(kilnTuneSet* set);

/* The sizes of a tune: from `min` to `max` bytes (reference bytes, kiln/registry.h), each `factor`
 * times the one before, and `max` last where the steps miss it. *n of them, at most cap; false for
 * min < 1, min > max, factor < 2 or more sizes than cap. */
KILN_INTERNAL bool kilnTuneSizes(uint64_t min, uint64_t max, int factor, uint64_t* sizes, int cap, int* n);

/* The float elements of a tune's call of `bytes` reference bytes on nranks ranks, NCCL's count:
 * allreduce a rank's elements, the others a rank's piece. 0: not one element, a size the tune
 * (on the GPUs or the model) runs nothing at. */
KILN_INTERNAL uint64_t kilnTuneCount(kilnColl_t coll, uint64_t bytes, int nranks);

/* A time that is not one (kilnTuneChoose's us and nccl): the candidate did not run at that size
 * (its plan does not take the call: count, form), failed on the GPU, gave a wrong result, or was
 * left out for being far slower than the fastest at a smaller size (kiln tune --prune). */
#define KILN_TUNE_NOT_RUN (-1.0)
#define KILN_TUNE_FAILED (-2.0)
#define KILN_TUNE_WRONG (-3.0)
#define KILN_TUNE_PRUNED (-4.0)

/* What serves sizes[first..last]: candidate cand (-1: NCCL), for the call bytes
 * [min_bytes, max_bytes]. */
typedef struct kilnTuneRange {
  int cand;
  int first, last;
  uint64_t min_bytes, max_bytes;
} kilnTuneRange;

/* Chooses what serves each size from the times (µs): us[c * nsizes + k] is candidate c's at
 * sizes[k] (strictly increasing), nccl[k] NCCL's (negative: not measured, as in a rehearsal; nccl
 * may be NULL for none). At each size the fastest candidate, except that the one chosen at the
 * size before stays while it is within `tolerance` (0.03: 3%) of the fastest (fewer ranges for
 * differences the measurement cannot tell apart); then NCCL wherever it is no slower than that
 * choice, and wherever no candidate ran. A candidate with a wrong result at any size
 * (KILN_TUNE_WRONG) is chosen at none. Runs of one choice become ranges: the first starts at 0,
 * the last ends at sizes[nsizes - 1] (larger calls stay NCCL's: nothing measured them), and two
 * neighbouring sizes a < b split at their geometric mean, rounded down (sizes a factor 4 apart: 2a;
 * the first size above it goes to b's choice). out holds nsizes ranges; *nout gets how many. KILN_ERR_INVALID_ARGUMENT for sizes
 * not increasing or a negative tolerance. */
KILN_INTERNAL kilnResult_t kilnTuneChoose(const uint64_t* sizes, int nsizes, const double* us, int ncand,
                                          const double* nccl, double tolerance, kilnTuneRange* out,
                                          int* nout);

/* The machine a tune ran on, for the folder's README; or, for a tune of the model (kiln tune
 * --model), the model. */
typedef struct kilnTuneMachine {
  char gpu[128];   /* the GPU model, "NVIDIA H100 80GB HBM3" */
  int ngpus;       /* GPUs used */
  char driver[32]; /* the NVIDIA driver's version ("580.95.05"), or CUDA's driver API version */
  char nccl[32];   /* NCCL's version ("2.28.9") */
  int nranks;
  bool rehearsal; /* ranks share GPUs: the times say nothing of speed, and there is no NCCL */
  /* Empty for times measured on GPUs. Otherwise the times are the simulator's (kilnTuneModel) and
   * this says which model: kilnTuneModelDescribe's text, for README; model_tag its short form for
   * tune.csv's timed_by column ("model:switch8-costs", "model:h200-fit"). gpu, ngpus, driver and
   * nccl are then unused. */
  char model[256];
  char model_tag[64];
} kilnTuneMachine;

/* The GPU's SMs kiln tune --model assumes by default: H100's and H200's (SXM), 132. The runtime
 * loads no plan with more threadblocks on a rank than its GPU has SMs (kilnPlanLoad). */
#define KILN_TUNE_MODEL_SMS 132

/* The model's times of coll's candidates at each size, as kilnTuneChoose takes them:
 * us[c * nsizes + k] kilnPlanSimulate's prediction of set->c[c]'s plan on t at sizes[k] (with t's
 * <costs> where it has them, else KILN_SIM_PARAMS_INIT), nccl[k] the faster of NCCL's simulated
 * ring and tree for allreduce, its ring for allgather and reducescatter, its all-pairs for
 * alltoall (kilnBaselineSimulateWith, KILN_SIM_PARAMS_NCCL). As the runtime runs them: a plan of
 * send and receive steps in LL128 is predicted in Simple (the runtime runs it so unless
 * KILN_LL128=1, and the table's LL128 sends are nominal, not fitted), and a plan with more
 * threadblocks on a rank than `sms` (> 0) is not predicted (the runtime does not load it). A size
 * with no float element per rank (as the GPU tune skips it) is KILN_TUNE_NOT_RUN for all; a
 * candidate not predicted is KILN_TUNE_NOT_RUN at every size and reported to note (may be NULL)
 * with why: KILN_ERR_UNSUPPORTED for too many threadblocks, KILN_ERR_INVALID_ARGUMENT for another
 * collective or rank count, else the simulator's error (a send between ranks with no link). Fails (KILN_ERR_INVALID_ARGUMENT) for a topology of another rank
 * count than nranks or sizes not increasing, with the simulator's error where NCCL's baseline
 * cannot be predicted, or when out of memory. */
KILN_INTERNAL kilnResult_t kilnTuneModel(const kilnTopology* t, kilnColl_t coll, int nranks, int sms,
                                         const kilnTuneSet* set, const uint64_t* sizes, int nsizes,
                                         kilnTuneNoteFn note, void* user, double* us, double* nccl);
/* Fills m for a tune of the model on t for nranks ranks: model (the topology and which table:
 * its measured <costs>, or the built-in table fitted to H200s) and model_tag. */
KILN_INTERNAL void kilnTuneModelDescribe(const kilnTopology* t, int nranks, kilnTuneMachine* m);

/* The NVIDIA driver's version from the first line of /proc/driver/nvidia/version ("NVRM version:
 * NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."): the first word after
 * "Kernel Module" that starts with a digit, into out (at most n - 1 characters); false, out empty,
 * where there is none. */
KILN_INTERNAL bool kilnTuneDriverVersion(const char* line, char* out, size_t n);

/* One collective's results: the candidates, the sizes, the times (as kilnTuneChoose takes them)
 * and the ranges chosen. */
typedef struct kilnTuneResult {
  kilnColl_t coll;
  const kilnTuneSet* set;
  int nsizes;
  const uint64_t* sizes;
  const double* us;   /* [set->n * nsizes] */
  const double* nccl; /* [nsizes], or NULL */
  int nranges;
  const kilnTuneRange* ranges;
} kilnTuneResult;

/* Whether kilnTuneWriteDir may write dir: its parent folder exists, and dir does not or is empty or
 * holds a tune.csv. KILN_SUCCESS, or the error naming why not. For a check before the measurements. */
KILN_INTERNAL kilnResult_t kilnTuneCheckDir(const char* dir);

/* Writes the folder dir whole or not at all: for every range a candidate serves, its plan with the
 * range's byte bounds (minBytes, maxBytes) as DIR/NAME.xml (NAME: the candidate's name and the
 * range's number, "ring-allreduce-n4-c1-i8-LL-r2"), DIR/tune.csv (the table: a row per
 * collective, candidate and size, with NCCL's time, whether it was kept and what timed it: "gpu",
 * or m->model_tag with status "predicted" for the model's times) and DIR/README (the machine or
 * the model, the command, the ranges chosen, how to use the folder). Everything is written into a
 * new folder beside dir and renamed into place; a dir that exists is replaced only when it is
 * empty or holds a tune.csv (a folder kiln tune wrote), else KILN_ERR_INVALID_ARGUMENT naming it.
 * On failure nothing is left but what was there before. command: the command line, for README. */
KILN_INTERNAL kilnResult_t kilnTuneWriteDir(const char* dir, const kilnTuneMachine* m,
                                            const kilnTuneResult* results, int nresults, const char* command);

#ifdef __cplusplus
}
#endif
#endif /* KILN_TUNE_H */
