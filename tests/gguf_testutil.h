/* gguf_testutil.h: a tiny GGUF writer for the tests (io/test_gguf.c, io/test_gguf_fuzz.c).
 *
 * Builds a file in memory: gb_header, then gb_kv_* calls, then gb_tensors
 * (infos, padding, data). tiny_llama() writes a complete small llama model
 * (F32 and Q8_0 tensors, q/k rows permuted the way llama.cpp's converter does,
 * a small vocabulary) whose Hugging Face weights are known; synthetic_gguf()
 * writes a tokenizer-only file with a complete byte-level BPE vocabulary. */
#ifndef RLPT_GGUF_TESTUTIL_H
#define RLPT_GGUF_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"

struct gb {
  uint8_t *b;
  size_t n, cap;
  uint64_t n_kv;
  size_t off_pos[64];  /* gb_tensors: where each tensor's data offset is in b (for patching) */
};

static inline void gb_bytes(struct gb *g, const void *p, size_t n) {
  if (g->n + n > g->cap) {
    g->cap = (g->n + n) * 2 + 64;
    g->b = realloc(g->b, g->cap);
    if (!g->b) abort();
  }
  memcpy(g->b + g->n, p, n);
  g->n += n;
}
static inline void gb_u32(struct gb *g, uint32_t v) { gb_bytes(g, &v, 4); }
static inline void gb_u64(struct gb *g, uint64_t v) { gb_bytes(g, &v, 8); }
static inline void gb_str(struct gb *g, const char *s) {
  gb_u64(g, strlen(s));
  gb_bytes(g, s, strlen(s));
}

/* magic, version, n_tensors (patched by gb_tensors), n_kv (patched by each kv) */
static inline void gb_header(struct gb *g, uint32_t version) {
  memset(g, 0, sizeof *g);
  gb_bytes(g, "GGUF", 4);
  gb_u32(g, version);
  gb_u64(g, 0);
  gb_u64(g, 0);
}
static inline void gb_kv_key(struct gb *g, const char *key, uint32_t type) {
  g->n_kv++;
  memcpy(g->b + 16, &g->n_kv, 8);
  gb_str(g, key);
  gb_u32(g, type);
}
static inline void gb_kv_u32(struct gb *g, const char *key, uint32_t v) {
  gb_kv_key(g, key, GGUF_U32);
  gb_u32(g, v);
}
static inline void gb_kv_f32(struct gb *g, const char *key, float v) {
  gb_kv_key(g, key, GGUF_F32);
  gb_bytes(g, &v, 4);
}
static inline void gb_kv_str(struct gb *g, const char *key, const char *v) {
  gb_kv_key(g, key, GGUF_STRING);
  gb_str(g, v);
}
static inline void gb_kv_arr_str(struct gb *g, const char *key, const char *const *v, int n) {
  gb_kv_key(g, key, GGUF_ARRAY);
  gb_u32(g, GGUF_STRING);
  gb_u64(g, (uint64_t)n);
  for (int i = 0; i < n; i++) gb_str(g, v[i]);
}
static inline void gb_kv_arr_i32(struct gb *g, const char *key, const int32_t *v, int n) {
  gb_kv_key(g, key, GGUF_ARRAY);
  gb_u32(g, GGUF_I32);
  gb_u64(g, (uint64_t)n);
  gb_bytes(g, v, 4 * (size_t)n);
}

struct gb_tensor {
  const char *name;
  int n_dims;
  int64_t ne[2];
  uint32_t type;
  const void *data;
  size_t nbytes;
};

