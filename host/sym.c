/*
 * The symmetric-memory kernels on the host (kernels/sym.cuh; kiln/runtime.h, kilnSymRun): which
 * calls they serve by default, and their launch.
 */
#include <cuda.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../solver/params.h"
#include "kiln/registry.h"
#include "kiln_dev.h"
#include "launch.h"
#include "select.h"
#include "sym_ce.h"
#include "runtime_internal.h"

_Static_assert(KILN_CLIQUE_MAX == KILN_SYM_MAX_RANKS, "a clique holds up to the symmetric kernels' ranks");
_Static_assert((int)KILN_SYM_ALLREDUCE_ONESHOT == KILN_SYM_AR_ONESHOT &&
                   (int)KILN_SYM_ALLREDUCE_TWOSHOT == KILN_SYM_AR_TWOSHOT &&
                   (int)KILN_SYM_REDUCESCATTER == KILN_SYM_RS && (int)KILN_SYM_ALLGATHER == KILN_SYM_AG &&
                   (int)KILN_SYM_ALLTOALL == KILN_SYM_A2A,
               "runtime.h and kiln_dev.h number the symmetric algorithms alike");

static kilnColl_t sym_coll(kilnSymAlgo_t a) { return kilnSymAlgoColl(a); }

/* A setting whose default the code decides (the table's row has none: params.h): its value where
 * the environment sets it, else def. */
static long long set_or(kilnParamId id, long long def) {
  return kilnParamIsSet(id) ? (long long)kilnParam(id) : def;
}

/* A setting of the table, clamped to [lo, hi]. */
static long long clamped(long long v, long long lo, long long hi) { return v < lo ? lo : v > hi ? hi : v; }

/* A size threshold with its own switch: UINT64_MAX (never) when the switch is off, else the size
 * as set, else def (LLONG_MAX: never). */
static uint64_t threshold(kilnParamId on, kilnParamId bytes, long long def) {
  return !kilnParam(on) ? UINT64_MAX : (uint64_t)set_or(bytes, def);
}

/* x rounded up to a multiple of m (staging regions start at 256-byte boundaries; the direct
 * copies' block sizes are whole 16-byte packs). */
static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

/* Direct copies' pieces from this size take symDirectBigBlockBytes per block (kilnSymConfigure). */
#define KILN_SYM_DIRECT_BIG_PIECE ((uint64_t)1 << 20)

/* Bytes of one half that `regions` regions of lines of form ll take for segments (or two-shot
 * shares) up to maxBytes, each region rounded up to 256 bytes as geometry rounds it; at most
 * `half` (a segment larger than a half never goes as lines anyway). */
static uint64_t line_area_need(int ll, uint64_t maxBytes, uint64_t regions, uint64_t half) {
  if (maxBytes == 0) return 0;
  if (maxBytes > half) maxBytes = half;
  const uint64_t need = regions * round_up(kilnSymLineBytes(ll, maxBytes, 1), 256);
  return need < half ? need : half;
}

/* The staging of the line forms, apart from the flag form's (symHalf) and from each other's
 * (runtime_internal.h's window layout): a call in lines takes a line for its own once its flag
 * words hold the call's flag, so the bytes it polls must never hold what another form left there.
 * LL lines carry the flag in two 32-bit words of every 16 bytes, LL128 lines in one 64-bit word
 * of every 128; the flag form's data (anything the caller sends) and LL128's data words can hold
 * any value in those places, and would pass for lines of a later call in the same half
 * (gpu_sym/sym_lines_apart). Lines of one form can be trusted over what that form left:
 * every line of an earlier call carries that call's flag in the same places, and the flags of
 * calls s and s - 2k differ (kernels/sym.cuh symFlag). LL12 lines share LL's area: both carry the
 * flag in the fourth word of every 16 bytes, so a line of either form from an earlier call holds an
 * older flag there and passes for neither (LL12's data in LL's second word is not enough for LL,
 * which wants both). Each area holds, per half, the most the
 * thresholds above let a call of its form take (kilnSymLineBytes, 256-byte regions), at most
 * symHalf: 4 ranks by default LL 2 MiB, LL128 4.3 MiB (two-shot's 8 regions of 512 KiB shares).
 * They follow the flag form's two halves in the window (symStageBase, set before this). */
static void sym_line_areas(struct kilnComm* c) {
  const uint64_t n = (uint64_t)c->nranks;
  /* None where no symmetric call can run (geometry: 2 to KILN_SYM_MAX_RANKS ranks). */
  const uint64_t half = c->nranks >= 2 && c->nranks <= KILN_SYM_MAX_RANKS ? c->symHalf : 0;
  uint64_t ll = line_area_need(
      KILN_SYM_LINES_LL, c->symLLBytes > c->symLLReduceBytes ? c->symLLBytes : c->symLLReduceBytes, n, half);
  const uint64_t ll2 = line_area_need(KILN_SYM_LINES_LL, c->symLL2Bytes, 2 * n, half);
  if (ll2 > ll) ll = ll2;
  uint64_t l128 = c->symLL128Bytes ? line_area_need(KILN_SYM_LINES_LL128, c->symLL128MaxBytes, n, half) : 0;
  const uint64_t l128x2 = c->symLL128TwoShotBytes
                              ? line_area_need(KILN_SYM_LINES_LL128, c->symLL128TwoShotMaxBytes, 2 * n, half)
                              : 0;
  if (l128x2 > l128) l128 = l128x2;
  c->symLLHalf = (size_t)round_up(ll, 4096);
  c->symLL128Half = (size_t)round_up(l128, 4096);
  c->symLLBase = c->symStageBase + 2 * c->symHalf;
  c->symLL128Base = c->symLLBase + 2 * c->symLLHalf;
}

/* One half of form ll's staging (KILN_SYM_LINES_*: the LL (and LL12) or LL128 lines' area, or the
 * flag form's), and where its two halves start in the window. */
static uint64_t form_half(const struct kilnComm* c, int ll) {
  return ll == KILN_SYM_LINES_LL128 ? c->symLL128Half : ll ? c->symLLHalf : c->symHalf;
}
static size_t form_base(const struct kilnComm* c, int ll) {
  return ll == KILN_SYM_LINES_LL128 ? c->symLL128Base : ll ? c->symLLBase : c->symStageBase;
}

