/* tasks/chat.c: ChatML and Llama 3 chat templates (see tasks/chat.h). Checked against the
 * Jinja template of SmolLM2's GGUF rendered by jinja2 (tests/model/test_smollm2.c via
 * tests/ref/smollm2_ref.py) and against hand-written expectations (test_chat). */
#include "tasks/chat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"

#define SMOLLM2_SYSTEM "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

const char *chat_kind_name(enum chat_kind kind) { return kind == CHAT_LLAMA3 ? "llama3" : "chatml"; }

int chat_template_by_name(struct chat_template *ct, const char *name, char *err, size_t errlen) {
  memset(ct, 0, sizeof *ct);
  if (!strcmp(name, "chatml")) return 0;
  if (!strcmp(name, "smollm2")) {
    snprintf(ct->default_system, sizeof ct->default_system, "%s", SMOLLM2_SYSTEM);
    return 0;
  }
  if (!strcmp(name, "llama3")) {
    ct->kind = CHAT_LLAMA3;
    return 0;
  }
  snprintf(err, errlen, "unknown chat template '%s' (chatml, smollm2, llama3)", name);
  return -1;
}

static const char *find(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp(s + i, needle, k)) return s + i;
  return NULL;
}

/* A literal default system message: '<|im_start|>system\n' TEXT '<|im_end|>' inside
 * one Jinja string literal (newlines written as such or as \n escapes). */
static void chatml_default_system(struct chat_template *ct, const char *s, size_t n) {
  static const char *heads[] = {"<|im_start|>system\n", "<|im_start|>system\\n"};
  for (int h = 0; h < 2; h++) {
    const char *p = find(s, n, heads[h]);
    if (!p) continue;
    p += strlen(heads[h]);
    const char *end = find(p, n - (size_t)(p - s), "<|im_end|>");
    if (!end) return;
    size_t w = 0;
    for (const char *q = p; q < end; q++) {
      if (*q == '\'' || *q == '"' || *q == '{' || *q == '}' || *q == '+') return; /* not literal */
      if (w + 2 >= sizeof ct->default_system) return;
      if (q[0] == '\\' && q + 1 < end && q[1] == 'n') {
        ct->default_system[w++] = '\n';
        q++;
      } else {
        ct->default_system[w++] = *q;
      }
    }
    ct->default_system[w] = '\0';
    return;
  }
}

int chat_template_detect(struct chat_template *ct, const char *jinja, size_t len, char *err,
                         size_t errlen) {
  memset(ct, 0, sizeof *ct);
  if (find(jinja, len, "<|im_start|>")) {
    ct->kind = CHAT_CHATML;
    /* only templates that add it when the conversation has no system message */
    if (find(jinja, len, "!= 'system'") || find(jinja, len, "!= \"system\""))
      chatml_default_system(ct, jinja, len);
    return 0;
  }
  if (find(jinja, len, "<|start_header_id|>")) {
    ct->kind = CHAT_LLAMA3;
    return 0;
  }
  snprintf(err, errlen, "chat template not recognised (neither ChatML <|im_start|> nor Llama 3 "
           "<|start_header_id|>)");
  return -1;
}

int chat_template_from_gguf(struct chat_template *ct, const struct gguf_file *f, char *err,
                            size_t errlen) {
  struct gguf_str s;
  if (gguf_get_str(f, "tokenizer.chat_template", &s, err, errlen)) return -1;
  if (chat_template_detect(ct, s.p, (size_t)s.len, err, errlen)) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", err);
    snprintf(err, errlen, "%s: tokenizer.chat_template: %s", f->path, tmp);
    return -1;
  }
  return 0;
}

struct buf {
  char *p;
  size_t n, cap;
  int oom;
};

static void put(struct buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->n + n + 1) * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

/* Llama 3 trims each message's content (Jinja `| trim`). */
static void put_trimmed(struct buf *b, const char *s) {
  size_t n = strlen(s);
  while (n && strchr(" \t\n\r", s[n - 1])) n--;
  while (n && strchr(" \t\n\r", *s)) s++, n--;
  put(b, s, n);
}

char *chat_format(const struct chat_template *ct, const struct chat_msg *msgs, int n,
                  int add_generation_prompt, size_t *len_out) {
  struct buf b = {0};
  for (int i = 0; i < n; i++)
    if (!msgs[i].role || !msgs[i].content) return NULL;
  if (ct->kind == CHAT_CHATML) {
    if (ct->default_system[0] && (n == 0 || strcmp(msgs[0].role, "system"))) {
      puts_(&b, "<|im_start|>system\n");
      puts_(&b, ct->default_system);
      puts_(&b, "<|im_end|>\n");
    }
    for (int i = 0; i < n; i++) {
      puts_(&b, "<|im_start|>");
      puts_(&b, msgs[i].role);
      puts_(&b, "\n");
      puts_(&b, msgs[i].content);
      puts_(&b, "<|im_end|>\n");
    }
    if (add_generation_prompt) puts_(&b, "<|im_start|>assistant\n");
  } else {
    puts_(&b, "<|begin_of_text|>");
    for (int i = 0; i < n; i++) {
      puts_(&b, "<|start_header_id|>");
      puts_(&b, msgs[i].role);
      puts_(&b, "<|end_header_id|>\n\n");
      put_trimmed(&b, msgs[i].content);
      puts_(&b, "<|eot_id|>");
    }
    if (add_generation_prompt) puts_(&b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
  }
  put(&b, "", 0);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  if (len_out) *len_out = b.n;
  return b.p;
}
