/* Shared vocabularies (names and parsers generated from the X-macro tables) and the
 * thread-local error message behind kilnLastError(). */
#include "kiln/kiln.h"
#include "kiln_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define KILN_ERRMSG_MAX 2048
static _Thread_local char errmsg[KILN_ERRMSG_MAX];

const char* kilnResultName(kilnResult_t r) {
  switch (r) {
#define KILN_X_CASE(name, value, desc) \
  case name: return #name;
    KILN_RESULTS(KILN_X_CASE)
#undef KILN_X_CASE
    default: return "KILN_UNKNOWN_RESULT";
  }
}

const char* kilnResultString(kilnResult_t r) {
  switch (r) {
#define KILN_X_CASE(name, value, desc) \
  case name: return desc;
    KILN_RESULTS(KILN_X_CASE)
#undef KILN_X_CASE
    default: return "unknown result";
  }
}

const char* kilnLastError(void) { return errmsg; }

kilnResult_t kilnSetError(kilnResult_t r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(errmsg, sizeof errmsg, fmt, ap);
  va_end(ap);
  return r;
}

void kilnPrefixError(const char* fmt, ...) {
  char prefix[KILN_ERRMSG_MAX];
  char old[KILN_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, errmsg, sizeof old);
  /* The prefix, then as much of the old message as fits (a long one is cut, as kilnSetError cuts). */
  const size_t n = strlen(prefix);
  memcpy(errmsg, prefix, n + 1);
  snprintf(errmsg + n, sizeof errmsg - n, "%s", old);
}

static const char* const coll_names[] = {
#define KILN_X_NAME(e, n, alt) n,
    KILN_COLLS(KILN_X_NAME)
#undef KILN_X_NAME
};
static const char* const coll_alt_names[] = {
#define KILN_X_NAME(e, n, alt) alt,
    KILN_COLLS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnCollName(kilnColl_t c) { return (unsigned)c < KILN_NUM_COLLS ? coll_names[c] : "unknown"; }

bool kilnCollParse(const char* s, kilnColl_t* out) {
  if (!s || !out) return false;
  for (int i = 0; i < KILN_NUM_COLLS; i++) {
    if (strcmp(s, coll_names[i]) == 0 || (coll_alt_names[i] && strcmp(s, coll_alt_names[i]) == 0)) {
      *out = (kilnColl_t)i;
      return true;
    }
  }
  return false;
}

static const struct {
  const char* name;
  size_t bytes;
} dtypes[] = {
#define KILN_X_ROW(e, v, n, b) [v] = {n, b},
    KILN_DTYPES(KILN_X_ROW)
#undef KILN_X_ROW
};

const char* kilnDataTypeName(kilnDataType_t t) {
  return (unsigned)t < KILN_NUM_DTYPES ? dtypes[t].name : "unknown";
}

size_t kilnDataTypeSize(kilnDataType_t t) { return (unsigned)t < KILN_NUM_DTYPES ? dtypes[t].bytes : 0; }

bool kilnDataTypeParse(const char* s, kilnDataType_t* out) {
  if (!s || !out) return false;
  for (int i = 0; i < KILN_NUM_DTYPES; i++) {
    if (strcmp(s, dtypes[i].name) == 0) {
      *out = (kilnDataType_t)i;
      return true;
    }
  }
  return false;
}

static const char* const redop_names[] = {
#define KILN_X_NAME(e, v, n) [v] = n,
    KILN_REDOPS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnRedOpName(kilnRedOp_t op) {
  return (unsigned)op < KILN_NUM_REDOPS ? redop_names[op] : "unknown";
}

bool kilnRedOpParse(const char* s, kilnRedOp_t* out) {
  if (!s || !out) return false;
  for (int i = 0; i < KILN_NUM_REDOPS; i++) {
    if (strcmp(s, redop_names[i]) == 0) {
      *out = (kilnRedOp_t)i;
      return true;
    }
  }
  return false;
}

static const char* const proto_names[] = {
#define KILN_X_NAME(e, n) n,
    KILN_PROTOS(KILN_X_NAME)
#undef KILN_X_NAME
};

const char* kilnProtoName(kilnProto_t p) {
  return (unsigned)p < KILN_NUM_PROTOS ? proto_names[p] : "unknown";
}

bool kilnProtoParse(const char* s, kilnProto_t* out) {
  if (!s || !out) return false;
  for (int i = 0; i < KILN_NUM_PROTOS; i++) {
    if (strcasecmp(s, proto_names[i]) == 0) {
      *out = (kilnProto_t)i;
      return true;
    }
  }
  return false;
}

bool kilnParseSize(const char* s, uint64_t* out) {
  if (!s || !*s || !out) return false;
  while (isspace((unsigned char)*s)) s++;
  if (!isdigit((unsigned char)*s)) return false;
  errno = 0;
  char* end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == ERANGE) return false;
  uint64_t mul = 1;
  switch (toupper((unsigned char)*end)) {
    case 'K':
      mul = 1ull << 10;
      end++;
      break;
    case 'M':
      mul = 1ull << 20;
      end++;
      break;
    case 'G':
      mul = 1ull << 30;
      end++;
      break;
    case 'T':
      mul = 1ull << 40;
      end++;
      break;
    default: break;
  }
  if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'B' || *end == 'b') end++;
  while (isspace((unsigned char)*end)) end++;
  if (*end != '\0') return false;
  if (v > UINT64_MAX / mul) return false;
  *out = (uint64_t)v * mul;
  return true;
}
