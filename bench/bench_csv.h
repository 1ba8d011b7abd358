/* A reader of the tables bench/coll_bench writes with --csv: a header line of column names, then
 * one row a line, fields separated by commas and never quoted (an empty field is a value that was
 * not measured). */
#ifndef KILN_BENCH_CSV_H
#define KILN_BENCH_CSV_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct benchCsv {
  int ncols;
  char** names; /* ncols column names */
  int nrows;
  char** cells; /* nrows x ncols fields, row by row */
  int* lines;   /* each row's line number in the file (1-based; the header is line 1) */
  char* text;   /* the file's bytes, cut into the strings above */
} benchCsv;

/* Reads the table at `path` into *t, which the caller frees with benchCsvFree. Returns 0, or -1
 * with a message naming the file and line in err: the file cannot be read, has no header, holds
 * a NUL byte, names a column twice or empty, or has a row whose field count differs from the
 * header's. Blank lines are skipped; a CR before a line's end is dropped. */
int benchCsvRead(const char* path, benchCsv* t, char* err, size_t errlen);

/* Frees what benchCsvRead allocated; *t may be zeroed or partly read. */
void benchCsvFree(benchCsv* t);

/* The index of the column named `name`, -1 when there is none. */
int benchCsvColumn(const benchCsv* t, const char* name);

/* Row `row`'s field in column `col` ("" when col is -1). */
const char* benchCsvCell(const benchCsv* t, int row, int col);

/* Parses a whole field as a finite number into *v: true on success, false for an empty or
 * malformed field. */
bool benchCsvNumber(const char* field, double* v);

#ifdef __cplusplus
}
#endif
#endif
