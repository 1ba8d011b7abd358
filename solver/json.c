/* A small strict JSON reader: recursive descent over the text, values with their positions. */
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct jsonParser {
  const char* s;
  size_t len, pos;
  int line, col;
  const char* fname;
  kilnResult_t r; /* the first error, KILN_SUCCESS while none */
} jsonParser;

kilnResult_t jsonError(kilnResult_t r, const char* fname, const jsonValue* v, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kilnSetError(r, "%s:%d:%d: %s", fname, v ? v->line : 1, v ? v->col : 1, msg);
}

static bool fail(jsonParser* p, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(jsonParser* p, const char* fmt, ...) {
  if (p->r != KILN_SUCCESS) return false;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  p->r = kilnSetError(KILN_ERR_PARSE, "%s:%d:%d: %s", p->fname, p->line, p->col, msg);
  return false;
}

static int peek(const jsonParser* p) { return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1; }

static void advance(jsonParser* p) {
  if (p->pos >= p->len) return;
  if (p->s[p->pos] == '\n') {
    p->line++;
    p->col = 1;
  } else if (((unsigned char)p->s[p->pos] & 0xc0) != 0x80) { /* columns count characters, not bytes */
    p->col++;
  }
  p->pos++;
}

static bool skip_space(jsonParser* p) {
  for (;;) {
    int c = peek(p);
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance(p);
    } else if (c == '/' && p->pos + 1 < p->len && (p->s[p->pos + 1] == '/' || p->s[p->pos + 1] == '*')) {
      return fail(p, "a comment: JSON has none (remove it)");
    } else {
      return true;
    }
  }
}

/* A printable description of the character at the cursor, for messages. */
static const char* describe(const jsonParser* p, char* buf, size_t n) {
  int c = peek(p);
  if (c < 0) return "the end of the file";
  if (c >= 0x20 && c < 0x7f)
    snprintf(buf, n, "'%c'", c);
  else
    snprintf(buf, n, "byte 0x%02x", c);
  return buf;
}

static void value_free(jsonValue* v) {
  if (v->type == JSON_STRING) free(v->str);
  if (v->type == JSON_ARRAY || v->type == JSON_OBJECT) {
    for (int i = 0; i < v->n; i++) {
      value_free(&v->items[i]);
      if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
  }
}

void jsonFree(jsonValue* v) {
  if (!v) return;
  value_free(v);
  free(v);
}

static bool put_utf8(char** b, size_t* n, size_t* cap, uint32_t cp) {
  char tmp[4];
  size_t k;
  if (cp < 0x80) {
    tmp[0] = (char)cp;
    k = 1;
  } else if (cp < 0x800) {
    tmp[0] = (char)(0xc0 | (cp >> 6));
    tmp[1] = (char)(0x80 | (cp & 0x3f));
    k = 2;
  } else if (cp < 0x10000) {
    tmp[0] = (char)(0xe0 | (cp >> 12));
    tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    tmp[2] = (char)(0x80 | (cp & 0x3f));
    k = 3;
  } else {
    tmp[0] = (char)(0xf0 | (cp >> 18));
    tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    tmp[3] = (char)(0x80 | (cp & 0x3f));
    k = 4;
  }
  if (*n + k + 1 > *cap) {
    size_t nc = *cap ? 2 * *cap : 32;
    while (nc < *n + k + 1) nc *= 2;
    char* nb = realloc(*b, nc);
    if (!nb) return false;
    *b = nb;
    *cap = nc;
  }
  memcpy(*b + *n, tmp, k);
  *n += k;
  return true;
}

static int hex4(jsonParser* p, uint32_t* out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int c = peek(p);
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return fail(p, "\\u needs four hex digits");
    v = v * 16 + (uint32_t)d;
    advance(p);
  }
  *out = v;
  return true;
}

