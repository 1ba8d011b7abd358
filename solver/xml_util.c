/* Shared libxml2 helpers: safe parsing, validating attribute getters, output buffer and the
 * atomic file writer (see xml_util.h). */
#define _XOPEN_SOURCE 700 /* fileno, mkstemp, fchmod, fsync, lstat, realpath */
#include "xml_util.h"

#include <errno.h>
#include <fcntl.h>
#include <libxml/parser.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int kilnXmlCountChildren(xmlNodePtr parent, const char* name) {
  int c = 0;
  for (xmlNodePtr n = parent->children; n; n = n->next)
    if (n->type == XML_ELEMENT_NODE && !xmlStrcmp(n->name, (const xmlChar*)name)) c++;
  return c;
}

long kilnXmlLine(xmlNodePtr n) {
  if (!n) return 0;
  long l = xmlGetLineNo(n);
  return l > 0 ? l : 0;
}

kilnResult_t kilnXmlError(kilnResult_t r, const char* fname, xmlNodePtr n, const char* fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kilnSetError(r, "%s:%ld: %s", fname, kilnXmlLine(n), msg);
}

/* Where the prolog (XML declaration, comments, processing instructions, blanks, a UTF-8 byte order
 * mark) of buf ends: the index of the first thing after it (a DOCTYPE, the root element, junk) or
 * len (nothing follows, or a comment or declaration runs to the end); *line: its line. One scan
 * for the readers' DOCTYPE check (find_doctype) and kilnXmlFileRoot. */
static size_t prolog_end(const char* buf, size_t len, long* line) {
  size_t i = 0;
  *line = 1;
  while (i < len) {
    const char c = buf[i];
    if (c == '\n') {
      ++*line;
      i++;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      i++;
      continue;
    }
    if (len - i >= 3 && !memcmp(buf + i, "\xEF\xBB\xBF", 3)) {
      i += 3;
      continue;
    }
    if (c != '<' || i + 1 >= len) return i;
    const char* end = NULL;
    if (buf[i + 1] == '?') {
      for (size_t j = i + 2; j + 1 < len; j++)
        if (buf[j] == '?' && buf[j + 1] == '>') {
          end = buf + j + 2;
          break;
        }
    } else if (len - i >= 4 && !memcmp(buf + i, "<!--", 4)) {
      for (size_t j = i + 4; j + 2 < len; j++)
        if (!memcmp(buf + j, "-->", 3)) {
          end = buf + j + 3;
          break;
        }
    } else {
      return i; /* a DOCTYPE, the root element, or junk libxml2 will report */
    }
    if (!end) return len;
    for (const char* p = buf + i; p < end; p++) *line += *p == '\n';
    i = (size_t)(end - buf);
  }
  return len;
}

static bool at_doctype(const char* buf, size_t len, size_t i) {
  return len - i >= 9 && !memcmp(buf + i, "<!DOCTYPE", 9);
}

/* Scans the prolog for a DOCTYPE before libxml2 sees the document, so entity declarations are
 * never even parsed. Returns the line of the DOCTYPE, or 0 if there is none. */
static long find_doctype(const char* buf, size_t len) {
  long line;
  const size_t i = prolog_end(buf, len, &line);
  return i < len && at_doctype(buf, len, i) ? line : 0;
}

static void silent_error(void* ctx, const char* msg, ...) {
  (void)ctx;
  (void)msg;
}

