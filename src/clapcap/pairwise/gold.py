"""Gold pairs: items with a known answer, to measure each judge before trusting it.

A gold item compares a true caption of a clip with a decoy (the kinds, both built by rule
from the reference split, nothing generated):

- ``other_clip``: the decoy is the first reference of another clip, the one of a seeded
  sample of 20 whose words overlap the clip's references least (Jaccard over lower-cased
  word sets), so it describes something else;
- ``shuffled``: the decoy is the true caption's words in a seeded random order (captions
  of fewer than three words, or whose shuffles all read the same, give no item).

The true caption is the clip's second reference when it has several, else its first; text
judges are shown the first reference as the clip's description, so with one reference the
``other_clip`` item asks the judge to recognise the description itself: a floor every judge
should clear. Gold items have the pairs file's columns (:data:`~clapcap.pairwise.pairs.
PAIR_COLUMNS`) plus ``gold`` (the correct side, ``A`` or ``B``) and ``gold_kind``; their
``item_id`` is ``<clip>::gold:<kind>``, so no study item shares one.

**Accuracy** (:func:`gold_accuracy`), per judge (``pool/model``): over its order votes on
gold items (each item asked in both orders, :mod:`clapcap.pairwise.orders`), the share that
picked the true caption, with a Wilson interval; chance is 0.5 and a judge that always picks
the first caption shown scores exactly 0.5. A judge **passes** when the interval's lower
bound is above 0.5; the study leaves a judge that does not pass out of its agreement and
preference numbers. ``both_orders_correct`` is the share of gold items the judge got right
in both orders (its judgement under :func:`~clapcap.pairwise.orders.combine_orders`).
"""

from __future__ import annotations

import random
import re
from typing import Any

import pandas as pd

from clapcap.pairwise.intervals import wilson_interval
from clapcap.pairwise.orders import judge_key, with_models
from clapcap.pairwise.pairs import PAIR_COLUMNS
from clapcap.pairwise.ratings import make_pair_id

GOLD_KINDS = ("other_clip", "shuffled")
GOLD_COLUMNS = (*PAIR_COLUMNS, "gold", "gold_kind")
TRUE_SYSTEM = "reference"
_CANDIDATES = 20
_WORD = re.compile(r"[a-z0-9']+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _shuffled(caption: str, rng: random.Random) -> str | None:
    words = caption.split()
    if len(words) < 3 or len(set(words)) < 2:
        return None
    for _ in range(10):
        perm = words[:]
        rng.shuffle(perm)
        if perm != words:
            return " ".join(perm)
    return None


def make_gold_items(reference: pd.DataFrame, *, n_clips: int, seed: int = 0,
                    kinds: tuple[str, ...] = GOLD_KINDS) -> pd.DataFrame:
    """Gold items on a seeded sample of ``n_clips`` clips of ``reference``
    (:func:`~clapcap.pairwise.pairs.read_reference`), one per kind and clip where the rule
    gives one (module docstring).

    Raises:
        ValueError: on an unknown kind, or fewer than two clips (``other_clip`` needs another).
    """
    unknown = set(kinds) - set(GOLD_KINDS)
    if unknown:
        raise ValueError(f"unknown gold kind(s) {sorted(unknown)}; expected some of {GOLD_KINDS}")
    clips = sorted(reference.index)
    if len(clips) < 2:
        raise ValueError(f"gold pairs need at least two clips in the reference split, found {len(clips)}")
    rng = random.Random(seed)
    chosen = sorted(rng.sample(clips, min(n_clips, len(clips))))
    words = {c: _words(" ".join(reference.loc[c, "captions"])) for c in clips}
    rows = []
    for clip in chosen:
        refs = reference.loc[clip, "captions"]
        true = refs[1] if len(refs) > 1 else refs[0]
        decoys = {}
        if "other_clip" in kinds:
            others = rng.sample([c for c in clips if c != clip], min(_CANDIDATES, len(clips) - 1))
            other = min(others, key=lambda c: _jaccard(words[clip], words[c]))  # first of the least overlapping
            decoys["other_clip"] = reference.loc[other, "caption"]
        if "shuffled" in kinds:
            decoys["shuffled"] = _shuffled(true, rng)
        for kind, decoy in decoys.items():
            if decoy is None or decoy == true:
                continue
            decoy_system = f"decoy_{kind}"  # sorts before "reference": A is the decoy, B the truth
            rows.append({"item_id": f"{clip}::gold:{kind}", "pair_id": make_pair_id(decoy_system, TRUE_SYSTEM),
                         "clip_id": clip, "system_a": decoy_system, "system_b": TRUE_SYSTEM,
                         "caption_a": decoy, "caption_b": true, "reference": reference.loc[clip, "caption"],
                         "audio_path": reference.loc[clip, "audio_path"], "gold": "B", "gold_kind": kind})
    return pd.DataFrame(rows, columns=list(GOLD_COLUMNS))


def gold_accuracy(votes: pd.DataFrame, gold: pd.DataFrame, confidence: float = 0.95) -> dict[str, Any]:
    """Per judge (``pool/model``): accuracy on the gold items (module docstring).

    Args:
        votes: store rows; only order votes (raters ``<model>#AB``/``#BA``) on gold items count.
        gold: the gold items (``item_id``, ``gold``, ``gold_kind``).

    Returns:
        ``{judge: {"accuracy", "ci_low", "ci_high", "passes", "order_votes", "items",
        "both_orders_correct", "by_kind": {kind: accuracy}}}``.
    """
    answers = gold.set_index("item_id")[["gold", "gold_kind"]]
    on_gold = with_models(votes[votes["item_id"].isin(answers.index)])
    on_gold = on_gold[on_gold["order"].notna()].copy()
    on_gold["correct"] = on_gold["choice"].to_numpy() == answers.loc[on_gold["item_id"], "gold"].to_numpy()
    on_gold["kind"] = answers.loc[on_gold["item_id"], "gold_kind"].to_numpy()
    out: dict[str, Any] = {}
    for (pool, model), g in on_gold.groupby(["pool", "model"], sort=True):
        n, right = len(g), int(g["correct"].sum())
        low, high = wilson_interval(right, n, confidence)
        per_item = g.groupby("item_id").agg(n=("order", "nunique"), right=("correct", "all"))
        out[judge_key(str(pool), str(model))] = {
            "accuracy": right / n, "ci_low": low, "ci_high": high, "passes": bool(low > 0.5),
            "order_votes": n, "items": int(len(per_item)),
            "both_orders_correct": float(((per_item["n"] == 2) & per_item["right"]).mean()),
            "by_kind": {str(k): float(k_g["correct"].mean()) for k, k_g in g.groupby("kind", sort=True)}}
    return out
