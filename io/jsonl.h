/* io/jsonl.h: streaming reader for JSON Lines files (one JSON object per line).
 *
 * Lines of any length (or at most max_line bytes, jsonl_set_max_line: a longer line is
 * JSONL_IOERR "FILE:LINE: a line longer than N bytes (LIMIT)", read no further, so a
 * device or a huge file without newlines cannot fill the memory), LF or CRLF endings, a
 * UTF-8 byte-order mark at
 * the start of the file, blank (whitespace-only) lines skipped. Each line must be
 * valid UTF-8 holding exactly one JSON object (cJSON parses it). Problems are
 * reported as "FILE:LINE: what is wrong" (lines counted from 1, blank ones
 * included), so the user can open the file at that line.
 *
 * A bad line is either fatal or counted, per the caller's policy ([data]
 * on_bad_line = error | skip): struct jsonl_bad tallies skipped lines and keeps
 * the first message for the one summary line printed at load. */
#ifndef RLPT_JSONL_H
#define RLPT_JSONL_H

#include <stdio.h>

#include <cjson/cJSON.h>

#define JSONL_MSG_MAX 768

enum jsonl_policy { JSONL_ERROR = 0, JSONL_SKIP = 1 };

struct jsonl_reader {
  FILE *f;
  const char *path;  /* borrowed; used in messages */
  long line;         /* number of the line last read (1-based) */
  char *buf;         /* the line buffer */
  size_t cap;
  size_t max_line;   /* longest line in bytes, its newline included; 0 = no limit */
  const char *limit; /* what sets max_line, for the message ("[data] max_row_bytes") */
};

/* Return values of jsonl_next. */
#define JSONL_EOF 0
#define JSONL_ROW 1
#define JSONL_BAD 2   /* this line is broken; msg says why; reading may continue */
#define JSONL_IOERR 3 /* the file cannot be read further */

/* 0, or 2 with "FILE: cannot open: reason" in err. */
int jsonl_open(struct jsonl_reader *r, const char *path, char *err, size_t errlen);
/* Limit the lines of r to max bytes (0: none); limit names the setting in the message. */
void jsonl_set_max_line(struct jsonl_reader *r, size_t max, const char *limit);
/* The next non-blank line: JSONL_ROW with *out (caller cJSON_Delete's it) and *line set,
 * JSONL_BAD with "FILE:LINE: ..." in msg, JSONL_EOF, or JSONL_IOERR with a message. */
int jsonl_next(struct jsonl_reader *r, cJSON **out, long *line, char *msg, size_t msglen);
void jsonl_close(struct jsonl_reader *r);

/* A field of a row as text: a JSON string as is, a number printed exactly as
 * integer or shortest round-trip decimal. Returns 0 and sets *out (borrowed for a
 * string, else written into numbuf of numlen bytes), or 2 with "FILE:LINE: key 'K'
 * is missing" / "... is an array, expected a string or number" in msg. */
int jsonl_get_text(const cJSON *row, const char *key, const char *path, long line, const char **out,
                   char *numbuf, size_t numlen, char *msg, size_t msglen);
/* Name of a cJSON value's type ("string", "number", "object", ...). */
const char *jsonl_type_name(const cJSON *v);

/* Tally of skipped lines under JSONL_SKIP. */
struct jsonl_bad {
  long n_bad;
  char first[JSONL_MSG_MAX];
};
/* Apply the policy to a bad line: JSONL_ERROR copies msg to err and returns 2;
 * JSONL_SKIP counts it (keeping the first message) and returns 0. */
int jsonl_bad_line(enum jsonl_policy pol, struct jsonl_bad *b, const char *msg, char *err, size_t errlen);
/* The load summary "skipped N of M lines of FILE (first: ...)" into f; nothing when none. */
void jsonl_bad_report(const struct jsonl_bad *b, long n_lines, const char *path, FILE *f);

#endif
