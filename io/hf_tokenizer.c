/* io/hf_tokenizer.c: tokenizer.json / tokenizer_config.json <-> struct bpe_spec
 * (see hf_tokenizer.h for what is read, accepted and refused). */
#include "io/hf_tokenizer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"

#define GPT2_NAME "gpt2"
/* Llama 3's and Qwen2's Split patterns as their tokenizer.json spell them. */
static const struct {
  const char *name, *pattern;
} hf_regex[] = {
  {"llama-bpe", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
  {"qwen2", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
            "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
};

static const cJSON *item(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int is_type(const cJSON *o, const char *type) {
  const cJSON *t = item(o, "type");
  return cJSON_IsString(t) && !strcmp(t->valuestring, type);
}

/* A JSON file; NULL when absent (*missing = 1) or malformed (message with its line). */
static cJSON *read_json(const char *path, int *missing, char *err, size_t errlen) {
  char *text = hf_read_text(path, NULL);
  *missing = !text && errno == ENOENT;
  if (!text) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  const char *end = NULL;
  cJSON *o = cJSON_ParseWithOpts(text, &end, 0);
  if (!o) {
    int line = 1;
    for (const char *p = text; end && p < end; p++) line += *p == '\n';
    snprintf(err, errlen, "%s: line %d: not valid JSON", path, line);
  } else if (!cJSON_IsObject(o)) {
    snprintf(err, errlen, "%s: not a JSON object", path);
    cJSON_Delete(o);
    o = NULL;
  }
  free(text);
  return o;
}

/* ---- vocabulary, added tokens, merges ------------------------------------------------ */

static int put_token(struct hf_tokenizer *h, const char *s, double id, int n, char *err,
                     size_t errlen) {
  if (!(id >= 0 && id < n) || id != (double)(int)id) {
    snprintf(err, errlen, "%s: token '%.60s' has a bad id", h->path, s);
    return -1;
  }
  struct bpe_str *t = &h->spec.tok[(int)id];
  size_t len = strlen(s);
  if (t->p && (t->len != len || memcmp(t->p, s, len))) {
    snprintf(err, errlen, "%s: id %d is both '%.60s' and '%.60s'", h->path, (int)id, t->p, s);
    return -1;
  }
  *t = (struct bpe_str){.p = s, .len = len};
  return 0;
}

/* Rejects added-token options the whole-match of special tokens does not do. */
static int added_ok(const struct hf_tokenizer *h, const cJSON *a, char *err, size_t errlen) {
  static const char *opts[] = {"lstrip", "rstrip", "single_word"};
  const cJSON *c = item(a, "content");
  if (!cJSON_IsString(c) || !cJSON_IsNumber(item(a, "id"))) {
    snprintf(err, errlen, "%s: an added_tokens entry lacks \"id\" or \"content\"", h->path);
    return -1;
  }
  for (int k = 0; k < 3; k++)
    if (cJSON_IsTrue(item(a, opts[k]))) {
      snprintf(err, errlen, "%s: added token '%.60s' has %s = true (not supported)", h->path,
               c->valuestring, opts[k]);
      return -1;
    }
  return 0;
}

static int load_vocab(struct hf_tokenizer *h, const cJSON *model, char *err, size_t errlen) {
  const cJSON *vocab = item(model, "vocab"), *added = item(h->json, "added_tokens"), *e;
  if (!cJSON_IsObject(vocab) || (added && !cJSON_IsArray(added))) {
    snprintf(err, errlen, "%s: needs a \"model\".\"vocab\" object (and an \"added_tokens\" array)",
             h->path);
    return -1;
  }
  double top = -1;
  cJSON_ArrayForEach(e, vocab) if (cJSON_IsNumber(e) && e->valuedouble > top) top = e->valuedouble;
  cJSON_ArrayForEach(e, added) {
    if (added_ok(h, e, err, errlen)) return -1;
    if (item(e, "id")->valuedouble > top) top = item(e, "id")->valuedouble;
  }
  if (!(top >= 255 && top < (1 << 30))) {
    snprintf(err, errlen, "%s: %.0f tokens is not a byte-level vocabulary", h->path, top + 1);
    return -1;
  }
  int n = (int)top + 1;
  h->spec.n = n;
  h->spec.tok = calloc((size_t)n, sizeof *h->spec.tok);
  h->spec.type = malloc((size_t)n);
  if (!h->spec.tok || !h->spec.type) return snprintf(err, errlen, "%s: out of memory", h->path), -1;
  memset(h->spec.type, BPE_TT_NORMAL, (size_t)n);
  cJSON_ArrayForEach(e, vocab) if (put_token(h, e->string, cJSON_IsNumber(e) ? e->valuedouble : -1,
                                             n, err, errlen)) return -1;
  cJSON_ArrayForEach(e, added) {
    int id = (int)item(e, "id")->valuedouble;
    if (put_token(h, item(e, "content")->valuestring, id, n, err, errlen)) return -1;
    h->spec.type[id] = cJSON_IsTrue(item(e, "special")) ? BPE_TT_CONTROL : BPE_TT_USER;
  }
  for (int i = 0; i < n; i++)
    if (!h->spec.tok[i].p) {
      snprintf(err, errlen, "%s: no token has id %d (ids must run 0..%d)", h->path, i, n - 1);
      return -1;
    }
  return 0;
}

/* One merge: "LEFT RIGHT" or ["LEFT", "RIGHT"]. */
static int load_merge(struct hf_tokenizer *h, const cJSON *m, size_t r, char *err, size_t errlen) {
  struct bpe_str *out = &h->spec.merges[2 * r];
  if (cJSON_IsString(m)) {
    const char *s = m->valuestring, *sp = strchr(s, ' ');
    if (sp && sp > s && sp[1] && !strchr(sp + 1, ' ')) {
      out[0] = (struct bpe_str){.p = s, .len = (size_t)(sp - s)};
      out[1] = (struct bpe_str){.p = sp + 1, .len = strlen(sp + 1)};
      return 0;
    }
  } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
             cJSON_IsString(m->child->next)) {
    out[0] = (struct bpe_str){.p = m->child->valuestring, .len = strlen(m->child->valuestring)};
    out[1] = (struct bpe_str){.p = m->child->next->valuestring,
                              .len = strlen(m->child->next->valuestring)};
    return 0;
  }
  snprintf(err, errlen, "%s: merge %zu is neither \"LEFT RIGHT\" nor [\"LEFT\", \"RIGHT\"]",
           h->path, r);
  return -1;
}

static int load_merges(struct hf_tokenizer *h, const cJSON *model, char *err, size_t errlen) {
  const cJSON *mg = item(model, "merges"), *m;
  if (!cJSON_IsArray(mg)) {
    snprintf(err, errlen, "%s: needs a \"model\".\"merges\" array", h->path);
    return -1;
  }
  size_t n = (size_t)cJSON_GetArraySize(mg), r = 0;
  h->spec.n_merges = n;
  h->spec.merges = malloc(sizeof *h->spec.merges * 2 * (n ? n : 1));
  if (!h->spec.merges) return snprintf(err, errlen, "%s: out of memory", h->path), -1;
  cJSON_ArrayForEach(m, mg) if (load_merge(h, m, r++, err, errlen)) return -1;
  return 0;
}

/* model: byte-level BPE only (no byte fallback, no subword affixes, no dropout). */
static int check_model(const struct hf_tokenizer *h, const cJSON *model, char *err, size_t errlen) {
  const char *why = NULL;
  const cJSON *t = item(model, "type"), *d = item(model, "dropout");
  const cJSON *pre = item(model, "continuing_subword_prefix"), *suf = item(model, "end_of_word_suffix");
  if (!cJSON_IsObject(model)) why = "has no \"model\" object";
  else if (t && !is_type(model, "BPE")) why = "model.type is not \"BPE\"";
  else if (cJSON_IsTrue(item(model, "byte_fallback"))) why = "model.byte_fallback = true is "
                                                          "SentencePiece-style BPE, not byte-level";
  else if ((cJSON_IsString(pre) && *pre->valuestring) || (cJSON_IsString(suf) && *suf->valuestring))
    why = "model.continuing_subword_prefix / end_of_word_suffix are not supported";
  else if (cJSON_IsNumber(d) && d->valuedouble > 0) why = "model.dropout is not supported";
  if (why) snprintf(err, errlen, "%s: %s", h->path, why);
  return why ? -1 : 0;
}

/* ---- normalizer and pre-tokenizer ---------------------------------------------------- */

static int check_normalizer(const struct hf_tokenizer *h, char *err, size_t errlen) {
  const cJSON *n = item(h->json, "normalizer");
  if (!n || cJSON_IsNull(n) || is_type(n, "NFC")) return 0;
  const cJSON *t = item(n, "type");
  snprintf(err, errlen, "%s: normalizer '%s' is not supported (none or NFC)", h->path,
           cJSON_IsString(t) ? t->valuestring : "?");
  return -1;
}

/* One element of the pre-tokenizer; *step counts Digits (0), Split (1), ByteLevel (2) in order. */
static const char *pre_one(struct hf_tokenizer *h, const cJSON *p, int *step) {
  struct bpe_spec *s = &h->spec;
  if (is_type(p, "Digits") && *step == 0) {
    if (!cJSON_IsTrue(item(p, "individual_digits"))) return "Digits without individual_digits";
    s->split_digits = 1;
    *step = 1;
    return NULL;
  }
  if (is_type(p, "Split") && *step <= 1) {
    const cJSON *re = item(item(p, "pattern"), "Regex"), *b = item(p, "behavior");
    if (!cJSON_IsString(re)) return "a Split pattern that is not a Regex";
    if (!cJSON_IsString(b) || strcmp(b->valuestring, "Isolated") || cJSON_IsTrue(item(p, "invert")))
      return "a Split whose behavior is not Isolated (or inverted)";
    s->regex = re->valuestring;
    *step = 2;
    return NULL;
  }
  if (is_type(p, "ByteLevel") && *step <= 2) {
    const cJSON *ur = item(p, "use_regex");
    int use_regex = !ur || cJSON_IsTrue(ur);
    if (cJSON_IsTrue(item(p, "add_prefix_space"))) return "ByteLevel with add_prefix_space";
    if (use_regex == (*step == 2)) return use_regex ? "ByteLevel(use_regex) after a Split"
                                                    : "ByteLevel without a regex and no Split";
    *step = 3;
    return NULL;
  }
  return "a pre-tokenizer other than [Digits,] [Split,] ByteLevel";
}

static int load_pre(struct hf_tokenizer *h, char *err, size_t errlen) {
  const cJSON *p = item(h->json, "pre_tokenizer"), *e;
  const char *why = NULL;
  int step = 0;
  if (is_type(p, "Sequence")) {
    cJSON_ArrayForEach(e, item(p, "pretokenizers")) if (!why) why = pre_one(h, e, &step);
  } else if (p) {
    why = pre_one(h, p, &step);
  }
  if (!why && step != 3) why = "no ByteLevel pre-tokenizer (not byte-level BPE)";
  if (why) {
    snprintf(err, errlen, "%s: pre_tokenizer: %s is not supported", h->path, why);
    return -1;
  }
  struct bpe_spec *s = &h->spec;
  snprintf(s->pre, sizeof s->pre, "%s", s->regex ? "regex" : s->split_digits ? "smollm" : GPT2_NAME);
  for (size_t i = 0; s->regex && i < sizeof hf_regex / sizeof hf_regex[0]; i++)
    if (!strcmp(s->regex, hf_regex[i].pattern) && !s->split_digits)
      snprintf(s->pre, sizeof s->pre, "%s", hf_regex[i].name);
  return 0;
}

/* ---- special ids, BOS, chat template ------------------------------------------------- */

static int find_token(const struct bpe_spec *s, const char *text) {
  size_t len = strlen(text);
  for (int i = 0; i < s->n; i++)
    if (s->tok[i].len == len && !memcmp(s->tok[i].p, text, len)) return i;
  return -1;
}

/* tokenizer_config.json's KEY: "text" or {"content": "text"}; its id, -1 when unset. */
static int config_token(const struct hf_tokenizer *h, const char *key, int *id, char *err,
                        size_t errlen) {
  const cJSON *v = item(h->config, key);
  if (cJSON_IsObject(v)) v = item(v, "content");
  *id = -1;
  if (!cJSON_IsString(v)) return 0;
  *id = find_token(&h->spec, v->valuestring);
  if (*id >= 0) return 0;
  int dir = (int)(strlen(h->path) - strlen("tokenizer.json"));
  snprintf(err, errlen, "%.*stokenizer_config.json: %s '%.60s' is not in the vocabulary of %s", dir,
           h->path, key, v->valuestring, h->path);
  return -1;
}

static int template_adds_bos(const cJSON *p) {
  const cJSON *single = item(p, "single");
  return is_type(p, "TemplateProcessing") && cJSON_IsArray(single) &&
         item(single->child, "SpecialToken") != NULL;
}

/* add_bos_token when tokenizer_config.json sets it, else a TemplateProcessing
 * post-processor (alone or in a Sequence) whose single-sequence form opens with
 * a special token. */
static int adds_bos(const struct hf_tokenizer *h) {
  const cJSON *a = item(h->config, "add_bos_token"), *pp = item(h->json, "post_processor"), *e;
  if (cJSON_IsBool(a)) return cJSON_IsTrue(a);
  if (template_adds_bos(pp)) return 1;
  if (is_type(pp, "Sequence")) cJSON_ArrayForEach(e, item(pp, "processors")) if (template_adds_bos(e))
    return 1;
  return 0;
}

static void load_chat_template(struct hf_tokenizer *h, const char *dir) {
  const cJSON *t = item(h->config, "chat_template"), *e;
  if (cJSON_IsArray(t)) {  /* [{"name", "template"}]: the default one, else the first */
    const cJSON *pick = t->child;
    cJSON_ArrayForEach(e, t) if (cJSON_IsString(item(e, "name")) &&
                                 !strcmp(item(e, "name")->valuestring, "default")) pick = e;
    t = item(pick, "template");
  }
  if (cJSON_IsString(t)) {
    h->spec.chat_template = (struct bpe_str){.p = t->valuestring, .len = strlen(t->valuestring)};
    return;
  }
  char path[1100];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
  if ((h->jinja = hf_read_text(path, &len))) h->spec.chat_template = (struct bpe_str){.p = h->jinja, .len = len};
}

/* ---- open / load ---------------------------------------------------------------------- */

static int open_specials(struct hf_tokenizer *h, const char *dir, char *err, size_t errlen) {
  struct bpe_spec *s = &h->spec;
  if (config_token(h, "bos_token", &s->bos_id, err, errlen) ||
      config_token(h, "eos_token", &s->eos_id, err, errlen) ||
      config_token(h, "pad_token", &s->pad_id, err, errlen))
    return -1;
  hf_token_ids(dir, s->n, &s->bos_id, &s->eos_id);  /* ids still unset */
  s->add_bos = adds_bos(h) && s->bos_id >= 0;
  load_chat_template(h, dir);
  return 0;
}

int hf_tokenizer_open(struct hf_tokenizer *h, const char *dir, char *err, size_t errlen) {
  char cpath[1100];
  int missing;
  memset(h, 0, sizeof *h);
  h->spec.bos_id = h->spec.eos_id = h->spec.pad_id = -1;
  snprintf(h->path, sizeof h->path, "%s/tokenizer.json", dir);
  h->spec.path = h->path;
  snprintf(cpath, sizeof cpath, "%s/tokenizer_config.json", dir);
  h->json = read_json(h->path, &missing, err, errlen);
  if (h->json) h->config = read_json(cpath, &missing, err, errlen);
  const cJSON *model = item(h->json, "model");
  int rc = !h->json || (!h->config && !missing) || check_model(h, model, err, errlen) ||
           check_normalizer(h, err, errlen) || load_vocab(h, model, err, errlen) ||
           load_merges(h, model, err, errlen) || load_pre(h, err, errlen) ||
           open_specials(h, dir, err, errlen);
  h->spec.ignore_merges = cJSON_IsTrue(item(model, "ignore_merges"));
  if (rc) hf_tokenizer_close(h);
  return rc ? -1 : 0;
}

void hf_tokenizer_close(struct hf_tokenizer *h) {
  tokenizer_bpe_spec_free(&h->spec);
  cJSON_Delete(h->json);
  cJSON_Delete(h->config);
  free(h->jinja);
  h->json = h->config = NULL;
  h->jinja = NULL;
}

int hf_tokenizer_load(struct tokenizer *t, const char *dir, int *add_bos, char *err,
                      size_t errlen) {
  struct hf_tokenizer h;
  memset(t, 0, sizeof *t);
  if (hf_tokenizer_open(&h, dir, err, errlen)) return -1;
  int rc = tokenizer_bpe_build(t, &h.spec, err, errlen);
  if (add_bos) *add_bos = h.spec.add_bos;
  hf_tokenizer_close(&h);
  return rc;
}

/* ---- writing ------------------------------------------------------------------------ */

/* A spec string as a JSON string item (cJSON wants it NUL-terminated). */
static cJSON *str_item(struct bpe_str v) {
  char *c = malloc(v.len + 1);
  if (!c) return NULL;
  memcpy(c, v.p, v.len);
  c[v.len] = 0;
  cJSON *o = cJSON_CreateString(c);
  free(c);
  return o;
}

static cJSON *byte_level(int use_regex) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "ByteLevel");
  cJSON_AddBoolToObject(o, "add_prefix_space", 0);
  cJSON_AddBoolToObject(o, "trim_offsets", 0);
  cJSON_AddBoolToObject(o, "use_regex", use_regex);
  return o;
}

