"""The metric vocabulary: one MLflow key per concept (docs/tracking.md, "Metric vocabulary").

A key is ``<scope>/[<view>/][<direction>/]<metric>[_<stat>]``:

- ``scope``: the split the number is measured on (``train``, ``val``, ``test``), or ``data``
  for numbers over a whole dataset (a paraphrase report's counts, the retrieval metrics of
  an ``embed --split all`` dump);
- ``view``: a caption view other than the dataset's own captions (``paraphrase``,
  ``view2``); omitted for the original captions, so that the same concept has one key in
  every stage;
- ``direction``: ``t2a``, ``a2t`` (retrieval) or ``a2l`` (zero-shot audio-to-label);
  omitted for captioning metrics and losses;
- ``metric``: the readable name of the JSON results with ``@`` dropped (MLflow refuses it):
  ``r@10`` -> ``r10``, ``map@10`` -> ``map10``, ``chance@10`` -> ``chance10``, ``mrr``,
  ``median_rank``, ``cider_d``, ``spider``, ``loss``;
- ``stat``: ``ci_low``/``ci_high`` (bootstrap interval), ``mean``/``std`` (over the seeds of
  a configuration, on its parent run), ``drop`` (view minus original), ``diff``/``p``
  (paired bootstrap of two models).

This module is pure: it maps names to keys and checks keys, nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clapcap.errors import InputError

SCOPES = ("train", "val", "test", "data")
DIRECTIONS = ("t2a", "a2t", "a2l")
STATS = ("ci_low", "ci_high", "mean", "std", "drop", "diff", "p")
_NAME = re.compile(r"^[a-z0-9_]+$")
_JSON_DIRECTION = re.compile(rf"^({'|'.join(DIRECTIONS)})_(.+)$")  # ``t2a_r@10`` (CLAP training rows)
KEY = re.compile(
    rf"^({'|'.join(SCOPES)})(/[a-z0-9_]+)?(/({'|'.join(DIRECTIONS)}))?/[a-z0-9_]+$"
)


class VocabularyError(InputError):
    """A metric name or key that does not fit the documented vocabulary."""


def metric_name(name: str) -> str:
    """A JSON metric name as the key's ``metric`` part: ``r@10`` -> ``r10``, ``CIDEr-D`` -> ``cider_d``.

    Raises:
        VocabularyError: when nothing of ``name`` is left.
    """
    out = re.sub(r"[^0-9a-z_]+", "_", name.replace("@", "").lower()).strip("_")
    if not out:
        raise VocabularyError(f"metric name {name!r} has no letters or digits")
    return out


def metric_key(name: str, *, scope: str, view: str | None = None, direction: str | None = None,
               stat: str | None = None) -> str:
    """The one key of metric ``name`` (a JSON name) measured on ``scope``.

    A name that carries its direction (``t2a_r@10``) gives the direction itself.

    Returns:
        e.g. ``metric_key("r@10", scope="test", direction="t2a")`` -> ``"test/t2a/r10"``.

    Raises:
        VocabularyError: on an unknown scope, direction or stat, or two directions.
    """
    if scope not in SCOPES:
        raise VocabularyError(f"scope {scope!r} is not one of {SCOPES}")
    found = _JSON_DIRECTION.match(name)
    if found:
        if direction not in (None, found.group(1)):
            raise VocabularyError(f"metric {name!r} names direction {found.group(1)}, not {direction}")
        direction, name = found.group(1), found.group(2)
    if direction is not None and direction not in DIRECTIONS:
        raise VocabularyError(f"direction {direction!r} is not one of {DIRECTIONS}")
    if stat is not None and stat not in STATS:
        raise VocabularyError(f"stat {stat!r} is not one of {STATS}")
    view = None if view in (None, "", "original") else metric_name(view)
    parts = [scope, view, direction, metric_name(name) + (f"_{stat}" if stat else "")]
    return "/".join(p for p in parts if p)


def metric_keys(metrics: Mapping[str, Any], *, scope: str, view: str | None = None,
                direction: str | None = None, stat: str | None = None) -> dict[str, float]:
    """Map a JSON metrics mapping to vocabulary keys (numbers only; text and flags dropped).

    Understands a ``{"t2a": {...}, "a2t": {...}}`` nesting, a ``"ci": {metric: {"low",
    "high"}}`` entry (``_ci_low``/``_ci_high``) and direction-prefixed names (``t2a_r@10``).

    Returns:
        ``{key: float}``.
    """
    out: dict[str, float] = {}
    for name, value in metrics.items():
        if name in DIRECTIONS and isinstance(value, Mapping):
            out.update(metric_keys(value, scope=scope, view=view, direction=name, stat=stat))
        elif name == "ci" and isinstance(value, Mapping):
            for metric, bounds in value.items():
                for end in ("low", "high"):
                    out[metric_key(metric, scope=scope, view=view, direction=direction,
                                   stat=f"ci_{end}")] = float(bounds[end])
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[metric_key(name, scope=scope, view=view, direction=direction, stat=stat)] = float(value)
    return out


def check_key(key: str) -> None:
    """Raise unless ``key`` is a vocabulary key (:data:`KEY`).

    Raises:
        VocabularyError: naming the key and the expected form.
    """
    if not KEY.match(key):
        raise VocabularyError(f"metric key {key!r} is not in the vocabulary: expected "
                              "<scope>/[<view>/][<direction>/]<metric>[_<stat>] "
                              f"with scope in {SCOPES} (docs/tracking.md, 'Metric vocabulary')")
