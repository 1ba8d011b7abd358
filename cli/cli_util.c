#include "cli_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KILN_DATADIR
#define KILN_DATADIR "share" /* the install's data folder: relative to its prefix, or absolute */
#endif

/* A name with a '/' or ending in .xml is a path, never a built-in's or a shipped file's name. */
static bool looks_like_path(const char* s) {
  const size_t len = strlen(s);
  return strchr(s, '/') || (len > 4 && !strcmp(s + len - 4, ".xml"));
}

const char* cliSketchPath(const char* arg, char* buf, size_t n) {
  struct stat st;
  if (looks_like_path(arg) || (stat(arg, &st) == 0 && S_ISREG(st.st_mode))) return arg;
  /* the installed data folder: as configured where absolute, else beside the program (PREFIX/bin) */
  char data[4200] = KILN_DATADIR, exe[4096];
  const ssize_t el = data[0] == '/' ? 0 : readlink("/proc/self/exe", exe, sizeof exe - 1);
  char* slash = el > 0 ? (exe[el] = '\0', strrchr(exe, '/')) : NULL;
  if (slash) {
    *slash = '\0';
    snprintf(data, sizeof data, "%s/../%s", exe, KILN_DATADIR);
  }
  if (data[0] == '/') { /* absolute as configured, or found beside the program */
    snprintf(buf, n, "%s/kiln/plans/sketches/%s.xml", data, arg);
    if (stat(buf, &st) == 0) return buf;
  }
#ifdef KILN_SOURCE_DIR
  snprintf(buf, n, "%s/plans/sketches/%s.xml", KILN_SOURCE_DIR, arg);
  if (stat(buf, &st) == 0) return buf;
#endif
  return NULL;
}

bool cliParseInt(const char* s, int* out) {
  if (!s || !*s) return false;
  errno = 0;
  char* end;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > 1 << 30) return false;
  *out = (int)v;
  return true;
}

int cliTopoArg(kilnTopoArgs* ta, int argc, char** argv, int i) {
  if (!strcmp(argv[i], "--topo") || !strcmp(argv[i], "--file")) {
    if (i + 1 >= argc) {
      fprintf(stderr, "kiln: %s needs a value\n", argv[i]);
      return -1;
    }
    if (ta->name) {
      fprintf(stderr, "kiln: one topology only (--topo or --file): '%s', then '%s'\n", ta->name, argv[i + 1]);
      return -1;
    }
    ta->name = argv[i + 1];
    ta->file = !strcmp(argv[i], "--file"); /* --file names a file, whatever built-in shares its name */
    return 2;
  }
  if (!strcmp(argv[i], "--nodes")) {
    if (i + 1 >= argc || !cliParseInt(argv[i + 1], &ta->nodes) || ta->nodes < 1) {
      fprintf(stderr, "kiln: --nodes needs a positive integer\n");
      return -1;
    }
    return 2;
  }
  return 0;
}

int cliLoadTopo(kilnTopoArgs* ta, kilnTopology** out) {
  if (!ta->name) {
    fprintf(stderr, "kiln: no topology given (--topo NAME or --topo FILE.xml)\n");
    return 2;
  }
  /* A built-in name wins over a file of that name in the current folder; a name with a '/' or
   * ending in .xml is a file. */
  if (!ta->file && !looks_like_path(ta->name)) {
    if (kilnTopologyBuiltin(ta->name, ta->nodes > 0 ? ta->nodes : 1, out) == KILN_SUCCESS) return 0;
    struct stat st;
    if (stat(ta->name, &st) != 0) {
      fprintf(stderr, "kiln: %s\n", kilnLastError());
      return 2;
    }
  }
  ta->file = true;
  kilnResult_t r = kilnTopologyReadFile(ta->name, out);
  if (r != KILN_SUCCESS) { /* on stderr: stdout may be the command's output (kiln topo) */
    cliFileErrorTo(stderr, "kiln: ", ta->name, kilnLastError());
    return 1;
  }
  if (ta->nodes > 0 && ta->nodes != (*out)->nodes) {
    /* The file's template passed; what fails now is the --nodes asked for (too many ranks), as it
     * does for a built-in. */
    (*out)->nodes = ta->nodes;
    r = kilnTopologyExpand(*out);
    if (r != KILN_SUCCESS) {
      kilnTopologyFree(*out);
      *out = NULL;
      cliFileErrorTo(stderr, "kiln: ", ta->name, kilnLastError());
      return r == KILN_ERR_INVALID_ARGUMENT ? 2 : 1;
    }
  }
  return 0;
}

bool cliOnce(const char* cmd, const char** slot, const char* opt, const char* v) {
  if (*slot) {
    fprintf(stderr, "kiln %s: %s given twice ('%s', then '%s')\n", cmd, opt, *slot, v);
    return false;
  }
  *slot = v;
  return true;
}

bool cliOutputApart(const char* cmd, const char* out, const char* const* ins, int nins) {
  struct stat so, si;
  if (!out || !strcmp(out, "-") || stat(out, &so) != 0 || !S_ISREG(so.st_mode)) return true;
  for (int i = 0; i < nins; i++)
    if (ins[i] && stat(ins[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
      fprintf(stderr, "kiln %s: the output %s is the input %s: write it elsewhere\n", cmd, out, ins[i]);
      return false;
    }
  return true;
}

bool cliOutputWritable(const char* cmd, const char* out) {
  struct stat st;
  if (!out || !strcmp(out, "-")) return true;
  if (!*out) {
    fprintf(stderr, "kiln %s: an empty output file name\n", cmd);
    return false;
  }
  if (stat(out, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      fprintf(stderr, "kiln %s: the output %s is a folder: name a file\n", cmd, out);
      return false;
    }
    if (!S_ISREG(st.st_mode)) return true; /* a device or pipe: written straight, as opened then */
    if (access(out, W_OK) != 0) {          /* the writer would not replace it */
      fprintf(stderr, "kiln %s: cannot write %s: %s\n", cmd, out, strerror(errno));
      return false;
    }
  } else if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode)) {
    fprintf(stderr, "kiln %s: cannot write %s: a symbolic link whose target cannot be reached\n", cmd, out);
    return false;
  }
  /* a new or replaced regular file: the writer makes a temporary file beside it */
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", out);
  char* slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == dir)
    dir[1] = '\0';
  else
    *slash = '\0';
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "kiln %s: cannot write %s: no folder %s\n", cmd, out, dir);
    return false;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "kiln %s: cannot write %s: folder %s: %s\n", cmd, out, dir, strerror(errno));
    return false;
  }
  return true;
}

void cliFileErrorTo(FILE* f, const char* lead, const char* path, const char* msg) {
  size_t n = strlen(path);
  if (!strncmp(msg, path, n) && msg[n] == ':')
    fprintf(f, "%s%s\n", lead, msg);
  else
    fprintf(f, "%s%s: %s\n", lead, path, msg);
}

void cliPrintFileError(const char* path, const char* msg) { cliFileErrorTo(stdout, "", path, msg); }
