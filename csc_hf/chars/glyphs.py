"""Glyph bitmaps of characters rendered with CJK fonts, and bitmap similarity.

Fonts are found by :func:`find_fonts`; :func:`render_glyphs` draws each
character with Pillow (FreeType, basic layout) at one font size per font,
chosen so that a full-frame ideograph (the union of the ink boxes of
``REFERENCE_CHARS``) exactly fills the ``size`` x ``size`` box.  Every glyph is
centred on the centre of its own ink box, so relative sizes are kept while
positions are normalised.  Characters a font lacks (it would draw its
``.notdef`` glyph) give all-zero bitmaps.  Output bytes are deterministic for a
given font file and Pillow/FreeType build.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "REFERENCE_CHARS",
    "FontSpec",
    "default_font_record",
    "find_fonts",
    "glyph_features",
    "glyph_similarities",
    "glyph_similarity",
    "render_glyphs",
]

REFERENCE_CHARS = "国圆图鬱龍醫"
"""Full-frame ideographs whose joint ink box defines the glyph scale of a font."""

NOTO_CJK_TTC = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"
NOTO_CJK_SC_FACE = "Noto Sans CJK SC"
NOTO_CJK_PACKAGE = "cvttf_NotoSansCJK_Regular"
WQY_MICROHEI_TTC = "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc"
INSTALL_HINT = "apt-get install fonts-noto-cjk, or pip install cvttf-notosanscjk-regular"

_MISSING_CHAR = "\U0010ffff"  # a noncharacter: no font maps it, so it draws .notdef
_PROBE_PX = 128  # font size used to measure REFERENCE_CHARS


@dataclass(frozen=True)
class FontSpec:
    """One font face: file path, face index inside a .ttc, and its name."""

    path: str
    index: int = 0
    name: str = ""


def _load(path: str, index: int, size: float) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size, index=index, layout_engine=ImageFont.Layout.BASIC)


def _open_spec(path: str, index: int) -> FontSpec:
    """FontSpec for an existing, readable face; raises naming the path otherwise."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"font file not found: {path}")
    try:
        family, style = _load(path, index, _PROBE_PX).getname()
    except OSError as err:
        raise OSError(f"cannot open font {path} (face {index}): {err}") from err
    return FontSpec(path, index, f"{family} {style}".strip())


def _parse_font_path(text: str) -> tuple[str, int]:
    path, sep, face = text.rpartition("#")
    if not sep or not face.isdigit():
        return text, 0
    return path, int(face)


def _noto_sc() -> FontSpec | None:
    """The Simplified Chinese face of the Debian Noto Sans CJK collection."""
    if not os.path.isfile(NOTO_CJK_TTC):
        return None
    index = 0
    while True:  # face 2 in current releases; scan by name rather than trust it
        try:
            spec = _open_spec(NOTO_CJK_TTC, index)
        except OSError:
            return None
        if spec.name.startswith(NOTO_CJK_SC_FACE + " "):
            return spec
        index += 1


