/*
 * Shared libxml2 helpers for kiln's three XML formats (topology, sketch, plan): a safe parser,
 * attribute getters that validate, and an output buffer with an atomic file writer.
 *
 * Safety: documents are parsed from memory with the network off, entities never substituted,
 * no DTD loading, and any DOCTYPE rejected (kiln's formats never need one, and a DOCTYPE is the
 * only way to declare the entities behind "billion laughs" and external-entity attacks).
 * libxml2's own depth limit (256) stops deep nesting; files over KILN_XML_MAX_BYTES are refused.
 *
 * Errors: every failing function sets kilnLastError() to "FILE:LINE: what" (FILE is the name
 * the caller gave, LINE the line of the element involved) and returns KILN_ERR_PARSE (bad
 * content), KILN_ERR_IO (cannot read/write) or KILN_ERR_NO_MEMORY.
 *
 * Internal to kiln_core: not a public header.
 */
#ifndef KILN_XML_UTIL_H
#define KILN_XML_UTIL_H

#include <libxml/tree.h>
#include <stdarg.h>

#include "kiln/kiln.h"
#include "kiln_internal.h"

#define KILN_XML_MAX_BYTES (512u << 20) /* largest XML file kiln reads */

/* Parses len bytes of XML. fname names the source in messages. On success *out is a document
 * the caller frees with xmlFreeDoc(). */
kilnResult_t kilnXmlParseMemory(const char* buf, size_t len, const char* fname, xmlDocPtr* out);
/* Reads the whole file and parses it ("-" is not accepted: XML input comes from files). */
kilnResult_t kilnXmlParseFile(const char* path, xmlDocPtr* out);

/* Reads a document and hands it to `read` (which fills `out`); frees the document. The file or
 * memory variant; name "<memory>" when NULL. */
typedef kilnResult_t (*kilnXmlDocReader)(xmlDocPtr doc, const char* fname, void* out);
kilnResult_t kilnXmlReadFile(const char* path, kilnXmlDocReader read, void* out);
kilnResult_t kilnXmlReadMemory(const char* buf, size_t len, const char* name, kilnXmlDocReader read,
                               void* out);

/* Root element, checked to be named `name`. */
kilnResult_t kilnXmlRoot(xmlDocPtr doc, const char* fname, const char* name, xmlNodePtr* out);
/* Next element sibling starting at n (n itself if it is an element); NULL at the end. Text,
 * comments and processing instructions are skipped; non-blank text is reported through
 * kilnXmlCheckChildren. */
xmlNodePtr kilnXmlNextElement(xmlNodePtr n);
/* Fails naming the element, its line and the attribute when n has an attribute (outside any
 * namespace) not in the NULL-terminated allowed list: a misspelled optional attribute would
 * otherwise be ignored and its default taken. For kiln's own formats (topology, sketch). */
kilnResult_t kilnXmlCheckAttrs(xmlNodePtr n, const char* fname, const char* const* allowed);
/* Fails if a child of parent is non-blank text, or an element whose name is not in the
 * NULL-terminated list `allowed`. */
kilnResult_t kilnXmlCheckChildren(xmlNodePtr parent, const char* fname, const char* const* allowed);
/* Both checks: n's child elements among kids, its attributes among attrs (NULL: none). */
kilnResult_t kilnXmlCheckElement(xmlNodePtr n, const char* fname, const char* const* kids,
                                 const char* const* attrs);
/* Number of element children of parent named `name`. */
int kilnXmlCountChildren(xmlNodePtr parent, const char* name);
/* Line of a node (0 if unknown). */
long kilnXmlLine(xmlNodePtr n);

/* Sets "fname:line: <message>" as the last error and returns r. */
kilnResult_t kilnXmlError(kilnResult_t r, const char* fname, xmlNodePtr n, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 4, 5)))
#endif
    ;

bool kilnXmlHasAttr(xmlNodePtr n, const char* attr);
/* Integer attribute in [min, max]. A missing attribute is an error when required, else *out =
 * dflt. "abc", "1.5", "", overflow and out-of-range values are errors naming the attribute. */
kilnResult_t kilnXmlGetInt(xmlNodePtr n, const char* fname, const char* attr, bool required, long long min,
                           long long max, long long dflt, long long* out);
/* Convenience form for int fields. */
kilnResult_t kilnXmlGetInt32(xmlNodePtr n, const char* fname, const char* attr, bool required, int min,
                             int max, int dflt, int* out);
/* Unsigned 64-bit decimal; values >= sat (including ones that overflow) give UINT64_MAX. */
kilnResult_t kilnXmlGetU64Sat(xmlNodePtr n, const char* fname, const char* attr, bool required, uint64_t sat,
                              uint64_t dflt, uint64_t* out);
/* Finite double in [min, max]. */
kilnResult_t kilnXmlGetDouble(xmlNodePtr n, const char* fname, const char* attr, bool required, double min,
                              double max, double dflt, double* out);
/* Copies a string attribute into buf (cap bytes, NUL included); too long is an error. A missing
 * optional attribute gives dflt (may be NULL: empty string). */
kilnResult_t kilnXmlGetString(xmlNodePtr n, const char* fname, const char* attr, bool required,
                              const char* dflt, char* buf, size_t cap);
/* Space- or comma-separated list of ints in [min, max], at most maxn of them; *out is malloc'ed
 * (NULL when the list is empty) and owned by the caller. */
kilnResult_t kilnXmlGetIntList(xmlNodePtr n, const char* fname, const char* attr, int min, int max, int maxn,
                               int** out, int* nout);

/* ---- output ---- */

/* A growing NUL-terminated string. On allocation failure it stays usable and `failed` is set,
 * so writers append freely and check once at the end. */
typedef struct kilnBuf {
  char* data;
  size_t len, cap;
  bool failed;
} kilnBuf;

void kilnBufPrintf(kilnBuf* b, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends s with XML attribute escaping (& < > " '). */
void kilnBufEscaped(kilnBuf* b, const char* s);
/* Appends n ints separated by single spaces. */
void kilnBufInts(kilnBuf* b, const int* a, int n);
/* Appends the shortest decimal form that reads back as exactly d. */
void kilnBufDouble(kilnBuf* b, double d);
/* Hands the string over (*out, caller frees) or fails with KILN_ERR_NO_MEMORY; b is emptied. */
kilnResult_t kilnBufFinish(kilnBuf* b, char** out);
void kilnBufFree(kilnBuf* b);

/* Writes len bytes to path atomically: a temporary file beside it, flushed, then renamed over
 * path (over a symbolic link's target, the link kept). "-" writes to stdout; a path that is a
 * device or a pipe (/dev/null) is written straight; a folder is refused. */
kilnResult_t kilnWriteFileAtomic(const char* path, const char* data, size_t len);

/* The *WriteFile functions of the three formats: r and s are what their *WriteMemory returned;
 * on success writes s to path with kilnWriteFileAtomic. Frees s either way. */
kilnResult_t kilnWriteDocument(kilnResult_t r, char* s, const char* path);

#endif /* KILN_XML_UTIL_H */
