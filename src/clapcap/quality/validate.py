"""The ``validate_data`` step: run the suites, write a readable report, fail on violations."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from clapcap.data.config import DataParams
from clapcap.data.dump import load_dump
from clapcap.data.prepare import StaleDatasetError, check_build, load_dataset
from clapcap.errors import ClapcapError
from clapcap.quality.suites import (
    ValidationReport,
    validate_dump_arrays,
    validate_manifest,
    validate_split_sizes,
)
from clapcap.utils.io import atomic_path, write_json

logger = logging.getLogger(__name__)

# Sources appended to a generated split (not produced by the splitter).
ADDED_SOURCES = ("ovos_animals",)
DATA_DOCS_INDEX = "gx/uncommitted/data_docs/local_site/index.html"  # under a data_docs folder


class DataValidationError(ClapcapError, RuntimeError):
    """A data suite failed; the report file lists every failed expectation."""


def write_report(report: ValidationReport, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``validation.json`` and ``validation.md`` under ``out_dir``."""
    out_dir = Path(out_dir)
    js = write_json(out_dir / "validation.json", report.to_dict())
    with atomic_path(out_dir / "validation.md") as tmp:
        tmp.write_text(report.to_markdown() + "\n")
    return js, out_dir / "validation.md"


def validate_data(params: DataParams, report_dir: str | Path, *,
                  memo_path: str | Path | None = None, data_docs: str | Path | None = None) -> ValidationReport:
    """Validate the prepared dataset of ``params``; write the report under ``report_dir``.

    First checks that ``dataset.json`` records a build from these params and the current
    input files (:func:`~clapcap.data.prepare.check_build`; ``memo_path`` is the listing's
    hash memo), so a stale or half-built folder never passes. ``data_docs``: a folder for
    great-expectations' file project (stored suites, checkpoints, the Data Docs site; see
    :mod:`clapcap.quality.suites`), rebuilt from scratch on each run.

    Raises:
        DataValidationError: when the folder was built from other params or inputs (before
            any report is written), or when any expectation fails (after the report is written).
    """
    try:
        check_build(params, memo_path=memo_path)
    except StaleDatasetError as err:
        raise DataValidationError(str(err)) from err
    ds = load_dataset(params.out_dir)
    if data_docs is not None and Path(data_docs).exists():
        shutil.rmtree(data_docs)  # one run's suites and results, not an accumulating history
    report = validate_manifest(ds.manifest, min_duration_s=params.min_duration_s,
                               max_duration_s=params.max_duration_s,
                               allowed_sample_rates=params.allowed_sample_rates, context_dir=data_docs)
    if params.source == "synthetic" or "all" in params.external.csv:
        report = report.merge(validate_split_sizes(ds.manifest, params.split_fractions,
                                                   exclude_sources=ADDED_SOURCES, context_dir=data_docs))
    js, md = write_report(report, report_dir)
    if not report.success:
        raise DataValidationError(f"data validation failed, see {md}:\n" + "\n".join(report.failures()))
    if data_docs is not None:
        logger.info("Data Docs: %s", Path(data_docs) / DATA_DOCS_INDEX)
    logger.info("data validation passed (%s)", js)
    return report


def validate_prepared(dataset_dir: str | Path, report_dir: str | Path, *, min_duration_s: float,
                      max_duration_s: float) -> ValidationReport:
    """The manifest suite on a prepared folder that no ``data`` params built (the real
    benchmark's ``data/real``): any sample rate the decoder reads, the given duration limits.

    Raises:
        DataValidationError: when any expectation fails (after the report is written).
    """
    ds = load_dataset(dataset_dir)
    rates = sorted({int(r) for r in ds.manifest["sample_rate"]})
    report = validate_manifest(ds.manifest, min_duration_s=min_duration_s, max_duration_s=max_duration_s,
                               allowed_sample_rates=[r for r in rates if 8000 <= r <= 192000])
    _, md = write_report(report, report_dir)
    if not report.success:
        raise DataValidationError(f"{dataset_dir}: data validation failed, see {md}:\n" + "\n".join(report.failures()))
    logger.info("%s: data validation passed", dataset_dir)
    return report


def validate_dump_file(dump_path: str | Path, report_dir: str | Path, *,
                       min_norm: float = 1e-6, max_norm: float = 1e6) -> ValidationReport:
    """Run the dump suite on an embedding dump file; write the report; raise on failure."""

    dump = load_dump(dump_path, validate=False)
    report = validate_dump_arrays(dump.audio_embeds, dump.text_embeds, dump.caption_clip_index,
                                  min_norm=min_norm, max_norm=max_norm)
    _, md = write_report(report, report_dir)
    if not report.success:
        raise DataValidationError(f"{dump_path}: dump validation failed, see {md}:\n" + "\n".join(report.failures()))
    return report
