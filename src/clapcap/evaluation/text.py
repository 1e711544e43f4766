"""Caption post-processing shared by generation and scoring.

- :func:`trim_to_last_sentence` keeps text up to and including the last sentence
  terminator (``.``, ``!`` or ``?``); text with no terminator is returned stripped, unchanged.
- :func:`trim_to_words` keeps the first ``n`` whitespace-separated words.
- :func:`postprocess` (what scoring applies to every prediction and reference) also joins
  line breaks and runs of whitespace into single spaces: the PTB tokenizer refuses a line
  break, and it splits on whitespace, so the scores are otherwise unchanged.
"""

from __future__ import annotations

import re

_TERMINATOR = re.compile(r"[.!?]")


def trim_to_last_sentence(text: str) -> str:
    """Cut ``text`` after its last complete sentence. Returns the stripped text."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, found {type(text).__name__}")
    ends = [m.end() for m in _TERMINATOR.finditer(text)]
    return (text[: ends[-1]] if ends else text).strip()


def trim_to_words(text: str, n: int) -> str:
    """Keep the first ``n`` words of ``text`` (``n`` >= 1)."""
    if not isinstance(text, str):
        raise TypeError(f"expected str, found {type(text).__name__}")
    if n < 1:
        raise ValueError(f"trim_to_words needs n >= 1, found {n}")
    return " ".join(text.split()[:n])


def postprocess(text: str, *, trim_sentences: bool = False, trim_words: int | None = None) -> str:
    """Join whitespace runs (line breaks included) into single spaces, then apply sentence
    trimming and word trimming, as configured."""
    out = " ".join(text.split())
    if trim_sentences:
        out = trim_to_last_sentence(out)
    if trim_words is not None:
        out = trim_to_words(out, trim_words)
    return out