/* A string at the cursor (at its opening quote) into *out (malloc'd). */
static bool parse_string(jsonParser* p, char** out) {
  advance(p); /* " */
  char* b = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    int c = peek(p);
    if (c < 0) {
      free(b);
      return fail(p, "a string runs to the end of the file (a closing '\"' is missing)");
    }
    if (c == '"') {
      advance(p);
      break;
    }
    if (c < 0x20) {
      free(b);
      return fail(p, "a raw control character in a string (write it as an escape)");
    }
    if (c == '\\') {
      advance(p);
      int e = peek(p);
      uint32_t cp = 0;
      switch (e) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u': {
          advance(p);
          if (!hex4(p, &cp)) {
            free(b);
            return false;
          }
          if (cp >= 0xd800 && cp < 0xdc00) { /* a surrogate pair */
            uint32_t lo;
            if (peek(p) != '\\' || p->pos + 1 >= p->len || p->s[p->pos + 1] != 'u') {
              free(b);
              return fail(p, "a \\u escape of a high surrogate without its low one");
            }
            advance(p);
            advance(p);
            if (!hex4(p, &lo)) {
              free(b);
              return false;
            }
            if (lo < 0xdc00 || lo >= 0xe000) {
              free(b);
              return fail(p, "a \\u escape of a high surrogate without its low one");
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          } else if (cp >= 0xdc00 && cp < 0xe000) {
            free(b);
            return fail(p, "a \\u escape of a lone low surrogate");
          }
          if (cp == 0) {
            free(b);
            return fail(p, "a \\u0000 in a string");
          }
          if (!put_utf8(&b, &n, &cap, cp)) {
            free(b);
            return fail(p, "out of memory");
          }
          continue;
        }
        default: {
          char d[24];
          free(b);
          return fail(p, "an unknown escape \\%s in a string", describe(p, d, sizeof d));
        }
      }
      advance(p);
      if (!put_utf8(&b, &n, &cap, cp)) {
        free(b);
        return fail(p, "out of memory");
      }
      continue;
    }
    /* a character of UTF-8 as it comes: checked to be one (no overlong forms, no surrogates) */
    int len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    uint32_t cp = len == 1   ? (uint32_t)c
                  : len == 2 ? (uint32_t)(c & 0x1f)
                  : len == 3 ? (uint32_t)(c & 0x0f)
                             : (uint32_t)(c & 0x07);
    bool valid = len > 0 && p->pos + (size_t)len <= p->len;
    for (int k = 1; valid && k < len; k++) {
      const unsigned char cc = (unsigned char)p->s[p->pos + (size_t)k];
      valid = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3f);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (valid && (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))) valid = false;
    if (!valid) {
      free(b);
      return fail(p, "a string with bytes that are not UTF-8");
    }
    if (n + (size_t)len + 1 > cap) {
      size_t nc = cap ? 2 * cap : 32;
      while (nc < n + (size_t)len + 1) nc *= 2;
      char* nb = realloc(b, nc);
      if (!nb) {
        free(b);
        return fail(p, "out of memory");
      }
      b = nb;
      cap = nc;
    }
    for (int k = 0; k < len; k++) {
      b[n++] = p->s[p->pos];
      advance(p);
    }
  }
  if (!b) b = malloc(1);
  if (!b) return fail(p, "out of memory");
  b[n] = '\0';
  *out = b;
  return true;
}

static bool parse_number(jsonParser* p, jsonValue* v) {
  size_t start = p->pos;
  bool integral = true;
  if (peek(p) == '-') advance(p);
  if (peek(p) == '0') {
    advance(p);
  } else if (peek(p) >= '1' && peek(p) <= '9') {
    while (peek(p) >= '0' && peek(p) <= '9') advance(p);
  } else {
    return fail(p, "a number needs digits after '-'");
  }
  if (peek(p) >= '0' && peek(p) <= '9') return fail(p, "a number with a leading zero");
  if (peek(p) == '.') {
    integral = false;
    advance(p);
    if (!(peek(p) >= '0' && peek(p) <= '9')) return fail(p, "a number needs digits after '.'");
    while (peek(p) >= '0' && peek(p) <= '9') advance(p);
  }
  if (peek(p) == 'e' || peek(p) == 'E') {
    integral = false;
    advance(p);
    if (peek(p) == '+' || peek(p) == '-') advance(p);
    if (!(peek(p) >= '0' && peek(p) <= '9')) return fail(p, "a number needs digits in its exponent");
    while (peek(p) >= '0' && peek(p) <= '9') advance(p);
  }
  char buf[64];
  size_t k = p->pos - start;
  if (k >= sizeof buf) return fail(p, "a number of more than %zu characters", sizeof buf - 1);
  memcpy(buf, p->s + start, k);
  buf[k] = '\0';
  errno = 0;
  double d = strtod(buf, NULL);
  if (!isfinite(d) || errno == ERANGE) {
    if (isfinite(d) && fabs(d) < 1)
      d = 0; /* underflow: zero */
    else
      return fail(p, "the number %s is out of range", buf);
  }
  v->type = JSON_NUMBER;
  v->num = d;
  v->integral = integral;
  return true;
}