kilnResult_t kilnXmlParseMemory(const char* buf, size_t len, const char* fname, xmlDocPtr* out) {
  *out = NULL;
  if (!fname) fname = "<memory>";
  if (!buf || len == 0) return kilnSetError(KILN_ERR_PARSE, "%s:1: empty document", fname);
  if (len > KILN_XML_MAX_BYTES || len > INT_MAX)
    return kilnSetError(KILN_ERR_PARSE, "%s:1: document of %zu bytes is larger than the %u-byte limit", fname,
                        len, KILN_XML_MAX_BYTES);
  /* A NUL byte in an 8-bit document: libxml2 stops at it, and what follows would be dropped unseen.
   * (UTF-16, by its byte-order mark or its first character, is full of them.) */
  const unsigned char* u = (const unsigned char*)buf;
  const bool utf16 = len >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF) ||
                                  (u[0] == '<' && u[1] == 0) || (u[0] == 0 && u[1] == '<'));
  const char* nul = utf16 ? NULL : memchr(buf, '\0', len);
  if (nul) {
    long line = 1;
    for (const char* q = buf; q < nul; q++) line += *q == '\n';
    return kilnSetError(KILN_ERR_PARSE, "%s:%ld: a NUL byte (at byte %zu): not a text document", fname, line,
                        (size_t)(nul - buf));
  }
  long dl = find_doctype(buf, len);
  if (dl > 0)
    return kilnSetError(KILN_ERR_PARSE,
                        "%s:%ld: DOCTYPE declarations are not accepted (they can declare entities)", fname,
                        dl);
  kilnResult_t r = KILN_SUCCESS;
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (!ctxt) return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory creating the XML parser", fname);
  /* No XML_PARSE_NOENT (no entity substitution), no DTDLOAD/DTDATTR, no HUGE (keeps the
   * depth and size limits), no network. */
  int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
  /* Some libxml2 messages (encoding errors) bypass XML_PARSE_NOERROR and go to the generic
   * handler, which prints; silence it for this thread while parsing (library code never prints). */
  xmlGenericErrorFunc old_handler = xmlGenericError;
  void* old_ctx = xmlGenericErrorContext;
  xmlSetGenericErrorFunc(NULL, silent_error);
  xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, NULL, NULL, opts);
  xmlSetGenericErrorFunc(old_ctx, old_handler);
  if (!doc || !ctxt->wellFormed) {
    const xmlError* e = xmlCtxtGetLastError(ctxt);
    char msg[512] = "not well-formed XML";
    int line = 1;
    if (e && e->code == XML_ERR_NO_MEMORY) {
      r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory while parsing the document", fname);
      goto out_free_doc;
    }
    if (e && e->message) {
      snprintf(msg, sizeof msg, "%s", e->message);
      size_t n = strlen(msg);
      while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) msg[--n] = '\0';
      /* libxml2's advice for its limits names a parser option kiln does not give on purpose. */
      if (strstr(msg, "XML_PARSE_HUGE"))
        snprintf(msg, sizeof msg,
                 "the document is nested too deeply or too large (libxml2's limits; a "
                 "topology, sketch or plan needs neither)");
      if (e->line > 0) line = e->line;
    }
    r = kilnSetError(KILN_ERR_PARSE, "%s:%d: %s", fname, line, msg);
    goto out_free_doc;
  }
  if (doc->intSubset || doc->extSubset) {
    r = kilnSetError(KILN_ERR_PARSE, "%s:1: DOCTYPE declarations are not accepted", fname);
    goto out_free_doc;
  }
  *out = doc;
  doc = NULL;
out_free_doc:
  if (doc) xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  return r;
}

/* Reads file path, or its first max bytes, into *buf (malloc'd, the caller frees it; *len bytes):
 * opened without blocking (a FIFO's open waits for a writer), checked to be a regular file of at
 * most KILN_XML_MAX_BYTES, then read as one. */
