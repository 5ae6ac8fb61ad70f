/* cli/cmd_generate.c: `rlpt generate --model MODEL --prompt TEXT [--chat] [-n G]
 * [--temperature T] [--top-p P] [--top-k K] [--max-new-tokens N] [--seed S] [--json]
 * [--device auto|cpu|cuda]` samples G responses to one prompt with the rollout engine
 * and prints them with their logprobs and finish reasons (rollout/generate_text.h).
 * Defaults are the deck's [rollout] defaults. Bad arguments: message, exit 2. One process
 * (MPI only for reading a checkpoint). */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rollout/generate_text.h"

static int gen_usage(int rc) {
  fprintf(rc ? stderr : stdout,
          "usage: rlpt generate --model MODEL --prompt TEXT [--chat] [-n G] [--temperature T]\n"
          "                     [--top-p P] [--top-k K] [--max-new-tokens N] [--seed S] [--json]\n"
          "                     [--device auto|cpu|cuda]\n"
          "  MODEL: FILE.h5 (character tokenizer), gguf:PATH or hf:DIR (the model's tokenizer;\n"
          "  --chat puts the prompt in the model's chat template as a user message).\n"
          "  G samples of one prompt with logprobs and finish reasons;\n"
          "  --json: one {\"prompt\", \"prompt_tokens\", \"text\", \"tokens\", \"logprobs\",\n"
          "  \"finish_reason\"} object per line. Temperature 0 is greedy.\n");
  return rc;
}

/* The number in s within [lo, hi]; 0, or 2 with a message naming the option. */
static int num_arg(const char *opt, const char *s, double lo, double hi, int integer, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  if (end == s || *end || errno || *v < lo || *v > hi || (integer && *v != (double)(long)*v)) {
    fprintf(stderr, "rlpt: generate: %s '%s': expected %s in [%g, %g]\n", opt, s,
            integer ? "an integer" : "a number", lo, hi);
    return 2;
  }
  return 0;
}

/* Option o with its value s into a; 0, 2 after a message, or -2 for an unknown option. */
static int gen_option(struct generate_text_opts *a, const char *o, const char *s) {
  double v = 0;
  int rc = 0;
  if (!strcmp(o, "--model")) a->model = s;
  else if (!strcmp(o, "--prompt")) a->prompt = s;
  else if (!strcmp(o, "--device")) a->device = s;
  else if (!strcmp(o, "-n")) { rc = num_arg(o, s, 1, 1e5, 1, &v); a->n = (long)v; }
  else if (!strcmp(o, "--temperature")) { rc = num_arg(o, s, 0, 100, 0, &v); a->temperature = v; }
  else if (!strcmp(o, "--top-p")) { rc = num_arg(o, s, 0, 1, 0, &v); a->top_p = v; }
  else if (!strcmp(o, "--top-k")) { rc = num_arg(o, s, 0, 1e8, 1, &v); a->top_k = (long)v; }
  else if (!strcmp(o, "--max-new-tokens")) { rc = num_arg(o, s, 1, 1e6, 1, &v); a->max_new = (long)v; }
  else if (!strcmp(o, "--seed")) { rc = num_arg(o, s, 0, 9e15, 1, &v); a->seed = (long)v; }
  else rc = -2;
  return rc;
}

/* 0 with a filled, -1 for --help, or 2. */
static int gen_parse(struct generate_text_opts *a, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *o = argv[i];
    if (!strcmp(o, "-h") || !strcmp(o, "--help")) return -1;
    if (!strcmp(o, "--json")) { a->json = 1; continue; }
    if (!strcmp(o, "--chat")) { a->chat = 1; continue; }
    int rc = i + 1 < argc ? gen_option(a, o, argv[++i]) : -2;
    if (rc == -2) {
      fprintf(stderr, "rlpt: generate: unexpected argument '%s'\n", o);
      return gen_usage(2);
    }
    if (rc) return rc;
  }
  if (!a->model || !a->prompt) {
    fprintf(stderr, "rlpt: generate: --model and --prompt are required\n");
    return gen_usage(2);
  }
  return 0;
}

int cmd_generate(int argc, char **argv) {
  struct generate_text_opts o;
  generate_text_defaults(&o);
  int rc = gen_parse(&o, argc, argv);
  if (rc) return rc < 0 ? gen_usage(0) : rc;
  MPI_Init(NULL, NULL);
  rc = generate_text(&o);
  MPI_Finalize();
  return rc;
}
