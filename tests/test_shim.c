/*
 * kiln's drop-in libnccl.so.2 (host/shim/), on the CPU: its ELF identity (file name, SONAME,
 * exports), forwarding to a fake real NCCL that records every call (tests/shim/fake_nccl.c),
 * KILN_DISABLE, and a clear error instead of a crash when no real NCCL can be loaded.
 * Each test runs in its own process (Criterion's default), sets KILN_* and then dlopens the shim,
 * since the shim reads its settings once.
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#ifdef KILN_SHIM_PATH

#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_nccl.h"
#include "kiln/plan.h"
#include "test_util.h"
#include "shim_api.h"

/* ---- reading the shim's ELF file ---- */

static unsigned char* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char* buf = malloc((size_t)n);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* The section of the given type (first one), or NULL. */
static const Elf64_Shdr* section(const unsigned char* elf, Elf64_Word type) {
  const Elf64_Ehdr* eh = (const Elf64_Ehdr*)elf;
  const Elf64_Shdr* sh = (const Elf64_Shdr*)(elf + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++)
    if (sh[i].sh_type == type) return &sh[i];
  return NULL;
}

static const Elf64_Shdr* section_at(const unsigned char* elf, Elf64_Word index) {
  const Elf64_Ehdr* eh = (const Elf64_Ehdr*)elf;
  return (const Elf64_Shdr*)(elf + eh->e_shoff) + index;
}

/* ---- loading the shim against a chosen "real" NCCL ---- */

static void* shim;
static void* fake;

static void* sym(const char* name) {
  void* p = dlsym(shim, name);
  cr_assert(p != NULL, "the shim does not export %s", name);
  return p;
}

/* Loads the shim with KILN_NCCL_PATH=real (NULL: the fake) and the given KILN_DISABLE. */
static void load_shim(const char* real, bool disable) {
  setenv("KILN_NCCL_PATH", real ? real : KILN_FAKE_NCCL_PATH, 1);
  if (disable)
    setenv("KILN_DISABLE", "1", 1);
  else
    unsetenv("KILN_DISABLE");
  unsetenv("KILN_PLANS");
  setenv("KILN_DEBUG", "NONE", 1);
  shim = dlopen(KILN_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  cr_assert(shim != NULL, "dlopen %s: %s", KILN_SHIM_PATH, dlerror());
  if (!real) {
    /* Make the shim load the fake, then look at the fake's own records. */
    int (*getVersion)(int*) = (int (*)(int*))sym("ncclGetVersion");
    int v = 0;
    getVersion(&v);
    fake = dlopen(KILN_FAKE_NCCL_PATH, RTLD_NOW | RTLD_NOLOAD);
    cr_assert(fake != NULL, "the shim did not load the fake NCCL %s", KILN_FAKE_NCCL_PATH);
  }
}

static int fake_calls(void) { return *(int*)dlsym(fake, "fakeNcclCalls"); }

static fakeNcclRecord* fake_call(int i) {
  fakeNcclRecord* h = dlsym(fake, "fakeNcclHistory");
  return &h[i % FAKE_NCCL_HISTORY];
}

/* Index of the last call of `name` the fake saw, or -1. */
static int last_call_of(const char* name) {
  int n = fake_calls();
  for (int i = n - 1; i >= 0 && i >= n - FAKE_NCCL_HISTORY; i--)
    if (strcmp(fake_call(i)->name, name) == 0) return i;
  return -1;
}

/* Asserts that the fake's call i was `name` with exactly the bytes of `expect`. */
static void assert_call(int i, const char* name, const fakeNcclRecord* expect) {
  cr_assert(i >= 0, "the fake NCCL never saw %s", name);
  fakeNcclRecord* got = fake_call(i);
  cr_assert(eq(str, got->name, (char*)name));
  cr_assert(eq(sz, got->nbytes, expect->nbytes), "%s: argument bytes differ in size", name);
  cr_assert(memcmp(got->bytes, expect->bytes, expect->nbytes) == 0, "%s: arguments differ", name);
}

/* ---- identity ---- */

Test(shim, file_and_soname_are_libnccl_so_2) {
  const char* base = strrchr(KILN_SHIM_PATH, '/');
  cr_assert(eq(str, (char*)(base ? base + 1 : KILN_SHIM_PATH), "libnccl.so.2"));
  size_t len = 0;
  unsigned char* elf = read_file(KILN_SHIM_PATH, &len);
  cr_assert(elf != NULL);
  const Elf64_Shdr* dyn = section(elf, SHT_DYNAMIC);
  cr_assert(dyn != NULL);
  const char* strtab = (const char*)elf + section_at(elf, dyn->sh_link)->sh_offset;
  const char* soname = NULL;
  for (const Elf64_Dyn* d = (const Elf64_Dyn*)(elf + dyn->sh_offset); d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_SONAME) soname = strtab + d->d_un.d_val;
    if (d->d_tag == DT_NEEDED)
      cr_assert(strncmp(strtab + d->d_un.d_val, "libnccl", 7) != 0,
                "the shim must not depend on a libnccl (it dlopens the real one): NEEDED %s",
                strtab + d->d_un.d_val);
  }
  cr_assert(soname != NULL, "no SONAME");
  cr_assert(eq(str, (char*)soname, "libnccl.so.2"));
  free(elf);
}