static kilnResult_t read_file(const char* path, size_t max, char** buf, size_t* len) {
  *buf = NULL;
  *len = 0;
  if (!path || !*path) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no file name given");
  kilnResult_t r = KILN_SUCCESS;
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return kilnSetError(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return kilnSetError(KILN_ERR_IO, "%s: not a regular file", path);
  }
  FILE* f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return kilnSetError(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  if ((unsigned long long)st.st_size > KILN_XML_MAX_BYTES) {
    r = kilnSetError(KILN_ERR_PARSE, "%s:1: file of %lld bytes is larger than the %u-byte limit", path,
                     (long long)st.st_size, KILN_XML_MAX_BYTES);
    goto out_close;
  }
  const size_t cap = (size_t)st.st_size < max ? (size_t)st.st_size + 1 : max;
  char* b = malloc(cap);
  if (!b) {
    r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory reading the file", path);
    goto out_close;
  }
  size_t n = 0, got;
  while ((got = fread(b + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) break; /* the file grew while we read; parse what fits in the limit */
  }
  if (ferror(f)) {
    r = kilnSetError(KILN_ERR_IO, "%s: read error: %s", path, strerror(errno));
    free(b);
    goto out_close;
  }
  *buf = b;
  *len = n;
out_close:
  fclose(f);
  return r;
}

kilnResult_t kilnXmlParseFile(const char* path, xmlDocPtr* out) {
  *out = NULL;
  char* buf;
  size_t len;
  kilnResult_t r = read_file(path, SIZE_MAX, &buf, &len);
  if (r != KILN_SUCCESS) return r;
  r = kilnXmlParseMemory(buf, len, path, out);
  free(buf);
  return r;
}

kilnResult_t kilnXmlFileRoot(const char* path, char* out, size_t cap) {
  if (!out || cap < 2) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "kilnXmlFileRoot: no room for a name");
  out[0] = '\0';
  char* buf;
  size_t len, i, j, k;
  long line;
  kilnResult_t r;
  /* The file's first 64 KiB, then 4x as much while the prolog, a DOCTYPE's keyword or the name
   * runs past what was read (the reader reads it all next: never twice for a usual file). */
  for (size_t want = (size_t)64 << 10;; want *= 4) {
    if ((r = read_file(path, want, &buf, &len)) != KILN_SUCCESS) return r;
    i = prolog_end(buf, len, &line);
    /* A name starts past '<' with anything but markup's '!' and '?' and ends at a blank, '/' or '>'. */
    k = 0;
    j = i + 1;
    if (i + 1 < len && buf[i] == '<' && buf[j] != '!' && buf[j] != '?')
      for (; j < len && buf[j] != '\0' && !strchr(" \t\r\n/>", buf[j]) && k + 1 < cap; j++) out[k++] = buf[j];
    if (len < want || (i + 9 <= len && j < len)) break; /* the whole file, or enough of it */
    free(buf);
  }
  out[k] = '\0';
  if (k == 0)
    r = kilnSetError(KILN_ERR_PARSE, "%s:%ld: %s", path, line,
                     i < len && at_doctype(buf, len, i) ? "a DOCTYPE declaration before the root element"
                     : i < len                          ? "no root element where the prolog ends"
                                                        : "no root element");
  else if (j < len && buf[j] != '\0' && !strchr(" \t\r\n/>", buf[j]))
    r = kilnSetError(KILN_ERR_PARSE, "%s:%ld: the root element's name is longer than %zu bytes", path, line,
                     cap - 1);
  if (r != KILN_SUCCESS) out[0] = '\0';
  free(buf);
  return r;
}

xmlNodePtr kilnXmlNextElement(xmlNodePtr n) {
  while (n && n->type != XML_ELEMENT_NODE) n = n->next;
  return n;
}

kilnResult_t kilnXmlRoot(xmlDocPtr doc, const char* fname, const char* name, xmlNodePtr* out) {
  xmlNodePtr root = xmlDocGetRootElement(doc);
  if (!root) return kilnSetError(KILN_ERR_PARSE, "%s:1: no root element", fname);
  if (xmlStrcmp(root->name, (const xmlChar*)name) != 0)
    return kilnXmlError(KILN_ERR_PARSE, fname, root, "root element is <%s>, expected <%s>",
                        (const char*)root->name, name);
  *out = root;
  return KILN_SUCCESS;
}

static bool blank(const xmlChar* s) {
  for (; s && *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') return false;
  return true;
}

kilnResult_t kilnXmlCheckAttrs(xmlNodePtr n, const char* fname, const char* const* allowed) {
  for (xmlAttrPtr a = n->properties; a; a = a->next) {
    if (a->ns) continue; /* xml:, xmlns: and other namespaces' attributes are not ours */
    bool ok = false;
    for (const char* const* k = allowed; k && *k; k++)
      if (!xmlStrcmp(a->name, (const xmlChar*)*k)) ok = true;
    if (ok) continue;
    char known[256] = "";
    size_t used = 0;
    for (const char* const* k = allowed; k && *k && used < sizeof known; k++)
      used += (size_t)snprintf(known + used, sizeof known - used, " %s", *k);
    return kilnXmlError(KILN_ERR_PARSE, fname, n, "unknown attribute %s of <%s> (known:%s)",
                        (const char*)a->name, (const char*)n->name, allowed && *allowed ? known : " none");
  }
  return KILN_SUCCESS;
}

kilnResult_t kilnXmlCheckElement(xmlNodePtr n, const char* fname, const char* const* kids,
                                 const char* const* attrs) {
  kilnResult_t r = kilnXmlCheckChildren(n, fname, kids);
  return r != KILN_SUCCESS ? r : kilnXmlCheckAttrs(n, fname, attrs);
}

kilnResult_t kilnXmlCheckChildren(xmlNodePtr parent, const char* fname, const char* const* allowed) {
  for (xmlNodePtr c = parent->children; c; c = c->next) {
    switch (c->type) {
      case XML_ELEMENT_NODE: {
        bool ok = false;
        for (const char* const* a = allowed; a && *a; a++)
          if (!xmlStrcmp(c->name, (const xmlChar*)*a)) ok = true;
        if (!ok)
          return kilnXmlError(KILN_ERR_PARSE, fname, c, "unexpected element <%s> inside <%s>",
                              (const char*)c->name, (const char*)parent->name);
        break;
      }
      case XML_TEXT_NODE:
      case XML_CDATA_SECTION_NODE:
        if (!blank(c->content))
          return kilnXmlError(KILN_ERR_PARSE, fname, c->prev ? c->prev : parent,
                              "unexpected text inside <%s>", (const char*)parent->name);
        break;
      case XML_COMMENT_NODE:
      case XML_PI_NODE: break;
      default:
        return kilnXmlError(KILN_ERR_PARSE, fname, parent, "unexpected content inside <%s>",
                            (const char*)parent->name);
    }
  }
  return KILN_SUCCESS;
}

bool kilnXmlHasAttr(xmlNodePtr n, const char* attr) { return xmlHasProp(n, (const xmlChar*)attr) != NULL; }

/* Returns the attribute's value (caller xmlFree()s) or NULL; sets *r when missing but required
 * or when it holds entity references (never expanded). */
static xmlChar* get_prop(xmlNodePtr n, const char* fname, const char* attr, bool required, kilnResult_t* r) {
  *r = KILN_SUCCESS;
  xmlAttrPtr a = xmlHasProp(n, (const xmlChar*)attr);
  if (!a) {
    if (required)
      *r = kilnXmlError(KILN_ERR_PARSE, fname, n, "<%s> lacks the required attribute %s",
                        (const char*)n->name, attr);
    return NULL;
  }
  for (xmlNodePtr c = a->children; c; c = c->next)
    if (c->type != XML_TEXT_NODE) {
      *r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s of <%s> holds an entity reference", attr,
                        (const char*)n->name);
      return NULL;
    }
  /* inLine=1: the raw text (0 would re-escape it as XML); entity references were refused above. */
  xmlChar* v = xmlNodeListGetString(n->doc, a->children, 1);
  if (!v) v = xmlStrdup((const xmlChar*)"");
  if (!v) *r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", fname);
  return v;
}

kilnResult_t kilnXmlGetInt(xmlNodePtr n, const char* fname, const char* attr, bool required, long long min,
                           long long max, long long dflt, long long* out) {
  kilnResult_t r;
  xmlChar* v = get_prop(n, fname, attr, required, &r);
  if (!v) {
    if (r == KILN_SUCCESS) *out = dflt;
    return r;
  }
  const char* s = (const char*)v;
  while (*s == ' ' || *s == '\t' || *s == '\n') s++;
  errno = 0;
  char* end = NULL;
  long long x = strtoll(s, &end, 10);
  bool junk = end == s;
  while (end && (*end == ' ' || *end == '\t' || *end == '\n')) end++;
  if (junk || *end) {
    r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s=\"%.40s\" of <%s> is not an integer", attr,
                     (const char*)v, (const char*)n->name);
  } else if (errno == ERANGE || x < min || x > max) {
    r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s=\"%.40s\" of <%s> is out of range [%lld, %lld]",
                     attr, (const char*)v, (const char*)n->name, min, max);
  } else {
    *out = x;
  }
  xmlFree(v);
  return r;
}