def _noto_package() -> FontSpec | None:
    spec = importlib.util.find_spec(NOTO_CJK_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    fonts = sorted(f for loc in spec.submodule_search_locations for f in Path(loc).glob("*.[ot]t[fc]"))
    return _open_spec(str(fonts[0]), 0) if fonts else None


def _wqy() -> FontSpec | None:
    return _open_spec(WQY_MICROHEI_TTC, 0) if os.path.isfile(WQY_MICROHEI_TTC) else None


def _fc_list() -> FontSpec | None:
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return None
    listing = subprocess.run(
        [fc_list, "--format", "%{file}\t%{index}\t%{style}\n", ":lang=zh-cn"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    entries = [line.split("\t") for line in listing.splitlines() if line.count("\t") == 2]
    for path, index, _ in sorted(entries, key=lambda e: ("Regular" not in e[2], e[0], int(e[1]))):
        try:
            return _open_spec(path, int(index))
        except OSError:
            continue
    return None


@lru_cache(maxsize=1)
def _default_font() -> FontSpec:
    for finder in (_noto_sc, _noto_package, _wqy, _fc_list):
        spec = finder()
        if spec is not None:
            return spec
    raise RuntimeError(f"no CJK font found; install one: {INSTALL_HINT}")


@lru_cache(maxsize=1)
def default_font_record() -> dict[str, str | int] | None:
    """What the default font (:func:`find_fonts`) is, for the records of what built data depends on: its face name,
    file name, face index and the sha256 of its file (the path differs between machines; the bytes decide the
    glyphs). None where no CJK font is installed."""
    try:
        spec = _default_font()
    except RuntimeError:
        return None
    digest = hashlib.sha256(Path(spec.path).read_bytes()).hexdigest()
    return {"name": spec.name, "file": Path(spec.path).name, "index": spec.index, "sha256": digest}


def find_fonts(paths: Sequence[str] | None = None) -> list[FontSpec]:
    """Fonts to render with.

    ``paths`` are font files, optionally ``"file.ttc#2"`` to pick face 2; each
    must exist and open (FileNotFoundError / OSError naming the path).  Without
    ``paths``, returns the first font found among: Debian fonts-noto-cjk
    (Noto Sans CJK SC face of NotoSansCJK-Regular.ttc), the PyPI package
    cvttf-notosanscjk-regular (Noto Sans CJK TC), fonts-wqy-microhei, then the
    first Chinese font reported by ``fc-list``; RuntimeError if none.
    """
    if paths is None:
        return [_default_font()]
    return [_open_spec(*_parse_font_path(p)) for p in paths]


def _draw(font: ImageFont.FreeTypeFont, ch: str, canvas: int) -> np.ndarray:
    """``ch`` drawn around the centre of a blank canvas x canvas image."""
    image = Image.new("L", (canvas, canvas), 0)
    ImageDraw.Draw(image).text((canvas / 2, canvas / 2), ch, fill=255, font=font, anchor="mm")
    return np.asarray(image)


def _ink_box(bitmap: np.ndarray) -> tuple[int, int, int, int] | None:
    """(top, bottom, left, right) inclusive bounds of the ink, None if blank."""
    rows, cols = np.flatnonzero(bitmap.any(axis=1)), np.flatnonzero(bitmap.any(axis=0))
    return (rows[0], rows[-1], cols[0], cols[-1]) if rows.size else None


def _reference_extent(spec: FontSpec) -> int:
    """Side of the joint ink box of REFERENCE_CHARS at the probe size (0 if none drawn)."""
    probe, canvas = _load(spec.path, spec.index, _PROBE_PX), 3 * _PROBE_PX
    notdef = _draw(probe, _MISSING_CHAR, canvas)
    ink = np.zeros_like(notdef, dtype=bool)
    for ch in REFERENCE_CHARS:
        bitmap = _draw(probe, ch, canvas)
        if not np.array_equal(bitmap, notdef):
            ink |= bitmap > 0
    box = _ink_box(ink)
    return 0 if box is None else max(box[1] - box[0], box[3] - box[2]) + 1


class _Renderer:
    """Draws single characters of one font into centred size x size bitmaps."""

    def __init__(self, spec: FontSpec, size: int) -> None:
        extent = _reference_extent(spec)
        self.font = _load(spec.path, spec.index, _PROBE_PX * size / extent if extent else size)
        self.size = size
        self.canvas = 3 * size
        self.notdef = _draw(self.font, _MISSING_CHAR, self.canvas)

    def render(self, ch: str) -> np.ndarray:
        """Bitmap of one character, or zeros for "" and characters the font lacks."""
        blank = np.zeros((self.size, self.size), dtype=np.uint8)
        if not ch:
            return blank
        bitmap = _draw(self.font, ch, self.canvas)
        box = _ink_box(bitmap)
        if box is None or np.array_equal(bitmap, self.notdef):
            return blank
        limit = self.canvas - self.size
        top = min(max((box[0] + box[1] + 1 - self.size) // 2, 0), limit)
        left = min(max((box[2] + box[3] + 1 - self.size) // 2, 0), limit)
        return bitmap[top : top + self.size, left : left + self.size].copy()


@lru_cache(maxsize=16)
def _renderer(spec: FontSpec, size: int) -> _Renderer:
    return _Renderer(spec, size)


def render_glyphs(chars: Sequence[str], size: int = 32, fonts: Sequence[FontSpec] | None = None) -> np.ndarray:
    """Bitmaps of ``chars``: uint8 array (len(chars), n_fonts, size, size), ink 255.

    Each item must be one character, or "" for an all-zero placeholder
    (e.g. special tokens of a vocabulary).  Characters a font lacks are all
    zero too.  ``fonts`` defaults to :func:`find_fonts`.
    """
    bad = [c for c in chars if len(c) > 1]
    if bad:
        raise ValueError(f"render_glyphs takes single characters, got {bad[:5]!r}")
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    renderers = [_renderer(spec, size) for spec in (find_fonts() if fonts is None else fonts)]
    out = np.zeros((len(chars), len(renderers), size, size), dtype=np.uint8)
    for f, renderer in enumerate(renderers):
        for i, ch in enumerate(chars):
            out[i, f] = renderer.render(ch)
    return out


def glyph_features(bitmaps: np.ndarray) -> np.ndarray:
    """Unit-norm float32 vectors (N, D) of bitmaps shaped (N, ..., H, W).

    Ink is scaled to [0, 1] and blurred with a 3x3 box so that strokes shifted
    by a pixel still overlap; all-zero bitmaps give zero vectors.
    """
    ink = np.asarray(bitmaps, dtype=np.float32) / 255.0
    height, width = ink.shape[-2:]
    padded = np.pad(ink, [(0, 0)] * (ink.ndim - 2) + [(1, 1), (1, 1)])
    blurred = sum(padded[..., dy : dy + height, dx : dx + width] for dy in range(3) for dx in range(3))
    flat = blurred.reshape(len(ink), -1)
    norms = np.linalg.norm(flat, axis=1, keepdims=True)
    return np.divide(flat, norms, out=np.zeros_like(flat), where=norms > 0)


def glyph_similarities(bitmap: np.ndarray, bitmaps: np.ndarray) -> np.ndarray:
    """Cosine similarity (in [0, 1]) of one bitmap to each of ``bitmaps`` (N, *bitmap.shape)."""
    return glyph_features(bitmaps) @ glyph_features(np.asarray(bitmap)[None])[0]


def glyph_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity (in [0, 1]) of two bitmaps of the same shape; 0 if one is blank."""
    return float(glyph_similarities(a, np.asarray(b)[None])[0])