Test(shim, exports_only_the_nccl_api) {
  size_t len = 0;
  unsigned char* elf = read_file(KILN_SHIM_PATH, &len);
  cr_assert(elf != NULL);
  const Elf64_Shdr* ds = section(elf, SHT_DYNSYM);
  cr_assert(ds != NULL);
  const char* strtab = (const char*)elf + section_at(elf, ds->sh_link)->sh_offset;
  const Elf64_Sym* s = (const Elf64_Sym*)(elf + ds->sh_offset);
  size_t n = ds->sh_size / sizeof *s;
  int exported = 0;
  for (size_t i = 1; i < n; i++) {
    if (s[i].st_shndx == SHN_UNDEF || ELF64_ST_BIND(s[i].st_info) == STB_LOCAL) continue;
    const char* name = strtab + s[i].st_name;
    bool ok = strncmp(name, "nccl", 4) == 0 || strncmp(name, "pnccl", 5) == 0 ||
              strcmp(name, "kilnShimMarker") == 0 || strcmp(name, "kilnShimKilnCalls") == 0 ||
              strcmp(name, "kilnShimWindows") == 0 || strcmp(name, "kilnShimAbortedFreed") == 0;
    cr_assert(ok, "the shim exports %s, which is not NCCL API", name);
    exported++;
  }
  cr_assert(exported > 100, "only %d symbols exported", exported);
  free(elf);
}

/* Asserts the shim exports every name listed (one per line) in `list`; returns how many. */
static int assert_exports_list(const char* list) {
  FILE* f = fopen(list, "r");
  cr_assert(f != NULL, "cannot open %s", list);
  char line[256];
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0]) continue;
    sym(line);
    n++;
  }
  fclose(f);
  return n;
}