kilnResult_t kilnXmlGetInt32(xmlNodePtr n, const char* fname, const char* attr, bool required, int min,
                             int max, int dflt, int* out) {
  long long v;
  kilnResult_t r = kilnXmlGetInt(n, fname, attr, required, min, max, dflt, &v);
  if (r == KILN_SUCCESS) *out = (int)v;
  return r;
}

kilnResult_t kilnXmlGetU64Sat(xmlNodePtr n, const char* fname, const char* attr, bool required, uint64_t sat,
                              uint64_t dflt, uint64_t* out) {
  kilnResult_t r;
  xmlChar* v = get_prop(n, fname, attr, required, &r);
  if (!v) {
    if (r == KILN_SUCCESS) *out = dflt;
    return r;
  }
  const char* s = (const char*)v;
  while (*s == ' ' || *s == '\t' || *s == '\n') s++;
  const char* d = s;
  while (*d >= '0' && *d <= '9') d++;
  const char* e = d;
  while (*e == ' ' || *e == '\t' || *e == '\n') e++;
  if (d == s || *e) {
    r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s=\"%.40s\" of <%s> is not a non-negative integer",
                     attr, (const char*)v, (const char*)n->name);
  } else {
    uint64_t x = 0;
    bool big = false;
    for (const char* p = s; p < d; p++) {
      unsigned dig = (unsigned)(*p - '0');
      if (x > (UINT64_MAX - dig) / 10) {
        big = true;
        break;
      }
      x = x * 10 + dig;
    }
    *out = (big || x >= sat) ? UINT64_MAX : x;
  }
  xmlFree(v);
  return r;
}

