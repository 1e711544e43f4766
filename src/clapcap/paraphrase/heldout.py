"""The held-out-vocabulary view: test paraphrases whose substitute words occur in no
training caption and no training view.

The embedded corpus writes view 2 with a second lexicon (:data:`clapcap.data.synth_text.VIEW2`),
and RobustCLAP fine-tunes on the training split's views, so the words of a *test* view-2
caption are words the fine-tune has seen. The held-out view rewrites each test view-2 caption
phrase for phrase with a third lexicon, :data:`HELDOUT` (the same concept at the same place
in the same sentence; articles follow the new word), so the only change from view 2 is
vocabulary that neither the base CLAP nor any fine-tune saw. It tests whether the fine-tune
generalises beyond the words it was given (docs/robust.md).

:func:`heldout_views` refuses a result in which a substitute word occurs in a training
caption or view, or a caption that the rewrite left unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from clapcap.data.synth_text import VIEW2

COLUMN = "paraphrases_heldout"

# concept -> phrases aligned with VIEW2[concept] (the i-th replaces the i-th).
HELDOUT: dict[str, list[str]] = {
    "beep": ["blip", "ping"], "chirp_up": ["soaring squeal", "mounting warble"],
    "chirp_down": ["plunging squeal", "dropping warble"], "noise": ["crackle", "fizz"],
    "clicks": ["rattling", "knocking"], "hum": ["buzz", "thrum"],
    "siren": ["foghorn", "warning horn"], "bell": ["carillon", "ringing"],
    "drum": ["kettledrum beat", "bang"], "melody": ["refrain", "ditty"],
    "low": ["baritone", "growling"], "high": ["squeaky", "treble"],
    "quiet": ["muted", "hushed"], "loud": ["thunderous", "blaring"],
    "once": ["singly"], "twice": ["doubly", "twofold"],
    "repeatedly": ["ceaselessly", "incessantly"],
    "major": ["joyful", "upbeat"], "minor": ["mournful", "somber"],
    "slow": ["sluggish", "languid"], "fast": ["speedy", "hurried"],
    "sine": ["breathy", "hollow"], "square": ["gritty", "nasal"], "pluck": ["strummed", "banjo-like"],
}

_WORD = re.compile(r"[a-z0-9'-]+")


def _table() -> dict[str, str]:
    if set(HELDOUT) != set(VIEW2) or any(len(HELDOUT[c]) != len(VIEW2[c]) for c in VIEW2):
        raise AssertionError("HELDOUT must give one phrase per VIEW2 phrase of every concept")
    return {old: new for c in VIEW2 for old, new in zip(VIEW2[c], HELDOUT[c], strict=True)}


_SUBS = _table()
# One pass, longest phrase first, so that a replaced phrase is never rewritten again.
_PATTERN = re.compile(r"\b(" + "|".join(re.escape(p) for p in sorted(_SUBS, key=len, reverse=True)) + r")\b",
                      re.IGNORECASE)
_ARTICLE = re.compile(r"\b([Aa])n? (?=([A-Za-z]))")


def words(text: str) -> set[str]:
    """The lower-cased words of ``text`` (letters, digits, hyphens, apostrophes)."""
    return set(_WORD.findall(text.lower()))


def substitute_words() -> set[str]:
    """Every word of the held-out lexicon."""
    return {w for phrases in HELDOUT.values() for p in phrases for w in words(p)}


def rewrite(view2: str) -> str:
    """``view2`` with every view-2 phrase replaced by its held-out phrase (articles fixed)."""

    def swap(m: re.Match[str]) -> str:
        new = _SUBS[m.group(0).lower()]
        return new[0].upper() + new[1:] if m.group(0)[0].isupper() else new

    text = _PATTERN.sub(swap, view2)
    # The corpus's own rule (clapcap.data.synth_text._article): "an" before a vowel letter.
    return _ARTICLE.sub(lambda m: m.group(1) + ("n " if m.group(2).lower() in "aeiou" else " "), text)


def heldout_views(view2_lists: Iterable[list[str] | None], training_texts: Iterable[str]) -> tuple[list, dict]:
    """The held-out view of each clip's view-2 captions, checked against the training texts.

    Args:
        view2_lists: per clip, its view-2 captions (None: the clip has none).
        training_texts: every training caption and training view.

    Returns:
        ``(views, stats)``: per clip the rewritten list (None where view 2 is None), and the
        counts written to the paraphrase report.

    Raises:
        ValueError: when a substitute word occurs in the training texts, or a caption has no
            view-2 phrase to replace (it would not be held out).
    """
    seen = set().union(*(words(t) for t in training_texts if t))
    leaked = sorted(substitute_words() & seen)
    if leaked:
        raise ValueError(f"held-out view: substitute word(s) {leaked} occur in the training captions or views")
    out, n = [], 0
    for caps in view2_lists:
        if caps is None:
            out.append(None)
            continue
        new = [rewrite(c) for c in caps]
        same = [c for c, r in zip(caps, new, strict=True) if c == r]
        if same:
            raise ValueError(f"held-out view: no view-2 phrase to replace in {same[0]!r}; the held-out view "
                             "needs view-2 captions written with the corpus's VIEW2 lexicon")
        out.append(new)
        n += len(new)
    used = set().union(*(words(c) for caps in out if caps for c in caps)) & substitute_words()
    return out, {"n_captions": n, "n_substitute_words": len(used), "n_training_words": len(seen),
                 "substitute_words_in_training": 0}