void kilnSymConfigure(struct kilnComm* c) {
  c->symOff = !kilnParam(KILN_PARAM_Sym);
  /* At most 64 blocks a kernel (KILN_SYM_BLOCKS).
   * 4 GPUs: reducescatter 4 MiB 22.5 us with 64 blocks, 24.2 with 32; allgather 16 MiB 49.0 vs 54.8 (2026-11-26). */
  c->symMaxBlocks = (int)clamped(kilnParam(KILN_PARAM_SymBlocks), 1, KILN_SYM_MAX_BLOCKS);
  /* Reductions in rounds (larger than a staging half; also alltoall of large pieces, below) take
   * up to 128 blocks (KILN_SYM_REDUCE_BLOCKS); copies stay at KILN_SYM_BLOCKS.
   * 4x H100, graphs: reducescatter 256 MiB 605 us with 128 blocks, 634 with 64, NCCL 662 (2026-11-26). */
  c->symReduceBlocks = (int)clamped(kilnParam(KILN_PARAM_SymReduceBlocks), 1, KILN_SYM_MAX_BLOCKS);
  /* One block per 2 KiB of segment (KILN_SYM_BLOCK_BYTES, a multiple of 16, at least 1 KiB).
   * 4x H200, graphs, 2 vs 4 KiB: alltoall 16 KiB 4.18 vs 4.67 us, reducescatter 4.37 vs 4.71 (2026-11-26). */
  const long long b = clamped(kilnParam(KILN_PARAM_SymBlockBytes), 1024, LLONG_MAX - 15);
  c->symBlockBytes = (uint64_t)(b + 15) / 16 * 16;
  /* Segments up to 128 KiB travel as LL lines, 512 KiB on 2 ranks (KILN_SYM_LL_BYTES; 0: never).
   * 2x H200, to 512 vs 128 KiB: allreduce 256 KiB 4.01 vs 6.31 us, allgather 1 MiB 5.84 vs 6.63 (2026-11-27). */
  const long long ll = set_or(KILN_PARAM_SymLLBytes, -1);
  c->symLLBytes = ll >= 0 ? (uint64_t)ll : c->nranks == 2 ? 512 << 10 : 128 << 10;
  /* One-shot allreduce and reducescatter (the reductions) up to 256 KiB on 4 ranks
   * (KILN_SYM_LL_REDUCE_BYTES; else KILN_SYM_LL_BYTES as set, or symLLBytes); the copies stay at 128 KiB.
   * 4x H200, graphs, to 256 vs 128 KiB: allreduce 256 KiB 7.5 vs 9.0 us; alltoall 1 MiB 9.6% slower (2026-11-27). */
  c->symLLReduceBytes =
      (uint64_t)set_or(KILN_PARAM_SymLLReduceBytes, ll >= 0          ? ll
                                                    : c->nranks == 4 ? 256 << 10
                                                                     : (long long)c->symLLBytes);
  /* Two-shot shares up to 128 KiB as lines (KILN_SYM_LL2_BYTES; 0: never).
   * 4 GPUs, graphs: allreduce 512 KiB 13.3 us as lines, 14.0 with flags; 1 MiB 18.6 vs 17.2 (2026-11-26). */
  c->symLL2Bytes = (uint64_t)kilnParam(KILN_PARAM_SymLL2Bytes);
  /* One-shot calls that would go as LL lines go as LL12 lines (kernels/sym.cuh bodyLL, LinesLL12:
   * 12 data bytes per 16-byte line instead of 8) where their segment is larger than
   * KILN_SYM_LL12_BYTES and their elements are at most 4 bytes (KILN_SYM_LL12=0: never).
   * 4x H200, graphs, past 8 vs past 32 KiB: allreduce 16 KiB 2.77 vs 2.85 us, 32 KiB 2.96 vs 3.13 (2026-11-28). */
  c->symLL12Bytes =
      threshold(KILN_PARAM_SymLL12, KILN_PARAM_SymLL12Bytes, kilnParam(KILN_PARAM_SymLL12Bytes));
  /* One-shot segments larger than KILN_SYM_LL128_BYTES (0: never) and up to
   * KILN_SYM_LL128_MAX_BYTES travel as LL128 lines (kernels/sym.cuh bodyLL128: 120 data bytes per
   * 128-byte line, LL 8 per 16), whatever symLLBytes says; on 4 ranks 512 KiB segments go faster with flags.
   * 2x H200, graphs, LL128 vs LL: allgather 1 MiB 0.84x the time, allreduce 512 KiB 0.88x (2026-11-27). */
  c->symLL128Bytes = (uint64_t)kilnParam(KILN_PARAM_SymLL128Bytes);
  c->symLL128MaxBytes = (uint64_t)set_or(KILN_PARAM_SymLL128MaxBytes, c->nranks == 2 ? 1 << 20 : 256 << 10);
  /* Two-shot shares larger than KILN_SYM_LL2_128_BYTES (0: never; default: past the LL lines'
   * top, symLL2Bytes) and up to KILN_SYM_LL2_128_MAX_BYTES travel as LL128 lines (bodyLL128x2),
   * staged even where the call could go direct.
   * 4x H200, graphs: allreduce 1 MiB 10.1 us against 12.6 direct with flags; 2 MiB 0.96x (2026-11-27). */
  c->symLL128TwoShotBytes = (uint64_t)set_or(KILN_PARAM_SymLL2x128Bytes, (long long)c->symLL2Bytes);
  c->symLL128TwoShotMaxBytes = (uint64_t)kilnParam(KILN_PARAM_SymLL2x128MaxBytes);
  /* Flag form: bytes of a piece per round (KILN_SYM_ROUND_BYTES; 0: as much as a staging half
   * holds). */
  c->symRoundBytes = (uint64_t)kilnParam(KILN_PARAM_SymRoundBytes);
  /* Reducescatter: at most KILN_SYM_RS_ROUND_BYTES per round (0: no limit of its own): 8 MiB on
   * 2 GPUs; other counts not measured.
   * 2x H100, graphs: reducescatter 256 MiB 396 vs 417 us, 1 GiB 1513 vs 1545 (2026-11-26). */
  c->symRSRoundBytes = (uint64_t)set_or(KILN_PARAM_SymRSRoundBytes, c->nranks == 2 ? 8 << 20 : 0);
  /* Copies (allgather; alltoall with pieces under KILN_SYM_A2A_BIG_BYTES) move at most
   * KILN_SYM_COPY_ROUND_BYTES per round over all peers' regions, with KILN_SYM_BLOCKS blocks;
   * reductions, and alltoall with larger pieces, take rounds up to a whole half with
   * KILN_SYM_REDUCE_BLOCKS blocks (geometry).
   * 4x H100, graphs, rounds of 16 vs 32 MiB: allgather 64 MiB 170 vs 181 us, alltoall 169 vs 177 (2026-11-26). */
  c->symCopyRoundBytes = (uint64_t)kilnParam(KILN_PARAM_SymCopyRoundBytes); /* 0: a half */
  /* Copies of at least 8 such rounds take rounds of an eighth of a piece, up to
   * KILN_SYM_COPY_ROUND_MAX_BYTES (32 MiB), and such grown rounds up to KILN_SYM_COPY_BLOCKS (128)
   * blocks (sym_blocks); on 2 GPUs rounds that did not grow take them too. More than 4 ranks (not
   * measured): rounds of KILN_SYM_COPY_ROUND_BYTES and KILN_SYM_BLOCKS blocks.
   * 4x H200, graphs: allgather 1 GiB 2344 us grown with 128 blocks, 2470 in 16 MiB rounds with 64 (2026-11-26). */
  c->symCopyRoundMaxBytes =
      (uint64_t)set_or(KILN_PARAM_SymCopyRoundMaxBytes,
                       c->nranks <= 4 ? (long long)32 << 20 : (long long)c->symCopyRoundBytes);
  c->symCopyBlocks = (int)clamped(set_or(KILN_PARAM_SymCopyBlocks, c->nranks <= 4 ? 128 : c->symMaxBlocks), 1,
                                  KILN_SYM_MAX_BLOCKS);
  /* Alltoall goes as a copy up to pieces of 128 MiB, at every size on 2 GPUs (KILN_SYM_A2A_BIG_BYTES).
   * 2x H100, graphs: alltoall 1 GiB 1519 us as a copy, 1580 as a reduction, NCCL 1709 (2026-11-26). */
  c->symA2ABigBytes =
      (uint64_t)set_or(KILN_PARAM_SymA2ABigBytes, c->nranks == 2 ? LLONG_MAX : (long long)128 << 20);
  /* Reductions larger than a copy round go in at least KILN_SYM_MIN_ROUNDS rounds, which overlap.
   * 4 GPUs: reducescatter 64 MiB 166 us in rounds of 16 MiB (4x H100), 182 in one (4x H200) (2026-11-26). */
  c->symMinRounds = (int)clamped(kilnParam(KILN_PARAM_SymMinRounds), 0, 64); /* 0: rounds of a half */
  /* Outputs in the caller's symmetric windows go direct from KILN_SYM_DIRECT_BYTES of reference
   * bytes (KILN_SYM_DIRECT=0: never): 16 MiB on 2 ranks, 1 MiB on 4, off on 8 (not measured).
   * 4x H200, graphs, direct vs staged: allgather 1 MiB 9.36 vs 10.35 us, 256 KiB 8.18 vs 7.32 (2026-11-26). */
  c->symDirectBytes = threshold(KILN_PARAM_SymDirect, KILN_PARAM_SymDirectBytes,
                                c->nranks == 2   ? (long long)16 << 20
                                : c->nranks == 4 ? (long long)1 << 20
                                                 : LLONG_MAX);
  /* Alltoall from KILN_SYM_DIRECT_A2A_BYTES (default: where KILN_SYM_DIRECT_BYTES says when that is
   * set, else 4 MiB on 4 ranks).
   * 4x H200, graphs, direct vs staged: alltoall 1 MiB 9.68 vs 8.51 us, 4 MiB 15.76 vs 16.76 (2026-11-26). */
  uint64_t a2a = c->symDirectBytes;
  if (!kilnParamIsSet(KILN_PARAM_SymDirectBytes) && c->nranks == 4 && a2a < ((uint64_t)4 << 20))
    a2a = (uint64_t)4 << 20;
  c->symDirectA2ABytes = threshold(KILN_PARAM_SymDirect, KILN_PARAM_SymDirectA2ABytes,
                                   a2a > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)a2a);
  /* Direct allgather and alltoall take up to KILN_SYM_DIRECT_BLOCKS blocks.
   * 2x H100, graphs: allgather 1 GiB 1518 us with 128 blocks, 1646 with 64 (2026-11-26). */
  c->symDirectBlocks = (int)clamped(kilnParam(KILN_PARAM_SymDirectBlocks), 1, KILN_SYM_MAX_BLOCKS);
  /* Within that, a block per KILN_SYM_DIRECT_BLOCK_BYTES (8 KiB; a multiple of 16, at least 1 KiB)
   * of a piece: 32, 64 and 128 blocks at 1, 2 and 4 MiB on 4 ranks.
   * 4x H200, graphs, windows, allgather with 32 / 64 / 128 blocks: 1 MiB 8.27 / 8.42 / 9.19 us (2026-11-27). */
  const long long db = clamped(kilnParam(KILN_PARAM_SymDirectBlockBytes), 1024, LLONG_MAX - 15);
  c->symDirectBlockBytes = round_up((uint64_t)db, 16);
  /* From pieces of 1 MiB (KILN_SYM_DIRECT_BIG_PIECE), a block per KILN_SYM_DIRECT_BIG_BLOCK_BYTES
   * (16 KiB) instead.
   * 4x H100, graphs, windows: allgather 4 MiB 17.09-17.21 us with 64 blocks, 17.86-17.91 with 128 (2026-11-27). */
  const long long bdb = clamped(kilnParam(KILN_PARAM_SymDirectBigBlockBytes), 1024, LLONG_MAX - 15);
  c->symDirectBigBlockBytes = round_up((uint64_t)bdb, 16);
  /* Direct copies load each thread's first pack while the peers' arrival is awaited
   * (KILN_SYM_DIRECT_PRELOAD=0: after it).
   * 4x H100, graphs, windows: allgather 1 MiB 9.47 vs 9.64 us, 2 MiB 12.28 vs 12.60 (2026-11-27). */
  c->symDirectPreload = kilnParam(KILN_PARAM_SymDirectPreload) != 0;
  /* Direct allgather and alltoall copy to the peers with the copy engine from KILN_SYM_CE_BYTES
   * (KILN_SYM_CE=0: never), the local piece beside it with KILN_SYM_CE_BLOCKS blocks: from 128 MiB
   * on 2 and 4 GPUs, off for other counts.
   * 4x H200, graphs, engine vs SM stores: allgather 1 GiB 2087 vs 2289 us, 128 MiB 293 vs 295 (2026-11-26). */
  c->symCEBytes = threshold(KILN_PARAM_SymCE, KILN_PARAM_SymCEBytes,
                            c->nranks == 2 || c->nranks == 4 ? (long long)128 << 20 : LLONG_MAX);
  c->symCEBlocks = (int)clamped(kilnParam(KILN_PARAM_SymCEBlocks), 1, 1024);
  /* Direct allreduce as a staged reducescatter of this rank's share, then the engine's copies of it
   * into the peers' outputs, from KILN_SYM_AR_CE_BYTES (KILN_SYM_AR_CE=0: never): the reduced
   * shares go out at the engine's rate instead of the SM stores'; from 512 MiB on 2 and 4 GPUs.
   * 4x H200, graphs, against two-shot direct: allreduce 1 GiB 4408 vs 4582 us, 256 MiB 1138 vs 1151 (2026-11-26). */
  c->symARCEBytes = threshold(KILN_PARAM_SymARCE, KILN_PARAM_SymARCEBytes,
                              c->nranks == 2 || c->nranks == 4 ? (long long)512 << 20 : LLONG_MAX);
  /* The kernels are launched with programmatic stream serialization (KILN_SYM_PDL=0: without):
   * one may be scheduled while the kernel before it on the stream runs, and waits on the GPU for
   * its end (kernels/sym.cuh), so back-to-back calls do not pay a launch between them.
   * 4x H200, graphs, with vs without: allreduce 16 B 3.51 vs 4.04 us, 64 KiB 6.61 vs 7.12 (2026-11-27). */
  c->symPdl = kilnParam(KILN_PARAM_SymPdl) != 0;
  /* The LL forms trigger the next kernel's launch once a block's lines are out, before it waits
   * for the peers' (KILN_SYM_PDL_TRIGGER=end: at the kernel's end, after that wait): the next
   * kernel's start overlaps the wait instead of following it. kernels/sym.cuh (LLStart) says what
   * that risks and where to turn it off.
   * 2x H200, the LL kernel alone (sym_probe), early vs end: allreduce 256 B 1.62 vs 1.94 us (2026-11-27). */
  const char* trig = kilnParamString(KILN_PARAM_SymPdlTrigger);
  c->symEarlyTrigger = !(trig && strcmp(trig, "end") == 0);
  kilnLaunchDriverUse(kilnParam(KILN_PARAM_LaunchDriver) != 0);
  sym_line_areas(c);
}

