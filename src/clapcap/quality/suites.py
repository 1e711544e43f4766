"""great-expectations suites for manifests and embedding dumps.

Each check runs one expectation suite on a pandas frame and returns a :class:`ValidationReport`
(readable as JSON and Markdown). By default the context is ephemeral. With ``context_dir``
(the ``validate_data`` stage) it is great-expectations' own file project, as its users keep
one: ``<context_dir>/gx/`` holds the stored suites (``expectations/<suite>.json``), a
validation definition and a checkpoint per suite (``checkpoints/<suite>_checkpoint.json``), and
each checkpoint run updates the Data Docs site
(``gx/uncommitted/data_docs/local_site/index.html``, which GX keeps out of git). Suites:

``manifest``
    ``clip_id`` and ``audio_path`` unique and non-null (so no clip sits in two splits),
    at least one non-empty caption per clip, ``duration_s`` within
    [min_duration_s, max_duration_s], ``sample_rate`` in the allowed set, ``split`` in
    {train, val, test}.
``split_sizes``
    one row per split: the observed clip count equals the count the configured fractions
    give (``floor(fraction * n)`` for val/test, the remainder for train).
``dump``
    one row per embedding: finite, expected dimension, L2 norm within
    [min_norm, max_norm]; caption rows point at an existing clip row.

A failed expectation names its offending rows: the first few (``MAX_NAMED``), each as the
suite describes it (a manifest row as its clip id, audio file, split and manifest row, the
header being row 1), and the total count. Passing expectations carry nothing extra, so a
clean dataset's report is unchanged.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

MAX_NAMED = 5  # offending rows named per failed expectation (the total is always given)
Describe = Callable[[pd.DataFrame, int, str | None], str]  # (frame, row index, column) -> text


@dataclass
class ValidationReport:
    """Outcome of one or more suites."""

    success: bool
    suites: dict[str, dict[str, Any]] = field(default_factory=dict)

    def failures(self) -> list[str]:
        """Readable lines, one per failed expectation, naming its offending rows."""
        return [f"{suite}: {r['expectation']} {r['kwargs']} -> {r['unexpected']}{_offending_text(r)}"
                for suite, info in self.suites.items() for r in info["results"] if not r["success"]]

    def to_dict(self) -> dict[str, Any]:
        return {"success": self.success, "suites": self.suites, "failures": self.failures()}

    def to_markdown(self) -> str:
        lines = [f"# Data validation: {'PASSED' if self.success else 'FAILED'}", ""]
        for suite, info in self.suites.items():
            lines += [f"## {suite} ({info['n_rows']} rows): {'passed' if info['success'] else 'FAILED'}", "",
                      "| expectation | column / kwargs | result | unexpected |", "|---|---|---|---|"]
            for r in info["results"]:
                lines.append(f"| {r['expectation']} | {r['kwargs']} | {'ok' if r['success'] else 'FAIL'} "
                             f"| {r['unexpected']} |")
            named = [r for r in info["results"] if "offending" in r]
            if named:
                lines += ["", "Offending rows:"]
                lines += [f"- {r['expectation']} {r['kwargs']}{_offending_text(r)}" for r in named]
            lines.append("")
        return "\n".join(lines)

    def merge(self, other: ValidationReport) -> ValidationReport:
        return ValidationReport(self.success and other.success, {**self.suites, **other.suites})


def _offending_text(result: dict[str, Any]) -> str:
    off = result.get("offending")
    if not off:
        return ""
    more = off["count"] - len(off["rows"])
    return (f"; {off['count']} offending row(s): " + "; ".join(off["rows"])
            + (f"; and {more} more" if more > 0 else ""))


def _value_text(frame: pd.DataFrame, index: int, column: str | None) -> str:
    """``": column=value"`` for the checked column of a row (empty without one)."""
    if column is None or column not in frame.columns:
        return ""
    value = frame.at[index, column]
    return f": {column}={value.item() if isinstance(value, np.generic) else value!r}"


def _row_label(frame: pd.DataFrame, index: int, column: str | None) -> str:
    """The default description of a frame row: its position and the checked value."""
    return f"row {index}{_value_text(frame, index, column)}"


def _offending(info: dict[str, Any], kwargs: dict[str, Any], frame: pd.DataFrame,
               describe: Describe) -> dict[str, Any] | None:
    """``{"count", "rows"}``: the unexpected count and the first ``MAX_NAMED`` rows described."""
    index = info.get("partial_unexpected_index_list")
    if not index:
        return None
    column = kwargs.get("column")
    count = int(info.get("unexpected_count") or len(index))
    return {"count": count, "rows": [describe(frame, int(i), column) for i in index[:MAX_NAMED]]}


def _file_checkpoint_run(ctx: Any, name: str, df: pd.DataFrame, expectations: list[Any]) -> Any:
    """Store the suite, its validation definition and a checkpoint in the file project
    ``ctx`` (replacing earlier ones of that name), run the checkpoint (which updates the Data
    Docs) and return its one validation result."""
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction

    source = ctx.data_sources.add_or_update_pandas(f"{name}_src")
    asset = source.add_dataframe_asset(name)
    batch_def = asset.add_batch_definition_whole_dataframe(f"{name}_batch")
    suite = ctx.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=expectations))
    vd = ctx.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=f"{name}_vd", data=batch_def, suite=suite))
    checkpoint = ctx.checkpoints.add_or_update(gx.Checkpoint(
        name=f"{name}_checkpoint", validation_definitions=[vd],
        actions=[UpdateDataDocsAction(name="update_data_docs")]))
    result = checkpoint.run(batch_parameters={"dataframe": df})
    return next(iter(result.run_results.values()))


def run_suite(name: str, df: pd.DataFrame, expectations: list[Any], *,
              describe: Describe = _row_label, context_dir: str | Path | None = None) -> ValidationReport:
    """Run great-expectations ``expectations`` on ``df`` (its index a RangeIndex, as the
    offending rows are named by it, through ``describe``); returns a report (never raises on
    failure). ``context_dir``: keep the suite, a checkpoint and the Data Docs in the GX file
    project there (module docstring) instead of an ephemeral context."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")  # nothing touches the network
    ctx = gx.get_context(mode="ephemeral") if context_dir is None else \
        gx.get_context(mode="file", project_root_dir=str(context_dir))
    # No tqdm bar per validation on stderr (the CLI is quiet by default; a run takes ~0.1 s).
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    if context_dir is not None:
        result = _file_checkpoint_run(ctx, name, df, expectations)
    else:
        batch_def = ctx.data_sources.add_pandas(f"{name}_src").add_dataframe_asset(name) \
            .add_batch_definition_whole_dataframe(f"{name}_batch")
        suite = ctx.suites.add(gx.ExpectationSuite(name=name))
        for exp in expectations:
            suite.add_expectation(exp)
        vd = ctx.validation_definitions.add(gx.ValidationDefinition(name=f"{name}_vd", data=batch_def, suite=suite))
        result = vd.run(batch_parameters={"dataframe": df})
    rows = []
    for res in result.results:
        cfg = res.expectation_config
        info = res.result or {}
        unexpected = info.get("partial_unexpected_list") or info.get("observed_value")
        kwargs = {k: v for k, v in cfg.kwargs.items() if k != "batch_id"}
        row = {"expectation": cfg.type, "kwargs": kwargs, "success": bool(res.success),
               "unexpected": _short(unexpected)}
        offending = None if res.success else _offending(info, kwargs, df, describe)
        if offending:
            row["offending"] = offending
        rows.append(row)
    ok = bool(result.success)
    if not ok:
        logger.warning("suite %s failed", name)
    return ValidationReport(ok, {name: {"success": ok, "n_rows": len(df), "results": rows}})


