"""The captioning study's vocabulary analysis at the tracked edge (:func:`log_vocab`,
:func:`run_vocab`). One module per step, so the stage's code fingerprint holds its own study only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap import tracking


def log_vocab(record: dict[str, Any], *, experiment: str, enabled: bool = True,
              dataset_dir: str | Path | None = None, prefix: str = "captioning") -> list[str]:
    """Log ``vocab.json``: a run ``<prefix>/<configuration>/vocab`` per configuration (the
    mean over its seeds: ``test/vocab_mean``, ``test/mean_words_mean``, ..., and the std where
    there are seeds to take it over) and ``<prefix>/references/vocab`` for the references,
    all nested under one parent ``<prefix>/vocab``: the runs table shows one collapsed row
    for the analysis instead of one short run per configuration above the trainings. The
    prefix names the study (``captioning``, ``real_captioning``), which share an experiment."""
    if not enabled:
        return []
    parent = tracking.group_run(experiment, f"{prefix}/vocab", stage="caption_vocab",
                                params={"configurations": len(record["configs"])}, dataset_dir=dataset_dir)
    ids = []
    rows = {config: {stat: {k: v[stat] for k, v in row.items() if isinstance(v, dict)} for stat in ("mean", "std")}
            for config, row in record["configs"].items()}
    for config, stats in rows.items():
        label = config.replace("/", "_")
        with tracking.tracked("caption_vocab", experiment=experiment,
                              name=tracking.run_name(prefix, label, "vocab"),
                              params={"configuration": config, "n_seeds": record["configs"][config]["n_seeds"]},
                              dataset_dir=dataset_dir, parent=parent) as run:
            for stat, values in stats.items():
                tracking.log_metrics({k: v for k, v in values.items() if v is not None}, scope="test", stat=stat)
            ids.append(run.info.run_id)
    with tracking.tracked("caption_vocab", experiment=experiment, name=f"{prefix}/references/vocab",
                          params={"configuration": "references"}, dataset_dir=dataset_dir, parent=parent) as run:
        tracking.log_metrics(record["references"], scope="test")
        ids.append(run.info.run_id)
    return ids


def run_vocab(params: Any) -> dict[str, Any]:
    """:func:`clapcap.experiments.captioning.vocab.vocab_study`, then logged (:func:`log_vocab`)
    when ``params.track``."""
    from clapcap.experiments.captioning.vocab import vocab_study

    record = vocab_study(params)
    log_vocab(record, experiment=params.experiment, enabled=params.track, dataset_dir=params.dataset_dir,
              prefix=params.run_prefix)
    return record