/* Whether a call of pieces of pieceBytes goes as a copy (small rounds, KILN_SYM_BLOCKS blocks) or
 * as a reduction (rounds that fill a half, KILN_SYM_REDUCE_BLOCKS blocks): kilnSymConfigure. */
static bool sym_copies(const struct kilnComm* c, kilnSymAlgo_t a, uint64_t pieceBytes) {
  return a == KILN_SYM_ALLGATHER || (a == KILN_SYM_ALLTOALL && pieceBytes < c->symA2ABigBytes);
}

/* One rank's region of `bytes` of staging, shared by the call's phases (two-shot: 2) and ranks,
 * rounded down to 256 bytes (staging regions start at 256-byte boundaries). */
static uint64_t per_region(const struct kilnComm* c, kilnSymAlgo_t a, uint64_t bytes) {
  const uint64_t phases = a == KILN_SYM_ALLREDUCE_TWOSHOT ? 2 : 1;
  return bytes / (phases * (uint64_t)c->nranks) / 256 * 256;
}

/* Whether a segment of s elements of es bytes, as lines of form ll, fits a region of that form's
 * area (sym_line_areas). */
static bool lines_fit(const struct kilnComm* c, kilnSymAlgo_t a, int ll, uint64_t s, size_t es) {
  return round_up(kilnSymLineBytes(ll, s, es), 256) <= per_region(c, a, form_half(c, ll));
}

/* A rank's region of a copy round before it grows (geometry): symCopyRoundBytes per region, at
 * least 256 bytes; 0 when copy rounds have no limit. */