kilnResult_t kilnXmlGetDouble(xmlNodePtr n, const char* fname, const char* attr, bool required, double min,
                              double max, double dflt, double* out) {
  kilnResult_t r;
  xmlChar* v = get_prop(n, fname, attr, required, &r);
  if (!v) {
    if (r == KILN_SUCCESS) *out = dflt;
    return r;
  }
  const char* s = (const char*)v;
  errno = 0;
  char* end = NULL;
  double x = strtod(s, &end);
  bool junk = end == s;
  while (end && (*end == ' ' || *end == '\t' || *end == '\n')) end++;
  if (junk || *end || !isfinite(x)) {
    r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s=\"%.40s\" of <%s> is not a finite number", attr,
                     (const char*)v, (const char*)n->name);
  } else if ((errno == ERANGE && fabs(x) > 1.0) || x < min ||
             x > max) { /* an underflow (a denormal) is its value */
    r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s=\"%.40s\" of <%s> is out of range [%g, %g]",
                     attr, (const char*)v, (const char*)n->name, min, max);
  } else {
    *out = x;
  }
  xmlFree(v);
  return r;
}

kilnResult_t kilnXmlGetString(xmlNodePtr n, const char* fname, const char* attr, bool required,
                              const char* dflt, char* buf, size_t cap) {
  kilnResult_t r;
  xmlChar* v = get_prop(n, fname, attr, required, &r);
  if (!v) {
    if (r == KILN_SUCCESS) snprintf(buf, cap, "%s", dflt ? dflt : "");
    return r;
  }
  size_t len = strlen((const char*)v);
  if (len >= cap) {
    r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s of <%s> is longer than %zu characters", attr,
                     (const char*)n->name, cap - 1);
  } else {
    memcpy(buf, v, len + 1);
  }
  xmlFree(v);
  return r;
}

