"""``clapcap pipeline use-clap``: the pipeline's CLAP chosen in one place (clapcap.clap_choice)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from clapcap.clap_choice import DEFAULT, use_clap
from clapcap.cli import main
from clapcap.config import load_section
from clapcap.encoders.config import EmbedParams
from clapcap.errors import InputError
from clapcap.experiments.robust.config import RobustBenchParams
from clapcap.reporting.model_card import ModelCardParams
from clapcap.robust.config import RobustTextStoreParams, RobustTrainParams

REPO = Path(__file__).resolve().parents[2]
HUB = "laion/clap-htsat-unfused"


@pytest.fixture
def project(tmp_path):
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


def _values(data, prefix=""):
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _values(v, f"{prefix}{k}.")
    elif isinstance(data, list):
        for v in data:
            yield from _values(v, prefix)
    else:
        yield prefix.rstrip("."), data


def test_one_command_points_every_clap_key_at_the_checkpoint(project):
    use_clap(project, HUB, revision="8fa0f1c")
    params = project / "params.yaml"
    embed = load_section(EmbedParams, "embed", params).encoders["synth_clap"]
    assert (embed.checkpoint, embed.revision) == (HUB, "8fa0f1c")
    for section in ("robust_train", "robust_control"):
        p = load_section(RobustTrainParams, section, params)
        assert (p.base_model, p.base_revision) == (HUB, "8fa0f1c")
    store = load_section(RobustTextStoreParams, "robust_text_store", params)
    assert (store.base_model, store.base_revision) == (HUB, "8fa0f1c")
    bench = load_section(RobustBenchParams, "robust_benchmark", params)
    assert bench.models["CLAP"] == HUB and bench.revisions == {HUB: "8fa0f1c"}
    cards = load_section(ModelCardParams, "model_cards", params)
    assert cards.models["robust_clap"].base_model == HUB and cards.models["robust_control"].base_model == HUB
    # No key still names the project's own CLAP as what it reads (a section added later must join
    # CLAP_KEYS); the ones that write or describe it stay.
    left = [k for k, v in _values(yaml.safe_load(params.read_text())) if v in (DEFAULT, "models/synth_clap")
            and k not in ("train_clap.out_dir", "model_cards.models.synth_clap.base_model")
            and not k.startswith("model_cards.models.synth_clap")]
    assert left == []


def test_the_default_restores_params_yaml_byte_for_byte(project):
    committed = (project / "params.yaml").read_text()
    use_clap(project, HUB, revision="v1")
    use_clap(project, HUB)  # no revision: the revision keys go
    assert "base_revision" not in (project / "params.yaml").read_text()
    use_clap(project, DEFAULT)
    assert (project / "params.yaml").read_text() == committed


def test_a_laion_file_a_missing_folder_and_a_folder_revision_are_refused(project, capsys):
    committed = (project / "params.yaml").read_text()
    with pytest.raises(InputError, match="convert a laion_clap checkpoint first"):
        use_clap(project, "630k-audioset-best.pt")
    with pytest.raises(InputError, match="models/mine: no such folder"):
        use_clap(project, "models/mine")
    with pytest.raises(InputError, match="a local folder has no revision"):
        use_clap(project, DEFAULT, revision="main")
    assert (project / "params.yaml").read_text() == committed
    assert main(["pipeline", "use-clap", HUB, "--root", str(project)]) == 0
    assert f"params.yaml: robust_train.base_model={HUB}" in capsys.readouterr().out