static uint64_t copy_region(const struct kilnComm* c, kilnSymAlgo_t a) {
  if (!c->symCopyRoundBytes) return 0;
  const uint64_t cc = per_region(c, a, c->symCopyRoundBytes);
  return cc < 256 ? 256 : cc;
}

/* The geometry of a call: elements of the window the blocks cut (seg) and of a whole piece
 * (total: the count, or the two-shot share), rounds, whether it goes as LL lines (up to
 * symLLBytes of segment, symLLReduceBytes for one-shot allreduce and reducescatter, two-shot up to
 * symLL2Bytes of share) or as LL128 lines (segments past symLL128Bytes up to symLL128MaxBytes,
 * shares past symLL128TwoShotBytes up to symLL128TwoShotMaxBytes; they win over LL) or as LL12
 * lines (one-shot LL segments past symLL12Bytes of elements of at most 4 bytes) and bytes per rank
 * region of a staging half. Lines go in one round; the flag form cuts a piece larger than its
 * region of a half (or than symRoundBytes) into rounds. Returns whether the call fits this communicator (ranks,
 * form, the staging half); the outputs are set only then. */
static bool geometry(const struct kilnComm* c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype,
                     bool inplace, kilnSymArgs* g) {
  if (!c || (int)a < KILN_SYM_ALLREDUCE_ONESHOT || a > KILN_SYM_ALLTOALL) return false;
  const size_t es = kilnDataTypeSize(dtype);
  const int n = c->nranks;
  if (es == 0 || c->symHalf == 0 || n < 2 || n > KILN_SYM_MAX_RANKS) return false;
  if (a == KILN_SYM_ALLTOALL && inplace) return false;
  const size_t vec = 16 / es;
  uint64_t s = count;
  if (a == KILN_SYM_ALLREDUCE_TWOSHOT) s = ((count + n - 1) / n + vec - 1) / vec * vec;
  /* Bytes one rank's region of the flag form's half may take (lines: lines_fit). */
  const uint64_t cap = per_region(c, a, c->symHalf);
  /* LL lines only where they fit a region (small staging, many ranks: the flag form, in rounds). */
  const uint64_t llMax = a == KILN_SYM_ALLREDUCE_TWOSHOT ? c->symLL2Bytes
                         : a == KILN_SYM_ALLREDUCE_ONESHOT || a == KILN_SYM_REDUCESCATTER
                             ? c->symLLReduceBytes
                             : c->symLLBytes;
  int lines =
      s * es <= llMax && lines_fit(c, a, KILN_SYM_LINES_LL, s, es) ? KILN_SYM_LINES_LL : KILN_SYM_LINES_NONE;
  const bool two = a == KILN_SYM_ALLREDUCE_TWOSHOT;
  const uint64_t lo128 = two ? c->symLL128TwoShotBytes : c->symLL128Bytes;
  const uint64_t hi128 = two ? c->symLL128TwoShotMaxBytes : c->symLL128MaxBytes;
  if (lo128 && s * es > lo128 && s * es <= hi128 && lines_fit(c, a, KILN_SYM_LINES_LL128, s, es))
    lines = KILN_SYM_LINES_LL128;
  /* LL12 lines take less of the LL lines' area than LL lines of the same segment. */
  if (lines == KILN_SYM_LINES_LL && !two && es <= 4 && s * es > c->symLL12Bytes) lines = KILN_SYM_LINES_LL12;
  uint64_t w = s, rounds = 1, bytes;
  if (lines) {
    /* LL: a 16-byte line per 8 bytes of data; LL12 per 12; LL128: a 128-byte line per 120. */
    bytes = kilnSymLineBytes(lines, s, es);
  } else {
    /* Copies: regions of symCopyRoundBytes over all of a half's regions. Reductions: the same
     * while a piece fits, else at least symMinRounds rounds (so that they overlap), each as large
     * as that allows, up to the whole half. */
    uint64_t roundCap = cap, cc = copy_region(c, a); /* cc: a copy round's region (0: no limit) */
    if (sym_copies(c, a, s * es)) {
      /* A copy of at least 8 such rounds takes rounds of an eighth of it, up to
       * symCopyRoundMaxBytes. */
      if (cc && c->symCopyRoundMaxBytes > c->symCopyRoundBytes) {
        const uint64_t big = per_region(c, a, c->symCopyRoundMaxBytes);
        const uint64_t eighth = round_up((s * es + 7) / 8, 256);
        cc = eighth < cc ? cc : eighth > big ? big : eighth;
      }
      if (cc && cc < roundCap) roundCap = cc;
    } else if (c->symMinRounds > 0) {
      uint64_t want = round_up((s * es + (uint64_t)c->symMinRounds - 1) / (uint64_t)c->symMinRounds, 256);
      if (want < cc) want = cc;
      if (want < roundCap) roundCap = want;
    }
    if (c->symRoundBytes && c->symRoundBytes < roundCap) roundCap = c->symRoundBytes;
    if (a == KILN_SYM_REDUCESCATTER && c->symRSRoundBytes && c->symRSRoundBytes < roundCap)
      roundCap = c->symRSRoundBytes;
    if (s * es > roundCap) {
      w = roundCap / es / vec * vec;
      if (w == 0) return false;
      rounds = (s + w - 1) / w;
      if (rounds > (1u << 30)) return false;
    }
    bytes = w * es;
  }
  const uint64_t r = round_up(bytes, 256);
  if (r > per_region(c, a, form_half(c, lines))) return false;
  g->seg = w;
  g->total = s;
  g->rounds = (int32_t)rounds;
  g->ll = lines;
  g->region = r;
  return true;
}

/* Whether a call may go direct (kiln/runtime.h; kernels/sym.cuh bodyDirect and body), given an
 * output every rank can store into: on, at least symDirectBytes (alltoall: symDirectA2ABytes),
 * staging there. Allgather and
 * alltoall then store every piece straight into its rank's output in one round; two-shot
 * allreduce moves its shares through the staging (the usual geometry, in rounds) and stores the
 * reduced shares into every rank's output instead of a second staging phase; one-shot allreduce
 * becomes two-shot. Reducescatter never: the peers' outputs take no part in it, and loading the
 * peers' inputs (in windows) instead of staging is slower.
 * 2x H100, graphs, windows, loads vs staged: reducescatter 1 GiB 1602 vs 1525 us (2026-11-26). */
static bool direct_wanted(const struct kilnComm* c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype,
                          bool inplace) {
  if (!c || c->symHalf == 0 || a == KILN_SYM_REDUCESCATTER || (int)a < KILN_SYM_ALLREDUCE_ONESHOT ||
      a > KILN_SYM_ALLTOALL)
    return false;
  const size_t es = kilnDataTypeSize(dtype);
  const int n = c->nranks;
  if (es == 0 || n < 2 || n > KILN_SYM_MAX_RANKS || count == 0 || count > UINT64_MAX / es / (uint64_t)n)
    return false;
  const kilnColl_t coll = sym_coll(a);
  const bool a2a = coll == KILN_COLL_ALLTOALL;
  if (kilnRegistryCallBytes(coll, n, count, dtype) < (a2a ? c->symDirectA2ABytes : c->symDirectBytes))
    return false;
  return !(a2a && inplace);
}

/* The bytes of a call's output (allreduce: count elements, the others a piece per rank). */
static uint64_t out_bytes(const struct kilnComm* c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype) {
  const uint64_t b = (uint64_t)count * kilnDataTypeSize(dtype);
  return sym_coll(a) == KILN_COLL_ALLREDUCE ? b : b * (uint64_t)c->nranks;
}

/* The direct form of a wanted call (direct_wanted) whose ranks' outputs are pout[]: g's geometry,
 * form (the copy engine for allgather and alltoall from symCEBytes), the peers' outputs and, for
 * allreduce, the two-shot algorithm (g->algo holds the caller's). false: it does not fit. */