kilnResult_t kilnXmlGetIntList(xmlNodePtr n, const char* fname, const char* attr, int min, int max, int maxn,
                               int** out, int* nout) {
  *out = NULL;
  *nout = 0;
  kilnResult_t r;
  xmlChar* v = get_prop(n, fname, attr, true, &r);
  if (!v) return r;
  int* list = NULL;
  int cnt = 0, cap = 0;
  const char* p = (const char*)v;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == ',') p++;
    if (!*p) break;
    errno = 0;
    char* end;
    long x = strtol(p, &end, 10);
    if (end == p || (*end && *end != ' ' && *end != '\t' && *end != '\n' && *end != ',')) {
      r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s of <%s> is not a list of integers", attr,
                       (const char*)n->name);
      goto out_free;
    }
    if (errno == ERANGE || x < min || x > max) {
      r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s of <%s>: %ld is out of range [%d, %d]", attr,
                       (const char*)n->name, x, min, max);
      goto out_free;
    }
    if (cnt == maxn) {
      r = kilnXmlError(KILN_ERR_PARSE, fname, n, "attribute %s of <%s> has more than %d entries", attr,
                       (const char*)n->name, maxn);
      goto out_free;
    }
    if (cnt == cap) {
      cap = cap ? 2 * cap : 8;
      int* nl = realloc(list, (size_t)cap * sizeof *nl);
      if (!nl) {
        r = kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", fname);
        goto out_free;
      }
      list = nl;
    }
    list[cnt++] = (int)x;
    p = end;
  }
  *out = list;
  *nout = cnt;
  list = NULL;
out_free:
  free(list);
  xmlFree(v);
  return r;
}

/* ---- output ---- */

static void buf_reserve(kilnBuf* b, size_t extra) {
  if (b->failed) return;
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra + 1) cap *= 2;
  char* d = realloc(b->data, cap);
  if (!d) {
    b->failed = true;
    return;
  }
  b->data = d;
  b->cap = cap;
}

void kilnBufPrintf(kilnBuf* b, const char* fmt, ...) {
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = true;
    return;
  }
  buf_reserve(b, (size_t)n);
  if (b->failed) return;
  if ((size_t)n < sizeof small) {
    memcpy(b->data + b->len, small, (size_t)n + 1);
  } else {
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

void kilnBufEscaped(kilnBuf* b, const char* s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '&': kilnBufPrintf(b, "&amp;"); break;
      case '<': kilnBufPrintf(b, "&lt;"); break;
      case '>': kilnBufPrintf(b, "&gt;"); break;
      case '"': kilnBufPrintf(b, "&quot;"); break;
      case '\'': kilnBufPrintf(b, "&apos;"); break;
      case '\n': kilnBufPrintf(b, "&#10;"); break;
      case '\t': kilnBufPrintf(b, "&#9;"); break;
      case '\r': kilnBufPrintf(b, "&#13;"); break;
      default: kilnBufPrintf(b, "%c", *s); break;
    }
  }
}

void kilnBufDouble(kilnBuf* b, double d) {
  char tmp[40];
  for (int prec = 6; prec <= 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*g", prec, d);
    if (strtod(tmp, NULL) == d) break;
  }
  kilnBufPrintf(b, "%s", tmp);
}

kilnResult_t kilnBufFinish(kilnBuf* b, char** out) {
  *out = NULL;
  buf_reserve(b, 0);
  if (b->failed) {
    kilnBufFree(b);
    return kilnSetError(KILN_ERR_NO_MEMORY, "out of memory writing XML");
  }
  b->data[b->len] = '\0';
  *out = b->data;
  b->data = NULL;
  b->len = b->cap = 0;
  return KILN_SUCCESS;
}