Test(shim, exports_every_function_of_nccl_h) {
  shim = dlopen(KILN_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  cr_assert(shim != NULL, "dlopen: %s", dlerror());
  int n = assert_exports_list(KILN_SHIM_NCCL_H_LIST);
  cr_assert(n >= 80, "only %d functions found in nccl.h: the list generator is broken", n);
}

Test(shim, exports_every_symbol_of_the_real_libnccl) {
  shim = dlopen(KILN_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  cr_assert(shim != NULL, "dlopen: %s", dlerror());
  FILE* f = fopen(KILN_SHIM_REAL_EXPORTS, "r");
  cr_assert(f != NULL);
  int c = fgetc(f);
  fclose(f);
  if (c == EOF) cr_skip_test("no real libnccl was found at build time to list its exports");
  assert_exports_list(KILN_SHIM_REAL_EXPORTS);
}

/* ---- forwarding ---- */

Test(shim, get_version_is_the_real_librarys) {
  load_shim(NULL, false);
  ncclResult_t (*getVersion)(int*) = sym("ncclGetVersion");
  ncclResult_t (*pgetVersion)(int*) = sym("pncclGetVersion");
  int v = 0, pv = 0;
  cr_assert(eq(int, getVersion(&v), ncclSuccess));
  cr_assert(eq(int, pgetVersion(&pv), ncclSuccess));
  cr_assert(eq(int, v, FAKE_NCCL_VERSION));
  cr_assert(eq(int, pv, FAKE_NCCL_VERSION));
}

Test(shim, forwards_send_with_identical_arguments) {
  load_shim(NULL, false);
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = sym("ncclSend");
  const void* sendbuff = (const void*)(uintptr_t)0x1234560;
  size_t count = 777;
  ncclDataType_t datatype = ncclBfloat16;
  int peer = 3;
  ncclComm_t comm = FAKE_NCCL_COMM;
  cudaStream_t stream = (cudaStream_t)(uintptr_t)0x5150;
  cr_assert(eq(int, send(sendbuff, count, datatype, peer, comm, stream), ncclSuccess));
  fakeNcclRecord expect = {.nbytes = 0}, *fakeRec = &expect;
  FAKE_NCCL_EACH((sendbuff, count, datatype, peer, comm, stream))
  assert_call(fake_calls() - 1, "ncclSend", &expect);
}

/* ncclMemAlloc and ncclMemFree are hooked (the drop-in remembers an allocation's extent and
 * forgets windows left over it at its free) but reach the real NCCL with the same arguments and
 * return its result. */
Test(shim, mem_alloc_and_free_forward) {
  load_shim(NULL, false);
  ncclResult_t (*alloc)(void**, size_t) = sym("ncclMemAlloc");
  ncclResult_t (*release)(void*) = sym("ncclMemFree");
  void* p = (void*)(uintptr_t)0x7f0000100000; /* the fake leaves it as it is */
  void** where = &p;
  size_t size = (size_t)3 << 20;
  cr_assert(eq(int, alloc(where, size), ncclSuccess));
  fakeNcclRecord expect = {.nbytes = 0}, *fakeRec = &expect;
  {
    void** ptr = where;
    FAKE_NCCL_EACH((ptr, size))
  }
  assert_call(fake_calls() - 1, "ncclMemAlloc", &expect);
  cr_assert(eq(int, release(p), ncclSuccess));
  fakeNcclRecord expect2 = {.nbytes = 0};
  fakeRec = &expect2;
  {
    void* ptr = p;
    FAKE_NCCL_EACH((ptr))
  }
  assert_call(fake_calls() - 1, "ncclMemFree", &expect2);
  /* Freed again, or never allocated: forwarded as well. */
  const int before = fake_calls();
  cr_assert(eq(int, release((void*)(uintptr_t)0x1000), ncclSuccess));
  cr_assert(eq(int, fake_calls(), before + 1));
  cr_assert(eq(int, last_call_of("ncclMemFree"), before));
}

Test(shim, pnccl_twin_forwards_like_nccl) {
  load_shim(NULL, false);
  ncclResult_t (*bcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) =
      sym("pncclBroadcast");
  const void* sendbuff = (const void*)(uintptr_t)0x1000;
  void* recvbuff = (void*)(uintptr_t)0x2000;
  size_t count = 5;
  ncclDataType_t datatype = ncclInt64;
  int root = 1;
  ncclComm_t comm = FAKE_NCCL_COMM;
  cudaStream_t stream = NULL;
  cr_assert(eq(int, bcast(sendbuff, recvbuff, count, datatype, root, comm, stream), ncclSuccess));
  fakeNcclRecord expect = {.nbytes = 0}, *fakeRec = &expect;
  FAKE_NCCL_EACH((sendbuff, recvbuff, count, datatype, root, comm, stream))
  assert_call(fake_calls() - 1, "ncclBroadcast", &expect);
}

Test(shim, allreduce_without_a_plan_goes_to_nccl_unchanged) {
  load_shim(NULL, false);
  ncclResult_t (*allreduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = sym("ncclAllReduce");
  const void* sendbuff = (const void*)(uintptr_t)0xa000;
  void* recvbuff = (void*)(uintptr_t)0xb000;
  size_t count = 1 << 20;
  ncclDataType_t datatype = ncclFloat32;
  ncclRedOp_t op = ncclMax;
  ncclComm_t comm = FAKE_NCCL_COMM;
  cudaStream_t stream = (cudaStream_t)(uintptr_t)0x77;
  cr_assert(eq(int, allreduce(sendbuff, recvbuff, count, datatype, op, comm, stream), ncclSuccess));
  fakeNcclRecord expect = {.nbytes = 0}, *fakeRec = &expect;
  FAKE_NCCL_EACH((sendbuff, recvbuff, count, datatype, op, comm, stream))
  assert_call(fake_calls() - 1, "ncclAllReduce", &expect);
}

Test(shim, errors_of_the_real_nccl_come_back_unchanged) {
  load_shim(NULL, false);
  *(ncclResult_t*)dlsym(fake, "fakeNcclResult") = ncclRemoteError;
  ncclResult_t (*allgather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) =
      sym("ncclAllGather");
  ncclResult_t (*regist)(const ncclComm_t, void*, size_t, void**) = sym("ncclCommRegister");
  void* handle = NULL;
  cr_assert(eq(int, allgather(NULL, NULL, 8, ncclInt8, FAKE_NCCL_COMM, NULL), ncclRemoteError));
  cr_assert(eq(int, regist(FAKE_NCCL_COMM, NULL, 64, &handle), ncclRemoteError));
}

Test(shim, init_rank_forwards_and_returns_the_real_communicator) {
  load_shim(NULL, false);
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclComm_t c = NULL;
  ncclComm_t* comm = &c;
  int nranks = 4, rank = 2;
  ncclUniqueId commId;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; i++) commId.internal[i] = (char)(i * 7 + 1);
  cr_assert(eq(int, initRank(comm, nranks, commId, rank), ncclSuccess));
  cr_assert(eq(ptr, c, FAKE_NCCL_COMM));
  fakeNcclRecord expect = {.nbytes = 0}, *fakeRec = &expect;
  FAKE_NCCL_EACH((comm, nranks, commId, rank))
  assert_call(last_call_of("ncclCommInitRank"), "ncclCommInitRank", &expect);
}

Test(shim, kiln_disable_only_forwards) {
  load_shim(NULL, true);
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  int before = fake_calls();
  cr_assert(eq(int, initRank(&c, 4, id, 0), ncclSuccess));
  /* Without KILN_DISABLE the shim asks the new communicator its size to set kiln up; with it,
   * the real init is the only call. */
  cr_assert(eq(int, fake_calls(), before + 1));
  cr_assert(eq(str, fake_call(before)->name, "ncclCommInitRank"));
}

Test(shim, kiln_enabled_examines_new_communicators) {
  load_shim(NULL, false);
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  int before = fake_calls();
  cr_assert(eq(int, initRank(&c, 4, id, 0), ncclSuccess));
  cr_assert(gt(int, last_call_of("ncclCommCount"), before));
}

Test(shim, get_last_error_is_the_real_ones_without_kiln_errors) {
  load_shim(NULL, false);
  const char* (*lastError)(ncclComm_t) = sym("ncclGetLastError");
  cr_assert(eq(str, (char*)lastError(FAKE_NCCL_COMM), "fake"));
  fakeNcclRecord expect = {.nbytes = 0}, *fakeRec = &expect;
  ncclComm_t comm = FAKE_NCCL_COMM;
  FAKE_NCCL_EACH((comm))
  assert_call(fake_calls() - 1, "ncclGetLastError", &expect);
}

Test(shim, non_blocking_communicators_and_their_splits_are_left_to_nccl) {
  load_shim(NULL, false);
  ncclResult_t (*initConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) =
      sym("ncclCommInitRankConfig");
  ncclResult_t (*split)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*) = sym("ncclCommSplit");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  int before = fake_calls();
  cr_assert(eq(int, initConfig(&c, 4, id, 0, &config), ncclSuccess));
  cr_assert(eq(int, fake_calls(), before + 1), "the shim examined a non-blocking communicator");
  /* The fake's split leaves *newcomm as it was: a stand-in for the new communicator. */
  ncclComm_t child = (ncclComm_t)(uintptr_t)0xc0ffee00;
  before = fake_calls();
  cr_assert(eq(int, split(c, 0, 0, &child, NULL), ncclSuccess));
  cr_assert(eq(int, fake_calls(), before + 1), "the shim examined a split of a non-blocking one");
  /* A blocking config is examined. */
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  before = fake_calls();
  cr_assert(eq(int, initConfig(&c, 4, id, 0, &blocking), ncclSuccess));
  cr_assert(gt(int, last_call_of("ncclCommCount"), before));
}

Test(shim, device_api_forwards) {
  load_shim(NULL, false);
  ncclTeam_t (*teamWorld)(ncclComm_t) = sym("ncclTeamWorld");
  int (*slots)(int, int) = sym("pncclLLA2ACalcSlots");
  ncclTeam_t t = teamWorld(FAKE_NCCL_COMM); /* the fake's default body: {7, 3, 1} */
  cr_assert(eq(int, t.nRanks, 7));
  cr_assert(eq(int, t.rank, 3));
  cr_assert(eq(int, slots(10, 4), 42));
  cr_assert(eq(str, fake_call(fake_calls() - 1)->name, "ncclLLA2ACalcSlots"));
}

Test(shim, group_calls_forward) {
  load_shim(NULL, false);
  ncclResult_t (*start)(void) = sym("ncclGroupStart");
  ncclResult_t (*end)(void) = sym("ncclGroupEnd");
  cr_assert(eq(int, start(), ncclSuccess));
  cr_assert(eq(str, fake_call(fake_calls() - 1)->name, "ncclGroupStart"));
  cr_assert(eq(int, end(), ncclSuccess));
  cr_assert(eq(str, fake_call(fake_calls() - 1)->name, "ncclGroupEnd"));
}

Test(shim, grouped_collective_without_plan_joins_nccls_group_in_order) {
  load_shim(NULL, false);
  ncclResult_t (*start)(void) = sym("ncclGroupStart");
  ncclResult_t (*end)(void) = sym("ncclGroupEnd");
  ncclResult_t (*allreduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = sym("ncclAllReduce");
  int first = fake_calls();
  cr_assert(eq(int, start(), ncclSuccess));
  cr_assert(eq(int, allreduce(NULL, NULL, 16, ncclFloat, ncclSum, FAKE_NCCL_COMM, NULL), ncclSuccess));
  cr_assert(eq(int, end(), ncclSuccess));
  cr_assert(eq(int, fake_calls(), first + 3));
  cr_assert(eq(str, fake_call(first)->name, "ncclGroupStart"));
  cr_assert(eq(str, fake_call(first + 1)->name, "ncclAllReduce"));
  cr_assert(eq(str, fake_call(first + 2)->name, "ncclGroupEnd"));
}

Test(shim, grouped_init_is_examined_after_the_group_ends) {
  load_shim(NULL, false);
  ncclResult_t (*start)(void) = sym("ncclGroupStart");
  ncclResult_t (*end)(void) = sym("ncclGroupEnd");
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  cr_assert(eq(int, start(), ncclSuccess));
  cr_assert(eq(int, initRank(&c, 4, id, 0), ncclSuccess));
  /* Not usable before ncclGroupEnd: the shim must not ask it anything yet. */
  cr_assert(eq(str, fake_call(fake_calls() - 1)->name, "ncclCommInitRank"));
  int beforeEnd = fake_calls();
  cr_assert(eq(int, end(), ncclSuccess));
  cr_assert(eq(str, fake_call(beforeEnd)->name, "ncclGroupEnd"));
  cr_assert(gt(int, last_call_of("ncclCommCount"), beforeEnd));
}

Test(shim, simulated_group_end_sets_nothing_up) {
  load_shim(NULL, false);
  ncclResult_t (*start)(void) = sym("ncclGroupStart");
  ncclResult_t (*simEnd)(ncclSimInfo_t*) = sym("ncclGroupSimulateEnd");
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  cr_assert(eq(int, start(), ncclSuccess));
  cr_assert(eq(int, initRank(&c, 4, id, 0), ncclSuccess));
  int beforeEnd = fake_calls();
  cr_assert(eq(int, simEnd(&info), ncclSuccess));
  cr_assert(eq(int, fake_calls(), beforeEnd + 1));
  cr_assert(eq(str, fake_call(beforeEnd)->name, "ncclGroupSimulateEnd"));
}

/* ---- communicators across nodes: the shape and the plans that fit it ---- */

/* A folder of plans for 4 ranks: a ring allreduce for 2 nodes and a direct one for one node. */
static char plansDir[64];

static void remove_plans(void) {
  if (plansDir[0]) rm_tree(plansDir);
  plansDir[0] = '\0';
}

static void write_plans(void) {
  snprintf(plansDir, sizeof plansDir, "/tmp/kiln-shim-plans-XXXXXX");
  cr_assert(mkdtemp(plansDir) != NULL);
  kilnClassicOptions o = KILN_CLASSIC_OPTIONS_INIT;
  kilnPlan* p = NULL;
  char path[128];
  cr_assert(eq(int, kilnClassicPlan("ring", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_SUCCESS));
  p->nnodes = 2;
  snprintf(p->name, sizeof p->name, "ring-2nodes");
  snprintf(path, sizeof path, "%s/a.xml", plansDir);
  cr_assert(eq(int, kilnPlanWriteFile(p, path), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
  cr_assert(eq(int, kilnClassicPlan("direct", KILN_COLL_ALLREDUCE, 4, &o, &p), KILN_SUCCESS));
  snprintf(p->name, sizeof p->name, "direct-1node");
  snprintf(path, sizeof path, "%s/b.xml", plansDir);
  cr_assert(eq(int, kilnPlanWriteFile(p, path), KILN_SUCCESS), "%s", kilnLastError());
  kilnPlanFree(p);
}

/* Loads the shim over the fake with those plans and KILN_DEBUG=INFO, makes the fake report a
 * communicator of 4 ranks whose load/store team has lsa ranks, inits rank 0 of it and returns
 * what the shim logged. */
static char* init_across_nodes(int lsa, const char* emulate) {
  write_plans();
  setenv("KILN_NCCL_PATH", KILN_FAKE_NCCL_PATH, 1);
  unsetenv("KILN_DISABLE");
  setenv("KILN_PLANS", plansDir, 1);
  setenv("KILN_DEBUG", "INFO", 1);
  if (emulate)
    setenv("KILN_EMULATE_NODES", emulate, 1);
  else
    unsetenv("KILN_EMULATE_NODES");
  char logPath[] = "/tmp/kiln-shim-log-XXXXXX";
  const int fd = mkstemp(logPath);
  cr_assert(fd >= 0);
  fflush(stderr);
  const int saved = dup(2);
  cr_assert(dup2(fd, 2) == 2);
  shim = dlopen(KILN_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  cr_assert(shim != NULL, "dlopen %s: %s", KILN_SHIM_PATH, dlerror());
  int (*getVersion)(int*) = (int (*)(int*))sym("ncclGetVersion");
  int v = 0;
  getVersion(&v);
  fake = dlopen(KILN_FAKE_NCCL_PATH, RTLD_NOW | RTLD_NOLOAD);
  cr_assert(fake != NULL);
  *(int*)dlsym(fake, "fakeNcclNranks") = 4;
  *(int*)dlsym(fake, "fakeNcclLsaSize") = lsa;
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  cr_assert(eq(int, initRank(&c, 4, id, 0), ncclSuccess));
  cr_assert(eq(ptr, c, FAKE_NCCL_COMM));
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  size_t len = 0;
  char* log = (char*)read_file(logPath, &len);
  cr_assert(log != NULL);
  log = realloc(log, len + 1);
  log[len] = '\0';
  close(fd);
  unlink(logPath);
  return log;
}

Test(shim, two_nodes_of_two_take_the_plan_for_two_nodes, .fini = remove_plans) {
  char* log = init_across_nodes(2, NULL);
  cr_assert(
      contains(log,
               "communicator of 4 ranks: 2 nodes x 2 GPUs (NCCL's load/store team): 1 plan for that shape"),
      "%s", log);
  cr_assert(gt(int, last_call_of("ncclTeamLsa"), -1), "the shim never asked NCCL for the load/store team");
  /* This rank goes ahead and asks the others through NCCL first; the CPU has no GPU for the
   * agreement, so every rank stays on NCCL, saying why. */
  cr_assert(contains(log, "could not agree on setting kiln up"), "%s", log);
  cr_assert(not(contains(log, "kiln communicator not created")), "%s", log);
  free(log);
}

Test(shim, one_node_takes_the_plans_that_name_no_nodes, .fini = remove_plans) {
  char* log = init_across_nodes(4, NULL);
  cr_assert(not(contains(log, "nodes x")), "%s", log);
  cr_assert(not(contains(log, "no plan for")), "%s", log);
  cr_assert(contains(log, "could not agree on setting kiln up"), "%s", log);
  free(log);
}

Test(shim, emulated_nodes_without_a_plan_stay_on_nccl, .fini = remove_plans) {
  char* log = init_across_nodes(4, "4");
  cr_assert(contains(log, "4 nodes x 1 GPUs (KILN_EMULATE_NODES): 0 plans for that shape"), "%s", log);
  cr_assert(contains(log, "no plan for 4 nodes x 1 GPUs ("), "%s", log);
  cr_assert(contains(log, "plans of 4 ranks for other shapes)"), "%s", log);
  cr_assert(not(contains(log, "kiln communicator not created")), "no kiln communicator is tried: %s", log);
  free(log);
}

Test(shim, emulated_nodes_override_nccls_teams, .fini = remove_plans) {
  char* log = init_across_nodes(4, "2");
  cr_assert(contains(log, "2 nodes x 2 GPUs (KILN_EMULATE_NODES): 1 plan for that shape"), "%s", log);
  free(log);
}

Test(shim, ranks_that_form_no_nodes_stay_on_nccl, .fini = remove_plans) {
  char* log = init_across_nodes(3, NULL);
  cr_assert(contains(log, "does not cut 4 ranks into nodes"), "%s", log);
  cr_assert(not(contains(log, "kiln communicator not created")), "%s", log);
  free(log);
}

Test(shim, a_malformed_emulation_setting_stays_on_nccl, .fini = remove_plans) {
  char* log = init_across_nodes(4, "x");
  cr_assert(contains(log, "KILN_EMULATE_NODES=x is not a positive integer"), "%s", log);
  cr_assert(not(contains(log, "kiln communicator not created")), "%s", log);
  free(log);
}

/* A rank that stops before its kiln communicator (here: settings of its own that form no nodes)
 * still takes part in the ranks' agreement through NCCL on going ahead, so the others, which may
 * go ahead, learn it there instead of waiting for it in their communicator's creation. The
 * agreement opens on the communicator's device (the fake's ncclCommCuDevice), which the CPU does
 * not have: every rank then stays on NCCL, saying so. */
Test(shim, a_rank_that_stops_early_still_joins_the_agreement, .fini = remove_plans) {
  char* log = init_across_nodes(4, "x");
  cr_assert(contains(log, "could not agree on setting kiln up"), "%s", log);
  const int count = last_call_of("ncclCommCount"), device = last_call_of("ncclCommCuDevice");
  cr_assert(gt(int, device, count), "the rank never opened the agreement");
  free(log);
}

/* KILN_FAULT=setup@0 stops rank 0 before its communicator (as differing plans or settings, or no
 * memory would) and it says why; it still joins the agreement. */
Test(shim, a_setup_fault_stops_the_rank_and_it_still_agrees, .fini = remove_plans) {
  setenv("KILN_FAULT", "setup@0", 1);
  char* log = init_across_nodes(4, NULL);
  cr_assert(contains(log, "KILN_FAULT=setup@0: this rank does not set kiln up"), "%s", log);
  cr_assert(contains(log, "could not agree on setting kiln up"), "%s", log);
  free(log);
}

/* ---- the search list (no KILN_NCCL_PATH) ---- */

static void copy_file(const char* from, const char* to) {
  size_t len = 0;
  unsigned char* buf = read_file(from, &len);
  cr_assert(buf != NULL, "cannot read %s", from);
  FILE* f = fopen(to, "wb");
  cr_assert(f != NULL, "cannot write %s", to);
  cr_assert(eq(sz, fwrite(buf, 1, len, f), len));
  fclose(f);
  free(buf);
}

/* Makes <tmp>/site-packages/{torch/lib,nvidia/nccl/lib}; loads `libtorch` (a copy of the fake
 * NCCL, only so that a library lives under site-packages) and puts `wheel` as the NCCL wheel's
 * libnccl.so.2; then loads the shim with no KILN_NCCL_PATH. */
static char sitePackagesRoot[64];

/* .fini of the tests that use it: the folder goes (the libraries stay mapped). */
static void remove_site_packages(void) {
  if (sitePackagesRoot[0]) rm_tree(sitePackagesRoot);
  sitePackagesRoot[0] = '\0';
}

static const char* load_shim_from_site_packages(const char* wheel) {
  static char wheelPath[512];
  char* root = sitePackagesRoot;
  snprintf(sitePackagesRoot, sizeof sitePackagesRoot, "/tmp/kiln-shim-sp-XXXXXX");
  cr_assert(mkdtemp(root) != NULL);
  char path[512];
  const char* dirs[] = {
      "/site-packages",        "/site-packages/torch",       "/site-packages/torch/lib",
      "/site-packages/nvidia", "/site-packages/nvidia/nccl", "/site-packages/nvidia/nccl/lib"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(path, sizeof path, "%s%s", root, dirs[i]);
    cr_assert(mkdir(path, 0755) == 0, "mkdir %s", path);
  }
  snprintf(wheelPath, sizeof wheelPath, "%s/site-packages/nvidia/nccl/lib/libnccl.so.2", root);
  copy_file(wheel, wheelPath);
  snprintf(path, sizeof path, "%s/site-packages/torch/lib/libtorch_stand_in.so", root);
  copy_file(KILN_FAKE_NCCL_PATH, path);
  cr_assert(dlopen(path, RTLD_NOW | RTLD_LOCAL) != NULL, "dlopen %s: %s", path, dlerror());
  unsetenv("KILN_NCCL_PATH");
  unsetenv("KILN_DISABLE");
  setenv("KILN_DEBUG", "NONE", 1);
  shim = dlopen(KILN_SHIM_PATH, RTLD_NOW | RTLD_LOCAL);
  cr_assert(shim != NULL, "dlopen %s: %s", KILN_SHIM_PATH, dlerror());
  return wheelPath;
}

Test(shim, search_finds_the_nccl_wheel_next_to_a_loaded_python_package, .fini = remove_site_packages) {
  load_shim_from_site_packages(KILN_FAKE_NCCL_PATH);
  ncclResult_t (*getVersion)(int*) = sym("ncclGetVersion");
  int v = 0;
  cr_assert(eq(int, getVersion(&v), ncclSuccess));
  cr_assert(eq(int, v, FAKE_NCCL_VERSION), "the shim loaded another NCCL (version %d)", v);
}

Test(shim, search_skips_a_kiln_shim_in_the_list, .fini = remove_site_packages) {
  /* A copy of kiln's own libnccl.so.2 where the wheel's would be: skipped for the next one. */
  const char* wheel = load_shim_from_site_packages(KILN_SHIM_PATH);
  ncclResult_t (*getVersion)(int*) = sym("ncclGetVersion");
  int v = 0;
  getVersion(&v); /* the real NCCL of this machine, or none: either way not the copy */
  /* Tried and closed again (it exports kilnShimMarker), so not loaded now. */
  cr_assert(dlopen(wheel, RTLD_NOW | RTLD_NOLOAD) == NULL, "the shim kept a kiln copy as its NCCL");
}

/* ---- without a real NCCL ---- */

Test(shim, missing_real_nccl_is_a_clear_error) {
  load_shim("/nonexistent/kiln-test/libnccl.so.2", false);
  ncclResult_t (*initRank)(ncclComm_t*, int, ncclUniqueId, int) = sym("ncclCommInitRank");
  ncclResult_t (*getVersion)(int*) = sym("ncclGetVersion");
  ncclResult_t (*allreduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = sym("ncclAllReduce");
  const char* (*errorString)(ncclResult_t) = sym("ncclGetErrorString");
  const char* (*lastError)(ncclComm_t) = sym("ncclGetLastError");
  ncclTeam_t (*teamWorld)(ncclComm_t) = sym("ncclTeamWorld");
  void (*resetDebug)(void) = sym("ncclResetDebugInit");
  ncclComm_t c = NULL;
  ncclUniqueId id = {{0}};
  int v = 0;
  cr_assert(eq(int, initRank(&c, 2, id, 0), ncclSystemError));
  cr_assert(eq(ptr, c, NULL));
  cr_assert(eq(int, getVersion(&v), ncclSystemError));
  cr_assert(eq(int, allreduce(NULL, NULL, 1, ncclFloat, ncclSum, NULL, NULL), ncclSystemError));
  cr_assert(errorString(ncclSystemError) != NULL);
  const char* msg = lastError(NULL);
  cr_assert(msg != NULL && strstr(msg, "KILN_NCCL_PATH") != NULL, "message: %s", msg ? msg : "(null)");
  cr_assert(strstr(msg, "/nonexistent/kiln-test/libnccl.so.2") != NULL, "message: %s", msg);
  cr_assert(eq(int, teamWorld(NULL).nRanks, 0));
  resetDebug();
}

Test(shim, never_loads_itself_as_the_real_nccl) {
  load_shim(KILN_SHIM_PATH, false);
  ncclResult_t (*getVersion)(int*) = sym("ncclGetVersion");
  const char* (*lastError)(ncclComm_t) = sym("ncclGetLastError");
  int v = 0;
  cr_assert(eq(int, getVersion(&v), ncclSystemError));
  cr_assert(strstr(lastError(NULL), "kiln") != NULL, "message: %s", lastError(NULL));
}

Test(shim, get_version_of_the_build_machines_real_nccl) {
  const char* real = "/usr/local/cuda/lib/libnccl.so.2";
  if (access(real, R_OK) != 0) cr_skip_test("no %s here", real);
  load_shim(real, false);
  ncclResult_t (*getVersion)(int*) = sym("ncclGetVersion");
  int v = 0;
  cr_assert(eq(int, getVersion(&v), ncclSuccess));
  cr_assert(eq(int, v, NCCL_VERSION_CODE), "the real NCCL reports %d, nccl.h says %d", v, NCCL_VERSION_CODE);
}

#else /* no shim built (no CUDA/NCCL on this machine) */

Test(shim, not_built) { cr_skip_test("kiln's libnccl.so.2 is not built here (no CUDA or NCCL)"); }

#endif