static bool parse_value(jsonParser* p, jsonValue* v, int depth);

static bool grow_items(jsonParser* p, jsonValue* v, int* cap, bool keys) {
  if (v->n < *cap) return true;
  int nc = *cap ? 2 * *cap : 4;
  jsonValue* ni = realloc(v->items, (size_t)nc * sizeof *ni);
  if (!ni) return fail(p, "out of memory");
  v->items = ni;
  if (keys) {
    char** nk = realloc(v->keys, (size_t)nc * sizeof *nk);
    if (!nk) return fail(p, "out of memory");
    v->keys = nk;
  }
  *cap = nc;
  return true;
}

static bool parse_container(jsonParser* p, jsonValue* v, int depth, bool object) {
  if (depth >= JSON_MAX_DEPTH) return fail(p, "nesting deeper than %d", JSON_MAX_DEPTH);
  const char close = object ? '}' : ']';
  v->type = object ? JSON_OBJECT : JSON_ARRAY;
  advance(p); /* { or [ */
  int cap = 0;
  if (!skip_space(p)) return false;
  if (peek(p) == close) {
    advance(p);
    return true;
  }
  for (;;) {
    if (!skip_space(p)) return false;
    char* key = NULL;
    int kline = p->line, kcol = p->col;
    if (object) {
      char d[24];
      if (peek(p) != '"')
        return fail(p, "expected a key (a string in double quotes), found %s", describe(p, d, sizeof d));
      if (!parse_string(p, &key)) return false;
      for (int i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key)) {
          p->line = kline;
          p->col = kcol;
          fail(p, "the key \"%s\" is given twice in one object", key);
          free(key);
          return false;
        }
      if (!skip_space(p)) {
        free(key);
        return false;
      }
      if (peek(p) != ':') {
        free(key);
        return fail(p, "expected ':' after a key, found %s", describe(p, d, sizeof d));
      }
      advance(p);
    }
    if (!grow_items(p, v, &cap, object)) {
      free(key);
      return false;
    }
    jsonValue* item = &v->items[v->n];
    memset(item, 0, sizeof *item);
    if (object) v->keys[v->n] = key;
    v->n++;
    if (!parse_value(p, item, depth + 1)) return false;
    if (!skip_space(p)) return false;
    int c = peek(p);
    if (c == ',') {
      advance(p);
      if (!skip_space(p)) return false;
      if (peek(p) == close) return fail(p, "a trailing ',' before '%c'", close);
      continue;
    }
    if (c == close) {
      advance(p);
      return true;
    }
    char d[24];
    return fail(p, "expected ',' or '%c', found %s", close, describe(p, d, sizeof d));
  }
}

static bool literal(jsonParser* p, const char* word) {
  size_t k = strlen(word);
  if (p->len - p->pos < k || memcmp(p->s + p->pos, word, k) != 0) return false;
  for (size_t i = 0; i < k; i++) advance(p);
  return true;
}