void kilnBufInts(kilnBuf* b, const int* a, int n) {
  for (int i = 0; i < n; i++) kilnBufPrintf(b, i ? " %d" : "%d", a[i]);
}

void kilnBufFree(kilnBuf* b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
  b->failed = false;
}

static bool write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, data, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    len -= (size_t)w;
  }
  return true;
}

/* The temporary file kilnWriteFileAtomic is writing now (pendingSet), for kilnWriteAbandon. */
/* The temporary file one write at a time (the first to claim pendingOwner; writes of other
 * threads meanwhile go untracked) has made, for kilnWriteAbandon from a signal handler. */
static char pending[PATH_MAX + 16];
static volatile sig_atomic_t pendingSet;
static int pendingOwner;

void kilnWriteAbandon(void) {
  if (pendingSet) unlink(pending);
}

/* An open descriptor named as a file: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N (its
 * number, else -1). Written through the descriptor itself: opening the name again would start at
 * the file's beginning (a `>>` redirection), and resolving it to a file would replace that file. */
static int named_descriptor(const char* path) {
  if (!strcmp(path, "/dev/stdout")) return STDOUT_FILENO;
  if (!strcmp(path, "/dev/stderr")) return STDERR_FILENO;
  const char* num = !strncmp(path, "/dev/fd/", 8)          ? path + 8
                    : !strncmp(path, "/proc/self/fd/", 14) ? path + 14
                                                           : NULL;
  if (!num || *num < '0' || *num > '9') return -1;
  char* end = NULL;
  const long v = strtol(num, &end, 10);
  return *end == '\0' && v >= 0 && v <= INT_MAX ? (int)v : -1;
}

/* len bytes to the open descriptor fd, named path in the error. */
static kilnResult_t write_fd(int fd, const char* path, const char* data, size_t len) {
  return write_all(fd, data, len) ? KILN_SUCCESS
                                  : kilnSetError(KILN_ERR_IO, "%s: write error: %s", path, strerror(errno));
}

