#!/usr/bin/env python3
"""monitor/check_report.py: check an `rlpt report` HTML file rendered by headless Chromium.

  check_report.py CHROMIUM REPORT.html N_PLOTS WORK_DIR

The file: under 1 MB, nothing external (no URL, script, stylesheet link, url(), @import,
src=), N_PLOTS <svg class="plot"> elements, each with its data area in page pixels
(data-area="x y w h"). The page is screenshotted at its plots' height and every data area
must hold at least MIN_INK saturated pixels (the series colours; axes, grid and text are
grey). Prints the plots found empty; exit 0 when none is, 1 otherwise, 2 on a bad file.
The PNG is decoded here with zlib (8-bit RGB/RGBA, no interlace: what Chromium writes)."""
import os
import re
import struct
import subprocess
import sys
import zlib

MIN_INK = 30          # a 2-px line across 15 px
SATURATION = 60       # max - min channel of a series colour; greys are 0


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def unfilter(f, line, prev, bpp):
    if f == 1:
        for i in range(bpp, len(line)):
            line[i] = (line[i] + line[i - bpp]) & 255
    elif f == 2:
        line = bytearray((a + b) & 255 for a, b in zip(line, prev))
    elif f == 3:
        for i in range(len(line)):
            line[i] = (line[i] + (((line[i - bpp] if i >= bpp else 0) + prev[i]) >> 1)) & 255
    elif f == 4:
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + paeth(a, prev[i], prev[i - bpp] if i >= bpp else 0)) & 255
    return line


def read_png(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError(path + ': not a PNG')
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            hdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat.append(body)
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(path + ': unsupported PNG (depth %d, colour type %d)' % (depth, ctype))
    bpp, raw = (3 if ctype == 2 else 4), zlib.decompress(b''.join(idat))
    stride, rows, prev = w * (3 if ctype == 2 else 4), [], bytearray(w * bpp)
    for y in range(h):
        start = y * (stride + 1)
        prev = unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prev, bpp)
        rows.append(bytes(prev))
    return w, h, bpp, rows


def ink(rows, bpp, x, y, w, h):
    n = 0
    for row in rows[y:y + h]:
        for i in range(x, x + w):
            px = row[i * bpp:i * bpp + 3]
            n += max(px) - min(px) > SATURATION
    return n


def check_file(html, n_plots):
    text = open(html, encoding='utf-8').read()
    size = os.path.getsize(html)
    bad = [s for s in ('http:', 'https:', '<script', 'src=', '<link', 'url(', '@import') if s in text]
    boxes = re.findall(r'<svg class="plot"[^>]*data-title="([^"]*)" data-area="(\d+) (\d+) (\d+) (\d+)"', text)
    page = re.search(r'data-page-h="(\d+)"', text)
    print('report: %d bytes, %d plots, external references: %s' % (size, len(boxes), bad or 'none'))
    ok = size < 1 << 20 and not bad and len(boxes) == n_plots and page
    return ok, boxes, int(page.group(1)) if page else 0


def main():
    chromium, html, n_plots, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    ok, boxes, page_h = check_file(html, n_plots)
    if not ok:
        print('REPORT_FILE_BAD')
        return 2
    png = os.path.join(work, os.path.basename(html) + '.png')
    subprocess.run([chromium, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
                    '--force-device-scale-factor=1', '--user-data-dir=' + os.path.join(work, 'chromium'),
                    '--window-size=1300,%d' % page_h, '--screenshot=' + png,
                    'file://' + os.path.abspath(html)], check=True, timeout=120,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    w, h, bpp, rows = read_png(png)
    empty = 0
    for title, x, y, bw, bh in boxes:
        x, y, bw, bh = int(x), int(y), int(bw), int(bh)
        n = ink(rows, bpp, x, y, min(bw, w - x), min(bh, h - y)) if x < w and y < h else 0
        print('plot %-40s %6d series pixels%s' % (title, n, '' if n >= MIN_INK else '  EMPTY'))
        empty += n < MIN_INK
    print('%d of %d plots empty' % (empty, len(boxes)))
    return 1 if empty else 0


if __name__ == '__main__':
    sys.exit(main())
