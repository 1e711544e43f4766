"""Promotion on evidence: a registration creates a version; ``@champion`` moves only on a
significant paired improvement (docs/tracking.md, "Promotion on evidence").

:func:`register_on_evidence` registers the model of the active run, then:

- no champion yet: the new version becomes ``@champion``;
- else the candidate's per-item test scores are compared with the champion's by ``compare``
  (a paired bootstrap on the same items); the alias moves only when the candidate is better
  on the primary metric with a one-sided p below ``alpha``. Otherwise the version gets
  ``@challenger``.

A candidate that cannot be compared (its items, split or dataset differ from the champion's,
or the champion carries no item scores) is a challenger too, its reason says why and how to
promote it by hand (:func:`promote_command`). With ``promote=False`` (a registration outside
the DVC pipeline) no alias moves: the version is recorded with decision ``none``.

The decision is recorded as tags on the new version: ``clapcap.promotion`` (``evidence``),
``clapcap.decision`` (``champion``/``challenger``/``none``), ``clapcap.reason``,
``clapcap.metric``, ``clapcap.difference``, ``clapcap.p_value`` (one-sided),
``clapcap.compared_to`` (the champion's version, or ``none``). ``clapcap.decision`` is set
last: a version without it is a registration that did not complete (:func:`settle` completes
it). Extra ``tags`` given at registration (``clapcap.signature``, what a rerun looks for with
:func:`find_registration`) are set with the version itself.

Descriptions (what the MLflow UI shows on the model's and the version's page): the registered
model gets the ``description`` its caller gives (what the model is and which stage makes it);
each version gets :func:`version_description`, the decision and its evidence in words.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from clapcap.errors import InputError
from clapcap.tracking import promote_command  # noqa: F401 (also imported from here)

logger = logging.getLogger(__name__)

Compare = Callable[[Mapping[str, Any], Mapping[str, Any]], Mapping[str, Any]]
DECISION_TAG = "clapcap.decision"
SIGNATURE_TAG = "clapcap.signature"
NOT_PROMOTED = "none"  # the decision of a registration that moves no alias (promote=False)


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
                         alias: str = "champion", promote: bool = True,
                         tags: Mapping[str, str] | None = None, description: str | None = None) -> dict[str, Any]:
    """Register ``model_uri`` as a new version of ``name`` (with ``tags``), then :func:`settle` it.
    ``description``, when given, becomes the registered model's description.

    Returns:
        :func:`settle`'s dict.
    """
    import mlflow

    from clapcap import tracking

    version = tracking.register_model(model_uri, name, tags=tags)
    if description:
        mlflow.MlflowClient().update_registered_model(name, description=description)
    return settle(name, version, item_scores=item_scores, compare=compare, artifact_file=artifact_file,
                  alpha=alpha, higher_is_better=higher_is_better, alias=alias, promote=promote)


def _evidence(name: str, version: int, current: int | None, item_scores: Mapping[str, Any], compare: Compare, *,
              alias: str, artifact_file: str, **rule: Any) -> dict[str, Any]:
    """:func:`decide` against the ``alias`` holder ``current`` (``rule``: ``alpha``,
    ``higher_is_better``); a challenger, ``"comparable": False``, when they cannot be compared."""
    from clapcap import tracking

    if current == version:  # the alias was set before a crash cut the registration short
        return {"decision": "champion", "reason": f"already @{alias}", "metric": item_scores.get("primary"),
                "difference": None, "p_value": None, "comparable": True}
    try:
        champion = None if current is None else tracking.version_artifact_json(name, current, artifact_file)
        return {**decide(item_scores, champion, compare, **rule), "comparable": True}
    except InputError as exc:  # RegistryError (no item scores), or other items / split / dataset
        return {"decision": "challenger", "reason": f"cannot be compared with {name}@{alias} (v{current}): {exc}",
                "metric": item_scores.get("primary"), "difference": None, "p_value": None, "comparable": False}


def version_description(name: str, version: int, result: Mapping[str, Any], moved: str | None,
                        compared: int | None) -> str:
    """The version's description: its decision, the evidence and how to change it (Markdown)."""
    alias = f"@{moved}" if moved else "no alias"
    lines = [f"**{name} v{version}: {alias}** (decision `{result['decision']}`, promotion on evidence).", "",
             f"- Reason: {result['reason']}."]
    if compared is not None and result.get("difference") is not None:
        lines.append(f"- Against v{compared} on `{result['metric']}`: difference {float(result['difference']):+.4g}, "
                     f"one-sided p = {float(result['p_value']):.3g} (paired bootstrap on the same test items).")
    else:
        lines.append(f"- Primary metric: `{result['metric']}`; no paired comparison was made.")
    lines.append("- The per-item test scores are in the run's artifacts; the rule is in docs/tracking.md.")
    return "\n".join(lines)


