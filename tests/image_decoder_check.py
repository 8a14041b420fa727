#!/usr/bin/env python3
"""ImageDecoder beyond its nine node tests, against Pillow (the ONNX
reference's decoder): random images saved by Pillow in every format and
mode it writes that ImageDecoder reads — JPEG (baseline, progressive, grey,
4:4:4 and 4:2:0), PNG (RGB, RGBA, grey, palette, 16-bit grey, 1-bit),
BMP (1, 4, 8 and 24 bits), PNM (PBM, PGM, PPM), TIFF (raw, LZW, deflate,
PackBits, JPEG, grey), WebP (lossy, lossless) and JPEG 2000 (JP2 and raw
codestream, lossless) — decoded in RGB, BGR and Grayscale and compared with
np.array(Image.open(...).convert(mode)) exactly; odd sizes (1x1, 1x37,
31x7); hand-written PNM (ASCII, maxval 1000 and 65535, comments) and a
top-down 32-bit BMP against numpy; and clear errors (exit 1, naming the
problem) for an empty stream, unknown bytes, truncated JPEG/PNG/WebP/JPEG
2000/TIFF streams, a bad pixel_format and a float input.

Usage: image_decoder_check.py DTREXEC"""
import io
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

ROOT = tempfile.mkdtemp(prefix="image-decoder-")
failures = []
rng = np.random.default_rng(20)
count = 0


def model(fmt, dtype=TensorProto.UINT8):
    node = helper.make_node("ImageDecoder", ["data"], ["y"], pixel_format=fmt)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("data", dtype, [None])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])


