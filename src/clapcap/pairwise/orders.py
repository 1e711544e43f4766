"""Judging every pair in both orders, and one judgement from the two (docs/pairwise.md).

An LLM judge that prefers whichever caption it reads first (position bias) looks decisive
when each item is shown once. So, as MT-Bench does against position bias (Zheng et al. 2023,
"Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", section 3.4: the judge is called
twice with the answers swapped, a win needs both orders, and an inconsistent pair is a tie),
every item is asked twice, captions ``A`` then ``B`` and ``B`` then ``A``:

- the two answers are stored as two votes of the raters ``<model>#AB`` and ``<model>#BA``
  (:func:`order_rater`), so the vote store's key ``(item_id, rater)`` and its resume hold;
- the judge's **judgement** on the item (:func:`combine_orders`) is the de-randomised choice
  when both orders give the same one, and ``tie`` when they differ; an item with one order
  only (the other failed) has no judgement and is counted as incomplete;
- per judge, the **consistency** is the share of items whose two orders agree, and the
  **first-shown rate** is the share of its order votes that picked the caption shown first
  (0.5 for no position bias; 1.0 always the first), with a Wilson interval.

Votes of raters without an order suffix (people on the rating page, a judge run with
``both_orders: false``) pass through unchanged.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from clapcap.pairwise.intervals import wilson_interval

ORDERS = ("AB", "BA")
ORDER_SEPARATOR = "#"


def order_rater(model: str, order: str) -> str:
    """The rater name of ``model``'s answers in ``order`` (``AB``/``BA``)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, found {order!r}")
    return f"{model}{ORDER_SEPARATOR}{order}"


def split_rater(rater: str) -> tuple[str, str | None]:
    """``(model, order)`` of an order rater; ``(rater, None)`` for any other rater."""
    model, sep, order = rater.rpartition(ORDER_SEPARATOR)
    return (model, order) if sep and model and order in ORDERS else (rater, None)


def with_models(votes: pd.DataFrame) -> pd.DataFrame:
    """``votes`` with the columns ``model`` and ``order`` (None for a rater without an order)."""
    parts = [split_rater(r) for r in votes["rater"]]
    out = votes.copy()
    out["model"] = [p[0] for p in parts]
    out["order"] = [p[1] for p in parts]
    return out


def combine_orders(votes: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One judgement per judge and item from its two order votes (module docstring).

    Args:
        votes: store rows (``item_id``, ``rater``, ``pool``, ``pair_id``, ``choice``, ...).

    Returns:
        ``(ratings, incomplete)``: the votes with each judge's two order votes replaced by one
        row (rater = the model, ``shown_order`` = ``both``), and the number of (judge, item)
        with one order only, which are left out.
    """
    tagged = with_models(votes)
    plain = tagged[tagged["order"].isna()].drop(columns=["model", "order"])
    ordered = tagged[tagged["order"].notna()]
    rows, incomplete = [], 0
    for (_, model, _), g in ordered.groupby(["pool", "model", "item_id"], sort=True):
        if set(g["order"]) != set(ORDERS):
            incomplete += 1
            continue
        first = g.iloc[0]
        choices = set(g["choice"])
        rows.append({**{c: first[c] for c in plain.columns if c in first.index}, "rater": model,
                     "choice": choices.pop() if len(choices) == 1 else "tie", "shown_order": "both",
                     "shown_choice": ""})
    combined = pd.DataFrame(rows, columns=list(plain.columns))
    frames = [f for f in (plain, combined) if not f.empty]
    out = pd.concat(frames, ignore_index=True) if frames else plain.iloc[0:0]
    return out, incomplete


def judge_key(pool: str, model: str) -> str:
    """How reports name one judge: ``pool/model``."""
    return f"{pool}/{model}"


def order_report(votes: pd.DataFrame, confidence: float = 0.95) -> dict[str, Any]:
    """Per judge (``pool/model``): items asked in both orders, the share whose orders agree,
    and the first-shown rate of its decisive order votes with a Wilson interval."""
    tagged = with_models(votes)
    tagged = tagged[tagged["order"].notna()]
    out: dict[str, Any] = {}
    for (pool, model), g in tagged.groupby(["pool", "model"], sort=True):
        by_item = g.groupby("item_id")
        both = by_item.filter(lambda x: set(x["order"]) == set(ORDERS))
        n_both = int(both["item_id"].nunique())
        consistent = int((both.groupby("item_id")["choice"].nunique() == 1).sum()) if n_both else 0
        decisive = g[g["choice"].isin(["A", "B"])]
        first = int((decisive["choice"] == decisive["order"].str[0]).sum())
        low, high = wilson_interval(first, len(decisive), confidence)
        out[judge_key(str(pool), str(model))] = {
            "items_both_orders": n_both, "consistency": consistent / n_both if n_both else None,
            "first_shown_rate": first / len(decisive) if len(decisive) else None,
            "first_shown_ci_low": low, "first_shown_ci_high": high, "order_votes": int(len(decisive))}
    return out
