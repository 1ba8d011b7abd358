/* The reader of coll_bench's CSV tables (bench_csv.h). */
#include "bench_csv.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_error(char* err, size_t errlen, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* The whole file as one NUL-terminated string; NULL (errno set) when it cannot be read. */
static char* read_all(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char* buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (ferror(f)) {
      free(buf);
      buf = NULL;
      errno = EIO;
      break;
    }
    if (feof(f)) break;
    char* bigger = realloc(buf, cap * 2);
    if (!bigger) free(buf);
    buf = bigger;
    cap *= 2;
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int count_fields(const char* line) {
  int n = 1;
  for (; *line; line++) n += *line == ',';
  return n;
}

/* Cuts `line` at its commas into count_fields(line) fields stored in out. */
static void split_fields(char* line, char** out) {
  int n = 0;
  out[n++] = line;
  for (char* p = line; (p = strchr(p, ',')); p++) {
    *p = '\0';
    out[n++] = p + 1;
  }
}

int benchCsvRead(const char* path, benchCsv* t, char* err, size_t errlen) {
  int rc = -1;
  char** lineAt = NULL;
  memset(t, 0, sizeof *t);
  size_t len = 0;
  t->text = read_all(path, &len);
  if (!t->text) {
    set_error(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    goto out;
  }
  if (strlen(t->text) != len) {
    set_error(err, errlen, "%s: holds a NUL byte: not a CSV table", path);
    goto out;
  }
  /* Lines: count them for the arrays, then cut them in place; blank ones are skipped. */
  int nlines = 1;
  for (const char* p = t->text; *p; p++) nlines += *p == '\n';
  t->lines = malloc(sizeof(int) * (size_t)nlines);
  lineAt = malloc(sizeof(char*) * (size_t)nlines);
  if (!t->lines || !lineAt) {
    set_error(err, errlen, "%s: out of memory", path);
    goto out;
  }
  int nonblank = 0, lineNo = 0;
  for (char* p = t->text; *p;) {
    char* end = strchr(p, '\n');
    char* next = end ? end + 1 : p + strlen(p);
    if (end) *end = '\0';
    size_t l = strlen(p);
    if (l && p[l - 1] == '\r') p[--l] = '\0';
    lineNo++;
    if (l) {
      t->lines[nonblank] = lineNo;
      lineAt[nonblank++] = p;
    }
    p = next;
  }
  if (nonblank == 0) {
    set_error(err, errlen, "%s: empty: no header line", path);
    goto out;
  }
  const int headerLine = t->lines[0];
  t->ncols = count_fields(lineAt[0]);
  t->nrows = nonblank - 1;
  t->names = malloc(sizeof(char*) * (size_t)t->ncols);
  t->cells = malloc(sizeof(char*) * (size_t)(t->nrows ? t->nrows : 1) * (size_t)t->ncols);
  if (!t->names || !t->cells) {
    set_error(err, errlen, "%s: out of memory", path);
    goto out;
  }
  split_fields(lineAt[0], t->names);
  for (int c = 0; c < t->ncols; c++) {
    if (!t->names[c][0]) {
      set_error(err, errlen, "%s:%d: column %d of the header has no name", path, headerLine, c + 1);
      goto out;
    }
    for (int d = 0; d < c; d++)
      if (!strcmp(t->names[c], t->names[d])) {
        set_error(err, errlen, "%s:%d: the header names column '%s' twice", path, headerLine, t->names[c]);
        goto out;
      }
  }
  for (int r = 0; r < t->nrows; r++) {
    const int n = count_fields(lineAt[r + 1]);
    if (n != t->ncols) {
      set_error(err, errlen, "%s:%d: %d fields where the header has %d", path, t->lines[r + 1], n, t->ncols);
      goto out;
    }
    split_fields(lineAt[r + 1], t->cells + (size_t)r * (size_t)t->ncols);
  }
  memmove(t->lines, t->lines + 1, sizeof(int) * (size_t)t->nrows); /* the rows' lines, header's dropped */
  rc = 0;

out:
  free(lineAt);
  if (rc) benchCsvFree(t);
  return rc;
}

void benchCsvFree(benchCsv* t) {
  free(t->names);
  free(t->cells);
  free(t->lines);
  free(t->text);
  memset(t, 0, sizeof *t);
}

int benchCsvColumn(const benchCsv* t, const char* name) {
  for (int c = 0; c < t->ncols; c++)
    if (!strcmp(t->names[c], name)) return c;
  return -1;
}

const char* benchCsvCell(const benchCsv* t, int row, int col) {
  return col < 0 ? "" : t->cells[(size_t)row * (size_t)t->ncols + (size_t)col];
}

bool benchCsvNumber(const char* field, double* v) {
  if (!field[0]) return false;
  char* end = NULL;
  errno = 0;
  const double x = strtod(field, &end);
  if (errno || *end || !isfinite(x)) return false;
  *v = x;
  return true;
}
