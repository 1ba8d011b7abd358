/*
 * Plans: the MSCCL algorithm format, kiln's in-memory form of it, and the two judges of a plan
 * (the CPU verifier and the α-β simulator).
 *
 * Semantics (as the MSCCL runtimes give them):
 * - A plan is per-GPU lists of threadblocks; a threadblock has at most one send peer and one
 *   receive peer and runs its steps in order. Threadblock (rank A, send=B, chan=c) feeds, in
 *   order, threadblock (rank B, recv=A, chan=c).
 * - Buffers: input (i_chunks), output (o_chunks), scratch (s_chunks); offsets and cnt are in
 *   chunks of the named buffer. All chunks have the same size.
 * - Chunk size: the per-rank buffer that the collective defines (allreduce: the input; allgather:
 *   the output; reducescatter: the input; alltoall: the input) divided by its chunk count.
 * - In place: an allgather with i_chunks=0 finds rank r's contribution at output chunks
 *   r*k .. r*k+k-1 (k = o_chunks/ngpus); an allreduce with o_chunks=0 leaves its result in the
 *   input buffer; a reducescatter with o_chunks=0 leaves rank r's result at input chunks r*k...
 * - Step types: s (send src), r (recv into dst), rcs (recv into dst, send it on), rrs (recv, reduce
 *   with src, send the sum without storing), rrc (recv, dst <- src ⊕ recv), rrcs (rrc then send
 *   the result), cpy (dst <- src), re (dst <- dst ⊕ src), nop (only a dependency); and kiln's
 *   memory steps put, get, gre, sig, wait (below).
 * - depid/deps: before running, wait until threadblock depid of the same rank has finished its
 *   step deps (-1: none). hasdep=1 says some other step waits on this one.
 * - Copies (TACCL's <copy i_off o_off [cnt]/>, children of <gpu> before its <tb>s): before any
 *   step runs, the rank copies input chunks i_off..i_off+cnt-1 to output chunks o_off.. (cnt 1
 *   when absent); the steps then use the output copy. TACCL writes one for every chunk that is
 *   both in a rank's input and in its output. The verifier applies them before the first step;
 *   the simulator counts them as free local work (like cpy steps); the runtime and gen run
 *   kilnPlanLowerCopies' form, where they are ordinary cpy steps.
 *
 * Memory steps (kiln's own vocabulary: MSCCL's runtimes do not know them; kiln reads, writes and
 * round-trips them exactly, and a plan without them is written byte for byte as before). They act
 * on the symmetric window, where a peer's buffers are reached with plain loads and stores over
 * NVLink. Each names its peer with the step attribute peer="R" (another rank; required on these
 * steps, refused on the others); the threadblock's send and recv peers play no part, so one
 * threadblock may talk to any number of peers.
 * - put:  the peer's dstbuf[dstoff..+cnt) <- this rank's srcbuf[srcoff..+cnt) (remote stores).
 * - get:  this rank's dstbuf[dstoff..+cnt) <- the peer's srcbuf[srcoff..+cnt) (remote loads).
 * - gre:  this rank's dstbuf <- dstbuf ⊕ the peer's srcbuf (remote loads, reduced locally).
 * - sig:  raises this rank's signal to the peer on the threadblock's channel. A release: whatever
 *         happens before the sig (below) is visible to the peer once its matching wait passes.
 * - wait: waits for the peer's next signal to this rank on the threadblock's channel (acquire).
 *   Signal streams: the sigs from rank A to rank B on channel c all come from one threadblock of
 *   A, the waits of B for A on c all from one threadblock of B, and in every epoch (below) the
 *   k-th wait pairs with the k-th sig: the counts must be equal.
 *   srcbuf, srcoff, dstbuf, dstoff and cnt of sig and wait mean nothing (kiln writes i, -1, i, -1,
 *   0; any value reads). Offsets and cnt of put, get and gre count chunks of the buffer they name,
 *   on the rank that holds it; a peer's input and output alias as that peer's call does.
 * - Protocol of a put: the step attribute proto="Simple|LL|LL12|LL128" (absent: the plan's proto;
 *   refused on other steps). A Simple put is bulk stores that the peer may read only once a sig
 *   its threadblock raises after the put has been waited for. A line put (LL: 8 data bytes and
 *   the flag twice per 16-byte line; LL12: 12 data bytes and one flag word per 16-byte line; LL128:
 *   120 data bytes and an 8-byte flag per 128-byte line) carries its own flags and needs no
 *   sig/wait: every step of the peer that reads a chunk it writes (as src of cpy, re, put, s, rrs,
 *   rrc, rrcs, or as dst of re and gre) first waits until those lines hold this epoch's flag.
 *   Line puts write only the peer's scratch (the runtime keeps such chunks as lines, in a line
 *   area of their own); a scratch chunk of a rank is written by at most one line put of the plan
 *   and by no other step, and only the rank that holds it reads it (no get or gre of a line
 *   chunk); a step reads lines of one protocol, or plain chunks, never both.
 * - Epochs. A call runs the plan once per iteration it = 0..niter-1 (niter > 1 for a buffer larger
 *   than the plan's chunks cover: iteration it moves slice it of every chunk), and the runtime
 *   numbers epochs across calls: epoch = call * niter + it. User buffers (input, output) are the
 *   call's, one slice per iteration, and may be the same memory in every call; scratch has two
 *   halves, half = epoch & 1, each holding every scratch chunk (plain chunks and line chunks
 *   apart). Between iterations only each threadblock's program order holds (threadblock t may run
 *   iteration it + 1 while others still run it); between two calls of a rank, all of the earlier
 *   call's steps of that rank end before any of the later call's start (a kernel boundary), and in
 *   between the caller reads the results and writes the next inputs. Signal counters and line
 *   flags count epochs from the communicator's first call; a counter is never reset.
 * - Order. Happens-before is program order, dependencies (depid/deps, in the same epoch), a send
 *   before its receive, a sig before its wait, and the kernel boundary, made transitive. A line
 *   put orders only its own data before the steps that read its lines: it makes no other write of
 *   its threadblock visible (no fence), but every read that threadblock made before the put has
 *   returned, so a write ordered after a line read is also ordered after those reads.
 * - Races (kilnPlanVerify refuses each, naming rank, threadblock, step, call and iteration):
 *   a read of a chunk must be preceded in happens-before by the write it must see (or, for a line
 *   chunk, by its epoch's line put); a write must be preceded by the chunk's last write and, in
 *   happens-before or through line reads, by every read of what it overwrites - the same scratch
 *   half two epochs before included. The caller counts as a threadblock of its rank that writes
 *   the inputs before each call and reads the results after it: a peer's user buffers may be read
 *   or written only after that peer signalled in this call (its arrival: a sig raised after the
 *   call began), and a rank may end its call only after every peer's write into its buffers is
 *   signalled to it, and every peer's read of them is signalled or followed by lines the reader
 *   put after it. kilnPlanVerify runs KILN_VERIFY_CALLS calls of KILN_VERIFY_ITERATIONS
 *   iterations to check all of this.
 * - What a runtime does for them: a sig of stream (A -> B, channel c) is one system-scope release
 *   store into B's window of e * K + k + 1 (epoch e, k its place in the stream's sigs of an epoch,
 *   K their count: kilnPlanSignalOrdinals), after a barrier of its threadblock (a run of sigs may
 *   share one fence); a wait polls with system-scope acquire loads until the counter is at least
 *   e * K + k + 1, then meets its threadblock at a barrier. A line put stores lines whose flags
 *   carry a value of epoch e that no other epoch of the same half leaves there; a reader polls
 *   each line it reads until its flag is epoch e's (kilnPlanLineChunks says which chunks are
 *   lines, and of which protocol). Every load a step makes has returned before a later step of
 *   its threadblock stores. Dependencies between threadblocks of a rank are release/acquire, so
 *   that a sig releases what its threadblock learned through them.
 *
 * Ownership: a kilnPlan returned by a constructor is owned by the caller and freed with
 * kilnPlanFree(); everything it points to is owned by it.
 */