/* A path that is not a regular file's: written straight (a device such as /dev/null, a pipe). */
static kilnResult_t write_straight(const char* path, const char* data, size_t len) {
  int fd = open(path, O_WRONLY | O_NOCTTY);
  if (fd < 0) return kilnSetError(KILN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  kilnResult_t r = write_fd(fd, path, data, len);
  if (close(fd) != 0 && r == KILN_SUCCESS)
    r = kilnSetError(KILN_ERR_IO, "%s: write error: %s", path, strerror(errno));
  return r;
}

/* The process's file mode creation mask: from /proc/self/status (reading it with umask() would
 * change it for a moment under other threads), else by umask() itself. */
static mode_t current_umask(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[128];
  unsigned m = 0;
  bool found = false;
  while (f && !found && fgets(line, sizeof line, f)) found = sscanf(line, "Umask: %o", &m) == 1;
  if (f) fclose(f);
  if (found) return (mode_t)m;
  const mode_t old = umask(022);
  umask(old);
  return old;
}

kilnResult_t kilnWriteFileAtomic(const char* path, const char* data, size_t len) {
  if (!path || !*path) return kilnSetError(KILN_ERR_INVALID_ARGUMENT, "no output file name given");
  const int named = strcmp(path, "-") ? named_descriptor(path) : STDOUT_FILENO;
  if (named == STDOUT_FILENO) { /* through stdio, after what the program printed before */
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
      return kilnSetError(KILN_ERR_IO, "<stdout>: write error: %s", strerror(errno));
    return KILN_SUCCESS;
  }
  if (named >= 0) return write_fd(named, path, data, len);
  kilnResult_t r = KILN_SUCCESS;
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* through any links: a folder, device, pipe */
    return S_ISDIR(st.st_mode) ? kilnSetError(KILN_ERR_IO, "%s is a folder, not a file", path)
                               : write_straight(path, data, len);
  char* real = NULL; /* a symbolic link's target file: replaced, the link kept */
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    real = realpath(path, NULL);
    if (!real)
      return kilnSetError(KILN_ERR_IO, "%s: a symbolic link whose target cannot be reached: %s", path,
                          strerror(errno));
  }
  const char* target = real ? real : path;
  /* The file it replaces keeps its mode, and one it may not write stays (the rename would replace
   * it whatever its mode); a new one gets the umask's. */
  mode_t mode = 0;
  if (stat(target, &st) == 0) {
    if (access(target, W_OK) != 0) {
      r = kilnSetError(KILN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
      free(real);
      return r;
    }
    mode = st.st_mode & 0777; /* not the set-id bits: the new file is the writer's */
  } else {
    mode = 0666 & ~current_umask();
  }
  size_t n = strlen(target);
  char* tmp = malloc(n + 16);
  if (!tmp) {
    free(real);
    return kilnSetError(KILN_ERR_NO_MEMORY, "%s: out of memory", path);
  }
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", target);
  int fd = mkstemp(tmp);
  const bool tracked =
      fd >= 0 && n + 16 <= sizeof pending && !__atomic_exchange_n(&pendingOwner, 1, __ATOMIC_ACQ_REL);
  if (tracked) {
    memcpy(pending, tmp, n + 16);
    pendingSet = 1;
  }
  if (fd < 0) {
    r = kilnSetError(KILN_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
    goto out_free_tmp;
  }
  if (!write_all(fd, data, len) || fchmod(fd, mode) != 0 || fsync(fd) != 0) {
    r = kilnSetError(KILN_ERR_IO, "%s: write error: %s", path, strerror(errno));
    close(fd);
    goto out_unlink;
  }
  if (close(fd) != 0) {
    r = kilnSetError(KILN_ERR_IO, "%s: write error: %s", path, strerror(errno));
    goto out_unlink;
  }
  if (rename(tmp, target) != 0) {
    r = kilnSetError(KILN_ERR_IO, "%s: cannot rename the temporary file into place: %s", path,
                     strerror(errno));
    goto out_unlink;
  }
  goto out_free_tmp;
out_unlink:
  unlink(tmp);
out_free_tmp:
  if (tracked) {
    pendingSet = 0;
    __atomic_store_n(&pendingOwner, 0, __ATOMIC_RELEASE);
  }
  free(tmp);
  free(real);
  return r;
}

kilnResult_t kilnXmlReadFile(const char* path, kilnXmlDocReader read, void* out) {
  xmlDocPtr doc;
  kilnResult_t r = kilnXmlParseFile(path, &doc);
  if (r != KILN_SUCCESS) return r;
  r = read(doc, path, out);
  xmlFreeDoc(doc);
  return r;
}

kilnResult_t kilnXmlReadMemory(const char* buf, size_t len, const char* name, kilnXmlDocReader read,
                               void* out) {
  if (!name) name = "<memory>";
  xmlDocPtr doc;
  kilnResult_t r = kilnXmlParseMemory(buf, len, name, &doc);
  if (r != KILN_SUCCESS) return r;
  r = read(doc, name, out);
  xmlFreeDoc(doc);
  return r;
}

kilnResult_t kilnWriteDocument(kilnResult_t r, char* s, const char* path) {
  const size_t len = r == KILN_SUCCESS ? strlen(s) : 0;
  /* What kiln writes, kiln reads back: a document past the readers' limit is not written. */
  if (r == KILN_SUCCESS && len > KILN_XML_MAX_BYTES)
    r = kilnSetError(KILN_ERR_INVALID_ARGUMENT,
                     "%s: a document of %zu bytes, more than the %u bytes kiln reads: "
                     "not written",
                     path ? path : "(output)", len, KILN_XML_MAX_BYTES);
  if (r == KILN_SUCCESS) r = kilnWriteFileAtomic(path, s, len);
  free(s);
  return r;
}
