/* tasks/test_chat.c: chat templates against hand-written prompt texts: ChatML with
 * and without a default system message, Llama 3 (trimmed content), template
 * detection from Jinja sources (SmolLM2's, Qwen2.5's escaped form, Llama 3's),
 * and the errors for unknown names / templates. The SmolLM2 GGUF's own
 * template rendered by jinja2 is compared in test_smollm2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tasks/chat.h"
#include "testutil.h"

static void expect(const struct chat_template *ct, const struct chat_msg *m, int n, int gen,
                   const char *want) {
  size_t len;
  char *got = chat_format(ct, m, n, gen, &len);
  CHECK_MSG(got && len == strlen(want) && !strcmp(got, want), "got:\n%s\nwant:\n%s", got ? got : "(null)",
            want);
  free(got);
}

int main(void) {
  struct chat_template ct;
  char err[256];
  const struct chat_msg user[] = {{.role = "user", .content = "Hi"}};
  const struct chat_msg conv[] = {{.role = "system", .content = "Be brief."},
                                  {.role = "user", .content = " 2+2? "},
                                  {.role = "assistant", .content = "4"}};

  CHECK(chat_template_by_name(&ct, "chatml", err, sizeof err) == 0 && ct.kind == CHAT_CHATML);
  expect(&ct, user, 1, 1, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  expect(&ct, conv, 3, 0,
         "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n 2+2? <|im_end|>\n"
         "<|im_start|>assistant\n4<|im_end|>\n");

  CHECK(chat_template_by_name(&ct, "smollm2", err, sizeof err) == 0);
  expect(&ct, user, 1, 1,
         "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
         "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  expect(&ct, conv, 1, 0, "<|im_start|>system\nBe brief.<|im_end|>\n"); /* own system replaces it */

  CHECK(chat_template_by_name(&ct, "llama3", err, sizeof err) == 0 && ct.kind == CHAT_LLAMA3);
  expect(&ct, conv + 1, 1, 1,
         "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(chat_template_by_name(&ct, "alpaca", err, sizeof err) == -1 && strstr(err, "chatml"));

  const char *smol = "{% for message in messages %}{% if loop.first and messages[0]['role'] != "
                     "'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named "
                     "SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + "
                     "message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
  CHECK(chat_template_detect(&ct, smol, strlen(smol), err, sizeof err) == 0 && ct.kind == CHAT_CHATML &&
        !strcmp(ct.default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face"));
  const char *qwen = "{%- if messages[0]['role'] != 'system' %}{{- '<|im_start|>system\\nYou are Qwen, "
                     "created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}{%- endif %}";
  CHECK(chat_template_detect(&ct, qwen, strlen(qwen), err, sizeof err) == 0 &&
        !strcmp(ct.default_system, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."));
  const char *plain = "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + "
                      "'<|im_end|>\n'}}{% endfor %}";
  CHECK(chat_template_detect(&ct, plain, strlen(plain), err, sizeof err) == 0 && !ct.default_system[0]);
  const char *llama = "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
                      "'<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}{% endfor %}";
  CHECK(chat_template_detect(&ct, llama, strlen(llama), err, sizeof err) == 0 && ct.kind == CHAT_LLAMA3);
  CHECK(chat_template_detect(&ct, "[INST]", 6, err, sizeof err) == -1 && strstr(err, "not recognised"));
  const struct chat_msg bad[] = {{.role = "user", .content = NULL}};
  CHECK(chat_format(&ct, bad, 1, 1, NULL) == NULL);
  return TEST_RESULT("test_chat");
}
