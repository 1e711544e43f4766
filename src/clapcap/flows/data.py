"""Prefect flow over the data stages: the same library functions the DVC stages call.

Transient I/O errors (``OSError``: a flaky network filesystem, a full temporary disk
freed meanwhile) are retried; bad data (``ValueError`` subclasses such as
``AudioError``/``ManifestError``) and failed expectations are not.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task

from clapcap.data.config import DataParams
from clapcap.data.prepare import prepare_data
from clapcap.quality.validate import validate_data


def _retry_on_io(task_obj, task_run, state) -> bool:  # noqa: ARG001 (Prefect signature)
    """Retry only transient I/O errors."""
    try:
        state.result()
    except OSError:
        return True
    except BaseException:  # noqa: BLE001 - any other failure is final
        return False
    return False


@task(name="prepare_data", retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_on_io)
def prepare_data_task(params: DataParams, memo_path: str | None = None) -> str:
    return str(prepare_data(params, progress=False, memo_path=memo_path))


@task(name="validate_data", retries=2, retry_delay_seconds=1, retry_condition_fn=_retry_on_io)
def validate_data_task(params: DataParams, report_dir: str, memo_path: str | None = None) -> bool:
    return validate_data(params, report_dir, memo_path=memo_path).success


@flow(name="clapcap-data")
def data_flow(params: DataParams, report_dir: str = "reports/data", memo_path: str | None = None) -> dict:
    """Prepare then validate the dataset (``memo_path``: the listing's hash memo, see
    :mod:`clapcap.data.listing`). Returns the manifest path and validation result."""
    manifest = prepare_data_task(params, memo_path)
    ok = validate_data_task(params, report_dir, memo_path)
    return {"manifest": manifest, "validation_passed": ok, "report": str(Path(report_dir) / "validation.md")}
