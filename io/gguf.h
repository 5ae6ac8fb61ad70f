/* io/gguf.h: read GGUF (v2/v3) model files: metadata, tensor infos, dequantized
 * tensors, and the whole model into the parameter table.
 *
 * The file is mapped read-only and every length, count and offset is checked
 * against its size before use, so a truncated or lying file gives an error
 * message naming the file and the problem, never an out-of-bounds read.
 * Strings in the parsed structures point into the mapping (not NUL-terminated:
 * use the length). Tensor shapes are GGUF's: ne[0] is the innermost (row)
 * length, so a Hugging Face [out, in] weight has ne = {in, out}. */
#ifndef RLPT_GGUF_H
#define RLPT_GGUF_H

#include <stddef.h>
#include <stdint.h>

struct model_config;
struct param_table;

/* Metadata value types (GGUF spec). */
enum gguf_vtype {
  GGUF_U8 = 0, GGUF_I8 = 1, GGUF_U16 = 2, GGUF_I16 = 3, GGUF_U32 = 4, GGUF_I32 = 5,
  GGUF_F32 = 6, GGUF_BOOL = 7, GGUF_STRING = 8, GGUF_ARRAY = 9, GGUF_U64 = 10, GGUF_I64 = 11,
  GGUF_F64 = 12, GGUF_VTYPE_COUNT = 13
};

/* Tensor data types (ggml ids) this reader knows the layout of. */
enum gguf_dtype {
  GGML_F32 = 0, GGML_F16 = 1, GGML_Q4_0 = 2, GGML_Q4_1 = 3, GGML_Q5_0 = 6, GGML_Q5_1 = 7,
  GGML_Q8_0 = 8, GGML_Q8_1 = 9, GGML_Q2_K = 10, GGML_Q3_K = 11, GGML_Q4_K = 12, GGML_Q5_K = 13,
  GGML_Q6_K = 14, GGML_Q8_K = 15, GGML_I8 = 24, GGML_I16 = 25, GGML_I32 = 26, GGML_I64 = 27,
  GGML_F64 = 28, GGML_BF16 = 30
};

#define GGUF_MAX_DIMS 4
#define GGUF_DEFAULT_ALIGNMENT 32

struct gguf_str {
  const char *p;  /* into the mapping; not NUL-terminated */
  uint64_t len;
};

struct gguf_kv {
  struct gguf_str key;
  uint32_t type;        /* enum gguf_vtype */
  uint32_t arr_type;    /* element type when type == GGUF_ARRAY */
  uint64_t arr_n;       /* element count when type == GGUF_ARRAY */
  const uint8_t *val;   /* the value's bytes (array: its first element) */
};

struct gguf_tensor {
  struct gguf_str name;
  uint32_t n_dims;
  int64_t ne[GGUF_MAX_DIMS];  /* unused dims are 1 */
  uint32_t type;              /* enum gguf_dtype */
  uint64_t offset;            /* relative to the data section */
  uint64_t nbytes;
  const uint8_t *data;
};

struct gguf_file {
  char path[512];
  const uint8_t *base;
  size_t size;
  int mapped;           /* 1: base is an mmap to unmap on close */
  uint32_t version;
  uint64_t alignment;
  size_t data_off;      /* start of the tensor data section */
  uint64_t n_kv, n_tensors;
  struct gguf_kv *kv;
  struct gguf_tensor *tensors;
};

/* Open and validate a file. Returns 0, or -1 with "PATH: what was wrong" in err. */
int gguf_open(struct gguf_file *f, const char *path, char *err, size_t errlen);
/* The same on bytes in memory (not copied; must outlive f). name is used in messages. */
int gguf_open_mem(struct gguf_file *f, const void *buf, size_t size, const char *name, char *err,
                  size_t errlen);
void gguf_close(struct gguf_file *f);

const struct gguf_kv *gguf_find_kv(const struct gguf_file *f, const char *key);
const struct gguf_tensor *gguf_find_tensor(const struct gguf_file *f, const char *name);

/* Typed getters: 0 on success; -1 with a message when the key is missing or
 * has an incompatible type (any integer type converts when the value fits). */
int gguf_get_int(const struct gguf_file *f, const char *key, int64_t *out, char *err, size_t errlen);
int gguf_get_float(const struct gguf_file *f, const char *key, double *out, char *err,
                   size_t errlen);
int gguf_get_str(const struct gguf_file *f, const char *key, struct gguf_str *out, char *err,
                 size_t errlen);
/* Array of strings: *out is a malloc'd index of n strings into the mapping. */
int gguf_get_str_array(const struct gguf_file *f, const char *key, struct gguf_str **out,
                       uint64_t *n, char *err, size_t errlen);
/* Array of integers (any integer element type), converted to a malloc'd int32 array. */
int gguf_get_int_array(const struct gguf_file *f, const char *key, int32_t **out, uint64_t *n,
                       char *err, size_t errlen);

/* Names and layouts of the dtypes: "Q4_K"; NULL for unknown ids. */
const char *gguf_dtype_name(uint32_t type);
/* Block size in elements and bytes per block; 0 for unknown ids. */
int gguf_dtype_block(uint32_t type, size_t *block_elems, size_t *block_bytes);
/* 1 when gguf_dequantize can convert this dtype. */
int gguf_dtype_supported(uint32_t type);
/* Dequantize n elements (a multiple of the block size) of type from src to fp32.
 * src must hold n / block_elems blocks. Returns 0, or -1 for an unsupported type. */
int gguf_dequantize(uint32_t type, const void *src, float *dst, size_t n);
/* Whole tensor to fp32 (dst holds numel floats). Returns 0 or -1 with a message. */
int gguf_tensor_to_f32(const struct gguf_file *f, const struct gguf_tensor *t, float *dst,
                       char *err, size_t errlen);
/* Elements of a tensor. */
size_t gguf_tensor_numel(const struct gguf_tensor *t);

/* half / bfloat16 bits to float */
float gguf_f16_to_f32(uint16_t h);
float gguf_bf16_to_f32(uint16_t h);

/* Load a llama/qwen2-architecture model: config from the metadata, the
 * parameter table built for it, and *params (malloc'd, table->total floats)
 * filled with the dequantized weights under their Hugging Face names; llama.cpp's
 * RoPE row permutation of q/k is undone. Returns 0, or -1 with a message. */
int gguf_load_model(const char *path, struct model_config *mc, struct param_table *table,
                    float **params, char *err, size_t errlen);
/* Only the model config (shape, RoPE, norm) from the metadata; no tensor is read. */
int gguf_model_config(const struct gguf_file *f, struct model_config *mc, char *err, size_t errlen);
/* The same from an opened file. */
int gguf_model_load(const struct gguf_file *f, struct model_config *mc, struct param_table *table,
                    float **params, char *err, size_t errlen);

#endif
