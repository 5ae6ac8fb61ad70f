/* io/gguf_dequant.c: ggml tensor data types and their conversion to fp32.
 *
 * Block layouts follow ggml (ggml-common.h / ggml-quants.c dequantize_row_*);
 * all fields are little-endian and read byte by byte, so nothing here depends
 * on the host's alignment. Checked against the `gguf` Python package's
 * dequantize (tests/io/test_gguf.c, tests/ref/gguf_ref.py). */
#include <string.h>

#include "io/gguf.h"

#define QK 32    /* elements per block of the legacy quants */
#define QK_K 256 /* elements per super-block of the k-quants */

float gguf_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);               /* inf / nan */
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);        /* normal: rebias 15 -> 127 */
  } else if (mant == 0) {
    bits = sign;                                             /* signed zero */
  } else {                                                   /* subnormal: normalise */
    int e = -1;
    do {
      e++;
      mant <<= 1;
    } while (!(mant & 0x400));
    bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

float gguf_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static float rdh(const uint8_t *p) { return gguf_f16_to_f32(rd16(p)); }

static void deq_f32(const uint8_t *x, float *y, size_t nb) { memcpy(y, x, nb * sizeof(float)); }

static void deq_f16(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++) y[i] = rdh(x + 2 * i);
}

static void deq_bf16(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++) y[i] = gguf_bf16_to_f32(rd16(x + 2 * i));
}

/* Q8_0: f16 d, int8 q[32]; y = d q */
static void deq_q8_0(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++, x += 34, y += QK) {
    float d = rdh(x);
    for (int j = 0; j < QK; j++) y[j] = d * (float)(int8_t)x[2 + j];
  }
}

/* Q4_0: f16 d, 16 bytes of nibbles; low nibbles are elements 0..15, high 16..31; y = d (q - 8) */
static void deq_q4_0(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++, x += 18, y += QK) {
    float d = rdh(x);
    const uint8_t *qs = x + 2;
    for (int j = 0; j < QK / 2; j++) {
      y[j] = d * (float)((qs[j] & 0xf) - 8);
      y[j + QK / 2] = d * (float)((qs[j] >> 4) - 8);
    }
  }
}

/* Q4_1: f16 d, f16 m, nibbles as Q4_0; y = d q + m */
static void deq_q4_1(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++, x += 20, y += QK) {
    float d = rdh(x), m = rdh(x + 2);
    const uint8_t *qs = x + 4;
    for (int j = 0; j < QK / 2; j++) {
      y[j] = d * (float)(qs[j] & 0xf) + m;
      y[j + QK / 2] = d * (float)(qs[j] >> 4) + m;
    }
  }
}

/* Q5_0 / Q5_1: as Q4_x with a fifth bit per element in a 32-bit qh (bit j for element j). */
static void deq_q5(const uint8_t *x, float *y, size_t nb, int with_min) {
  size_t bs = with_min ? 24 : 22;
  for (size_t i = 0; i < nb; i++, x += bs, y += QK) {
    float d = rdh(x), m = with_min ? rdh(x + 2) : 0.0f;
    const uint8_t *h = x + (with_min ? 4 : 2), *qs = h + 4;
    uint32_t qh = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    int off = with_min ? 0 : 16;
    for (int j = 0; j < QK / 2; j++) {
      int lo = (int)((qs[j] & 0xf) | (((qh >> j) & 1) << 4)) - off;
      int hi = (int)((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4)) - off;
      y[j] = d * (float)lo + m;
      y[j + QK / 2] = d * (float)hi + m;
    }
  }
}
static void deq_q5_0(const uint8_t *x, float *y, size_t nb) { deq_q5(x, y, nb, 0); }
static void deq_q5_1(const uint8_t *x, float *y, size_t nb) { deq_q5(x, y, nb, 1); }

/* The 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K/Q5_K. */
static void scale_min_k4(int j, const uint8_t *q, int *sc, int *mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

/* Q4_K: f16 d, f16 dmin, scales[12], qs[128]. Eight sub-blocks of 32; each pair of
 * sub-blocks shares 32 bytes (low nibbles the first, high nibbles the second);
 * y = d*sc*q - dmin*mn. */
static void deq_q4_k(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++, x += 144) {
    float d = rdh(x), dmin = rdh(x + 2);
    const uint8_t *scales = x + 4, *q = x + 16;
    for (int j = 0; j < 8; j += 2, q += 32) {
      int sc, mn;
      scale_min_k4(j, scales, &sc, &mn);
      float d1 = d * (float)sc, m1 = dmin * (float)mn;
      scale_min_k4(j + 1, scales, &sc, &mn);
      float d2 = d * (float)sc, m2 = dmin * (float)mn;
      for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xf) - m1;
      for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
    }
  }
}

