/* io/test_safetensors_fuzz.c: hostile safetensors files give an error, never a
 * crash or an out-of-bounds read (every case is parsed from a malloc'd buffer
 * of exactly its size, so ASan / valgrind see any overrun). Cases: truncation
 * at every cut point, lying header lengths, offsets past the end, overlaps,
 * holes, unknown dtypes, shape/size mismatches, overflowing shapes, bad JSON,
 * duplicate names, and a few thousand random byte flips of a valid file (which
 * must either fail or yield tensors inside the data section). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "testutil.h"

/* 8-byte length + header + data_len bytes of data (value i & 0xff). */
static uint8_t *make_file(const char *header, uint64_t claimed_len, size_t data_len, size_t *size) {
  size_t h = strlen(header);
  *size = 8 + h + data_len;
  uint8_t *b = malloc(*size ? *size : 1);
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(claimed_len >> (8 * i));
  memcpy(b + 8, header, h);
  for (size_t i = 0; i < data_len; i++) b[8 + h + i] = (uint8_t)i;
  return b;
}

/* Parses a copy of exactly size bytes; returns the st_open_mem result and, on
 * success, checks every tensor lies inside the buffer and converts. */
static int parse(const uint8_t *bytes, size_t size, char *err, size_t errlen) {
  uint8_t *copy = malloc(size ? size : 1);
  memcpy(copy, bytes, size);
  struct st_file f;
  err[0] = 0;
  int rc = st_open_mem(&f, copy, size, "fuzz.safetensors", err, errlen);
  if (!rc) {
    for (int i = 0; i < f.n; i++) {
      const struct st_tensor *t = &f.t[i];
      CHECK(t->begin <= t->end && t->end <= size - f.data_off);
      if (t->dtype == ST_F32 || t->dtype == ST_F16 || t->dtype == ST_BF16) {
        float *x = malloc(t->numel ? t->numel * sizeof *x : 1);
        CHECK(st_tensor_to_f32(&f, t, x, t->numel, err, errlen) == 0);
        free(x);
      }
    }
    st_close(&f);
  } else {
    CHECK_MSG(strstr(err, "fuzz.safetensors") != NULL, "message lacks the file name: %s", err);
  }
  free(copy);
  return rc;
}

static const char *good =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"c\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[32,40]}}";

/* Header variants that must fail, each with a word the message must contain. */
static void test_bad_headers(void) {
  static const char *cases[][3] = {
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,48]}}", "24", "past"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[20,24]}}", "24", "overlaps"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "8", "hole"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "8", "trailing"},
    {"{\"a\":{\"dtype\":\"Q4_K\",\"shape\":[1],\"data_offsets\":[0,4]}}", "4", "unknown dtype 'Q4_K'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]}}", "12", "needs 16"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "4", "bad shape"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", "4", "bad shape"},
    {"{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967295],\"data_offsets\":[0,8]}}", "8",
     "overflow"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", "4", "data_offsets"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", "4", "data_offsets"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "8", "twice"},
    {"{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", "4", "dtype"},
    {"{\"a\":[1,2]}", "0", "needs"},
    {"{\"__metadata__\":{\"k\":1}}", "0", "__metadata__"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", "4", "JSON"},
    {"[1,2,3]", "0", "JSON object"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", "4",
     "dimensions"},
    {"{} x", "0", "junk"}};
  char err[1024];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t size, data = (size_t)atoi(cases[i][1]);
    uint8_t *b = make_file(cases[i][0], strlen(cases[i][0]), data, &size);
    CHECK_MSG(parse(b, size, err, sizeof err) != 0, "case %zu parsed", i);
    CHECK_MSG(strstr(err, cases[i][2]) != NULL, "case %zu: '%s' not in: %s", i, cases[i][2], err);
    free(b);
  }
}

static void test_truncation_and_lengths(void) {
  char err[1024];
  size_t size;
  uint8_t *b = make_file(good, strlen(good), 40, &size);
  CHECK_MSG(parse(b, size, err, sizeof err) == 0, "%s", err);
  int survived = 0;
  for (size_t cut = 0; cut < size; cut++) survived += parse(b, cut, err, sizeof err) == 0;
  CHECK_MSG(survived == 0, "%d truncated files parsed", survived);
  /* lying header lengths: every value near the truth, and huge ones */
  uint64_t lies[] = {0, 1, 2, 7, strlen(good) - 1, strlen(good) + 1, size - 8, size - 7, size,
                     (uint64_t)1 << 32, UINT64_MAX, UINT64_MAX - 7, (uint64_t)ST_MAX_HEADER + 1};
  for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)(lies[i] >> (8 * k));
    CHECK_MSG(parse(b, size, err, sizeof err) != 0, "header length %llu parsed",
              (unsigned long long)lies[i]);
  }
  free(b);
  /* an empty model (header only) is valid, with JSON whitespace after the object */
  b = make_file("{} \n\t", 5, 0, &size);
  CHECK(parse(b, size, err, sizeof err) == 0);
  free(b);
  b = make_file("{}", 2, 0, &size);
  CHECK(parse(b, size, err, sizeof err) == 0);
  free(b);
}

/* Random byte flips in the header and the length: fail cleanly or parse sanely. */
static void test_random_flips(void) {
  char err[1024];
  size_t size;
  uint8_t *b = make_file(good, strlen(good), 40, &size), *m = malloc(size);
  uint64_t s = 12345;
  int ok = 0;
  for (int it = 0; it < 4000; it++) {
    memcpy(m, b, size);
    int flips = 1 + it % 3;
    for (int k = 0; k < flips; k++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      size_t pos = (size_t)(s >> 33) % (8 + strlen(good));
      static const char alphabet[] = "0123456789{}[],:\"ABFUI- e.";
      m[pos] = (s >> 20 & 1) ? (uint8_t)(s >> 24) : (uint8_t)alphabet[(s >> 24) % (sizeof alphabet - 1)];
    }
    ok += parse(m, size, err, sizeof err) == 0;
  }
  printf("random flips: %d of 4000 still valid files\n", ok);
  CHECK(ok < 4000);
  free(m);
  free(b);
}

int main(void) {
  test_bad_headers();
  test_truncation_and_lengths();
  test_random_flips();
  return TEST_RESULT("test_safetensors_fuzz");
}
