/* run/fault_tool.c: the file surgery and checks behind tests/run/test_faults.sh.
 *   fault_tool flip FILE DATASET    flip one byte in the middle of DATASET's data (a CRC
 *                                   mismatch for the checkpoint reader)
 *   fault_tool utf8 FILE            every line valid UTF-8 and one JSON value; prints
 *                                   "utf8: N lines ok" or the first bad line, exit 1
 *   fault_tool gguf_overlap FILE    the tiny llama GGUF of tests/gguf_testutil.h with its
 *                                   second tensor's data placed over the first's
 * No MPI: HDF5 is used serially. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ckpt_fixture.h"
#include "gguf_testutil.h"
#include "util/utf8.h"

static int check_utf8(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("utf8: cannot open %s\n", path);
    return 1;
  }
  char *line = NULL;
  size_t cap = 0, bad_at = 0;
  ssize_t n;
  long ln = 0;
  int rc = 0;
  while (!rc && (n = getline(&line, &cap, f)) > 0) {
    ln++;
    if (line[n - 1] == '\n') line[--n] = '\0';
    cJSON *v = NULL;
    if (!utf8_valid(line, (size_t)n, &bad_at)) {
      printf("utf8: %s:%ld: invalid UTF-8 at byte %zu (0x%02x)\n", path, ln, bad_at,
             (unsigned)(unsigned char)line[bad_at]);
      rc = 1;
    } else if (!(v = cJSON_Parse(line))) {
      printf("utf8: %s:%ld: not JSON\n", path, ln);
      rc = 1;
    }
    cJSON_Delete(v);
  }
  free(line);
  fclose(f);
  if (!rc) printf("utf8: %ld lines ok\n", ln);
  return rc || ln == 0;
}

static int gguf_overlap(const char *path) {
  struct gb g;
  struct tiny_llama *m = calloc(1, sizeof *m);
  if (!m) return 1;
  tiny_llama(&g, m);
  uint64_t zero = 0;  /* blk.0.attn_norm.weight's data at token_embd.weight's offset */
  memcpy(g.b + g.off_pos[1], &zero, sizeof zero);
  FILE *f = fopen(path, "wb");
  int rc = !f || fwrite(g.b, 1, g.n, f) != g.n;
  if (f && fclose(f)) rc = 1;
  free(g.b);
  free(m);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "flip")) {
    int rc = fixture_flip(argv[2], argv[3]);
    if (rc) printf("flip: cannot flip %s in %s\n", argv[3], argv[2]);
    return rc ? 1 : 0;
  }
  if (argc == 3 && !strcmp(argv[1], "utf8")) return check_utf8(argv[2]);
  if (argc == 3 && !strcmp(argv[1], "gguf_overlap")) return gguf_overlap(argv[2]);
  fprintf(stderr, "usage: fault_tool flip FILE DATASET | utf8 FILE | gguf_overlap FILE\n");
  return 2;
}
