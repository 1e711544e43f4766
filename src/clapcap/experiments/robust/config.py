"""``params.yaml`` sections of RobustCLAP's studies (parsed with :func:`clapcap.config.load_section`).

- ``robust_benchmark``: :class:`RobustBenchParams` (retrieval on original / view 1 /
  view 2 captions, zero-shot classification, paired test, registration);
- ``robust_seeds``: :class:`RobustSeedParams` (the findings over fine-tune seeds).

The fine-tune's own sections (``robust_train``, ``robust_text_store``) are
:mod:`clapcap.robust.config`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Keys of the zero-shot benchmark (docs/robust.md); they name their definition.
ZS = "zero_shot"
ZS_CUTOFF = 10
# AP@10 normalised by min(|labels|, 10): not the retrieval map@10 (docs/retrieval_metrics.md)
ZS_MAP = f"map_norm_min@{ZS_CUTOFF}"


@dataclass
class RobustBenchParams:
    """Section ``robust_benchmark``: compare CLAP models on original and paraphrased queries.

    Attributes:
        models: display name -> HF ``ClapModel`` folder; ``base`` names the reference and
            ``candidate`` the fine-tuned model tested (and registered) against it.
        benchmarks: display name -> manifest column (``captions`` = original).
        label_prompt: zero-shot prompt; ``{label}`` is replaced by each class name.
        register_metric / register_benchmark: without ``register_on``, the model is
            registered when it beats the base on this metric of this benchmark (p < ``alpha``,
            paired bootstrap of this one fine-tune) and is not significantly worse on the
            original captions.
        register_on: the seed study's conclusions file (``robust_seeds``). When set, the
            decision is the findings' verdicts over fine-tune seeds instead:
            ``register_finding`` must hold and no ``register_guards`` finding may be reversed.
    """

    paraphrase_dir: str = "data/robust/paraphrased"
    split: str = "test"
    models: dict[str, str] = field(default_factory=lambda: {"CLAP": "models/synth_clap/model",
                                                            "RobustCLAP": "models/robust_clap/model"})
    # Hub ids among ``models`` -> the revision to load (branch, tag or commit; absent = main).
    revisions: dict[str, str] = field(default_factory=dict)
    base: str = "CLAP"
    candidate: str = "RobustCLAP"
    benchmarks: dict[str, str] = field(default_factory=lambda: {"original": "captions",
                                                                "view1": "paraphrases_v1",
                                                                "view2": "paraphrases_v2"})
    ks: list[int] = field(default_factory=lambda: [1, 5, 10])
    n_resamples: int = 1000
    confidence: float = 0.95
    alpha: float = 0.05
    seed: int = 0
    batch_size: int = 64
    label_column: str = "labels"
    label_prompt: str = "the sound of a {label}"
    out_dir: str = "results/robust"
    register_metric: str = "t2a/r@10"
    register_benchmark: str = "view2"
    register_on: str = ""
    register_finding: str = "robust.view2.t2a_r10.vs_base"
    register_guards: list[str] = field(default_factory=lambda: ["robust.original.t2a_r10.vs_base",
                                                                "robust.original.a2t_r10.vs_base"])
    registered_model: str = "clapcap-robust-clap"
    alias: str = "champion"
    track: bool = True
    experiment: str = "clapcap-robust"


@dataclass
class RobustSeedParams:
    """Section ``robust_seeds``: RobustCLAP and its control over several fine-tune seeds.

    Attributes:
        seeds: fine-tune seeds of both the candidate and the control. The seed of
            ``robust_train``/``robust_control`` reuses those stages' models; every other seed
            is trained here under ``out_dir/<candidate|control>/seed<k>``.
        control: the ``robust_benchmark.models`` name of the captions-only control.
        margin: the loss (absolute, e.g. 0.02 = 2 points of R@10) a "no loss" finding allows.
        results_dir: per-seed dumps; ``conclusions`` and ``findings_md`` are the findings.
    """

    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    out_dir: str = "models/robust_seeds"
    results_dir: str = "results/robust/seeds"
    conclusions: str = "results/robust/conclusions.json"
    findings_md: str = "results/robust/findings.md"
    control: str = "CLAP-captions-FT"
    margin: float = 0.02
    n_resamples: int = 1000
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"robust_seeds.seeds: expected 2 or more distinct seeds, found {self.seeds}")
        if not 0 <= self.margin < 1:
            raise ValueError(f"robust_seeds.margin: expected a value in [0, 1), found {self.margin}")
