"""Character knowledge of a vocabulary as the tensors a CSC model keeps in its checkpoint.

This is where pypinyin, the stroke table and the fonts are used: before the model exists. Not remote code.
"""

import os
import pickle
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from csc_hf.chars.glyphs import find_fonts, render_glyphs
from csc_hf.chars.pinyin import char_readings, sentence_pinyin
from csc_hf.chars.strokes import stroke_sequence
from csc_hf.files import read_lines

from .configuration_csc import CSCConfig
from .modeling_csc import LETTERS, required_knowledge

Vectors = Mapping[str, np.ndarray | torch.Tensor | Sequence[float]]


def build_char_knowledge(
    vocab: Sequence[str] | Mapping[str, int],
    config: CSCConfig | None = None,
    *,
    fonts: Sequence[str] | None = None,
    phonetic_vectors: str | os.PathLike | Vectors | None = None,
    graphic_vectors: str | os.PathLike | Vectors | None = None,
) -> dict[str, torch.Tensor]:
    """The knowledge tensors `config` needs (default: pinyin, strokes and glyphs) for `vocab` (tokens in id order,
    or a token -> id mapping such as `tokenizer.get_vocab()`).

    Only single-character tokens get knowledge; others (special tokens, `##x`) get none. Syllables are the TONE3
    readings of the vocabulary (id 0: none); a character's syllable is its most common reading. Strokes are cut at
    `config.max_strokes`; glyphs are `config.glyph_size` pixels square, one channel per font of `fonts` (font
    files, "file.ttc#2" for a face; default: the first CJK font found). `phonetic_vectors` / `graphic_vectors` (a
    file, see `load_vectors`, or a mapping) give pretrained vectors per syllable (TONE3 or toneless) or per
    character, needed by the `pinyin_vectors` / `glyph_vectors` sources; a syllable without a vector gets the mean
    of its characters' vectors, anything else zeros.
    """
    if config is None:
        config = CSCConfig(sources=["pinyin_gru", "stroke_gru", "glyph_cnn"])
    tokens = sorted(vocab, key=vocab.__getitem__) if isinstance(vocab, Mapping) else list(vocab)
    chars = [token if len(token) == 1 else "" for token in tokens]
    names = required_knowledge(config)
    knowledge = {"is_char": torch.tensor([bool(ch) for ch in chars])}
    if "char_syllable" in names:
        readings = [char_readings(ch) for ch in chars]
        syllables = ["", *sorted({r for rs in readings for r in rs})]
        index = {s: i for i, s in enumerate(syllables)}
        char_syllable = [index[rs[0]] if rs else 0 for rs in readings]
        knowledge["char_syllable"] = torch.tensor(char_syllable)
        knowledge["syllable_letters"] = _padded([[LETTERS.index(c) + 1 for c in s] for s in syllables], 0)
        if "syllable_vectors" in names:
            vectors = _require(phonetic_vectors, "phonetic_vectors", "pinyin_vectors")
            knowledge["syllable_vectors"] = _syllable_vectors(vectors, syllables, chars, char_syllable)
    if "char_strokes" in names:
        strokes = [[int(d) for d in stroke_sequence(ch) or ""] for ch in chars]
        knowledge["char_strokes"] = _padded(strokes, config.max_strokes)
    if "char_glyphs" in names:
        glyphs = render_glyphs(chars, size=config.glyph_size, fonts=find_fonts(fonts))
        knowledge["char_glyphs"] = torch.from_numpy(glyphs)
    if "char_vectors" in names:
        vectors = _require(graphic_vectors, "graphic_vectors", "glyph_vectors")
        knowledge["char_vectors"] = _table([vectors.get(ch) if ch else None for ch in chars])
    return knowledge


def context_pinyin_ids(text: str, syllables: Sequence[str]) -> list[int]:
    """Syllable id of each character of `text` read in context (pypinyin's phrase readings), for a model's
    `pinyin_ids` (`syllables` = `model.base_model.syllables`); 0 for non-Han characters and readings outside
    `syllables`. A collator adds 0 for [CLS], [SEP] and padding."""
    index = {s: i for i, s in enumerate(syllables)}
    return [index.get(s, 0) for s in sentence_pinyin(text)]