/* The pre-tokenizer of s in tokenizer.json's terms (inverse of load_pre). */
static cJSON *pre_json(const struct bpe_spec *s, char *err, size_t errlen) {
  static const char *digit_names[] = {"smollm", "starcoder", "refact"};
  const char *regex = s->regex;
  int digits = s->split_digits;
  for (int i = 0; i < 3 && !regex; i++) digits |= !strcmp(s->pre, digit_names[i]);
  for (size_t i = 0; !regex && i < sizeof hf_regex / sizeof hf_regex[0]; i++)
    if (!strcmp(s->pre, hf_regex[i].name)) regex = hf_regex[i].pattern;
  if (!regex && !digits && strcmp(s->pre, GPT2_NAME) && strcmp(s->pre, "default")) {
    snprintf(err, errlen, "%s: pre-tokenizer '%s' has no tokenizer.json form here", s->path, s->pre);
    return NULL;
  }
  cJSON *seq = cJSON_CreateObject(), *list = cJSON_CreateArray();
  cJSON_AddStringToObject(seq, "type", "Sequence");
  cJSON_AddItemToObject(seq, "pretokenizers", list);
  if (digits) {
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "type", "Digits");
    cJSON_AddBoolToObject(d, "individual_digits", 1);
    cJSON_AddItemToArray(list, d);
  }
  if (regex) {
    cJSON *sp = cJSON_CreateObject(), *pat = cJSON_AddObjectToObject(sp, "pattern");
    cJSON_AddStringToObject(sp, "type", "Split");
    cJSON_AddStringToObject(pat, "Regex", regex);
    cJSON_AddStringToObject(sp, "behavior", "Isolated");
    cJSON_AddBoolToObject(sp, "invert", 0);
    cJSON_AddItemToArray(list, sp);
  }
  cJSON_AddItemToArray(list, byte_level(!regex));
  return seq;
}

