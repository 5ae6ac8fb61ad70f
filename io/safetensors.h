/* io/safetensors.h: Hugging Face safetensors files and model directories.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of
 * JSON {"__metadata__": {str: str}, NAME: {"dtype", "shape", "data_offsets":
 * [begin, end]}, ...} and the data section; offsets are relative to the data
 * section. Opening validates everything the reference library does: N against
 * the file size, the JSON, each tensor's dtype, shape and offsets (inside the
 * data section, end - begin == numel * dtype size without size_t overflow), no
 * overlaps and no holes. A bad file gives one message naming the file (and the
 * tensor), never an out-of-bounds read.
 *
 * A model directory is config.json (llama / qwen2 / mistral), model.safetensors
 * or shards named by model.safetensors.index.json, generation_config.json and
 * optional tokenizer files. Loading converts F32 / F16 / BF16 (and F64) to the
 * fp32 parameter table (src/model/params.h); saving writes fp32 or bf16
 * (round-to-nearest-even) such that transformers' from_pretrained loads it. */
#ifndef RLPT_SAFETENSORS_H
#define RLPT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

struct model_config;
struct param_table;

#define ST_MAX_DIMS 8
#define ST_MAX_HEADER (100u << 20) /* the reference library's limit on N */

/* The dtypes of the format; element size via st_dtype_size. */
enum st_dtype {
  ST_BOOL, ST_U8, ST_I8, ST_F8_E5M2, ST_F8_E4M3, ST_I16, ST_U16, ST_F16, ST_BF16, ST_I32, ST_U32,
  ST_F32, ST_F64, ST_I64, ST_U64, ST_DTYPE_COUNT
};

struct st_tensor {
  char name[192];
  enum st_dtype dtype;
  int ndim;
  uint64_t shape[ST_MAX_DIMS];
  uint64_t numel;
  uint64_t begin, end;   /* into the data section */
};

struct st_file {
  char path[512];
  const uint8_t *base;
  size_t size;
  int mapped;            /* 1: base is an mmap to unmap on close */
  size_t data_off;       /* 8 + N */
  int n;
  struct st_tensor *t;
};

/* "BF16" -> ST_BF16; -1 for a name the format does not define. */
int st_dtype_from_name(const char *s);
const char *st_dtype_name(enum st_dtype d);
size_t st_dtype_size(enum st_dtype d);

/* Open and validate a file (mapped read-only). 0, or -1 with "PATH: what" in err. */
int st_open(struct st_file *f, const char *path, char *err, size_t errlen);
/* The same on bytes in memory (not copied; must outlive f); name is for messages. */
int st_open_mem(struct st_file *f, const void *buf, size_t size, const char *name, char *err,
                size_t errlen);
void st_close(struct st_file *f);
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* Tensor to n fp32 values (n must equal its numel); F32, F16, BF16 and F64 only. */
int st_tensor_to_f32(const struct st_file *f, const struct st_tensor *t, float *dst, size_t n,
                     char *err, size_t errlen);

/* fp32 -> bfloat16 bits, round to nearest even (NaN stays a quiet NaN). */
uint16_t st_f32_to_bf16(float x);

/* Write entries [first, last) of t from params as one safetensors file, in
 * dtype ST_F32 or ST_BF16. 0, or -1 with a message. */
int st_write_file(const char *path, const struct param_table *t, int first, int last,
                  const float *params, enum st_dtype dtype, char *err, size_t errlen);

/* ---- model directories ---------------------------------------------------- */

/* Load dir: config from config.json (q/k/v bias and value head from tensor
 * presence), the table built for it and *params (malloc'd, t->total floats).
 * Every table tensor must be present with its shape; an unexpected tensor is
 * an error (rotary inv_freq buffers and a tied model's lm_head are ignored).
 * 0, or -1 with a message naming the file and tensor. */
int st_dir_load(const char *dir, struct model_config *mc, struct param_table *t, float **params,
                char *err, size_t errlen);

/* The config st_dir_load would give (config.json; q/k/v bias and value head
 * from the shards' headers), without reading the weights. 0, or -1. */
int st_dir_config(const char *dir, struct model_config *mc, char *err, size_t errlen);

struct st_save_opts {
  enum st_dtype dtype;        /* ST_BF16 or ST_F32 */
  size_t shard_bytes;         /* 0: one model.safetensors; else shards of at most this many bytes
                                 (a tensor larger than that gets a shard of its own) */
  const char *tokenizer_dir;  /* NULL: no tokenizer files; else copy the HF tokenizer files found */
  int bos_id, eos_id;         /* -1: unknown (taken from tokenizer_dir's configs when given) */
};
/* Write dir (created): config.json, model.safetensors (or shards + index),
 * generation_config.json, tokenizer files. *n_tok_files gets how many tokenizer
 * files were copied (may be NULL). 0, or -1 with a message. */
int st_dir_save(const char *dir, const struct model_config *mc, const float *params,
                const struct st_save_opts *o, int *n_tok_files, char *err, size_t errlen);

/* ---- config.json (io/hf_config.c) ----------------------------------------- */

/* Parse a HF config.json text into mc (qkv_bias and value_head left 0: they
 * come from the tensors). name is for messages. 0, or -1 with a message. */
int hf_config_parse(const char *json, const char *name, struct model_config *mc, char *err,
                    size_t errlen);
/* config.json text (malloc'd) for mc, LlamaForCausalLM or (q/k/v bias)
 * Qwen2ForCausalLM; torch_dtype from dtype; bos/eos written when >= 0. */
char *hf_config_write(const struct model_config *mc, enum st_dtype dtype, int bos_id, int eos_id);
/* bos_token_id / eos_token_id of the HF directory dir: config.json, then
 * generation_config.json (a list: its first id); an id already >= 0 is kept, one
 * outside [0, n_vocab) ignored, absent or unreadable files skipped. */
void hf_token_ids(const char *dir, int n_vocab, int *bos, int *eos);
/* A whole file into a malloc'd NUL-terminated string (NULL with errno set). */
char *hf_read_text(const char *path, size_t *len);

#endif
