"""Promotion on evidence: a registration creates a version; ``@champion`` moves only on a
significant paired improvement (docs/tracking.md, "Promotion on evidence").

:func:`register_on_evidence` registers the model of the active run, then:

- no champion yet: the new version becomes ``@champion``;
- else the candidate's per-item test scores are compared with the champion's by ``compare``
  (a paired bootstrap on the same items); the alias moves only when the candidate is better
  on the primary metric with a one-sided p below ``alpha``. Otherwise the version gets
  ``@challenger``.

The decision is recorded as tags on the new version: ``clapcap.promotion`` (``evidence``),
``clapcap.decision`` (``champion``/``challenger``), ``clapcap.reason``, ``clapcap.metric``,
``clapcap.difference``, ``clapcap.p_value`` (one-sided), ``clapcap.compared_to`` (the
champion's version, or ``none``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

logger = logging.getLogger(__name__)

Compare = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]


def one_sided_p(difference: float, two_sided_p: float) -> float:
    """One-sided p-value of "candidate better" (``difference > 0``) from the two-sided p of a
    bootstrap whose null distribution is symmetric (shifted to mean zero)."""
    half = two_sided_p / 2.0
    return half if difference > 0 else 1.0 - half


def decide(candidate: Mapping[str, Any], champion: Mapping[str, Any] | None, compare: Compare, *,
           alpha: float = 0.05, higher_is_better: bool = True) -> dict[str, Any]:
    """The promotion decision for ``candidate``'s item scores against ``champion``'s (None: no champion).

    Returns:
        ``{"decision": "champion"|"challenger", "reason", "metric", "difference", "p_value"}``
        (``p_value``: one-sided, None without a comparison).
    """
    if champion is None:
        return {"decision": "champion", "reason": "no champion yet", "metric": candidate.get("primary"),
                "difference": None, "p_value": None}
    row = compare(candidate, champion)
    diff = float(row["difference"]) * (1.0 if higher_is_better else -1.0)
    p = one_sided_p(diff, float(row["p_value"]))
    better = diff > 0 and p < alpha
    reason = (f"better on {row['metric']} by {diff:+.4f}, one-sided p={p:.4f} < {alpha}" if better
              else f"not shown better on {row['metric']} ({diff:+.4f}, one-sided p={p:.4f}, needs < {alpha})")
    return {"decision": "champion" if better else "challenger", "reason": reason, "metric": row["metric"],
            "difference": float(row["difference"]), "p_value": p}


def register_on_evidence(model_uri: str, name: str, *, item_scores: Mapping[str, Any], compare: Compare,
                         artifact_file: str, alpha: float = 0.05, higher_is_better: bool = True,
                         alias: str = "champion") -> dict[str, Any]:
    """Register ``model_uri`` as a new version of ``name`` and set ``@champion`` or
    ``@challenger`` by :func:`decide` against the current ``alias`` holder's ``artifact_file``.

    A champion that carries no item scores (registered before they were logged) cannot be
    compared: the new version is then a challenger, and a person promotes it
    (``clapcap registry promote``).

    Returns:
        :func:`decide`'s dict plus ``"version"``, ``"alias"`` and ``"compared_to"``.
    """
    import mlflow

    from clapcap import tracking

    version = tracking.register_model(model_uri, name)
    current = tracking.alias_version(name, alias)
    if current is None:
        result = decide(item_scores, None, compare, alpha=alpha, higher_is_better=higher_is_better)
    else:
        try:
            champion = tracking.version_artifact_json(name, current, artifact_file)
        except tracking.RegistryError as exc:
            champion = None
            result = {"decision": "challenger", "reason": f"champion v{current} cannot be compared: {exc}",
                      "metric": item_scores.get("primary"), "difference": None, "p_value": None}
        if champion is not None:
            result = decide(item_scores, champion, compare, alpha=alpha, higher_is_better=higher_is_better)
    alias = alias if result["decision"] == "champion" else "challenger"
    client = mlflow.MlflowClient()
    client.set_registered_model_alias(name, alias, str(version))
    tags = {"clapcap.promotion": "evidence", "clapcap.decision": result["decision"], "clapcap.reason": result["reason"],
            "clapcap.metric": str(result["metric"]), "clapcap.difference": str(result["difference"]),
            "clapcap.p_value": str(result["p_value"]),
            "clapcap.compared_to": str(current) if current is not None else "none"}
    for key, value in tags.items():
        client.set_model_version_tag(name, str(version), key, value)
    logger.info("%s v%d -> @%s (%s)", name, version, alias, result["reason"])
    return {**result, "version": version, "alias": alias, "compared_to": current}
