/* A small MILP model builder and the solver backend interface behind it.
 *
 * Models are built 0-based as columns, rows and (row, col, value) triplets, and handed to a
 * backend once. Only the backend converts to its own (GLPK: 1-based) arrays. */
#ifndef KILN_SYNTH_MILP_H
#define KILN_SYNTH_MILP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "kiln/kiln.h"
#include "kiln_internal.h"

#define MILP_INF 1e30

typedef struct milpModel {
  int ncols, capcols;
  double *lb, *ub, *obj;
  bool* integer;
  int nrows, caprows;
  double *rlb, *rub; /* -MILP_INF / MILP_INF for free sides */
  int nnz, capnnz;
  int *ti, *tj; /* triplets: row, col */
  double* tv;
  bool oom; /* an allocation failed; reported by milpSolve */
} milpModel;

void milpInit(milpModel* m);
void milpFree(milpModel* m);
int milpAddCol(milpModel* m, double lb, double ub, double obj, bool integer);
int milpAddRow(milpModel* m, double lb, double ub);
void milpAdd(milpModel* m, int row, int col, double v);
int milpIntegers(const milpModel* m);

typedef enum {
  MILP_OPTIMAL,    /* proved optimal within the gap */
  MILP_FEASIBLE,   /* time limit: an incumbent exists */
  MILP_NOSOLUTION, /* time limit with no incumbent */
  MILP_INFEASIBLE
} milpStatus;

/* Called now and then during a solve (new incumbents, about once a second otherwise). */
typedef void (*milpProgressFn)(void* user, double incumbent, double bound, double gap, double elapsed_s);

typedef struct milpParams {
  double time_limit_s;
  double mip_gap;
  bool presolve;
  bool cuts;          /* Gomory and MIR cuts (strong root bounds, slower root) */
  double stall_s;     /* > 0: stop once the incumbent has not improved by more than mip_gap
                       * (relative) for this long */
  const double* warm; /* [ncols] integer-feasible start, or NULL (disables presolve) */
  milpProgressFn progress;
  void* user;
  const volatile sig_atomic_t* stop; /* non-NULL and set: stop at the next callback (the incumbent is kept) */
} milpParams;

typedef struct milpResult {
  milpStatus status;
  double obj, bound;
  double* x; /* [ncols], malloc'ed when a solution exists; caller frees */
} milpResult;

/* A solver backend: one function table, so another MILP solver can be dropped in. */
typedef struct milpBackend {
  const char* name;
  kilnResult_t (*solve)(const milpModel* m, const milpParams* p, milpResult* r);
} milpBackend;

extern const milpBackend milpGlpk;

/* Merges repeated (row, col) entries, drops zero entries and removes duplicate rows (same
 * entries and bounds), e.g. the images of one constraint under a symmetry. */
void milpCompact(milpModel* m);

/* Monotonic time in seconds (the synthesizer's clock: time limits, stage times, progress). */
double synNow(void);

#endif