/* BOS + the sequence (what Llama 3's tokenizer.json says when prompts start with BOS). */
static cJSON *bos_template(const struct bpe_spec *s) {
  cJSON *tp = cJSON_CreateObject(), *bos = str_item(s->tok[s->bos_id]);
  const char *name = cJSON_GetStringValue(bos);
  cJSON_AddStringToObject(tp, "type", "TemplateProcessing");
  static const char *forms[] = {"single", "pair"};
  for (int f = 0; f < 2; f++) {
    cJSON *arr = cJSON_AddArrayToObject(tp, forms[f]);
    for (int k = 0; k < 1 + f; k++) {
      cJSON *sp = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(sp, "SpecialToken");
      cJSON_AddStringToObject(in, "id", name);
      cJSON_AddNumberToObject(in, "type_id", k);
      cJSON_AddItemToArray(arr, sp);
      cJSON *sq = cJSON_CreateObject(), *q = cJSON_AddObjectToObject(sq, "Sequence");
      cJSON_AddStringToObject(q, "id", k ? "B" : "A");
      cJSON_AddNumberToObject(q, "type_id", k);
      cJSON_AddItemToArray(arr, sq);
    }
  }
  cJSON *st = cJSON_AddObjectToObject(cJSON_AddObjectToObject(tp, "special_tokens"), name);
  cJSON_AddStringToObject(st, "id", name);
  cJSON_AddItemToObject(st, "ids", cJSON_CreateIntArray(&s->bos_id, 1));
  cJSON_AddItemToObject(st, "tokens", cJSON_CreateStringArray(&name, 1));
  cJSON_Delete(bos);
  return tp;
}

