"""Prompts for the two LLM steps, their human-written in-context examples, and answer parsing.

Step 1 (generation) asks for both views of one caption as a JSON object
``{"view1": ..., "view2": ...}``. Step 2 (correction) shows the caption and one
paraphrase and asks whether every sound event and attribute survived, as
``{"verdict": "keep" | "rewrite", "missing": [...], "paraphrase": ...}``.
Parsers raise :class:`MalformedAnswer`; a malformed answer is never used as a paraphrase.
"""

from __future__ import annotations

import json
import re
from typing import Any

from clapcap.errors import ClapcapError
from clapcap.llm import Message

PROMPT_VERSION = "v1"

GENERATE_SYSTEM = (
    "You rewrite captions of audio clips for a retrieval benchmark. For each caption write two "
    "paraphrases that describe exactly the same sounds:\n"
    "- view1: change the sentence structure (word order, clause order, voice) but keep the "
    "caption's own words for every sound and attribute;\n"
    "- view2: change both the vocabulary and the structure, using different but equally "
    "specific words (synonyms, descriptive rewordings).\n"
    "Keep every sound event, its order, its count and every attribute (loudness, pitch, "
    "texture, material, distance). Do not add sounds. Keep technical terms precise. "
    'Answer with one JSON object {"view1": "...", "view2": "..."} and nothing else.'
)

# Human-written examples (audio-caption style, in the spirit of the paper's appendix).
GENERATE_EXAMPLES: list[tuple[str, dict[str, str]]] = [
    ("Gunfire followed by a click and glass breaking.",
     {"view1": "A click and glass breaking follow the gunfire.",
      "view2": "Shots ring out, then there is a snap and the sound of shattering glass."}),
    ("A dog barks twice while a car engine idles in the distance.",
     {"view1": "While a car engine idles in the distance, a dog barks twice.",
      "view2": "A far-off vehicle motor runs steadily as a hound yaps two times."}),
    ("A metallic clank echoes in a large empty room.",
     {"view1": "In a large empty room, a metallic clank echoes.",
      "view2": "The clang of metal reverberates through a big, vacant hall."}),
    ("Soft rain falls on a tin roof as thunder rumbles.",
     {"view1": "As thunder rumbles, soft rain falls on a tin roof.",
      "view2": "Gentle drizzle patters on sheet metal overhead while a storm grumbles."}),
]

CORRECT_SYSTEM = (
    "You check paraphrases of audio captions. Compare the paraphrase with the original "
    "caption. It must keep every sound event (with its count and order) and every attribute "
    "or modifier (loudness, pitch, speed, material, texture, distance), and must not make a "
    "sound less specific: a 'metallic clank' must not become a 'collision'. {view_rule} "
    "If the paraphrase is faithful, answer "
    '{{"verdict": "keep", "missing": [], "paraphrase": "<the paraphrase unchanged>"}}. '
    "Otherwise rewrite it so that it is faithful while keeping its style, and answer "
    '{{"verdict": "rewrite", "missing": ["<lost details>"], "paraphrase": "<rewritten>"}}. '
    "Answer with that JSON object and nothing else."
)
VIEW_RULES = {
    "view1": "This paraphrase must reuse the caption's own words and only change the structure.",
    "view2": "This paraphrase must use different words and a different structure.",
}

CORRECT_EXAMPLES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("A metallic clank echoes in a large empty room.", "view2",
     "A collision reverberates through a big hall.",
     {"verdict": "rewrite", "missing": ["metallic", "empty"],
      "paraphrase": "The clang of metal reverberates through a big, vacant hall."}),
    ("A dog barks twice while a car engine idles in the distance.", "view2",
     "A far-off vehicle motor runs steadily as a hound yaps two times.",
     {"verdict": "keep", "missing": [],
      "paraphrase": "A far-off vehicle motor runs steadily as a hound yaps two times."}),
]


class MalformedAnswer(ClapcapError, ValueError):
    """An LLM answer does not follow the requested format."""


