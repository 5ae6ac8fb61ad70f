"""gguf_ref.py: writes tests/ref/gguf_dequant.gguf, the golden file of tests/io/test_gguf.c.

Run by hand (the C tests do not need Python):
  PYTHONPATH=/path/to/site-with-gguf python3 tests/ref/gguf_ref.py
needs the `gguf` package from PyPI (llama.cpp's own Python reader/writer).

For every tensor data type D the file holds "q.D" (quantized bytes: quantized
by gguf.quants where it can, else random blocks with sane f16 scales) and
"ref.D" (F32): gguf.quants.dequantize of those bytes, the reference the C
dequantizer must match. It also carries one metadata key of every value type
(written by gguf.GGUFWriter) for the metadata reader test, and a non-default
alignment (64) to exercise the padding rules."""
import os
import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "gguf_dequant.gguf")


def random_blocks(rng, qtype, nblocks, f16_fields):
    """Random block bytes with the f16 fields (byte offsets) set to finite scales."""
    _, bsize = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(nblocks, bsize), dtype=np.uint8)
    for off in f16_fields:
        vals = rng.uniform(0.001, 0.05, size=nblocks).astype(np.float16)
        raw[:, off:off + 2] = vals.view(np.uint8).reshape(nblocks, 2)
    return raw.reshape(-1)


def main():
    rng = np.random.default_rng(1234)
    w = gguf.GGUFWriter(OUT, "llama")
    w.data_alignment = 64
    w.add_uint32("general.alignment", 64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo wörld")
    w.add_uint64("t.u64", 2**40 + 3)
    w.add_int64("t.i64", -(2**40) - 5)
    w.add_float64("t.f64", -2.25)
    w.add_array("t.arr_str", ["a", "", "üñí", "<|im_start|>"])
    w.add_array("t.arr_i32", [1, -2, 3])
    w.add_key_value("t.arr_u8", [7, 8, 9], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.UINT8)

    cases = []  # (name, qtype, raw bytes, element shape [rows, cols])
    x = rng.standard_normal((2, 64)).astype(np.float32)
    for qt in (Q.Q8_0, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.BF16):
        cases.append((qt.name, qt, gguf.quants.quantize(x, qt).reshape(-1), (2, 64)))
    # F16 with the edge cases of the conversion: signed zero, subnormals, max, infinities
    special = np.array([0.0, -0.0, 2.0**-24, -(2.0**-24), 3 * 2.0**-20, 65504.0, -65504.0,
                        np.inf, -np.inf, 1.0, -2.5, 1e-3, 0.1, 3.14159, 1000.0, -7.0],
                       dtype=np.float16)
    cases.append(("F16", Q.F16, special.view(np.uint8), (1, 16)))
    cases.append(("F32", Q.F32, x.reshape(-1).view(np.uint8), (2, 64)))
    kq = {Q.Q4_K: (0, 2), Q.Q5_K: (0, 2), Q.Q6_K: (208,)}
    for qt, fields in kq.items():
        cases.append((qt.name, qt, random_blocks(rng, qt, 2, fields), (1, 512)))

    for name, qt, raw, shape in cases:
        ref = gguf.quants.dequantize(raw, qt).astype(np.float32).reshape(shape)
        w.add_tensor("q." + name, raw.reshape(shape[0], -1), raw_dtype=qt)
        w.add_tensor("ref." + name, ref)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