VECTOR_FILES = ".npz (keys + vectors, or one array per key), .safetensors (one tensor per key), .pt or text"
"""The files of pretrained vectors :func:`load_vectors` reads, in words."""


def load_vectors(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Pretrained vectors keyed by syllable or character, from `.npz` (arrays `keys` + `vectors`, or one array per
    key), `.safetensors` (one tensor per key), `.pt` (a dict, or `keys` + `vectors`; loaded `weights_only`) or text
    (`key v1 v2 ...` per line, an optional word2vec `count dim` header). Nothing is unpickled (a pickle can run code):
    a `.npy` file, which holds one array and no keys (or a pickled dict), is an error that says how to save it."""
    suffix, label = os.path.splitext(path)[1], f"vectors file {path}"
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{label} does not exist" if not os.path.exists(path) else f"{label} is not a file")
    try:
        if suffix == ".npy":
            raise ValueError(
                "a .npy file holds one array without its keys (or a pickled dict, which is not loaded: a pickle can "
                "run code); save the vectors as .npz: np.savez(path, keys=np.array(keys), vectors=matrix)"
            )
        if suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                data = {name: archive[name] for name in archive.files}
        elif suffix == ".safetensors":
            from safetensors.numpy import load_file

            data = load_file(path)
        elif suffix in (".pt", ".pth"):
            data = dict(torch.load(path, weights_only=True))
        else:
            data = _text_vectors(read_lines(path, "vectors file"))
    except (OSError, ValueError, TypeError, RuntimeError, pickle.UnpicklingError) as err:
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"{label}: {message}" if not message.startswith(label) else message) from None
    if set(data) == {"keys", "vectors"}:
        data = dict(zip((str(k) for k in data["keys"]), data["vectors"]))
    vectors = {str(key): np.asarray(value, dtype=np.float32) for key, value in data.items()}
    if not vectors or any(v.ndim != 1 for v in vectors.values()) or len({v.size for v in vectors.values()}) > 1:
        raise ValueError(f"{label}: expected one vector of the same size per key ({VECTOR_FILES})")
    return vectors


def _text_vectors(lines: list[str]) -> dict[str, np.ndarray]:
    """``key v1 v2 ...`` lines (a word2vec ``count dim`` header has fewer than two values and is skipped)."""
    vectors = {}
    for number, line in enumerate(lines, 1):
        key, *values = line.split(" ")
        if len(values) > 1:
            try:
                vectors[key] = np.asarray(values, dtype=np.float32)
            except ValueError:
                raise ValueError(f"line {number}: expected a key and numbers separated by spaces") from None
    return vectors


def _require(vectors: str | os.PathLike | Vectors | None, argument: str, source: str) -> Vectors:
    if vectors is None:
        raise ValueError(f"the {source} source needs {argument}")
    return vectors if isinstance(vectors, Mapping) else load_vectors(vectors)


def _padded(rows: list[list[int]], width: int) -> torch.Tensor:
    """Rows cut or zero-padded to `width` (0: the longest row)."""
    width = width or max(map(len, rows))
    return torch.tensor([row[:width] + [0] * (width - len(row[:width])) for row in rows], dtype=torch.long)


def _table(rows: list) -> torch.Tensor:
    """Float matrix of `rows`; missing (None) rows are zeros."""
    size = next((len(row) for row in rows if row is not None), None)
    if size is None:
        raise ValueError("no vector matches any syllable or character of the vocabulary")
    rows = [np.zeros(size) if row is None else np.asarray(row) for row in rows]
    return torch.tensor(np.stack(rows), dtype=torch.float)


def _syllable_vectors(
    vectors: Vectors, syllables: list[str], chars: list[str], char_syllable: list[int]
) -> torch.Tensor:
    by_syllable: dict[int, list] = {}
    for ch, s in zip(chars, char_syllable):
        if s and ch in vectors:
            by_syllable.setdefault(s, []).append(np.asarray(vectors[ch]))
    rows = []
    for i, s in enumerate(syllables):
        row = vectors.get(s) if s else None
        if row is None and s:
            row = vectors.get(s.rstrip("12345"))
        if row is None and i in by_syllable:
            row = np.mean(by_syllable[i], axis=0)
        rows.append(row)
    return _table(rows)


__all__ = ["VECTOR_FILES", "build_char_knowledge", "context_pinyin_ids", "load_vectors"]