static cJSON *model_json(const struct bpe_spec *s) {
  cJSON *m = cJSON_CreateObject(), *vocab, *merges;
  cJSON_AddStringToObject(m, "type", "BPE");
  cJSON_AddNullToObject(m, "dropout");
  cJSON_AddNullToObject(m, "unk_token");
  cJSON_AddNullToObject(m, "continuing_subword_prefix");
  cJSON_AddNullToObject(m, "end_of_word_suffix");
  cJSON_AddBoolToObject(m, "fuse_unk", 0);
  cJSON_AddBoolToObject(m, "byte_fallback", 0);
  cJSON_AddBoolToObject(m, "ignore_merges", s->ignore_merges);
  vocab = cJSON_AddObjectToObject(m, "vocab");
  for (int i = 0; i < s->n; i++) {
    cJSON *k = str_item(s->tok[i]);
    cJSON_AddNumberToObject(vocab, cJSON_GetStringValue(k), i);
    cJSON_Delete(k);
  }
  /* "LEFT RIGHT" as older tokenizers versions read it, pairs when a side has a space */
  int pairs = 0;
  for (size_t r = 0; r < 2 * s->n_merges; r++) pairs |= memchr(s->merges[r].p, ' ', s->merges[r].len) != NULL;
  merges = cJSON_AddArrayToObject(m, "merges");
  for (size_t r = 0; r < s->n_merges; r++) {
    const struct bpe_str *l = &s->merges[2 * r], *rt = l + 1;
    cJSON *it;
    if (pairs) {
      it = cJSON_CreateArray();
      cJSON_AddItemToArray(it, str_item(*l));
      cJSON_AddItemToArray(it, str_item(*rt));
    } else {
      char *c = malloc(l->len + rt->len + 2);
      if (c) snprintf(c, l->len + rt->len + 2, "%.*s %.*s", (int)l->len, l->p, (int)rt->len, rt->p);
      it = cJSON_CreateString(c ? c : "");
      free(c);
    }
    cJSON_AddItemToArray(merges, it);
  }
  return m;
}