/* Tensor infos, padding to `align`, then the data (each tensor aligned). */
static inline void gb_tensors(struct gb *g, const struct gb_tensor *t, int n, size_t align) {
  uint64_t nt = (uint64_t)n, off = 0;
  memcpy(g->b + 8, &nt, 8);
  for (int i = 0; i < n; i++) {
    gb_str(g, t[i].name);
    gb_u32(g, (uint32_t)t[i].n_dims);
    for (int d = 0; d < t[i].n_dims; d++) gb_u64(g, (uint64_t)t[i].ne[d]);
    gb_u32(g, t[i].type);
    if (i < 64) g->off_pos[i] = g->n;
    gb_u64(g, off);
    off += (t[i].nbytes + align - 1) / align * align;
  }
  static const uint8_t zero[64];
  for (int i = -1; i < n; i++) {
    while (g->n % align) gb_bytes(g, zero, 1);
    if (i >= 0) gb_bytes(g, t[i].data, t[i].nbytes);
  }
}

/* ---- the tiny llama model ------------------------------------------------------ */

#define TL_VOCAB 8
#define TL_DIM 32
#define TL_HEADS 4
#define TL_KV 2
#define TL_HD 8
#define TL_FFN 32
#define TL_MAXSEQ 16

/* The Hugging Face value of weight kind k at [r, c] (distinct per position). */
static inline float tl_value(int k, int r, int c) { return 0.001f * (float)(k * 7 + 1) * (float)(r * 37 + c) - 0.5f; }

/* HF rows -> llama.cpp's converter order: gguf row h*D + 2b + a = HF row h*D + a*D/2 + b. */
static inline void tl_permute(float *g, const float *hf, int rows, int cols, int n_head) {
  int D = rows / n_head;
  for (int h = 0; h < n_head; h++)
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < D / 2; b++)
        memcpy(g + (size_t)(h * D + 2 * b + a) * cols, hf + (size_t)(h * D + a * D / 2 + b) * cols,
               sizeof(float) * cols);
}

/* Q8_0 blocks with d = 1/64 and q = (i % 61) - 30 (exactly representable). */
static inline void tl_q8(uint8_t *dst, size_t n) {
  for (size_t b = 0; b < n / 32; b++) {
    uint16_t d = 0x2400; /* 2^-6 in binary16 */
    memcpy(dst + b * 34, &d, 2);
    for (int j = 0; j < 32; j++) dst[b * 34 + 2 + j] = (uint8_t)(int8_t)((b * 32 + j) % 61 - 30);
  }
}
static inline float tl_q8_value(size_t i) { return (float)((int)(i % 61) - 30) / 64.0f; }

struct tiny_llama {
  float emb[TL_VOCAB * TL_DIM], norm1[TL_DIM], norm2[TL_DIM], normf[TL_DIM];
  float q_hf[TL_DIM * TL_DIM], k_hf[TL_KV * TL_HD * TL_DIM];
  float q_g[TL_DIM * TL_DIM], k_g[TL_KV * TL_HD * TL_DIM];
  float v[TL_KV * TL_HD * TL_DIM], o[TL_DIM * TL_DIM];
  uint8_t gate[TL_FFN * TL_DIM / 32 * 34], up[TL_FFN * TL_DIM / 32 * 34], down[TL_DIM * TL_FFN / 32 * 34];
  float bq[TL_DIM], bk[TL_KV * TL_HD], bv[TL_KV * TL_HD], out[TL_VOCAB * TL_DIM]; /* qwen2 only */
};

static inline void tl_fill(float *w, int kind, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) w[r * cols + c] = tl_value(kind, r, c);
}

/* The tiny model as ARCH (llama: q/k rows permuted as llama.cpp's converter does,
 * tied embeddings; qwen2: q/k as in Hugging Face, q/k/v biases, an output.weight).
 * Vocabulary: "a", "b", "ab", "Ġ", "Ġab", "<|im_start|>", "<|im_end|>", "c". */