def generation_messages(caption: str) -> list[Message]:
    """Chat messages for step 1 (generation) of ``caption``."""
    msgs: list[Message] = [{"role": "system", "content": GENERATE_SYSTEM}]
    for cap, answer in GENERATE_EXAMPLES:
        msgs.append({"role": "user", "content": f"Caption: {cap}"})
        msgs.append({"role": "assistant", "content": json.dumps(answer)})
    msgs.append({"role": "user", "content": f"Caption: {caption}"})
    return msgs


def correction_messages(caption: str, view: str, paraphrase: str) -> list[Message]:
    """Chat messages for step 2 (correction) of one paraphrase (``view`` is view1 or view2)."""
    if view not in VIEW_RULES:
        raise ValueError(f"view must be one of {sorted(VIEW_RULES)}, found {view!r}")
    system = CORRECT_SYSTEM.format(view_rule=VIEW_RULES[view])
    msgs: list[Message] = [{"role": "system", "content": system}]
    for cap, v, para, answer in CORRECT_EXAMPLES:
        msgs.append({"role": "user", "content": _correction_user(cap, v, para)})
        msgs.append({"role": "assistant", "content": json.dumps(answer)})
    msgs.append({"role": "user", "content": _correction_user(caption, view, paraphrase)})
    return msgs


def _correction_user(caption: str, view: str, paraphrase: str) -> str:
    return f"Caption: {caption}\nView: {view}\nParaphrase: {paraphrase}"


def _json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and surrounding prose are tolerated)."""
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    start = text.find("{")
    if start < 0:
        raise MalformedAnswer(f"no JSON object in answer {text[:80]!r}")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as err:
        raise MalformedAnswer(f"invalid JSON in answer ({err.msg}): {text[:80]!r}") from None
    if not isinstance(obj, dict):
        raise MalformedAnswer(f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", text.lower()).strip()


def check_paraphrase(caption: str, paraphrase: Any, key: str) -> str:
    """Validate one paraphrase string: non-empty, one line, not a copy, plausible length.

    Returns:
        The stripped paraphrase.

    Raises:
        MalformedAnswer: naming ``key`` and what was expected.
    """
    if not isinstance(paraphrase, str):
        raise MalformedAnswer(f"{key}: expected str, found {type(paraphrase).__name__}")
    text = " ".join(paraphrase.split())
    if not text:
        raise MalformedAnswer(f"{key}: empty paraphrase")
    if "\n" in paraphrase.strip():
        raise MalformedAnswer(f"{key}: expected one line, found several")
    if _norm(text) == _norm(caption):
        raise MalformedAnswer(f"{key}: paraphrase repeats the caption")
    if len(text) > max(200, 4 * len(caption)):
        raise MalformedAnswer(f"{key}: paraphrase of {len(text)} characters is implausibly long")
    return text


def parse_generation(text: str, caption: str) -> dict[str, str]:
    """Parse a step-1 answer.

    Returns:
        ``{"view1": str, "view2": str}``.

    Raises:
        MalformedAnswer: when the answer is not that JSON object or a view is invalid.
    """
    obj = _json_object(text)
    missing = [k for k in ("view1", "view2") if k not in obj]
    if missing:
        raise MalformedAnswer(f"answer lacks key(s) {missing}; found {sorted(obj)}")
    return {k: check_paraphrase(caption, obj[k], k) for k in ("view1", "view2")}


def parse_correction(text: str, caption: str, paraphrase: str) -> tuple[str, bool, list[str]]:
    """Parse a step-2 answer.

    Returns:
        ``(final paraphrase, was_rewritten, missing details)``; a ``keep`` verdict keeps
        ``paraphrase`` as generated.

    Raises:
        MalformedAnswer: on a missing/unknown verdict or an invalid rewrite.
    """
    obj = _json_object(text)
    verdict = obj.get("verdict")
    if verdict not in ("keep", "rewrite"):
        raise MalformedAnswer(f"verdict must be 'keep' or 'rewrite', found {verdict!r}")
    missing = obj.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
        raise MalformedAnswer(f"missing must be a list of str, found {missing!r}")
    if verdict == "keep":
        return paraphrase, False, missing
    return check_paraphrase(caption, obj.get("paraphrase"), "paraphrase"), True, missing
