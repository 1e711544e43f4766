"""The Prefect data flow runs the same library functions as the DVC stages."""

from __future__ import annotations

from clapcap.data.config import DataParams
from clapcap.data.prepare import load_dataset
from clapcap.data.synth import SynthConfig


def test_data_flow_prepares_and_validates(prefect_env, tmp_path):
    from clapcap.flows.data import data_flow

    params = DataParams(out_dir=str(tmp_path / "corpus"),
                        synthetic=SynthConfig(n_clips=10, max_duration_s=2.5))
    result = data_flow(params, str(tmp_path / "reports"))
    assert result["validation_passed"] is True
    assert len(load_dataset(tmp_path / "corpus").manifest) == 10
    assert (tmp_path / "reports" / "validation.md").exists()


def test_retry_condition_only_retries_io():
    from clapcap.flows.data import _retry_on_io

    class State:
        def __init__(self, exc):
            self.exc = exc

        def result(self):
            raise self.exc

    assert _retry_on_io(None, None, State(OSError("nfs hiccup")))
    assert not _retry_on_io(None, None, State(ValueError("bad data")))