static inline void tiny_model(struct gb *g, struct tiny_llama *m, int qwen2) {
  static const char *tokens[TL_VOCAB] = {"a", "b", "ab", "\xc4\xa0", "\xc4\xa0" "ab", "<|im_start|>",
                                         "<|im_end|>", "c"};
  static const char *merges[] = {"a b", "\xc4\xa0 ab"};
  static const int32_t types[TL_VOCAB] = {1, 1, 1, 1, 1, 3, 3, 1};
  const char *arch = qwen2 ? "qwen2" : "llama";
  char key[96];
  tl_fill(m->emb, 0, TL_VOCAB, TL_DIM);
  tl_fill(m->norm1, 1, TL_DIM, 1);
  tl_fill(m->norm2, 2, TL_DIM, 1);
  tl_fill(m->normf, 3, TL_DIM, 1);
  tl_fill(m->q_hf, 4, TL_DIM, TL_DIM);
  tl_fill(m->k_hf, 5, TL_KV * TL_HD, TL_DIM);
  tl_fill(m->v, 6, TL_KV * TL_HD, TL_DIM);
  tl_fill(m->o, 7, TL_DIM, TL_DIM);
  tl_fill(m->bq, 8, TL_DIM, 1);
  tl_fill(m->bk, 9, TL_KV * TL_HD, 1);
  tl_fill(m->bv, 10, TL_KV * TL_HD, 1);
  tl_fill(m->out, 11, TL_VOCAB, TL_DIM);
  if (qwen2) {
    memcpy(m->q_g, m->q_hf, sizeof m->q_g);
    memcpy(m->k_g, m->k_hf, sizeof m->k_g);
  } else {
    tl_permute(m->q_g, m->q_hf, TL_DIM, TL_DIM, TL_HEADS);
    tl_permute(m->k_g, m->k_hf, TL_KV * TL_HD, TL_DIM, TL_KV);
  }
  tl_q8(m->gate, TL_FFN * TL_DIM);
  tl_q8(m->up, TL_FFN * TL_DIM);
  tl_q8(m->down, TL_DIM * TL_FFN);
  gb_header(g, 3);
  gb_kv_str(g, "general.architecture", arch);
  static const char *ikeys[] = {"embedding_length", "block_count", "attention.head_count",
                                "attention.head_count_kv", "feed_forward_length", "context_length"};
  const uint32_t ivals[] = {TL_DIM, 1, TL_HEADS, TL_KV, TL_FFN, TL_MAXSEQ};
  for (int i = 0; i < 6; i++) {
    snprintf(key, sizeof key, "%s.%s", arch, ikeys[i]);
    gb_kv_u32(g, key, ivals[i]);
  }
  snprintf(key, sizeof key, "%s.rope.freq_base", arch);
  gb_kv_f32(g, key, 5000.0f);
  snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
  gb_kv_f32(g, key, 1e-6f);
  gb_kv_str(g, "tokenizer.ggml.model", "gpt2");
  gb_kv_str(g, "tokenizer.ggml.pre", "smollm");
  gb_kv_arr_str(g, "tokenizer.ggml.tokens", tokens, TL_VOCAB);
  gb_kv_arr_str(g, "tokenizer.ggml.merges", merges, 2);
  gb_kv_arr_i32(g, "tokenizer.ggml.token_type", types, TL_VOCAB);
  gb_kv_u32(g, "tokenizer.ggml.bos_token_id", 5);
  gb_kv_u32(g, "tokenizer.ggml.eos_token_id", 6);
  const struct gb_tensor t[] = {
    {"token_embd.weight", 2, {TL_DIM, TL_VOCAB}, GGML_F32, m->emb, sizeof m->emb},
    {"blk.0.attn_norm.weight", 1, {TL_DIM, 1}, GGML_F32, m->norm1, sizeof m->norm1},
    {"blk.0.attn_q.weight", 2, {TL_DIM, TL_DIM}, GGML_F32, m->q_g, sizeof m->q_g},
    {"blk.0.attn_k.weight", 2, {TL_DIM, TL_KV * TL_HD}, GGML_F32, m->k_g, sizeof m->k_g},
    {"blk.0.attn_v.weight", 2, {TL_DIM, TL_KV * TL_HD}, GGML_F32, m->v, sizeof m->v},
    {"blk.0.attn_output.weight", 2, {TL_DIM, TL_DIM}, GGML_F32, m->o, sizeof m->o},
    {"blk.0.ffn_norm.weight", 1, {TL_DIM, 1}, GGML_F32, m->norm2, sizeof m->norm2},
    {"blk.0.ffn_gate.weight", 2, {TL_DIM, TL_FFN}, GGML_Q8_0, m->gate, sizeof m->gate},
    {"blk.0.ffn_up.weight", 2, {TL_DIM, TL_FFN}, GGML_Q8_0, m->up, sizeof m->up},
    {"blk.0.ffn_down.weight", 2, {TL_FFN, TL_DIM}, GGML_Q8_0, m->down, sizeof m->down},
    {"output_norm.weight", 1, {TL_DIM, 1}, GGML_F32, m->normf, sizeof m->normf},
    /* qwen2 only (the llama file stops before these) */
    {"blk.0.attn_q.bias", 1, {TL_DIM, 1}, GGML_F32, m->bq, sizeof m->bq},
    {"blk.0.attn_k.bias", 1, {TL_KV * TL_HD, 1}, GGML_F32, m->bk, sizeof m->bk},
    {"blk.0.attn_v.bias", 1, {TL_KV * TL_HD, 1}, GGML_F32, m->bv, sizeof m->bv},
    {"output.weight", 2, {TL_DIM, TL_VOCAB}, GGML_F32, m->out, sizeof m->out},
  };
  gb_tensors(g, t, qwen2 ? 15 : 11, 32);
}