static bool parse_value(jsonParser* p, jsonValue* v, int depth) {
  if (!skip_space(p)) return false;
  v->line = p->line;
  v->col = p->col;
  int c = peek(p);
  char d[24];
  if (c == '{') return parse_container(p, v, depth, true);
  if (c == '[') return parse_container(p, v, depth, false);
  if (c == '"') {
    v->type = JSON_STRING;
    return parse_string(p, &v->str);
  }
  if (c == '-' || (c >= '0' && c <= '9')) return parse_number(p, v);
  if (literal(p, "true")) {
    v->type = JSON_BOOL;
    v->b = true;
    return true;
  }
  if (literal(p, "false")) {
    v->type = JSON_BOOL;
    v->b = false;
    return true;
  }
  if (literal(p, "null")) {
    v->type = JSON_NULL;
    return true;
  }
  if (c == 'N' || c == 'I') return fail(p, "NaN and Infinity are not JSON numbers");
  return fail(p, "expected a value (object, array, string, number, true, false or null), found %s",
              describe(p, d, sizeof d));
}

kilnResult_t jsonParse(const char* text, size_t len, const char* fname, jsonValue** out) {
  *out = NULL;
  if (!fname) fname = "(json)";
  if (len > JSON_MAX_BYTES)
    return kilnSetError(KILN_ERR_PARSE, "%s:1:1: a document of %zu bytes, more than the %zu bytes kiln reads",
                        fname, len, JSON_MAX_BYTES);
  jsonParser p = {text, len, 0, 1, 1, fname, KILN_SUCCESS};
  if (len >= 3 && (unsigned char)text[0] == 0xef && (unsigned char)text[1] == 0xbb &&
      (unsigned char)text[2] == 0xbf)
    p.pos = 3; /* a UTF-8 byte order mark */
  for (size_t i = p.pos; i < len; i++)
    if (text[i] == '\0')
      return kilnSetError(KILN_ERR_PARSE, "%s: a NUL byte at offset %zu: not a text file", fname, i);
  jsonValue* v = calloc(1, sizeof *v);
  if (!v) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", fname);
  if (!skip_space(&p)) goto out_fail;
  if (peek(&p) < 0) {
    fail(&p, "an empty document");
    goto out_fail;
  }
  if (!parse_value(&p, v, 0)) goto out_fail;
  if (!skip_space(&p)) goto out_fail;
  if (peek(&p) >= 0) {
    char d[24];
    fail(&p, "%s after the document's value", describe(&p, d, sizeof d));
    goto out_fail;
  }
  *out = v;
  return KILN_SUCCESS;
out_fail:
  jsonFree(v);
  return p.r != KILN_SUCCESS ? p.r : kilnSetError(KILN_ERR_PARSE, "%s: malformed JSON", fname);
}

kilnResult_t jsonReadFile(const char* path, jsonValue** out) {
  *out = NULL;
  if (!path || !*path) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no file name given");
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return kilnSetError(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kilnSetError(KILN_ERR_IO, "%s: not a regular file", path);
  }
  if ((unsigned long long)st.st_size > JSON_MAX_BYTES) {
    close(fd);
    return kilnSetError(KILN_ERR_PARSE, "%s:1:1: a file of %lld bytes, more than the %zu bytes kiln reads",
                        path, (long long)st.st_size, JSON_MAX_BYTES);
  }
  size_t cap = (size_t)st.st_size + 1, n = 0;
  char* b = malloc(cap);
  if (!b) {
    close(fd);
    return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  for (;;) {
    ssize_t got = read(fd, b + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      kilnResult_t r = kilnSetError(KILN_ERR_IO, "%s: read error: %s", path, strerror(errno));
      free(b);
      close(fd);
      return r;
    }
    if (got == 0) break;
    n += (size_t)got;
    if (n == cap) break; /* the file grew while read: what fits is parsed */
  }
  close(fd);
  kilnResult_t r = jsonParse(b, n, path, out);
  free(b);
  return r;
}

const jsonValue* jsonGet(const jsonValue* obj, const char* key) {
  if (!obj || obj->type != JSON_OBJECT) return NULL;
  for (int i = 0; i < obj->n; i++)
    if (!strcmp(obj->keys[i], key)) return &obj->items[i];
  return NULL;
}

const char* jsonTypeName(jsonType t) {
  switch (t) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "a boolean";
    case JSON_NUMBER: return "a number";
    case JSON_STRING: return "a string";
    case JSON_ARRAY: return "an array";
    case JSON_OBJECT: return "an object";
  }
  return "a value";
}
