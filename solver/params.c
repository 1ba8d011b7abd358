/*
 * kiln's settings (kiln/params.h, the table in params.h): read from the environment once, at the
 * first use of any, and kept. The only place in the library that calls getenv.
 */
#define _GNU_SOURCE /* strcasecmp */
#include "params.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
  const char* env;
  kilnParamType type;
  const char* def;
  const char* desc;
} paramRow;

static const paramRow kRows[KILN_NUM_PARAMS] = {
#define KILN_X_PARAM_ROW(id, env, type, def, desc) {env, KILN_PARAM_##type, def, desc},
    KILN_PARAMS(KILN_X_PARAM_ROW)
#undef KILN_X_PARAM_ROW
};

/* What was read: the text (a copy), whether it parsed, the value, and why not. */
typedef struct {
  char* raw;
  bool set;
  int64_t value;
  const char* problem;
} paramValue;

static paramValue values[KILN_NUM_PARAMS];
static int64_t defaults[KILN_NUM_PARAMS];
static pthread_once_t readOnce = PTHREAD_ONCE_INIT;

static bool parse_bool(const char* s, int64_t* out) {
  static const char* const yes[] = {"1", "true", "yes", "on"};
  static const char* const no[] = {"0", "false", "no", "off"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (!strcasecmp(s, yes[i])) return *out = 1, true;
    if (!strcasecmp(s, no[i])) return *out = 0, true;
  }
  return false;
}

static bool parse_int(const char* s, int64_t* out) {
  if (!isdigit((unsigned char)*s)) return false;
  errno = 0;
  char* end = NULL;
  const long long v = strtoll(s, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

/* The text s as a value of type t; false (with *why) when it is none. */
static bool parse(kilnParamType t, const char* s, int64_t* out, const char** why) {
  uint64_t u = 0;
  switch (t) {
    case KILN_PARAM_BOOL: *why = "not a boolean (1/0, true/false, yes/no, on/off)"; return parse_bool(s, out);
    case KILN_PARAM_INT: *why = "not a non-negative integer"; return parse_int(s, out);
    case KILN_PARAM_SIZE:
      *why = "not a size (bytes, with an optional K/M/G/T suffix)";
      if (!kilnParseSize(s, &u) || u > (uint64_t)INT64_MAX) return false;
      *out = (int64_t)u;
      return true;
    default: *out = 0; return true;
  }
}

/* A KILN_DEBUG text as a level (kilnDebugLevel): 0 NONE, 1 ERROR (also unset or unknown), 2 WARN,
 * 3 INFO (or TRACE). */
static int level_of(const char* s) {
  static const char* const names[] = {"NONE", "ERROR", "WARN", "INFO"};
  if (!s || !*s) return 1;
  if (!strcasecmp(s, "TRACE")) return KILN_DEBUG_INFO;
  if (!strcmp(s, "0")) return 0;
  for (int i = 0; i < 4; i++)
    if (!strcasecmp(s, names[i])) return i;
  return 1;
}

static void read_all(void) {
  for (int i = 0; i < KILN_NUM_PARAMS; i++) {
    const paramRow* r = &kRows[i];
    const char* why = NULL;
    int64_t v = 0;
    defaults[i] = r->def && parse(r->type, r->def, &v, &why) ? v : 0;
    paramValue* p = &values[i];
    free(p->raw);
    memset(p, 0, sizeof *p);
    const char* e = getenv(r->env);
    if (!e) continue;
    p->raw = strdup(e);
    if (!*e) continue; /* set to nothing: as unset */
    if (parse(r->type, e, &v, &why)) {
      p->set = true;
      p->value = v;
    } else {
      p->problem = why;
    }
  }
  /* Said once, at the first read, unless KILN_DEBUG=NONE. */
  for (int i = 0; i < KILN_NUM_PARAMS && level_of(values[KILN_PARAM_Debug].raw) > 0; i++)
    if (values[i].problem)
      fprintf(stderr, "kiln: %s=%s: %s, ignored\n", kRows[i].env, values[i].raw, values[i].problem);
}

static void ensure_read(void) { pthread_once(&readOnce, read_all); }

void kilnParamsReload(void) {
  ensure_read();
  read_all();
}

int64_t kilnParam(kilnParamId id) {
  ensure_read();
  if ((unsigned)id >= KILN_NUM_PARAMS) return 0;
  return values[id].set ? values[id].value : defaults[id];
}

bool kilnParamIsSet(kilnParamId id) {
  ensure_read();
  return (unsigned)id < KILN_NUM_PARAMS && values[id].set;
}

const char* kilnParamString(kilnParamId id) {
  ensure_read();
  if ((unsigned)id >= KILN_NUM_PARAMS) return NULL;
  return values[id].set ? values[id].raw : kRows[id].def;
}

const char* kilnParamRaw(kilnParamId id) {
  ensure_read();
  return (unsigned)id < KILN_NUM_PARAMS ? values[id].raw : NULL;
}

int kilnDebugLevel(void) { return level_of(kilnParamString(KILN_PARAM_Debug)); }

bool kilnFaultAt(const char* step, int rank) {
  const char* f = kilnParamString(KILN_PARAM_Fault);
  const size_t n = step ? strlen(step) : 0;
  if (!f || !n || strncmp(f, step, n) != 0 || f[n] != '@') return false;
  const char* r = f + n + 1;
  if (!strcmp(r, "*")) return true;
  int64_t v = 0;
  return parse_int(r, &v) && v == rank;
}

int kilnParamCount(void) { return KILN_NUM_PARAMS; }

const char* kilnParamTypeName(kilnParamType t) {
  switch (t) {
    case KILN_PARAM_BOOL: return "bool";
    case KILN_PARAM_INT: return "int";
    case KILN_PARAM_SIZE: return "size";
    case KILN_PARAM_STRING: return "string";
    default: return "?";
  }
}

bool kilnParamGetInfo(int i, kilnParamInfo* out) {
  if (i < 0 || i >= KILN_NUM_PARAMS || !out) return false;
  ensure_read();
  out->env = kRows[i].env;
  out->type = kRows[i].type;
  out->defaultText = kRows[i].def;
  out->description = kRows[i].desc;
  out->value = values[i].raw;
  out->problem = values[i].problem;
  return true;
}