def settle(name: str, version: int, *, item_scores: Mapping[str, Any], compare: Compare, artifact_file: str,
           alpha: float = 0.05, higher_is_better: bool = True, alias: str = "champion",
           promote: bool = True) -> dict[str, Any]:
    """Decide version ``version`` of ``name`` against the current ``alias`` holder's
    ``artifact_file``: ``@alias``, ``@challenger``, or (``promote`` false) no alias; record the
    decision as tags, ``clapcap.decision`` last. Also completes a registration a crash cut off.

    Returns:
        :func:`decide`'s dict plus ``"version"``, ``"alias"`` (None when no alias moved),
        ``"compared_to"`` and ``"comparable"``.
    """
    import mlflow

    from clapcap import tracking

    current = tracking.alias_version(name, alias)
    result = _evidence(name, version, current, item_scores, compare, alias=alias, artifact_file=artifact_file,
                       alpha=alpha, higher_is_better=higher_is_better)
    moved: str | None = alias if result["decision"] == "champion" else "challenger"
    by_hand = f"to promote it by hand: {promote_command(name, version, alias)}"
    if not promote:
        moved = None
        result.update(decision=NOT_PROMOTED, reason=f"registered outside the DVC pipeline, so no alias moves "
                                                    f"({result['reason']}); {by_hand}")
    elif not result["comparable"]:
        result["reason"] += f"; it is @challenger, {by_hand}"
        logger.warning("%s v%d %s", name, version, result["reason"])
    client = mlflow.MlflowClient()
    compared = current if current != version else None
    tags = {"clapcap.promotion": "evidence", "clapcap.reason": result["reason"],
            "clapcap.metric": str(result["metric"]), "clapcap.difference": str(result["difference"]),
            "clapcap.p_value": str(result["p_value"]), "clapcap.compared_to": str(compared or "none")}
    for key, value in tags.items():
        client.set_model_version_tag(name, str(version), key, value)
    client.update_model_version(name, str(version),
                                description=version_description(name, version, result, moved, compared))
    if moved is not None:
        client.set_registered_model_alias(name, moved, str(version))
    client.set_model_version_tag(name, str(version), DECISION_TAG, result["decision"])
    logger.info("%s v%d -> %s (%s)", name, version, f"@{moved}" if moved else "no alias", result["reason"])
    return {**result, "version": version, "alias": moved, "compared_to": compared}


def find_registration(name: str, signature: str, *, legacy_artifact: str | None = None,
                      tracking_uri: str | None = None) -> dict[str, Any] | None:
    """The newest version of ``name`` registered for ``signature`` (its ``clapcap.signature``
    tag; a version registered before that tag existed matches when its run's JSON artifact
    ``legacy_artifact`` holds ``"signature": signature``) in the store at ``tracking_uri``
    (default: :func:`~clapcap.tracking.default_tracking_uri`), or None.

    Returns:
        ``{"version", "decision"}`` (``decision`` None: the registration did not complete).
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    from clapcap.tracking.store import default_tracking_uri, open_store

    open_store(tracking_uri or default_tracking_uri(), "Default")  # the store's tables, once
    client = mlflow.MlflowClient()
    try:
        versions = client.search_model_versions(f"name = '{name}'")
    except MlflowException:
        return None
    for mv in sorted(versions, key=lambda v: -int(v.version)):
        tagged = mv.tags.get(SIGNATURE_TAG)
        if tagged is None and legacy_artifact and mv.run_id:
            try:
                tagged = mlflow.artifacts.load_dict(f"runs:/{mv.run_id}/{legacy_artifact}").get("signature")
            except (MlflowException, OSError, ValueError):
                tagged = None
        if tagged == signature:
            return {"version": int(mv.version), "decision": mv.tags.get(DECISION_TAG)}
    return None
