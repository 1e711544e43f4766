"""Variants of the synthetic CLAP (params.yaml ``clap_variants``), each trained, tested and
compared, paired, with the synthetic CLAP on the same test split.

A variant is a set of ``train_clap`` overrides: ``{text_tower: scratch, optim: {epochs: 60}}`` is the
tiny from-scratch CLAP that was the default before the MiniLM text tower, ``{text_trainable_layers:
0}`` the MiniLM tower frozen. The reduced study runs none; ``STUDY=full`` runs both.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from clapcap.clap.config import TrainClapParams
from clapcap.compute import Compute
from clapcap.config import ConfigError

logger = logging.getLogger(__name__)


@dataclass
class ClapVariantStudy:
    """Section ``clap_variants``: ``variants`` (name -> ``train_clap`` overrides), each written to
    ``<out_root>/clap_<name>``, registered as ``clapcap-clap-<name>``, evaluated on ``split``
    and compared with ``baseline_dump`` (the synthetic CLAP's test dump)."""

    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    out_root: str = "models"
    split: str = "test"
    dump_dir: str = "data/embeddings"
    dataset: str = "corpus"
    baseline: str = "synth_clap"
    baseline_dump: str = "data/embeddings/synth_clap/corpus/test.npz"
    metrics_dir: str = "metrics/clap_variants"
    n_resamples: int = 1000
    seed: int = 0

    def params_for(self, base: TrainClapParams, variant: str) -> TrainClapParams:
        """``base`` (the ``train_clap`` section) with ``variants[variant]`` applied.

        Raises:
            ConfigError: naming an unknown variant or an unknown field of a variant.
        """
        if variant not in self.variants:
            raise ConfigError(f"clap_variants.variants has no {variant!r}; known: {sorted(self.variants)}")
        unknown = sorted(set(self.variants[variant]) - set(TrainClapParams.__dataclass_fields__))
        if unknown:
            raise ConfigError(f"clap_variants.variants.{variant}: unknown field(s) {unknown}")
        from clapcap.config import from_dict

        values = {**asdict(base), **self.variants[variant], "model": base.model, "optim": base.optim,
                  "out_dir": str(Path(self.out_root) / f"clap_{variant}"),
                  "registered_model": f"clapcap-clap-{variant}"}
        if values["text_tower"] == "scratch":  # the MiniLM-only fields back to their defaults
            values.update(text_dir="", text_trainable_layers=-1)
        for block in ("model", "optim"):  # nested blocks: a variant overrides some of their keys
            if isinstance(self.variants[variant].get(block), dict):
                base_block = getattr(base, block)
                values[block] = from_dict(type(base_block), {**asdict(base_block), **self.variants[variant][block]},
                                          where=f"clap_variants.variants.{variant}.{block}")
        return TrainClapParams(**values)


def evaluate_variant(study: ClapVariantStudy, base: TrainClapParams, variant: str, *, progress: bool = True,
                     compute: Compute | None = None) -> dict[str, Any]:
    """Embed ``study.split`` with a trained variant (the ``hf_clap`` backend, the standard dump),
    evaluate it with bootstrap CIs, and compare it paired with the baseline dump (A = this
    variant, B = the synthetic CLAP).

    Writes ``<metrics_dir>/clap_<variant>__<dataset>__<split>.json`` and
    ``<metrics_dir>/clap_<variant>_vs_<baseline>.json``.

    Returns:
        ``{"metrics": ..., "vs_baseline": ...}``.
    """
    from clapcap.encoders.base import EncoderConfig
    from clapcap.encoders.embed import dump_path, embed_dataset
    from clapcap.retrieval.evaluate import compare_files, evaluate_file

    params = study.params_for(base, variant)
    name = f"clap_{variant}"
    cfg = EncoderConfig(name=name, backend="hf_clap", checkpoint=str(Path(params.out_dir) / "model"), batch_size=32)
    dump = embed_dataset(cfg, params.dataset_dir, study.split,
                         dump_path(study.dump_dir, name, study.dataset, study.split), progress=progress,
                         compute=compute)
    out = Path(study.metrics_dir)
    metrics = evaluate_file(dump, out / f"{name}__{study.dataset}__{study.split}.json",
                            bootstrap=study.n_resamples, seed=study.seed)
    versus = compare_files(dump, study.baseline_dump, out / f"{name}_vs_{study.baseline}.json",
                           n_resamples=study.n_resamples, seed=study.seed)
    diff = versus["t2a"]["r@10"]
    logger.info("%s: test t2a r@10 %.3f; minus %s: %+.3f [%+.3f, %+.3f], p = %.3g", name, metrics["t2a"]["r@10"],
                study.baseline, diff["difference"], diff["ci"]["low"], diff["ci"]["high"], diff["p_value"])
    return {"metrics": metrics, "vs_baseline": versus}
