"""Typed parameters of the retrieval-evaluation stages (``params.yaml`` section ``retrieval``).

Parsed with :func:`clapcap.config.load_section`, which rejects unknown keys and wrong types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clapcap.config import ConfigError


@dataclass
class RetrievalEvalParams:
    """Section ``retrieval`` of ``params.yaml``: evaluation and the metric-parity gate.

    Attributes:
        dumps: embedding dumps (``.npz``) to evaluate and to put through the parity gate.
        out_dir: folder of the per-dump metrics files (``<dump stem>.json``).
        ks: cut-offs of ``r@k``.
        laion_compatible: use LAION-CLAP's a2t mAP@10 formula (only to reproduce published
            LAION numbers; the default is the TREC ``map_cut_10`` definition).
        n_resamples: bootstrap resamples for the confidence intervals (0: none).
        confidence: confidence level of the intervals.
        seed: seed of the bootstrap.
        max_block_mb: memory budget of one similarity block.
        parity_out: path of the metric-parity report.
        parity_tolerance: largest allowed absolute difference between the two implementations.
        parity_report_out: path of the reference-format parity report (stage ``parity_report``:
            one metric-parity cell per dump plus the ``checkpoint_identity`` finding).
        mlflow: log each evaluation to MLflow.
    """

    dumps: list[str] = field(default_factory=list)
    out_dir: str = "metrics/retrieval"
    ks: list[int] = field(default_factory=lambda: [1, 5, 10])
    laion_compatible: bool = False
    n_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    max_block_mb: int = 256
    parity_out: str = "metrics/metric_parity.json"
    parity_tolerance: float = 1e-9
    parity_report_out: str = "reports/parity_report.json"
    track: bool = True

    def __post_init__(self) -> None:
        if any(k < 1 for k in self.ks) or not self.ks:
            raise ConfigError(f"retrieval.ks: expected positive integers, found {self.ks!r}")
        if self.n_resamples < 0:
            raise ConfigError(f"retrieval.n_resamples: expected >= 0, found {self.n_resamples}")
        if not 0 < self.confidence < 1:
            raise ConfigError(f"retrieval.confidence: expected a value in (0, 1), found {self.confidence}")
        if self.max_block_mb < 1:
            raise ConfigError(f"retrieval.max_block_mb: expected >= 1, found {self.max_block_mb}")
        if self.parity_tolerance < 0:
            raise ConfigError(f"retrieval.parity_tolerance: expected >= 0, found {self.parity_tolerance}")