static bool direct_geometry(const struct kilnComm* c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype,
                            bool inplace, char* const* pout, kilnSymArgs* g) {
  const bool ar = sym_coll(a) == KILN_COLL_ALLREDUCE;
  const uint64_t ref = kilnRegistryCallBytes(sym_coll(a), c->nranks, count, dtype);
  const size_t es = kilnDataTypeSize(dtype);
  for (int p = 0; p < c->nranks; p++) g->peerOut[p] = pout[p];
  /* Allreduce from symARCEBytes whose shares are equal and whole 16-byte packs: a reducescatter of
   * the shares (its geometry; the output moved to this rank's share at issue). */
  if (ar && ref >= c->symARCEBytes && count % (size_t)c->nranks == 0 && count / c->nranks * es % 16 == 0 &&
      geometry(c, KILN_SYM_REDUCESCATTER, count / c->nranks, dtype, false, g)) {
    g->algo = KILN_SYM_RS; /* count stays the allreduce's: issue_reduce_then_copy divides it */
    g->direct = KILN_SYM_DIRECT_REDUCE_CE;
    return true;
  }
  /* Allreduce: the two-shot geometry (a staged call that does not go direct sets it again). */
  if (ar) {
    if (!geometry(c, KILN_SYM_ALLREDUCE_TWOSHOT, count, dtype, inplace, g) || g->ll) return false;
    g->algo = KILN_SYM_AR_TWOSHOT;
  } else {
    g->seg = g->total = count;
    g->rounds = 1;
    g->region = 0;
  }
  g->ll = 0;
  g->direct = !ar && ref >= c->symCEBytes ? KILN_SYM_DIRECT_ARRIVE : KILN_SYM_DIRECT_SM;
  g->preload = !ar && g->direct == KILN_SYM_DIRECT_SM && c->symDirectPreload; /* SM stores only */
  return true;
}

/* Whether a wanted call (direct_wanted) goes direct on the caller's windows: its output in a window
 * the caller added; then g as direct_geometry sets it. */
static bool direct_on_windows(const struct kilnComm* c, kilnSymAlgo_t a, const void* recvbuf, size_t count,
                              kilnDataType_t dtype, bool inplace, kilnSymArgs* g) {
  if (c->nuwins == 0) return false;
  char* pout[KILN_SYM_MAX_RANKS] = {0};
  if (!kilnUserWindowPeers(c, recvbuf, out_bytes(c, a, count, dtype), pout)) return false;
  return direct_geometry(c, a, count, dtype, inplace, pout, g);
}

bool kilnSymIsDirect(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf, size_t count,
                     kilnDataType_t dtype) {
  return kilnSymDirectForm(c, a, sendbuf, recvbuf, count, dtype) != 0;
}

bool kilnSymFits(kilnComm_t c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype, bool inplace) {
  kilnSymArgs g;
  return geometry(c, a, count, dtype, inplace, &g);
}

kilnSymAlgo_t kilnSymSelect(kilnComm_t c, kilnColl_t coll, size_t count, kilnDataType_t dtype, bool inplace) {
  if (!c || c->symHalf == 0 || c->symOff) return KILN_SYM_NONE;
  const kilnSymAlgo_t a =
      kilnSelectSymRange(coll, c->nranks, kilnRegistryCallBytes(coll, c->nranks, count, dtype), inplace);
  return a != KILN_SYM_NONE && kilnSymFits(c, a, count, dtype, inplace) ? a : KILN_SYM_NONE;
}

/* Blocks per call: one per symBlockBytes of a round's window (of a direct copy's piece:
 * symDirectBlockBytes, symDirectBigBlockBytes from KILN_SYM_DIRECT_BIG_PIECE), at most
 * symMaxBlocks (symReduceBlocks for a call in rounds that does not go as a copy, symCopyBlocks for
 * one that does, symDirectBlocks for a direct allgather or alltoall) and the SM count; one for the
 * two meeting kernels of the copy-engine form. */
static int sym_blocks(const struct kilnComm* c, kilnSymAlgo_t algo, const kilnSymArgs* a, size_t es) {
  if (a->direct == KILN_SYM_DIRECT_ARRIVE) return 1; /* the copy-engine form's meeting kernels */
  const bool copyDirect = a->direct && (algo == KILN_SYM_ALLGATHER || algo == KILN_SYM_ALLTOALL);
  const uint64_t piece = a->seg * es;
  const uint64_t bb = !copyDirect                          ? c->symBlockBytes
                      : piece >= KILN_SYM_DIRECT_BIG_PIECE ? c->symDirectBigBlockBytes
                                                           : c->symDirectBlockBytes;
  uint64_t nb = (piece + bb - 1) / bb;
  const bool copies = sym_copies(c, algo, a->total * es);
  /* Copies in rounds that grew (kilnSymConfigure; on 2 ranks any in rounds) take symCopyBlocks. */
  const uint64_t cc = copy_region(c, algo);
  const bool grown = a->rounds > 1 && (c->nranks == 2 || (cc && a->region > cc));
  const int cap = copyDirect                 ? c->symDirectBlocks
                  : a->rounds > 1 && !copies ? c->symReduceBlocks
                  : grown                    ? c->symCopyBlocks
                                             : c->symMaxBlocks;
  if (nb < 1) nb = 1;
  if (nb > (uint64_t)cap) nb = (uint64_t)cap;
  if (nb > (uint64_t)c->nsm) nb = (uint64_t)c->nsm;
  return (int)nb;
}

/* The arguments of a call's direct form on the caller's windows (g: geometry, form, blocks); false
 * when it does not go direct. */
static bool direct_args(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf, size_t count,
                        kilnDataType_t dtype, kilnSymArgs* g) {
  memset(g, 0, sizeof(*g));
  g->algo = (int)a;
  const bool inplace = c && kilnRegistryCallInPlace(sym_coll(a), c->rank, sendbuf, recvbuf, count, dtype);
  if (!direct_wanted(c, a, count, dtype, inplace) ||
      !direct_on_windows(c, a, recvbuf, count, dtype, inplace, g))
    return false;
  g->nblocks = sym_blocks(c, (kilnSymAlgo_t)g->algo, g, kilnDataTypeSize(dtype));
  return true;
}

int kilnSymDirectForm(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf, size_t count,
                      kilnDataType_t dtype) {
  kilnSymArgs g;
  return direct_args(c, a, sendbuf, recvbuf, count, dtype, &g) ? g.direct : 0;
}

bool kilnSymCallShape(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf, size_t count,
                      kilnDataType_t dtype, int* direct, int* lines, int* blocks) {
  kilnSymArgs g;
  if (direct_args(c, a, sendbuf, recvbuf, count, dtype, &g)) {
    *direct = g.direct;
    *lines = g.ll;
    *blocks = g.nblocks;
    return true;
  }
  const bool inplace = c && kilnRegistryCallInPlace(sym_coll(a), c->rank, sendbuf, recvbuf, count, dtype);
  if (!kilnSymStagedGeometry(c, a, count, dtype, inplace, &g)) return false;
  *direct = 0;
  *lines = g.ll;
  *blocks = g.nblocks;
  return true;
}

int kilnSymDirectBlocks(kilnComm_t c, kilnSymAlgo_t a, const void* sendbuf, const void* recvbuf, size_t count,
                        kilnDataType_t dtype) {
  kilnSymArgs g;
  return direct_args(c, a, sendbuf, recvbuf, count, dtype, &g) ? g.nblocks : 0;
}

/* Every rank's staging for args a (stage[], halfBytes): the flag form's, or the area of a's line
 * form (sym_line_areas), by a->ll; set again wherever a call's form changes. */
