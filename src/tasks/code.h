/* tasks/code.h: the code task ([data] verifier = code): rows with tests, the program taken
 * from a response, and the tests run in the sandbox (sandbox/sandbox.h).
 *
 * Rows (one JSON object per line, besides the prompt key):
 *   HumanEval  "test" (defines check(candidate)) and "entry_point"; the reference
 *              completion is "canonical_solution" (when the row has no [data] answer_key).
 *              One test: check(entry_point).
 *   MBPP       "test_list": assert statements, one test each, after "test_setup_code" when
 *              the row has it; the reference is "code".
 * The program of a response is the inside of its first fenced ```python (or ```py, or bare
 * ```) block, else the whole response. A HumanEval program runs after the row's raw
 * prompt (its imports and signature), so a completion of the body and a whole new
 * definition both work.
 *
 * Each test is one sandbox execution of: program, a blank line, the test, then a line
 * printing a random 128-bit marker drawn for that execution. The test passes when the
 * execution exits 0 and its stdout ends with the marker line, so exit(0), os._exit(0) or a
 * printed "PASS" before the tests run do not pass. (Python cannot hide the marker from a
 * program that reads its own code object; the sandbox, not the marker, is the security
 * boundary.) correct = passed / tests ([data] code_score = fraction) or 1 only when all
 * pass (all). */
#ifndef RLPT_CODE_H
#define RLPT_CODE_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct data_row;
struct sandbox;

/* What scoring a batch did, for the metrics and reward-score. */
struct code_stats {
  long executions, passed, start_failures;
  double wall_s;              /* of the pool run */
};

/* The code fields of row obj into r (tests, raw prompt, entry point). answer_key_present:
 * whether the row has [data] answer_key; when not, *answer is set to its reference
 * (canonical_solution / code). 0; 2 with "FILE:LINE: ..." in msg; 1 out of memory. */
int code_row_parse(const cJSON *obj, const char *path, long line, const char *prompt_key, struct data_row *r,
                   const char **answer, char *msg, size_t msglen);
void code_row_free(struct data_row *r);
/* The span of the program in a response (rules above). */
void code_extract(const char *resp, size_t len, size_t *off, size_t *n);
/* Score n responses to rows: score[n] (correct), and per response its tests passed into
 * passed[n] (may be NULL). Every test of every response is one job of one sandbox_run
 * over `workers` children. 0, or 1 out of memory. */
int code_score_batch(const struct sandbox *sb, int workers, int all_or_nothing, const struct data_row *const *rows,
                     const char *const *resp, const size_t *len, int n, double *score, int *passed,
                     struct code_stats *st);

#endif