/* Q5_K: f16 d, f16 dmin, scales[12], qh[32], qs[128]; Q4_K plus a fifth bit from
 * qh, bit 2k / 2k+1 of qh[l] for the two sub-blocks of pair k. */
static void deq_q5_k(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++, x += 176) {
    float d = rdh(x), dmin = rdh(x + 2);
    const uint8_t *scales = x + 4, *qh = x + 16, *ql = x + 48;
    for (int j = 0; j < 8; j += 2, ql += 32) {
      int sc, mn;
      scale_min_k4(j, scales, &sc, &mn);
      float d1 = d * (float)sc, m1 = dmin * (float)mn;
      scale_min_k4(j + 1, scales, &sc, &mn);
      float d2 = d * (float)sc, m2 = dmin * (float)mn;
      uint8_t u1 = (uint8_t)(1u << j), u2 = (uint8_t)(2u << j);
      for (int l = 0; l < 32; l++) *y++ = d1 * (float)((ql[l] & 0xf) + (qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; l++) *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}

/* Q6_K: ql[128], qh[64], int8 scales[16], f16 d. Two halves of 128 elements;
 * in each, element l + 32k takes 4 low bits from ql and 2 high bits from qh,
 * minus 32, times d * scale[l/16 + 2k]. */
static void deq_q6_k(const uint8_t *x, float *y, size_t nb) {
  for (size_t i = 0; i < nb; i++, x += 210) {
    const uint8_t *ql = x, *qh = x + 128;
    const int8_t *sc = (const int8_t *)(x + 192);
    float d = rdh(x + 208);
    for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; l++) {
        int is = l / 16;
        int q1 = (int)((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int q2 = (int)((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int q3 = (int)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int q4 = (int)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * (float)sc[is] * (float)q1;
        y[l + 32] = d * (float)sc[is + 2] * (float)q2;
        y[l + 64] = d * (float)sc[is + 4] * (float)q3;
        y[l + 96] = d * (float)sc[is + 6] * (float)q4;
      }
    }
  }
}

typedef void (*deq_fn)(const uint8_t *x, float *y, size_t nblocks);

struct dtype_info {
  uint32_t id;
  const char *name;
  size_t block_elems, block_bytes;
  deq_fn deq;  /* NULL: layout known (so files parse) but not converted */
};

static const struct dtype_info dtypes[] = {
  {GGML_F32, "F32", 1, 4, deq_f32},      {GGML_F16, "F16", 1, 2, deq_f16},
  {GGML_Q4_0, "Q4_0", QK, 18, deq_q4_0}, {GGML_Q4_1, "Q4_1", QK, 20, deq_q4_1},
  {GGML_Q5_0, "Q5_0", QK, 22, deq_q5_0}, {GGML_Q5_1, "Q5_1", QK, 24, deq_q5_1},
  {GGML_Q8_0, "Q8_0", QK, 34, deq_q8_0}, {GGML_Q8_1, "Q8_1", QK, 36, NULL},
  {GGML_Q2_K, "Q2_K", QK_K, 84, NULL},   {GGML_Q3_K, "Q3_K", QK_K, 110, NULL},
  {GGML_Q4_K, "Q4_K", QK_K, 144, deq_q4_k}, {GGML_Q5_K, "Q5_K", QK_K, 176, deq_q5_k},
  {GGML_Q6_K, "Q6_K", QK_K, 210, deq_q6_k}, {GGML_Q8_K, "Q8_K", QK_K, 292, NULL},
  {GGML_I8, "I8", 1, 1, NULL},           {GGML_I16, "I16", 1, 2, NULL},
  {GGML_I32, "I32", 1, 4, NULL},         {GGML_I64, "I64", 1, 8, NULL},
  {GGML_F64, "F64", 1, 8, NULL},         {GGML_BF16, "BF16", 1, 2, deq_bf16},
};

static const struct dtype_info *dtype_find(uint32_t type) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].id == type) return &dtypes[i];
  return NULL;
}

const char *gguf_dtype_name(uint32_t type) {
  const struct dtype_info *d = dtype_find(type);
  return d ? d->name : NULL;
}

int gguf_dtype_block(uint32_t type, size_t *block_elems, size_t *block_bytes) {
  const struct dtype_info *d = dtype_find(type);
  *block_elems = d ? d->block_elems : 0;
  *block_bytes = d ? d->block_bytes : 0;
  return d ? 0 : -1;
}

int gguf_dtype_supported(uint32_t type) {
  const struct dtype_info *d = dtype_find(type);
  return d && d->deq;
}

int gguf_dequantize(uint32_t type, const void *src, float *dst, size_t n) {
  const struct dtype_info *d = dtype_find(type);
  if (!d || !d->deq || n % d->block_elems) return -1;
  d->deq((const uint8_t *)src, dst, n / d->block_elems);
  return 0;
}
