"""Character knowledge for Chinese Spelling Check: pinyin, strokes and glyphs.

* :mod:`~csc_hf.chars.pinyin` -- TONE3 readings of sentences and characters
  (pypinyin), initial/final splitting, fuzzy-pinyin neighbours.
* :mod:`~csc_hf.chars.strokes` -- stroke orders (shipped table, see
  ``data/NOTICE``) and fast stroke edit distances.
* :mod:`~csc_hf.chars.glyphs` -- CJK font discovery, glyph bitmaps and their
  visual similarity.
"""

from csc_hf.chars.glyphs import (
    FontSpec,
    find_fonts,
    glyph_features,
    glyph_similarities,
    glyph_similarity,
    render_glyphs,
)
from csc_hf.chars.pinyin import (
    FUZZY_FINALS,
    FUZZY_INITIALS,
    HAN_RANGES,
    Syllable,
    char_readings,
    is_han,
    sentence_pinyin,
    similar_syllables,
    split_syllable,
    valid_syllables,
)
from csc_hf.chars.strokes import (
    STROKE_NAMES,
    stroke_distance,
    stroke_distance_matrix,
    stroke_distances,
    stroke_sequence,
    stroke_table,
)

__all__ = [
    "FUZZY_FINALS",
    "FUZZY_INITIALS",
    "HAN_RANGES",
    "STROKE_NAMES",
    "FontSpec",
    "Syllable",
    "char_readings",
    "find_fonts",
    "glyph_features",
    "glyph_similarities",
    "glyph_similarity",
    "is_han",
    "render_glyphs",
    "sentence_pinyin",
    "similar_syllables",
    "split_syllable",
    "stroke_distance",
    "stroke_distance_matrix",
    "stroke_distances",
    "stroke_sequence",
    "stroke_table",
    "valid_syllables",
]