static cJSON *added_json(const struct bpe_spec *s) {
  cJSON *arr = cJSON_CreateArray();
  for (int i = 0; s->type && i < s->n; i++) {
    if (s->type[i] != BPE_TT_CONTROL && s->type[i] != BPE_TT_USER) continue;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", i);
    cJSON_AddItemToObject(a, "content", str_item(s->tok[i]));
    cJSON_AddBoolToObject(a, "single_word", 0);
    cJSON_AddBoolToObject(a, "lstrip", 0);
    cJSON_AddBoolToObject(a, "rstrip", 0);
    cJSON_AddBoolToObject(a, "normalized", 0);
    cJSON_AddBoolToObject(a, "special", s->type[i] == BPE_TT_CONTROL);
    cJSON_AddItemToArray(arr, a);
  }
  return arr;
}

static cJSON *tokenizer_json(const struct bpe_spec *s, char *err, size_t errlen) {
  cJSON *pre = pre_json(s, err, errlen);
  if (!pre) return NULL;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "version", "1.0");
  cJSON_AddNullToObject(o, "truncation");
  cJSON_AddNullToObject(o, "padding");
  cJSON_AddItemToObject(o, "added_tokens", added_json(s));
  cJSON_AddNullToObject(o, "normalizer");
  cJSON_AddItemToObject(o, "pre_tokenizer", pre);
  cJSON_AddItemToObject(o, "post_processor",
                        s->add_bos && s->bos_id >= 0 ? bos_template(s) : byte_level(0));
  cJSON_AddItemToObject(o, "decoder", byte_level(1));
  cJSON_AddItemToObject(o, "model", model_json(s));
  return o;
}