#ifndef KILN_PLAN_H
#define KILN_PLAN_H

#include "kiln/topology.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(enum, xml name) */
#define KILN_BUFFERS(X)   \
  X(KILN_BUF_INPUT, "i")  \
  X(KILN_BUF_OUTPUT, "o") \
  X(KILN_BUF_SCRATCH, "s")

typedef enum {
#define KILN_X_ENUM(e, n) e,
  KILN_BUFFERS(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_BUFFERS
} kilnBuffer_t;

/* What a step's peer attribute names (the last column of KILN_STEP_TYPES). */
typedef enum {
  KILN_PEER_NONE,   /* no peer attribute: the step uses the threadblock's send/recv peers, or none */
  KILN_PEER_WRITE,  /* dst is the peer's buffer (put) */
  KILN_PEER_READ,   /* src is the peer's buffer (get, gre) */
  KILN_PEER_SIGNAL, /* raises a signal to the peer (sig) */
  KILN_PEER_WAIT    /* waits for the peer's signal (wait) */
} kilnStepPeer_t;

/* X(enum, xml name, receives, sends, reduces, reads src, writes dst, runtime, peer)
 * receives/sends: through the threadblock's recv/send FIFO; reads src / writes dst: the step reads
 * srcbuf / writes dstbuf (on the peer for put's dst and get's and gre's src); runtime: kiln's GPU
 * runtime (host/, gen/, kernels/) runs the step (kilnPlanCheckRuntime refuses a plan with one it
 * does not); peer: what the step's peer attribute names. re and gre also read dst. */
#define KILN_STEP_TYPES(X)                                                     \
  X(KILN_STEP_SEND, "s", 0, 1, 0, 1, 0, 1, KILN_PEER_NONE)                     \
  X(KILN_STEP_RECV, "r", 1, 0, 0, 0, 1, 1, KILN_PEER_NONE)                     \
  X(KILN_STEP_RECV_COPY_SEND, "rcs", 1, 1, 0, 0, 1, 1, KILN_PEER_NONE)         \
  X(KILN_STEP_RECV_REDUCE_SEND, "rrs", 1, 1, 1, 1, 0, 1, KILN_PEER_NONE)       \
  X(KILN_STEP_RECV_REDUCE_COPY, "rrc", 1, 0, 1, 1, 1, 1, KILN_PEER_NONE)       \
  X(KILN_STEP_RECV_REDUCE_COPY_SEND, "rrcs", 1, 1, 1, 1, 1, 1, KILN_PEER_NONE) \
  X(KILN_STEP_COPY, "cpy", 0, 0, 0, 1, 1, 1, KILN_PEER_NONE)                   \
  X(KILN_STEP_REDUCE, "re", 0, 0, 1, 1, 1, 1, KILN_PEER_NONE)                  \
  X(KILN_STEP_NOP, "nop", 0, 0, 0, 0, 0, 1, KILN_PEER_NONE)                    \
  X(KILN_STEP_PUT, "put", 0, 0, 0, 1, 1, 1, KILN_PEER_WRITE)                   \
  X(KILN_STEP_GET, "get", 0, 0, 0, 1, 1, 1, KILN_PEER_READ)                    \
  X(KILN_STEP_GET_REDUCE, "gre", 0, 0, 1, 1, 1, 1, KILN_PEER_READ)             \
  X(KILN_STEP_SIGNAL, "sig", 0, 0, 0, 0, 0, 1, KILN_PEER_SIGNAL)               \
  X(KILN_STEP_WAIT, "wait", 0, 0, 0, 0, 0, 1, KILN_PEER_WAIT)

typedef enum {
#define KILN_X_ENUM(e, n, rv, sd, rd, rs, wd, rt, pe) e,
  KILN_STEP_TYPES(KILN_X_ENUM)
#undef KILN_X_ENUM
      KILN_NUM_STEP_TYPES
} kilnStepType_t;

KILN_API const char* kilnStepTypeName(kilnStepType_t t);
KILN_API bool kilnStepTypeParse(const char* s, kilnStepType_t* out);
KILN_API bool kilnStepReceives(kilnStepType_t t);
KILN_API bool kilnStepSends(kilnStepType_t t);
KILN_API bool kilnStepReduces(kilnStepType_t t);
KILN_API bool kilnStepReadsSrc(kilnStepType_t t);
KILN_API bool kilnStepWritesDst(kilnStepType_t t);
/* Whether kiln's GPU runtime runs steps of this type (the table's runtime column). */
KILN_API bool kilnStepRuntimeRuns(kilnStepType_t t);
/* What the step's peer attribute names (KILN_PEER_NONE for unknown types). */
KILN_API kilnStepPeer_t kilnStepPeerRole(kilnStepType_t t);
KILN_API const char* kilnBufferName(kilnBuffer_t b);

typedef struct kilnStep {
  int s; /* index within the threadblock (== position) */
  kilnStepType_t type;
  kilnBuffer_t srcbuf, dstbuf;
  int srcoff, dstoff, cnt;
  int depid, deps; /* -1, -1 when no dependency */
  bool hasdep;
  int peer;  /* memory steps (kilnStepPeerRole != KILN_PEER_NONE): the peer rank; read
                          * and written only for those types (kilnPlanAddStep sets -1) */
  int proto; /* put: a kilnProto_t, or -1 for the plan's (no proto attribute); read and
                          * written only for put (kilnPlanAddStep sets -1) */
} kilnStep;

typedef struct kilnThreadblock {
  int id;
  int send, recv; /* peer ranks or -1 */
  int chan;
  int nsteps;
  kilnStep* steps;
} kilnThreadblock;

/* Input chunks i_off..i_off+cnt-1 copied to output chunks o_off.. before any step runs. */
typedef struct kilnCopy {
  int i_off, o_off, cnt;
} kilnCopy;

typedef struct kilnGpu {
  int id;
  int i_chunks, o_chunks, s_chunks;
  int ntbs;
  kilnThreadblock* tbs;
  int ncopies; /* TACCL's initial copies, in file order (0 for kiln's own plans) */
  kilnCopy* copies;
} kilnGpu;

/* The most channels a plan file holds (nchannels; the reader refuses more, the writer too). */
#define KILN_PLAN_MAX_CHANNELS 1024
/* The most chunks a plan's steps may send in all (the verifier and simulator keep a slot per chunk
 * of every message); a plan past it is refused (KILN_ERR_INVALID_ARGUMENT) by every reader of the
 * plan's index (verifier, simulator, lowering). */
#define KILN_PLAN_MAX_MESSAGE_CHUNKS (1 << 28)

typedef struct kilnPlan {
  char name[KILN_NAME_MAX];
  kilnColl_t coll;
  kilnProto_t proto;
  int ngpus;
  int nnodes;         /* the nodes it was made for (ranks node*(ngpus/nnodes) + local, as in a
                    * topology): kiln's runtime cuts it into phases on a communicator of that many
                    * nodes, and the drop-in gives it to such communicators only; 0: not said
                    * (one node). The file's optional nnodes attribute, which divides ngpus */
  int nchannels;      /* 1..KILN_PLAN_MAX_CHANNELS */
  int nchunksperloop; /* in a file: the most chunks of any rank's input or output (MSCCL's runtimes
                        * size chunks by it); another value is refused, and writing puts that one */
  bool inplace, outofplace;
  uint64_t min_bytes, max_bytes; /* byte range this plan serves; max_bytes UINT64_MAX = open */
  char redop[16];                /* MSCCL's redop attribute as read ("sum", "nop", or "") */
  /* What the XML it came from held, so that a plan read and written back is unchanged. */
  bool has_coll, has_inplace, has_outofplace, has_minmax, has_redop, has_ngpus;
  bool old_coll_name; /* written as "reduce_scatter" */
  kilnGpu* gpus;      /* [ngpus], gpus[r].id == r */
} kilnPlan;

/* Reads a plan (either dialect). Errors name the file and line. */
KILN_API kilnResult_t kilnPlanReadFile(const char* path, kilnPlan** out);
KILN_API kilnResult_t kilnPlanReadMemory(const char* xml, size_t len, const char* name, kilnPlan** out);
/* The largest plan document kiln writes and reads (bytes): kilnPlanWriteFile refuses to write a
 * larger one, the readers to read it. */
#define KILN_PLAN_DOC_MAX_BYTES ((size_t)512 << 20)
/* Writes the plan; atomically (temporary + rename); "-" is stdout. kiln's own plans (has_*
 * all true) are written in the form both MSCCL runtimes accept. */
KILN_API kilnResult_t kilnPlanWriteFile(const kilnPlan* p, const char* path);
KILN_API kilnResult_t kilnPlanWriteMemory(const kilnPlan* p, char** out);
/* Writes a document kilnPlanWriteMemory made, as kilnPlanWriteFile writes its plan (refused past
 * KILN_PLAN_DOC_MAX_BYTES, atomically, "-" is stdout); frees doc either way. For a caller that
 * looks at the document before writing it (kiln classic: its size, before verification). */
KILN_API kilnResult_t kilnPlanWriteDocument(char* doc, const char* path);

/* Allocation helpers for builders (classic plans, lowering): a plan with ngpus GPUs and no
 * threadblocks; has_* flags all true. */
KILN_API kilnResult_t kilnPlanCreate(const char* name, kilnColl_t coll, int ngpus, kilnPlan** out);
/* Appends a threadblock to a GPU; returns a pointer valid until the next append on that GPU. */
KILN_API kilnThreadblock* kilnPlanAddThreadblock(kilnPlan* p, int rank, int send, int recv, int chan);
/* Appends a step (its s is set to its position); returns it, or NULL when out of memory. */
KILN_API kilnStep* kilnPlanAddStep(kilnThreadblock* tb, kilnStepType_t type, kilnBuffer_t srcbuf, int srcoff,
                                   kilnBuffer_t dstbuf, int dstoff, int cnt);
/* Deep copy. */
KILN_API kilnResult_t kilnPlanClone(const kilnPlan* p, kilnPlan** out);
/* True when some GPU of the plan has copies. */
KILN_API bool kilnPlanHasCopies(const kilnPlan* p);
/* Whether kiln's runtime serves calls of that form with the plan (kilnRun, the registry, the
 * baked table): a plan whose buffers leave only the in-place reading (allreduce or reducescatter
 * without output chunks, allgather without input chunks) serves in-place calls only, whatever its
 * inplace/outofplace attributes say; otherwise the forms it claims (outofplace read as !inplace
 * where the file lacks it), which the verifier checks. Never an in-place alltoall (the verifier
 * still checks one a plan claims, for other runtimes). */
KILN_API bool kilnPlanServes(const kilnPlan* p, bool inplace);
/* Whether the plan's buffers leave only the in-place reading (above; an alltoall with either
 * buffer empty too). */
KILN_API bool kilnPlanInPlaceOnly(const kilnPlan* p);
/* Rewrites the copies of every GPU as steps: a new threadblock 0 (no peers, channel 0) of cpy
 * steps, one per copy, and a dependency on its last step from the first step of each other
 * threadblock that touches a copied chunk (an input chunk a copy reads or an output chunk it
 * writes; in a plan that claims inplace, any input or output chunk). A step that already has a
 * dependency gets a nop step in front of it carrying the new one. Threadblock ids shift by one.
 * The result has no copies and computes what the plan with copies does (a plan that passes
 * kilnPlanVerify still does). Checks the copies' offsets (KILN_ERR_INVALID_ARGUMENT naming rank
 * and copy); on failure p is unchanged. Deterministic, so gen's and the runtime's lowering of a
 * plan give the same steps (and the runtime finds the baked kernel). */
KILN_API kilnResult_t kilnPlanLowerCopies(kilnPlan* p);
KILN_API void kilnPlanFree(kilnPlan* p);

/* Local reduction runs: how many steps right after step s of threadblock t of rank r a runtime
 * may fold into step s, computing  dst = ((a op b) op c) ...  in one pass instead of one pass per
 * step (the same values, in the same order). Step s must be a cpy or re; each folded step is a re
 * into the same destination chunks with the same count, without a dependency of its own, reading
 * chunks that cannot overlap the destination: scratch, or the destination's own buffer at other
 * offsets, or - when the plan never runs in place (inplace="0" and output chunks of its own) -
 * the other user buffer. No step waits on step s or a folded step other than the last. At most
 * KILN_FUSE_MAX - 1 steps fold into one; 0 when none can. The runtime and gen/ both use it, so a
 * baked kernel and the interpreter fold the same steps. */
#define KILN_FUSE_MAX 8
KILN_API int kilnStepFoldable(const kilnPlan* p, int r, int t, int s);
/* Rank r's steps as a runtime runs them, one entry per step in threadblock-major order (the
 * order of the runtime's and gen/'s step tables): publishes[i] - the step publishes its progress
 * (its hasdep, or some step waits on it); fold[i] - > 0: the step runs the fold[i] steps after it
 * in its pass (kilnStepFoldable), -1: an earlier step's pass runs it, 0: neither. Either array may
 * be NULL. One pass over the rank; the loader and gen/ both use it. */
KILN_API kilnResult_t kilnPlanRankSteps(const kilnPlan* p, int r, bool* publishes, int* fold);
/* Sets hasdep on every step that another step of its rank waits on (for plan builders). */
KILN_API void kilnPlanMarkHasdep(kilnPlan* p);

/* ---- Memory steps (see the top of this header) ---- */

/* Whether some step of the plan is a memory step (put, get, gre, sig, wait). */
KILN_API bool kilnPlanHasMemorySteps(const kilnPlan* p);
/* The protocol a put step runs with: its proto attribute, else the plan's. */
KILN_API kilnProto_t kilnStepProtocol(const kilnPlan* p, const kilnStep* st);
/* Whether kiln's GPU runtime (kilnPlanLoad, the registry, gen/) can run the plan: KILN_SUCCESS, or
 * KILN_ERR_UNSUPPORTED with a message naming the first step whose type it does not run (the step
 * table's runtime column) or the protocol it does not have (LL12). The one place the runtime asks. */
KILN_API kilnResult_t kilnPlanCheckRuntime(const kilnPlan* p);
/* Rank r's signal steps, one entry per step in threadblock-major order (as kilnPlanRankSteps):
 * for a sig or wait, ordinal[i] = its place k in its stream's steps of one epoch (0-based) and
 * per_epoch[i] = their count K, so that a runtime's k-th sig of epoch e stores e * K + k + 1 and the
 * matching wait waits for at least that; -1 in both for other steps. Either array may be NULL.
 * KILN_ERR_VERIFY with kilnPlanVerify's message when the plan's signal streams break its rules.
 * Of the plan as given: a runtime asks it of the plan it runs (kilnPlanLowerCopies' form). */
KILN_API kilnResult_t kilnPlanSignalOrdinals(const kilnPlan* p, int r, int* ordinal, int* per_epoch);
/* Rank r's scratch chunks: proto[c] = the kilnProto_t of the line put that writes scratch chunk c
 * (the runtime keeps it as lines of that protocol, and a step reading it waits for them), or -1 for
 * a plain chunk. proto has s_chunks entries. KILN_ERR_VERIFY with kilnPlanVerify's message when the
 * plan's line puts break their rules. */
KILN_API kilnResult_t kilnPlanLineChunks(const kilnPlan* p, int r, int* proto);

/* Number of chunks of the reference buffer (see chunk size above) for this plan. */
KILN_API int kilnPlanRefChunks(const kilnPlan* p);

/* ---- CPU verifier ---- */

typedef struct kilnVerifyOptions {
  int schedules;  /* interleavings of threadblocks to try (>= 1); default 4 */
  uint64_t seed;  /* for the random interleavings */
  bool all_ops;   /* also check numerically with every reduction op */
  int fifo_depth; /* > 0: a connection holds at most this many sent, not yet received steps
                       * (the runtime's FIFO slots, kilnCommConfig.nslots); 0: unbounded.
                       * Default KILN_FIFO_DEPTH_DEFAULT, the runtime's default: a plan that
                       * passes with it runs on a communicator of default settings */
} kilnVerifyOptions;
/* FIFO slots per connection of a communicator of default settings (kilnCommConfig.nslots), and
 * the depth the verifier checks plans at by default (MSCCL's runtime has as many). */
#define KILN_FIFO_DEPTH_DEFAULT 8
#define KILN_VERIFY_OPTIONS_INIT \
  { 4, 1, true, KILN_FIFO_DEPTH_DEFAULT }
/* Data races (two accesses to one chunk of a rank, one a write, that no dependency, program order
 * or send-receive pair orders) are found whatever the interleaving in plans whose threadblocks
 * (over all ranks) times threadblocks plus steps is at most this (clocks of 4 bytes: 256 MiB at
 * most; 32 ranks of 96 threadblocks and 15 000 steps take 222 MB), and where that memory can be
 * had. A plan of MSCCL steps past it is checked rank by rank instead: every two such accesses must
 * be ordered by the rank's own program order and dependencies (an order that only sends and
 * receives through other ranks give is not followed, so a plan that relies on one is refused as
 * racy); kiln's lowering orders them so at any size. Plans with memory steps past their own limit
 * (KILN_VERIFY_MEMORY_CHECKS_ALL_RACES) are checked only on the `schedules` interleavings run. */
#define KILN_VERIFY_RACE_MAX_CLOCKS ((uint64_t)1 << 26)
/* The most chunk slots (every rank's input, output and scratch chunks plus every message chunk)
 * kilnPlanVerify checks, ~30 bytes each: a plan past it is refused (KILN_ERR_INVALID_ARGUMENT). */
#define KILN_VERIFY_MAX_SLOTS (1 << 25)
/* Whether kilnPlanVerify checks p for data races whatever the interleaving (above). */
#define KILN_VERIFY_CHECKS_ALL_RACES(tbs, steps) \
  ((uint64_t)(tbs) * ((uint64_t)(tbs) + (uint64_t)(steps)) <= KILN_VERIFY_RACE_MAX_CLOCKS)

/* A plan with memory steps runs for this many calls of this many iterations each (epochs 0..5:
 * every scratch half is used three times, twice within a call and once across a call's end), with
 * a caller per rank that writes the inputs before each call and reads the results after it. */
#define KILN_VERIFY_CALLS 2
#define KILN_VERIFY_ITERATIONS 3
/* Whether kilnPlanVerify checks a plan with memory steps for data races whatever the interleaving:
 * its clocks cover every threadblock and each rank's caller, two clocks each (one for what a read
 * must see, one for what a write must follow), over every epoch's steps. */
#define KILN_VERIFY_MEMORY_CHECKS_ALL_RACES(tbs, ranks, steps)            \
  KILN_VERIFY_CHECKS_ALL_RACES(2 * ((uint64_t)(tbs) + (uint64_t)(ranks)), \
                               (uint64_t)KILN_VERIFY_CALLS * KILN_VERIFY_ITERATIONS * (uint64_t)(steps))

/* Runs the plan for all ranks on host memory and checks the collective's postcondition on every
 * rank and chunk. KILN_SUCCESS only for a correct plan; otherwise KILN_ERR_VERIFY with a message
 * naming rank/threadblock/step (deadlock, unmatched send or receive, out-of-range offset,
 * dependency cycle, wrong result). A plan with memory steps runs KILN_VERIFY_CALLS calls of
 * KILN_VERIFY_ITERATIONS iterations (see the top of this header) and is also refused for a read
 * that nothing orders after the write it must see, or a write that nothing orders after a read of
 * what it overwrites; its messages name the call and iteration too. A plan with TACCL copies and
 * memory steps is checked in its kilnPlanLowerCopies form. */
KILN_API kilnResult_t kilnPlanVerify(const kilnPlan* p, const kilnVerifyOptions* opts);

/* ---- α-β simulator ---- */

typedef struct kilnSimResult {
  double time_us; /* predicted completion time */
  double busiest_link_us;
  int nsends; /* transfers simulated */
} kilnSimResult;

/* Predicts the time of the plan on topology t for `bytes` (the collective's reference size:
 * allreduce: per-rank input; allgather: total output; reducescatter and alltoall: total input).
 * Plan rank r runs on topology rank r; a plan of another rank count than the topology's, or a
 * send between ranks with no link, is an error. Steps cost as the topology's costs say where it
 * has them (kiln/topology.h: <costs>), else KILN_SIM_PARAMS_INIT; the time includes the call's
 * launch (launch_us for a plan with memory steps, fifo_launch_us for one of MSCCL's steps only,
 * which runs in iterations of a FIFO slot). */
KILN_API kilnResult_t kilnPlanSimulate(const kilnPlan* p, const kilnTopology* t, uint64_t bytes,
                                       kilnSimResult* out);
/* kilnPlanSimulate with the costs given (NULL: the topology's or the defaults).
 * KILN_ERR_INVALID_ARGUMENT for a table kilnSimParamsCheck refuses. A put is a transfer from this
 * rank to its peer, a get or gre one from the peer; a sig follows the arrival of every put its
 * threadblock made since its previous sig, and its wait follows the sig's arrival; a step that
 * reads lines follows the arrival of the line puts that write them. One call, one iteration. */
KILN_API kilnResult_t kilnPlanSimulateWith(const kilnPlan* p, const kilnTopology* t, uint64_t bytes,
                                           const kilnSimParams* params, kilnSimResult* out);

/* One step's times in the simulator (µs from the call's start): when it begins and ends holding
 * what it holds (a step that sends: its link, or its switch or NIC ports, for β·bytes; a local
 * step: begin = end, when it completes), and when its data arrives (a step that sends: end + α;
 * any other: its end). */
typedef struct kilnSimStepTime {
  double start_us, end_us, arrive_us;
} kilnSimStepTime;
/* kilnPlanSimulate that also gives every step's times: *times (malloc'ed, the caller frees it)
 * holds *ntimes entries, rank by rank, in each rank threadblock by threadblock, in each step by step
 * (a plan's file order); a step that runs in several iterations begins with its first and ends
 * with its last. For pictures of a schedule (kiln show --svg). */
KILN_API kilnResult_t kilnPlanSimulateTimes(const kilnPlan* p, const kilnTopology* t, uint64_t bytes,
                                            kilnSimResult* out, kilnSimStepTime** times, int* ntimes);

typedef enum { KILN_BASELINE_RING, KILN_BASELINE_TREE } kilnBaseline_t;
/* Predicts NCCL's ring or tree algorithm for coll on t, on the same model. */
KILN_API kilnResult_t kilnBaselineSimulate(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t,
                                           uint64_t bytes, kilnSimResult* out);
/* kilnBaselineSimulate with NCCL's costs given (NULL: KILN_SIM_PARAMS_NCCL): its steps are sends
 * (the table's send forms, step_us, tb_us_per_mb), its call costs fifo_launch_us, and of its
 * protocols LL, LL128 and Simple the fastest predicted is taken, as NCCL's tuner does. */
KILN_API kilnResult_t kilnBaselineSimulateWith(kilnBaseline_t b, kilnColl_t coll, const kilnTopology* t,
                                               uint64_t bytes, const kilnSimParams* params,
                                               kilnSimResult* out);

/* ---- Classic plans ---- */

typedef struct kilnClassicOptions {
  int chunks;        /* chunks per rank's piece, >= 1 (default 1) */
  int instances;     /* parallel copies over channels, >= 1 (default 1) */
  kilnProto_t proto; /* default Simple */
  bool inplace;      /* write the in-place form */
} kilnClassicOptions;
#define KILN_CLASSIC_OPTIONS_INIT \
  { 1, 1, KILN_PROTO_SIMPLE, false }

/* Known algorithms: through FIFOs, "ring" (allgather, reducescatter, allreduce) and "direct"
 * (allgather, alltoall, allreduce, reducescatter); with memory steps (one threadblock per rank and
 * instance, talking to every peer; solver/classic.c has each form's steps), "oneshot" (allreduce,
 * reducescatter: puts of every operand into the reducing rank's scratch, reduced there in rank
 * order), "twoshot" (allreduce: a share reduced at each rank, then put to every peer), "staged"
 * (allgather, alltoall: puts into the peers' scratch, then local copies) and "zerocopy" (allgather,
 * alltoall: puts straight into the peers' outputs between an arrival and a done signal; Simple,
 * and no in-place alltoall). proto is the FIFO protocol of ring and direct (not LL12) and the puts'
 * protocol of the others. Unsupported pairs give KILN_ERR_UNSUPPORTED naming both. */
KILN_API kilnResult_t kilnClassicPlan(const char* algo, kilnColl_t coll, int nranks,
                                      const kilnClassicOptions* opts, kilnPlan** out);

#ifdef __cplusplus
}
#endif
#endif /* KILN_PLAN_H */