static void sym_staging(const struct kilnComm* c, kilnSymArgs* a) {
  const size_t base = form_base(c, a->ll);
  a->halfBytes = form_half(c, a->ll);
  for (int p = 0; p < c->nranks; p++) a->stage[p] = (p == c->rank ? c->win : c->peers[p]) + base;
}

bool kilnSymStagedGeometry(kilnComm_t c, kilnSymAlgo_t a, size_t count, kilnDataType_t dtype, bool inplace,
                           kilnSymArgs* g) {
  memset(g, 0, sizeof(*g));
  g->algo = (int)a;
  if (!geometry(c, a, count, dtype, inplace, g)) return false;
  g->nblocks = sym_blocks(c, a, g, kilnDataTypeSize(dtype));
  return true;
}

kilnResult_t kilnSymRun(kilnComm_t c, kilnSymAlgo_t algo, const void* sendbuf, void* recvbuf, size_t count,
                        kilnDataType_t dtype, kilnRedOp_t op, cudaStream_t stream) {
  kilnResult_t res = KILN_SUCCESS;
  if (!c) res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSymRun: NULL communicator");
  if (res == KILN_SUCCESS && ((int)algo < KILN_SYM_ALLREDUCE_ONESHOT || algo > KILN_SYM_ALLTOALL))
    res = kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnSymRun: algorithm %d unknown", (int)algo);
  if (res == KILN_SUCCESS) res = kilnCommCallCheck(c, count, sendbuf, recvbuf, dtype, op);
  if (res != KILN_SUCCESS) {
    kilnGroupFail(res);
    return res;
  }
  if (count == 0) return KILN_SUCCESS;
  const int rank = c->rank, n = c->nranks;
  const size_t es = kilnDataTypeSize(dtype);
  const kilnColl_t coll = sym_coll(algo);
  const bool inplace = kilnRegistryCallInPlace(coll, rank, sendbuf, recvbuf, count, dtype);
  kilnLaunch l;
  memset(&l, 0, sizeof(l));
  kilnSymArgs* a = &l.symArgs;
  if (algo == KILN_SYM_ALLTOALL && inplace) {
    res = kilnSetError(KILN_ERR_UNSUPPORTED,
                       "rank %d: %s of %zu %s elements: not in place (sendbuff == recvbuff)", rank,
                       kilnSymAlgoName(algo), count, kilnDataTypeName(dtype));
    kilnGroupFail(res);
    return res;
  }
  a->algo = (int)algo;
  const bool wanted = direct_wanted(c, algo, count, dtype, inplace);
  if (!(wanted && direct_on_windows(c, algo, recvbuf, count, dtype, inplace, a)) &&
      !geometry(c, algo, count, dtype, inplace, a)) {
    res = kilnSetError(KILN_ERR_UNSUPPORTED,
                       "rank %d: %s of %zu %s elements%s does not fit this communicator (%d ranks, "
                       "%zu bytes of staging per half)",
                       rank, kilnSymAlgoName(algo), count, kilnDataTypeName(dtype),
                       inplace ? " in place" : "", n, c->symHalf);
    kilnGroupFail(res);
    return res;
  }
  l.comm = c;
  l.stream = stream;
  l.dtype = (int)dtype;
  l.threads = c->cfg.threads;
  l.sym = true;
  a->in = (const char*)sendbuf;
  a->out = (char*)recvbuf;
  for (int p = 0; p < n; p++) a->flags[p] = (uint64_t*)(c->peers[p] + c->symFlagBase);
  a->flags[rank] = (uint64_t*)(c->win + c->symFlagBase);
  a->seq = c->symState;
  a->abortFlag = c->abortFlag;
  a->earlyTrigger = c->symEarlyTrigger;
  a->errWord = c->errDev;
  a->timeoutNs = (uint64_t)c->cfg.timeoutMs * 1000000ull;
  a->count = count;
  a->op = (int)op;
  a->nranks = n;
  a->rank = rank;
  sym_staging(c, a);
  a->nblocks = sym_blocks(c, (kilnSymAlgo_t)a->algo, a, es);
  l.symAlgo = (int)algo;
  l.peerCand = !a->direct && wanted && c->clique && kilnGroupActive();

  const int save = kilnEnterDevice(c, false);
  res = kilnLaunchSubmit(&l);
  kilnLeaveDevice(c, save);
  if (res != KILN_SUCCESS) kilnGroupFail(res);
  return res;
}

/* The driver's pointer queries, found through the runtime (the library does not link libcuda). */
static CUresult (*drvPointerGetAttributes)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
static CUresult (*drvMemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr);
static pthread_once_t drvOnce = PTHREAD_ONCE_INIT;

static void* drv_entry(const char* name) {
  void* f = NULL;
  enum cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return f;
}

static void drv_find(void) {
  void* fs = drv_entry("cuPointerGetAttributes");
  void* fr = drv_entry("cuMemGetAddressRange");
  if (!fs || !fr) return;
  drvPointerGetAttributes = (CUresult(*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr))fs;
  drvMemGetAddressRange = (CUresult(*)(CUdeviceptr*, size_t*, CUdeviceptr))fr;
}

/* What GPU `dev` may do with cudaMalloc allocation `id` (CU_POINTER_ATTRIBUTE_BUFFER_ID: unique in
 * the process, a new one for every allocation), which spans [base, base + size): kilnPeerAccess
 * asks the driver once per GPU and such allocation (a context switch and two queries per pair,
 * ~5 us per 4-GPU group eager on 4x H200), then only for the buffer's attributes. Only plain
 * cudaMalloc memory is kept (its access follows peer access, which must stay on); pools and
 * mappings, whose access can change (cudaMemPoolSetAccess, cuMemSetAccess, remapping), are asked
 * about at every group. */
typedef struct {
  int dev;
  unsigned long long id;
  CUdeviceptr base;
  size_t size;
  bool ok;
} accessVerdict;
enum { ACCESS_VERDICTS = 256 };
static accessVerdict verdicts[ACCESS_VERDICTS];
static int nverdicts, nextVerdict;
static pthread_mutex_t verdictLock = PTHREAD_MUTEX_INITIALIZER;

/* The kept verdict for GPU dev on allocation id, into *v; false when there is none. */
static bool kept_verdict(int dev, unsigned long long id, accessVerdict* v) {
  bool found = false;
  pthread_mutex_lock(&verdictLock);
  for (int k = 0; k < nverdicts && !found; k++)
    if (verdicts[k].dev == dev && verdicts[k].id == id) *v = verdicts[k], found = true;
  pthread_mutex_unlock(&verdictLock);
  return found;
}

/* Keeps v, in place of the oldest kept when all places are taken. */
static void keep_verdict(const accessVerdict* v) {
  pthread_mutex_lock(&verdictLock);
  verdicts[nextVerdict] = *v;
  nextVerdict = (nextVerdict + 1) % ACCESS_VERDICTS;
  if (nverdicts < ACCESS_VERDICTS) nverdicts++;
  pthread_mutex_unlock(&verdictLock);
}