static inline void tiny_llama(struct gb *g, struct tiny_llama *m) { tiny_model(g, m, 0); }

/* ---- a synthetic byte-level BPE vocabulary ------------------------------------ */

/* GPT-2 byte -> code point (printable bytes keep theirs; the rest 256, 257, ...). */
static inline int byte_cp(int b) {
  int next = 256;
  for (int c = 0; c < 256; c++) {
    int keep = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255);
    if (c == b) return keep ? c : next;
    if (!keep) next++;
  }
  return -1;
}

/* A byte-level BPE vocabulary (tests/tokenizer/test_bpe.c, the fuzz test): ids 0..255 are
 * byte b's token; then the merges' results, then the control tokens. */
enum { T_GT = 256, T_HE, T_GTHE, T_12, T_IMS, T_IME, T_IMSX, T_N };

static inline void synthetic_gguf(struct gb *g, const char *pre) {
  static char byte_tok[256][3];
  const char *tokens[T_N];
  for (int b = 0; b < 256; b++) {
    int cp = byte_cp(b);
    if (cp < 0x80) {
      byte_tok[b][0] = (char)cp;
      byte_tok[b][1] = 0;
    } else {
      byte_tok[b][0] = (char)(0xc0 | (cp >> 6));
      byte_tok[b][1] = (char)(0x80 | (cp & 0x3f));
      byte_tok[b][2] = 0;
    }
    tokens[b] = byte_tok[b];
  }
  tokens[T_GT] = "\xc4\xa0t";
  tokens[T_HE] = "he";
  tokens[T_GTHE] = "\xc4\xa0the";
  tokens[T_12] = "12";
  tokens[T_IMS] = "<|im_start|>";
  tokens[T_IME] = "<|im_end|>";
  tokens[T_IMSX] = "<|im_start|>x"; /* longer special sharing a prefix: longest wins */
  static const char *merges[] = {"\xc4\xa0 t", "h e", "\xc4\xa0t he", "1 2"};
  int32_t types[T_N];
  for (int i = 0; i < T_N; i++) types[i] = i >= T_IMS ? 3 : 1;
  gb_header(g, 3);
  gb_kv_str(g, "tokenizer.ggml.model", "gpt2");
  gb_kv_str(g, "tokenizer.ggml.pre", pre);
  gb_kv_arr_str(g, "tokenizer.ggml.tokens", tokens, T_N);
  gb_kv_arr_str(g, "tokenizer.ggml.merges", merges, 4);
  gb_kv_arr_i32(g, "tokenizer.ggml.token_type", types, T_N);
  gb_kv_u32(g, "tokenizer.ggml.bos_token_id", T_IMS);
  gb_kv_u32(g, "tokenizer.ggml.eos_token_id", T_IME);
}

#endif