static cJSON *config_json(const struct bpe_spec *s) {
  cJSON *o = cJSON_CreateObject();
  static const char *keys[] = {"bos_token", "eos_token", "pad_token"};
  const int ids[] = {s->bos_id, s->eos_id, s->pad_id};
  cJSON_AddBoolToObject(o, "add_bos_token", s->add_bos && s->bos_id >= 0);
  cJSON_AddBoolToObject(o, "add_eos_token", 0);
  for (int k = 0; k < 3; k++)
    cJSON_AddItemToObject(o, keys[k], ids[k] >= 0 ? str_item(s->tok[ids[k]]) : cJSON_CreateNull());
  if (s->chat_template.p) cJSON_AddItemToObject(o, "chat_template", str_item(s->chat_template));
  cJSON_AddBoolToObject(o, "clean_up_tokenization_spaces", 0);
  cJSON_AddStringToObject(o, "tokenizer_class", "PreTrainedTokenizerFast");
  return o;
}

static int write_json(const char *dir, const char *file, cJSON *o, int pretty, char *err,
                      size_t errlen) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  char *text = o ? (pretty ? cJSON_Print(o) : cJSON_PrintUnformatted(o)) : NULL;
  FILE *fp = text ? fopen(path, "wb") : NULL;
  int rc = fp && fputs(text, fp) >= 0 && fputc('\n', fp) != EOF ? 0 : -1;
  if (fp && fclose(fp)) rc = -1;
  if (rc) snprintf(err, errlen, "%s: cannot write: %s", path, text ? strerror(errno) : "out of memory");
  free(text);
  cJSON_Delete(o);
  return rc;
}

int hf_tokenizer_save(const char *dir, const struct bpe_spec *s, char *err, size_t errlen) {
  cJSON *tj = tokenizer_json(s, err, errlen);
  if (!tj) return -1;
  if (write_json(dir, "tokenizer.json", tj, 0, err, errlen)) return -1;
  return write_json(dir, "tokenizer_config.json", config_json(s), 1, err, errlen);
}
