"""Mechanical checks of an LLM's paraphrase view, after the LLM's own correction pass, and the
per-view record of what happened to each view.

The prompts' parsers already refuse an empty view, a copy of the caption, several lines and an
implausible length (:func:`clapcap.paraphrase.prompts.check_paraphrase`; such an answer is asked
again). This module adds what needs knowledge of the captions' world:

- **refusal**: the model declined or talked about itself ("I'm sorry", "as an AI", ...);
- **length**: a view shorter than half or longer than three times its caption (in words);
- **new sound event**: the view names a sound event that the caption does not (an event is
  known by its words in an event lexicon: for the synthetic corpus, both of its lexicons,
  :data:`clapcap.data.synth_text.TRAIN` and :data:`~clapcap.data.synth_text.VIEW2`). A real
  dataset has no such lexicon; this check is then off (``events=None``);
- **lost sound event** (view 1 only, whose rule is to keep the caption's own words): an event
  of the caption that the view no longer names. View 2 changes the words, and an LLM's synonym
  need not be in the lexicon, so it is not checked for lost events. Neither check sees an
  event outside the lexicon (a "guitar" or a "voice" that the caption never had).

Each view ends as one of (:func:`view_status`): ``accepted`` (kept as generated), ``corrected``
(the correction pass rewrote it, and the rewrite passed), ``dropped`` (it failed: the reason
says which step or check), and the view is then ``null`` in the manifest, never used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

REFUSAL = re.compile(r"\b(i'?m sorry|i am sorry|i cannot|i can'?t|as an ai|language model|i'?m unable|"
                     r"i am unable|cannot help|here(?:'s| is) (?:the|your|a) (?:paraphrase|rewrite|caption))\b",
                     re.IGNORECASE)
MIN_LENGTH_RATIO, MAX_LENGTH_RATIO = 0.5, 3.0


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:-[a-z]+)?", text.lower())


def _has_phrase(words: Sequence[str], phrase: str) -> bool:
    target = phrase.lower().split()
    n = len(target)
    return any(list(words[i:i + n]) == target for i in range(len(words) - n + 1))


def events_in(text: str, events: Mapping[str, Sequence[str]]) -> set[str]:
    """The event concepts of ``events`` (concept -> its words or phrases) that ``text`` names."""
    words = _words(text)
    return {concept for concept, phrases in events.items() if any(_has_phrase(words, p) for p in phrases)}


def corpus_events() -> dict[str, list[str]]:
    """The synthetic corpus's sound events and every word for each (both lexicons)."""
    from clapcap.data.synth_text import LABELS, TRAIN, VIEW2

    return {kind: sorted({*TRAIN[kind], *VIEW2[kind], LABELS[kind]}) for kind in LABELS}


def mechanical_check(caption: str, view: str, events: Mapping[str, Sequence[str]] | None,
                     kind: str = "view2") -> str | None:
    """Why ``view`` (of ``kind`` ``view1`` or ``view2``) fails the mechanical checks (module
    docstring), or None when it passes."""
    if REFUSAL.search(view):
        return "refusal or meta-talk"
    n_cap, n_view = len(_words(caption)), len(_words(view))
    if n_view < MIN_LENGTH_RATIO * n_cap or n_view > MAX_LENGTH_RATIO * max(n_cap, 1):
        return f"length {n_view} words for a caption of {n_cap}"
    if events is not None:
        have, had = events_in(view, events), events_in(caption, events)
        if have - had:
            return f"new sound event(s): {', '.join(sorted(have - had))}"
        if kind == "view1" and had - have:
            return f"lost sound event(s): {', '.join(sorted(had - have))}"
    return None


def view_status(view: str | None, rewritten: bool, error: str | None, check: str | None) -> tuple[str, str]:
    """``(status, reason)`` of one view: ``accepted``, ``corrected`` or ``dropped`` (with why)."""
    if view is None:
        return "dropped", error or "no view"
    if check is not None:
        return "dropped", f"check: {check}"
    return ("corrected", "") if rewritten else ("accepted", "")