def run(name, data, fmt="RGB", dtype=np.uint8):
    """(output array or None, exit code, stderr)."""
    global count
    count += 1
    d = os.path.join(ROOT, f"{count:03d}")
    os.makedirs(d)
    m = model(fmt, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    path = os.path.join(d, "model.onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    inp = os.path.join(d, "data.npy")
    np.save(inp, np.frombuffer(data, dtype=np.uint8).astype(dtype))
    res = subprocess.run([sys.argv[1], path, "--input", f"data={inp}", "--output-dir", d, "--quiet"],
                         capture_output=True, text=True, timeout=120)
    out = os.path.join(d, "output_0.pb")
    if res.returncode or not os.path.exists(out):
        return None, res.returncode, res.stderr.strip()
    t = TensorProto()
    with open(out, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t), 0, res.stderr.strip()


def expect(name, data, fmt, want):
    got, rc, err = run(name, data, fmt)
    if got is None:
        failures.append(f"{name} [{fmt}]: exit {rc}: {err}")
    elif got.shape != want.shape or got.dtype != want.dtype:
        failures.append(f"{name} [{fmt}]: got {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
    elif not np.array_equal(got, want):
        diff = np.abs(got.astype(int) - want.astype(int))
        failures.append(f"{name} [{fmt}]: {int((diff > 0).sum())} of {diff.size} samples differ, up to {int(diff.max())}")


def expect_pil(name, data):
    """Every pixel format against Pillow's decode of the same bytes."""
    rgb = np.array(Image.open(io.BytesIO(data)).convert("RGB"))
    expect(name, data, "RGB", rgb)
    expect(name, data, "BGR", np.ascontiguousarray(rgb[:, :, ::-1]))
    grey = np.array(Image.open(io.BytesIO(data)).convert("RGB").convert("L"))[:, :, None]
    expect(name, data, "Grayscale", grey)


def expect_error(name, data, words, fmt="RGB", dtype=np.uint8):
    got, rc, err = run(name, data, fmt, dtype)
    if rc != 1:
        failures.append(f"{name}: exit {rc}, expected 1 ({err})")
    elif not all(w in err for w in words):
        failures.append(f"{name}: message lacks {words}: {err}")


def checker(h, w, tile=3, channels=3):
    cells = rng.integers(0, 256, size=(h // tile + 1, w // tile + 1, channels), dtype=np.uint8)
    img = np.repeat(np.repeat(cells, tile, 0), tile, 1)[:h, :w]
    return img + rng.integers(0, 8, size=img.shape, dtype=np.uint8)


def save(img, fmt, **kw):
    f = io.BytesIO()
    img.save(f, format=fmt, **kw)
    return f.getvalue()


def main():
    base = Image.fromarray(checker(29, 43))
    grey = base.convert("L")
    cases = {
        "jpeg": save(base, "JPEG"),
        "jpeg-q95-444": save(base, "JPEG", quality=95, subsampling=0),
        "jpeg-progressive": save(base, "JPEG", progressive=True),
        "jpeg-grey": save(grey, "JPEG"),
        "png-rgb": save(base, "PNG"),
        "png-rgba": save(base.convert("RGBA"), "PNG"),
        "png-grey": save(grey, "PNG"),
        "png-palette": save(base.convert("P"), "PNG"),
        "png-1bit": save(grey.convert("1"), "PNG"),
        "bmp-24": save(base, "BMP"),
        "bmp-8": save(base.convert("P"), "BMP"),
        "bmp-4": save(base.convert("P", palette=Image.Palette.ADAPTIVE, colors=16), "BMP"),
        "bmp-1": save(grey.convert("1"), "BMP"),
        "ppm": save(base, "PPM"),
        "pgm": save(grey, "PPM"),
        "pbm": save(grey.convert("1"), "PPM"),
        "tiff": save(base, "TIFF"),
        "tiff-lzw": save(base, "TIFF", compression="tiff_lzw"),
        "tiff-deflate": save(base, "TIFF", compression="tiff_adobe_deflate"),
        "tiff-packbits": save(base, "TIFF", compression="packbits"),
        "tiff-grey": save(grey, "TIFF"),
        "webp-lossy": save(base, "WEBP"),
        "webp-lossless": save(base, "WEBP", lossless=True),
        "jp2": save(base, "JPEG2000"),
        "j2k": save(base, "JPEG2000", no_jp2=True),
    }
    for size in [(1, 1), (1, 37), (31, 7)]:
        small = Image.fromarray(checker(*size, tile=1))
        for fmt in ["JPEG", "PNG", "BMP", "PPM", "TIFF", "WEBP"]:
            cases[f"{fmt.lower()}-{size[0]}x{size[1]}"] = save(small, fmt)
    for name, data in cases.items():
        expect_pil(name, data)

    # Hand-written PNM: ASCII, comments, maxval other than 255.
    img = rng.integers(0, 1001, size=(3, 4, 3))
    body = " ".join(str(v) for v in img.ravel())
    expect("ppm-ascii-1000", f"P3\n# a comment\n4 3\n1000\n{body}\n".encode(), "RGB",
           ((img * 255 + 500) // 1000).astype(np.uint8))
    img16 = rng.integers(0, 65536, size=(2, 5)).astype(">u2")
    expect("pgm-16bit", b"P5 5 2 65535\n" + img16.tobytes(), "RGB",
           np.repeat(((img16.astype(np.int64) * 255 + 32767) // 65535).astype(np.uint8)[:, :, None], 3, 2))
    expect("pbm-ascii", b"P1\n3 2\n1 0 1\n0 1 0\n", "RGB",
           np.repeat(np.array([[0, 255, 0], [255, 0, 255]], np.uint8)[:, :, None], 3, 2))
    # 16-bit PNG: Pillow clips such samples to 255 on conversion; the 8-bit
    # value is round(v * 255 / 65535), as libpng's scale_16 gives.
    g16 = rng.integers(0, 65536, size=(5, 7)).astype(np.uint16)
    want16 = np.repeat(((g16.astype(np.int64) * 255 + 32767) // 65535).astype(np.uint8)[:, :, None], 3, 2)
    expect("png-16bit-grey", save(Image.fromarray(g16), "PNG"), "RGB", want16)
    # A top-down 32-bit BMP (negative height), written by hand.
    px = rng.integers(0, 256, size=(3, 2, 4), dtype=np.uint8)   # B, G, R, X
    hdr = b"BM" + (54 + px.size).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little")
    dib = ((40).to_bytes(4, "little") + (2).to_bytes(4, "little") + (-3).to_bytes(4, "little", signed=True) +
           (1).to_bytes(2, "little") + (32).to_bytes(2, "little") + bytes(24))
    expect("bmp-32-topdown", hdr + dib + px.tobytes(), "RGB", np.ascontiguousarray(px[:, :, 2::-1]))

    # Errors.
    expect_error("empty", b"", ["encoded_stream is empty"])
    expect_error("unknown", b"GIF89a" + bytes(20), ["none of JPEG, PNG"])
    for name, n in [("jpeg", 300), ("png-rgb", 60), ("webp-lossy", 40), ("jp2", 200), ("tiff", 100), ("bmp-24", 80),
                    ("ppm", 30)]:
        expect_error(f"truncated-{name}", cases[name][:n], ["ImageDecoder"])
    expect_error("header-only-jpeg", cases["jpeg"][:2] + b"\xff", ["JPEG"])
    expect_error("bad-pixel-format", cases["png-rgb"], ["pixel_format", "RGB, BGR or Grayscale"], fmt="YUV")
    expect_error("float-input", cases["png-rgb"], ["encoded_stream", "uint8"], dtype=np.float32)
    expect_error("bmp-zero-size", cases["bmp-24"][:18] + bytes(8) + cases["bmp-24"][26:], ["BMP", "out of range"])

    if failures:
        print("\n".join(failures))
        print(f"{len(failures)} failure(s) in {count} runs")
        return 1
    print(f"image decoder: {count} runs, all as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