def _short(value: Any, limit: int = 10) -> Any:
    if isinstance(value, list):
        return [str(v) for v in value[:limit]]
    if isinstance(value, (np.generic,)):
        return value.item()
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


def manifest_frame(manifest: pd.DataFrame) -> pd.DataFrame:
    """The columns the manifest suite checks (captions reduced to counts and lengths), one
    row per manifest row, indexed by position."""
    manifest = manifest.reset_index(drop=True)
    caps = manifest["captions"]
    return pd.DataFrame({
        "clip_id": manifest["clip_id"], "audio_path": manifest["audio_path"],
        "duration_s": manifest["duration_s"], "sample_rate": manifest["sample_rate"],
        "split": manifest["split"],
        "n_captions": [len(c) if isinstance(c, list) else 0 for c in caps],
        "min_caption_chars": [min((len(s.strip()) for s in c), default=0) if isinstance(c, list) else 0
                              for c in caps],
    })


def _clip_label(frame: pd.DataFrame, index: int, column: str | None) -> str:
    """A manifest row as ``clip 'id' (audio path, split, manifest row N)`` plus the checked value."""
    value = "" if column in ("clip_id", "audio_path") else _value_text(frame, index, column)
    return (f"clip {frame.at[index, 'clip_id']!r} ({frame.at[index, 'audio_path']}, "
            f"split {frame.at[index, 'split']}, manifest row {index + 2}){value}")


