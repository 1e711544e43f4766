"""Hugging Face model cards for the saved CLAP model folders, from the build's own numbers.

Each folder ``models/<name>/`` (its ``model/`` is a ``transformers`` ``ClapModel`` folder) gets a
``README.md``: the YAML header of a Hugging Face model card, written with ``huggingface_hub``'s
own ``ModelCardData`` and ``EvalResult`` (``library_name``, ``pipeline_tag``, ``license``,
``base_model`` where the weights start from another model, ``datasets``, ``metrics`` and a
``model-index`` with every benchmark and direction of the robustness benchmark's test results),
then what the model is, how to load it, its results with 95 % CIs, and its limits.

``base_model`` on the Hub is a repository id: the synthetic CLAP's text tower starts from
``sentence-transformers/all-MiniLM-L6-v2``; a fine-tune of a model built here names that model's
folder in this repository (``models/synth_clap``), which a user replaces with the id they
push it under.
The cards are rewritten by the ``model_cards`` stage whenever a model or the benchmark changes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.utils.io import atomic_path, read_json

logger = logging.getLogger(__name__)

DIRECTION_NAMES = {"t2a": "text-to-audio retrieval", "a2t": "audio-to-text retrieval"}
# huggingface_hub groups model-index results by (task type, dataset type, config, split): the
# direction is the task type and the benchmark (which captions) the dataset config, so no two
# directions or benchmarks share a block.
TASK_TYPES = {"t2a": "text-to-audio-retrieval", "a2t": "audio-to-text-retrieval"}


@dataclass
class CardModel:
    """One model folder's card: ``label`` is its name in the benchmark file."""

    label: str
    summary: str
    base_model: str | None = None


@dataclass
class ModelCardParams:
    """``model_cards`` section of params.yaml."""

    benchmark: str = "results/robust/benchmark.json"
    models_dir: str = "models"
    models: dict[str, CardModel] = field(default_factory=dict)
    dataset: str = "clapcap-synthetic-corpus"
    dataset_name: str = "clapcap synthetic corpus"
    metrics: list[str] = field(default_factory=lambda: ["r@1", "r@10", "map@10"])
    license: str = "mit"

    def __post_init__(self) -> None:
        from clapcap.errors import ConfigError
        from clapcap.retrieval.table import by_name

        for name in self.metrics:  # corpus keys of the retrieval metric table
            try:
                by_name(name)
            except KeyError as err:
                raise ConfigError(f"model_cards.metrics: {err.args[0]}") from None


class ModelCardError(ValueError):
    """The benchmark lacks a model or metric that a card needs."""


def _card_data(name: str, model: CardModel, results: dict[str, Any], params: ModelCardParams) -> Any:
    from huggingface_hub import EvalResult, ModelCardData

    evals = []
    for bench, rows in results.items():
        for direction in ("t2a", "a2t"):
            if direction not in rows:
                continue
            for metric in params.metrics:
                if metric not in rows[direction]:
                    raise ModelCardError(f"{params.benchmark}: {model.label}/{bench}/{direction} has no {metric!r}")
                evals.append(EvalResult(
                    task_type=TASK_TYPES[direction], task_name=DIRECTION_NAMES[direction],
                    dataset_type=params.dataset, dataset_name=f"{params.dataset_name} ({bench})", dataset_config=bench,
                    dataset_split="test", metric_type=metric.replace("@", "_at_"),
                    metric_name=f"{direction} {metric}", metric_value=float(rows[direction][metric])))
    return ModelCardData(
        model_name=name, library_name="transformers", pipeline_tag="zero-shot-audio-classification",
        license=params.license, base_model=model.base_model, datasets=[params.dataset],
        metrics=["recall", "map"], tags=["clap", "audio-text-retrieval", "clapcap"], eval_results=evals)


def _table(results: dict[str, Any], metrics: list[str]) -> list[str]:
    head = "| test captions | direction | " + " | ".join(metrics) + " |"
    rows = [head, "|---|---|" + "---:|" * len(metrics)]
    for bench, r in results.items():
        for direction in ("t2a", "a2t"):
            if direction not in r:
                continue
            ci = r[direction].get("ci", {})
            cells = [f"{r[direction][m]:.3f} [{ci[m]['low']:.3f}, {ci[m]['high']:.3f}]" if m in ci
                     else f"{r[direction][m]:.3f}" for m in metrics]
            rows.append(f"| {bench} | {direction} | " + " | ".join(cells) + " |")
    return rows


def render_card(name: str, model: CardModel, benchmark: dict[str, Any], params: ModelCardParams) -> str:
    """The README.md text of ``models/<name>/``."""
    if model.label not in benchmark.get("models", {}):
        raise ModelCardError(f"{params.benchmark}: no model {model.label!r} (has {sorted(benchmark.get('models', {}))})")
    results = {b: r for b, r in benchmark["models"][model.label].items() if isinstance(r, dict) and "t2a" in r}
    data = _card_data(name, model, results, params)
    folder = f"{params.models_dir}/{name}/model"
    lines = [
        "---", data.to_yaml(), "---", "",
        f"# {name}", "",
        model.summary.strip(), "",
        "## Load it", "",
        "```python",
        "from transformers import ClapModel, ClapProcessor",
        f'model = ClapModel.from_pretrained("{folder}")',
        f'processor = ClapProcessor.from_pretrained("{folder}")',
        "```", "",
        "The folder also holds `clapcap_encoder.json`, which clapcap's encoders read "
        "(`clapcap retrieval embed --backend hf_clap --checkpoint " + folder + "`).", "",
        f"## Results on the test split (robustness benchmark, `{params.benchmark}`)", "",
        "Recall and mAP@10 as clapcap defines them (docs/retrieval_metrics.md); 95 % bootstrap "
        "intervals over test queries in brackets. `original` are the corpus captions, `view1`/`view2` "
        "paraphrase views, `heldout` paraphrases of a kind no model trained on.", "",
        *_table(results, params.metrics), "",
        "## Limits", "",
        f"Trained and tested on the {params.dataset_name}, which clapcap generates (docs/data.md), with "
        "a tiny audio tower sized for a 2-core CPU build: the numbers compare configurations inside this "
        "build; they say nothing about real audio (on real recordings this family scores near "
        "chance: docs/real.md).", "",
        "Rebuilt by `dvc repro model_cards` from the files above; do not edit by hand.", "",
    ]
    return "\n".join(lines)


def write_cards(params: ModelCardParams) -> list[Path]:
    """Write ``<models_dir>/<name>/README.md`` for every model of ``params`` (atomically)."""
    benchmark = read_json(params.benchmark)
    written = []
    for name, model in params.models.items():
        folder = Path(params.models_dir) / name
        if not (folder / "model").is_dir():
            raise ModelCardError(f"{folder / 'model'}: not found (run the stage that trains {name} first)")
        text = render_card(name, model, benchmark, params)
        with atomic_path(folder / "README.md") as tmp:
            tmp.write_text(text, encoding="utf-8")
        written.append(folder / "README.md")
    logger.info("model_cards: wrote %d cards", len(written))
    return written