/* The driver's verdict for GPU dev on the allocation holding `at`. Leaves dev current. */
static bool ask_driver(int dev, CUdeviceptr at, accessVerdict* v) {
  memset(v, 0, sizeof(*v));
  v->dev = dev;
  if (cudaSetDevice(dev) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  unsigned long long flags = 0; /* the driver writes an enum's bytes */
  CUpointer_attribute what = CU_POINTER_ATTRIBUTE_ACCESS_FLAGS;
  void* into = &flags;
  if (drvPointerGetAttributes(1, &what, &into, at) != CUDA_SUCCESS ||
      drvMemGetAddressRange(&v->base, &v->size, at) != CUDA_SUCCESS)
    return false;
  v->ok = (flags & 0xffffffffull) == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
  return true;
}

/* The range must lie in one allocation of device memory, not managed (for a virtual-memory
 * reservation: one mapping, cuMemGetAddressRange), that each GPU may read and write
 * (CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: cudaMalloc memory with peer access on; a pool or a mapping
 * without access for it is not). May leave another device current. */
bool kilnPeerAccess(const int* devs, int ndevs, const void* p, size_t bytes) {
  pthread_once(&drvOnce, drv_find);
  if (!drvPointerGetAttributes || !drvMemGetAddressRange || !p || bytes == 0) return false;
  const CUdeviceptr at = (CUdeviceptr)(uintptr_t)p;
  /* The queries may count as unsafe calls inside a stream capture of this thread (global or
   * thread-local mode) and end it: relaxed for them, as allocators do. */
  enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  /* Zeroed wider than the attributes' types (booleans, an unsigned int): any value set is nonzero. */
  unsigned long long id = 0, type = 0, managed = 0, ipc = 0;
  void* pool = NULL;
  CUpointer_attribute what[] = {
      CU_POINTER_ATTRIBUTE_BUFFER_ID, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
      CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE};
  void* into[] = {&id, &type, &managed, &ipc, &pool};
  bool ok = drvPointerGetAttributes(5, what, into, at) == CUDA_SUCCESS &&
            (type & 0xffffffffull) == CU_MEMORYTYPE_DEVICE && !managed;
  /* Plain cudaMalloc memory (legacy-IPC capable, not from a pool): verdicts kept by id. */
  const bool haveId = ok && id != 0 && ipc && !pool;
  for (int i = 0; i < ndevs && ok; i++) {
    accessVerdict v;
    if (!(haveId && kept_verdict(devs[i], id, &v))) {
      if (!ask_driver(devs[i], at, &v)) {
        ok = false;
        break;
      }
      v.id = id;
      if (haveId) keep_verdict(&v);
    }
    ok = v.ok && at >= v.base && at - v.base <= v.size && bytes <= v.size - (at - v.base);
  }
  cudaThreadExchangeStreamCaptureMode(&mode);
  return ok;
}

/* A group's launches by communicator, in call order (kilnSymGroupPeers), in this thread's scratch:
 * comm k's launches are order[runs[k].first ...], launch i is the ordOf[i]-th of its comm's. */
typedef struct {
  const struct kilnComm* comm;
  size_t first, count;
} commRun;
static _Thread_local size_t *order, *ordOf;
static _Thread_local commRun* runs;
static _Thread_local size_t nruns, scratchCap;

void kilnSymFreeThreadScratch(void) {
  free(order);
  free(ordOf);
  free(runs);
  order = ordOf = NULL;
  runs = NULL;
  nruns = scratchCap = 0;
}

static bool index_group(const kilnLaunch* v, size_t n) {
  if (n > scratchCap) {
    kilnThreadScratchUsed();
    size_t* o = (size_t*)realloc(order, n * sizeof(*o));
    if (o) order = o;
    size_t* d = (size_t*)realloc(ordOf, n * sizeof(*d));
    if (d) ordOf = d;
    commRun* r = (commRun*)realloc(runs, n * sizeof(*r));
    if (r) runs = r;
    if (!o || !d || !r) return false;
    scratchCap = n;
  }
  nruns = 0;
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < nruns && runs[k].comm != v[i].comm) k++;
    if (k == nruns) runs[nruns++] = (commRun){v[i].comm, 0, 0};
    ordOf[i] = runs[k].count++;
  }
  for (size_t k = 0, at = 0; k < nruns; at += runs[k].count, k++) runs[k].first = at;
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (runs[k].comm != v[i].comm) k++;
    order[runs[k].first + ordOf[i]] = i;
  }
  return true;
}

/* The `ord`-th launch of comm c in the indexed group v, or NULL. */
static kilnLaunch* nth_of(kilnLaunch* v, const struct kilnComm* c, size_t ord) {
  for (size_t k = 0; k < nruns; k++)
    if (runs[k].comm == c) return ord < runs[k].count ? &v[order[runs[k].first + ord]] : NULL;
  return NULL;
}

/* The set of launch i (indexed group v): the launch of the same ordinal of every member of its
 * comm's clique, into set[rank] and their outputs into pout[rank], while they are candidates
 * alike (algorithm, type, count, op). false when a member, its launch or a match is missing
 * (set[] holds those found so far). */
static bool peer_set(kilnLaunch* v, size_t i, kilnLaunch** set, char** pout) {
  const struct kilnClique* k = v[i].comm->clique;
  const int nr = v[i].comm->nranks;
  if (!k || k->n != nr) return false;
  for (int p = 0; p < nr; p++) {
    const struct kilnComm* mc = __atomic_load_n(&k->members[p], __ATOMIC_ACQUIRE);
    kilnLaunch* m = mc ? nth_of(v, mc, ordOf[i]) : NULL;
    if (!m || !m->peerCand || m->symAlgo != v[i].symAlgo || m->dtype != v[i].dtype ||
        m->symArgs.count != v[i].symArgs.count || m->symArgs.op != v[i].symArgs.op)
      return false;
    set[p] = m;
    pout[p] = m->symArgs.out;
  }
  return true;
}

/* Whether every rank's GPU may write every other rank's output (`bytes` at pout[q]). */
static bool peers_reach(kilnLaunch* const* set, char* const* pout, int nr, uint64_t bytes,
                        kilnPeerAccessFn access) {
  for (int q = 0; q < nr; q++) {
    int devs[KILN_SYM_MAX_RANKS], nd = 0;
    for (int p = 0; p < nr; p++)
      if (p != q) devs[nd++] = set[p]->comm->dev;
    if (!access(devs, nd, pout[q], bytes)) return false;
  }
  return true;
}

/* The direct form of every member of a set (peer_set) into g[rank], its blocks included; false when
 * one does not fit. */
static bool set_geometry(kilnLaunch* const* set, char* const* pout, int nr, kilnSymArgs* g) {
  for (int p = 0; p < nr; p++) {
    const kilnLaunch* m = set[p];
    const struct kilnComm* mc = m->comm;
    const kilnSymAlgo_t a = (kilnSymAlgo_t)m->symAlgo;
    const kilnDataType_t dt = (kilnDataType_t)m->dtype;
    g[p] = m->symArgs;
    g[p].algo = m->symAlgo;
    const bool inplace =
        kilnRegistryCallInPlace(sym_coll(a), mc->rank, m->symArgs.in, m->symArgs.out, m->symArgs.count, dt);
    if (!direct_geometry(mc, a, m->symArgs.count, dt, inplace, pout, &g[p])) return false;
    sym_staging(mc, &g[p]);
    g[p].nblocks = sym_blocks(mc, (kilnSymAlgo_t)g[p].algo, &g[p], kilnDataTypeSize(dt));
  }
  return true;
}

void kilnSymGroupPeers(kilnLaunch* v, size_t n, kilnPeerAccessFn access) {
  bool any = false;
  for (size_t i = 0; i < n && !any; i++) any = v[i].peerCand;
  /* No index (out of memory): every call stays staged, on every rank alike. */
  if (any && !index_group(v, n)) {
    for (size_t i = 0; i < n; i++) v[i].peerCand = false;
    return;
  }
  for (size_t i = 0; i < n && any; i++) {
    if (!v[i].peerCand) continue;
    const struct kilnComm* c = v[i].comm;
    const int nr = c->nranks;
    kilnLaunch* set[KILN_SYM_MAX_RANKS] = {0};
    char* pout[KILN_SYM_MAX_RANKS] = {0};
    /* Every rank's GPU must reach every peer's output (plain cudaMalloc memory with peer access;
     * not a pool or a mapping without access for it). */
    kilnSymArgs g[KILN_SYM_MAX_RANKS];
    const bool all =
        peer_set(v, i, set, pout) &&
        peers_reach(set, pout, nr,
                    out_bytes(c, (kilnSymAlgo_t)v[i].symAlgo, v[i].symArgs.count, (kilnDataType_t)v[i].dtype),
                    access) &&
        set_geometry(set, pout, nr, g);
    /* Decided for the whole set, whichever way. */
    v[i].peerCand = false;
    for (int p = 0; p < nr; p++)
      if (set[p]) set[p]->peerCand = false;
    if (!all) continue;
    for (int p = 0; p < nr; p++) {
      set[p]->symArgs = g[p];
      set[p]->comm->symPeerCalls++;
      set[p]->comm->symPeerForm = g[p].direct;
    }
  }
}

