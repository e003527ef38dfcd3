"""One token per character: the tokenizer of the CSC models.

Every character of the input (spaces, digits, Latin letters, punctuation, emoji: each Unicode code point) becomes
exactly one token, so a model's output is aligned with its input. Characters outside the vocabulary map to
`[UNK]`. The whole pipeline lives in `tokenizer.json` (no normalizer, a pre-tokenizer that isolates every
character, a word-level model, a BERT-style `[CLS] ... [SEP]` template), so the saved folder also loads as a plain
`PreTrainedTokenizerFast` / `AutoTokenizer` without this file. Self-contained (remote code).
"""

import os
from collections import Counter
from collections.abc import Iterable, Sequence

from tokenizers import Regex, Tokenizer, decoders, pre_tokenizers, processors
from tokenizers.models import WordLevel
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}


class CSCTokenizer(PreTrainedTokenizerFast):
    """A character tokenizer: `tokenizer(text)` gives `len(text) + 2` ids (`[CLS]`, one per character, `[SEP]`).

    Special-token strings inside the text (a literal "[MASK]") are split into characters like any other text.
    Build one with `from_vocab`, `from_texts` or `from_bert_vocab`.
    """

    @classmethod
    def from_vocab(cls, tokens: Iterable[str], **kwargs) -> "CSCTokenizer":
        """Tokenizer over `tokens` in this order (ids follow it); the special tokens are prepended if missing.

        Only single-character tokens can match input characters; others (`##x`, `[unused1]`) keep their ids.
        """
        tokens = list(dict.fromkeys(tokens))
        tokens = [t for t in SPECIAL_TOKENS.values() if t not in tokens] + tokens
        vocab = {token: i for i, token in enumerate(tokens)}
        backend = Tokenizer(WordLevel(vocab, unk_token=SPECIAL_TOKENS["unk_token"]))
        backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
        cls_token, sep_token = SPECIAL_TOKENS["cls_token"], SPECIAL_TOKENS["sep_token"]
        backend.post_processor = processors.TemplateProcessing(
            single=f"{cls_token} $A {sep_token}",
            pair=f"{cls_token} $A {sep_token} $B:1 {sep_token}:1",
            special_tokens=[(cls_token, vocab[cls_token]), (sep_token, vocab[sep_token])],
        )
        backend.decoder = decoders.Fuse()
        kwargs = {"model_max_length": 512, **SPECIAL_TOKENS, **kwargs}
        return cls(tokenizer_object=backend, split_special_tokens=True, **kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        min_freq: int = 1,
        max_size: int | None = None,
        extra_chars: Iterable[str] = (),
        **kwargs,
    ) -> "CSCTokenizer":
        """Vocabulary of the characters of `texts` seen at least `min_freq` times, most frequent first, capped at
        `max_size` tokens (special tokens included), then `extra_chars` (e.g. a confusion set's characters)."""
        counts = Counter(ch for text in texts for ch in text)
        chars = [ch for ch, n in counts.most_common() if n >= min_freq]
        if max_size is not None:
            chars = chars[: max(max_size - len(SPECIAL_TOKENS), 0)]
        return cls.from_vocab(chars + [ch for extra in extra_chars for ch in extra], **kwargs)

    @classmethod
    def from_bert_vocab(cls, path: str | os.PathLike, **kwargs) -> "CSCTokenizer":
        """The vocabulary of a BERT `vocab.txt` (or a folder holding one, e.g. bert-base-chinese's 21,128 tokens),
        with the same ids, so the tokenizer fits that checkpoint's embeddings."""
        if os.path.isdir(path):
            path = os.path.join(path, "vocab.txt")
        with open(path, encoding="utf-8") as f:
            tokens = [line.rstrip("\n") for line in f]
        missing = [t for t in SPECIAL_TOKENS.values() if t not in tokens]
        if missing:
            raise ValueError(f"{path} lacks the special tokens {missing}")
        return cls.from_vocab(tokens, **kwargs)

    def decode_correction(self, text: str, ids: Sequence[int]) -> str:
        """The corrected `text`: `ids` are a model's output aligned with `self(text)["input_ids"]`.

        A character keeps its source form where it is out of vocabulary ([UNK]), where the output is not a
        character token (special, `##x`) or missing (shorter output), so the result always has `len(text)`.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        encoding = self(text, return_offsets_mapping=True)
        chars = list(text)
        for position, (source_id, (start, end)) in enumerate(zip(encoding["input_ids"], encoding["offset_mapping"])):
            if end - start != 1 or source_id == self.unk_token_id or position >= len(ids):
                continue
            token = self.convert_ids_to_tokens(int(ids[position]))
            if token is not None and len(token) == 1:
                chars[start] = token
        return "".join(chars)


__all__ = ["CSCTokenizer"]