def validate_manifest(manifest: pd.DataFrame, *, min_duration_s: float, max_duration_s: float,
                      allowed_sample_rates: list[int], context_dir: str | Path | None = None) -> ValidationReport:
    """Run the ``manifest`` suite (see module docstring)."""
    import great_expectations as gx

    E = gx.expectations
    exps = [
        E.ExpectColumnValuesToBeUnique(column="clip_id"),
        E.ExpectColumnValuesToNotBeNull(column="clip_id"),
        E.ExpectColumnValuesToBeUnique(column="audio_path"),
        E.ExpectColumnValuesToBeBetween(column="n_captions", min_value=1),
        E.ExpectColumnValuesToBeBetween(column="min_caption_chars", min_value=1),
        E.ExpectColumnValuesToBeBetween(column="duration_s", min_value=min_duration_s, max_value=max_duration_s),
        E.ExpectColumnValuesToBeInSet(column="sample_rate", value_set=list(allowed_sample_rates)),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "val", "test"]),
    ]
    return run_suite("manifest", manifest_frame(manifest), exps, describe=_clip_label, context_dir=context_dir)


def expected_split_sizes(n: int, fractions: dict[str, float]) -> dict[str, int]:
    """Clip counts the splitter produces for ``n`` clips (see clapcap.data.splits)."""
    sizes = {k: int(np.floor(v * n)) for k, v in fractions.items() if k != "train"}
    sizes["train"] = n - sum(sizes.values())
    return sizes


def validate_split_sizes(manifest: pd.DataFrame, fractions: dict[str, float], *,
                         exclude_sources: tuple[str, ...] = (),
                         context_dir: str | Path | None = None) -> ValidationReport:
    """Run the ``split_sizes`` suite on the rows not from ``exclude_sources``."""
    import great_expectations as gx

    df = manifest[~manifest["source"].isin(exclude_sources)]
    expected = expected_split_sizes(len(df), fractions)
    observed = df["split"].value_counts()
    frame = pd.DataFrame({"split": list(expected), "expected": list(expected.values()),
                          "observed": [int(observed.get(s, 0)) for s in expected]})
    exps = [gx.expectations.ExpectColumnPairValuesToBeEqual(column_A="observed", column_B="expected")]
    return run_suite("split_sizes", frame, exps, describe=_split_label, context_dir=context_dir)


def _split_label(frame: pd.DataFrame, index: int, column: str | None) -> str:
    return (f"split {frame.at[index, 'split']}: {int(frame.at[index, 'observed'])} clips, "
            f"expected {int(frame.at[index, 'expected'])}")


def dump_frame(audio: np.ndarray, text: np.ndarray, caption_clip_index: np.ndarray) -> pd.DataFrame:
    """One row per embedding with its kind, dimension, finiteness, norm and target row."""
    def rows(kind: str, x: np.ndarray, target: np.ndarray) -> pd.DataFrame:
        finite = np.isfinite(x).all(axis=1)
        norms = np.where(finite, np.linalg.norm(np.nan_to_num(x), axis=1), np.nan)
        return pd.DataFrame({"kind": kind, "dim": x.shape[1], "finite": finite, "norm": norms, "target": target})

    return pd.concat([rows("audio", audio, np.zeros(len(audio), dtype=np.int64)),
                      rows("text", text, caption_clip_index.astype(np.int64))], ignore_index=True)


def validate_dump_arrays(audio: np.ndarray, text: np.ndarray, caption_clip_index: np.ndarray, *,
                         dim: int | None = None, min_norm: float = 1e-6,
                         max_norm: float = 1e6) -> ValidationReport:
    """Run the ``dump`` suite on raw dump arrays."""
    import great_expectations as gx

    E = gx.expectations
    frame = dump_frame(audio, text, caption_clip_index)
    exps = [
        E.ExpectColumnValuesToBeInSet(column="finite", value_set=[True]),
        E.ExpectColumnValuesToBeInSet(column="dim", value_set=[dim if dim is not None else audio.shape[1]]),
        E.ExpectColumnValuesToBeBetween(column="norm", min_value=min_norm, max_value=max_norm),
        E.ExpectColumnValuesToBeBetween(column="target", min_value=0, max_value=len(audio) - 1),
    ]
    n_audio = len(audio)

    def describe(df: pd.DataFrame, index: int, column: str | None) -> str:
        kind, row = ("audio", index) if index < n_audio else ("text", index - n_audio)
        return f"{kind} embedding {row}{_value_text(df, index, column)}"

    return run_suite("dump", frame, exps, describe=describe)
