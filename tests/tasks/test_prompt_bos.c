/* tasks/test_prompt_bos.c: run_prompt_tokens (run/controller.c) starts a prompt with exactly
 * one BOS: it prepends the tokenizer's BOS, unless the prompt text already begins
 * with it, as a Llama 3 chat template's "{{ bos_token }}" writes (the fixture
 * tests/data/hf_tok_b is a Llama 3 style tokenizer.json with <|begin_of_text|>); the
 * SFT pairs of task_sft_tokens (tasks/tasks.c) too, through the same tokenizer_encode_prompt. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/hf_tokenizer.h"
#include "rl/experience.h"
#include "run/controller.h"
#include "run/run.h"
#include "testutil.h"

static int first_tokens(const struct run *r, const char *text, struct sample *s) {
  struct task_prompt tp;
  memset(&tp, 0, sizeof tp);
  snprintf(tp.text, sizeof tp.text, "%s", text);
  sample_free(s);
  sample_init(s);
  return run_prompt_tokens(r, &tp, s);
}

int main(void) {
  const char *src = getenv("RLPT_SOURCE_DIR");
  char dir[1024], err[512];
  snprintf(dir, sizeof dir, "%s/tests/data/hf_tok_b", src ? src : ".");
  struct run r;
  memset(&r, 0, sizeof r);
  CHECK(hf_tokenizer_load(&r.tok, dir, NULL, err, sizeof err) == 0);
  int bos = r.tok.bos_id;
  CHECK(bos >= 0);
  struct sample s;
  sample_init(&s);
  /* plain text: one BOS prepended */
  CHECK(first_tokens(&r, "12+3=", &s) == 0);
  CHECK(s.n_prompt >= 2 && s.prompt[0] == bos && s.prompt[1] != bos);
  int plain = s.n_prompt;
  /* text that starts with the BOS token itself: still one BOS, the same ids after it */
  CHECK(first_tokens(&r, "<|begin_of_text|>12+3=", &s) == 0);
  CHECK(s.n_prompt == plain && s.prompt[0] == bos && s.prompt[1] != bos);
  /* SFT pairs start the same way: one BOS, then the prompt, the answer and EOS */
  struct task_prompt tp;
  memset(&tp, 0, sizeof tp);
  snprintf(tp.text, sizeof tp.text, "<|begin_of_text|>12+3=");
  snprintf(tp.answer, sizeof tp.answer, "15");
  int ids[64];
  size_t np = 0, nt = 0;
  CHECK(task_sft_tokens(&r.tok, &tp, ids, 64, &np, &nt) == 0);
  CHECK((int)np == plain && ids[0] == bos && ids[1] != bos && ids[nt - 1] == r.tok.eos_id);
  /* no BOS configured (bos_id -1): nothing prepended */
  r.tok.bos_id = -1;
  CHECK(first_tokens(&r, "12+3=", &s) == 0);
  CHECK(s.n_prompt == plain - 1);
  r.tok.bos_id = bos;
  sample_free(&s);
  tokenizer_free(&r.tok);
  return TEST_RESULT("test_prompt_bos");
}
