/* tasks/chat.h: chat templates: a conversation -> the prompt text the model was
 * fine-tuned on (special tokens written as text; the BPE tokenizer matches
 * them whole).
 *
 *   ChatML (SmolLM2, Qwen2):  <|im_start|>ROLE\nCONTENT<|im_end|>\n ... and,
 *       with a generation prompt, <|im_start|>assistant\n. Templates that add a
 *       default system message when the first message is not a system one
 *       (SmolLM2, Qwen2.5) carry it in default_system.
 *   Llama 3:  <|begin_of_text|> then <|start_header_id|>ROLE<|end_header_id|>\n\n
 *       CONTENT (trimmed)<|eot_id|> per message; generation prompt
 *       <|start_header_id|>assistant<|end_header_id|>\n\n.
 * The Jinja source in GGUF tokenizer.chat_template is recognised by its
 * markers, not executed. */
#ifndef RLPT_CHAT_H
#define RLPT_CHAT_H

#include <stddef.h>

struct gguf_file;

enum chat_kind { CHAT_CHATML = 0, CHAT_LLAMA3 = 1 };

struct chat_template {
  enum chat_kind kind;
  char default_system[512];  /* "" = none */
};

struct chat_msg {
  const char *role;     /* "system", "user", "assistant", ... */
  const char *content;
};

/* By name: "chatml", "smollm2" (ChatML + SmolLM2's default system message),
 * "llama3". Returns 0, or -1 with the known names in err. */
int chat_template_by_name(struct chat_template *ct, const char *name, char *err, size_t errlen);
/* From Jinja source text (detects ChatML / Llama 3 and a literal default system message). */
int chat_template_detect(struct chat_template *ct, const char *jinja, size_t len, char *err,
                         size_t errlen);
/* From GGUF tokenizer.chat_template. */
int chat_template_from_gguf(struct chat_template *ct, const struct gguf_file *f, char *err,
                            size_t errlen);
const char *chat_kind_name(enum chat_kind kind);

/* The prompt text for n messages (malloc'd, NUL-terminated; *len_out its length
 * when not NULL); add_generation_prompt appends the assistant header. NULL when
 * out of memory or a message lacks role/content. */
char *chat_format(const struct chat_template *ct, const struct chat_msg *msgs, int n,
                  int add_generation_prompt, size_t *len_out);

#endif