/* Threads per block for args a (kiln_dev.h kilnSymLineThreads): an LL or LL12 block's threads take
 * its lines one each (kernels/sym.cuh blockLines, blockLines12), an LL128 block's 8 per line, so a
 * small call's block needs no more warps than it has lines; fewer warps start and end sooner
 * (the bare exchange of bench/probes/pdl_probe.cu on 2x H200: 1.36 us per kernel with 64
 * threads, 1.54 with 512; kiln's calls within 1-3% either way). The other forms take the
 * configured count. */
static int sym_threads(const kilnLaunch* l, const kilnSymArgs* a) {
  if (!a->ll) return l->threads;
  return kilnSymLineThreads(a, kilnDataTypeSize((kilnDataType_t)l->dtype), l->threads);
}

/* Launches the symmetric kernel of call l with args a on stream s (the communicator's PDL
 * setting). Returns a cudaError_t value. */
static int launch_sym(const kilnLaunch* l, const kilnSymArgs* a, cudaStream_t s) {
  return kilnSymLaunch(l->dtype, a, sym_threads(l, a), (void*)s, l->comm->symPdl);
}

/* The engine forms' copies into the peers' outputs, one after the other on the call's stream
 * (peers me + 1, me + 2, ...): rank p's output gets `bytes` at offset me * bytes, from
 * src + p * srcStep. None once a kernel of the communicator reported an error. Returns the first
 * cudaError_t value. */
static int copy_to_peers(const kilnLaunch* l, const char* src, size_t srcStep, size_t bytes) {
  const kilnSymArgs* a = &l->symArgs;
  const int n = a->nranks, me = a->rank;
  if (*(volatile int*)l->comm->errHost != 0) return 0;
  int e = 0;
  for (int k = 1; k < n && e == 0; k++) {
    const int p = (me + k) % n;
    e = cudaMemcpyAsync(a->peerOut[p] + (size_t)me * bytes, src + (size_t)p * srcStep, bytes,
                        cudaMemcpyDefault, l->stream);
  }
  return e;
}

/* The engine forms' DONE meeting (one block, one round: phase 1, every peer's copies into this
 * rank's output are over), launched even after a failed copy: the peers wait for it, and this
 * rank's sequence numbers stay with theirs. Returns copied (an earlier copy's error) or the
 * launch's. */
static int meet_done(const kilnLaunch* l, int copied) {
  kilnSymArgs a = l->symArgs;
  a.direct = KILN_SYM_DIRECT_DONE;
  a.rounds = 1;
  a.nblocks = 1;
  const int done = launch_sym(l, &a, l->stream);
  return copied != 0 ? copied : done;
}

/* The copy-engine form of a direct allgather or alltoall (l->symArgs.direct ==
 * KILN_SYM_DIRECT_ARRIVE, set by direct_geometry): a kernel of one block meets the peers (phase 0: their
 * outputs may be written); the copy engine copies each piece to its peer's output, one copy after
 * the other on the call's stream, while a few blocks copy this rank's own piece on a side stream
 * (forked from the call's stream after the meeting, joined back before the end; one side stream
 * for captured calls and one for the others, so that an open capture never holds the one an
 * eager call needs); a second kernel of one block meets again (phase 1: every copy into every
 * output is over), so no output is touched outside its call. Each kernel takes a sequence number
 * (the staging is not used). Unlike the kernels' stores, an engine copy cannot be called off: a
 * call issued after the communicator failed (a kernel reported it) skips its copies, but one
 * already issued, or a graph replayed, copies into the peers' outputs even when its meeting timed
 * out (the communicator is broken then). Returns a cudaError_t value; an error after the fork still
 * joins the side stream back (a capture stays joined), and a failed copy still launches the DONE
 * meeting. */
static int issue_copy_engine(kilnLaunch* l) {
  struct kilnComm* c = l->comm;
  kilnSymArgs a = l->symArgs;
  const cudaStream_t s = l->stream, side = l->capturing ? c->ceSideCapture : c->ceSide;
  const int me = a.rank;
  const size_t piece = (size_t)a.count * kilnDataTypeSize((kilnDataType_t)l->dtype);
  const bool ag = a.algo == KILN_SYM_AG;
  const char* src = a.in + (ag ? 0 : (size_t)me * piece);
  char* dst = a.out + (size_t)me * piece;
  bool forked = false;
  const int arrived = launch_sym(l, &a, s);
  if (arrived != 0) return arrived;
  int e = 0;
  if (*(volatile int*)c->errHost == 0 && src != dst) {
    e = cudaEventRecord(c->ceFork, s);
    if (e == 0) e = cudaStreamWaitEvent(side, c->ceFork, 0);
    forked = e == 0;
    if (e == 0)
      e = ((uintptr_t)dst | (uintptr_t)src | piece) % 16 == 0
              ? kilnSymCopyLaunch(dst, src, piece, c->symCEBlocks, (void*)side)
              : (int)cudaMemcpyAsync(dst, src, piece, cudaMemcpyDefault, side);
  }
  /* Into each peer's output as mapped here. */
  if (e == 0) e = copy_to_peers(l, a.in, ag ? 0 : piece, piece);
  if (forked) {
    int j = cudaEventRecord(c->ceJoin, side);
    if (j == 0) j = cudaStreamWaitEvent(s, c->ceJoin, 0);
    if (e == 0) e = j;
  }
  return meet_done(l, e);
}

/* The reduce-then-copy form of a direct allreduce (l->symArgs.direct == KILN_SYM_DIRECT_REDUCE_CE,
 * set by direct_geometry; count: the allreduce's, equal shares of whole 16-byte packs): the staged
 * reducescatter kernel reduces share `me` of every rank's input into this rank's share of its
 * output; then the copy engine copies that share into each peer's output, one copy after the other
 * on the call's stream; then the DONE meeting (phase 1, one block) as in the copy-engine form.
 * Writing into a peer's output is safe once the reducescatter is over here: the peer has begun
 * this call (its flags of every round were seen), and its part of share `me` (in place: its input
 * there, which it reads only to send it here) has been received. An error of a kernel stops the
 * copies of calls issued after it (as issue_copy_engine); a failed copy still launches the DONE
 * meeting. Returns a cudaError_t value. */
static int issue_reduce_then_copy(kilnLaunch* l) {
  kilnSymArgs rs = l->symArgs;
  rs.count = l->symArgs.count / (uint64_t)rs.nranks;
  const size_t share = (size_t)rs.count * kilnDataTypeSize((kilnDataType_t)l->dtype);
  rs.out = l->symArgs.out + (size_t)rs.rank * share;
  rs.direct = 0;
  const int reduced = launch_sym(l, &rs, l->stream);
  if (reduced != 0) return reduced;
  return meet_done(l, copy_to_peers(l, rs.out, 0, share));
}

int kilnSymIssue(kilnLaunch* l) {
  switch (l->symArgs.direct) {
    case KILN_SYM_DIRECT_ARRIVE: return issue_copy_engine(l);
    case KILN_SYM_DIRECT_REDUCE_CE: return issue_reduce_then_copy(l);
    default: return launch_sym(l, &l->symArgs, l->stream);
  }
}
