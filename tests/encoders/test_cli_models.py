"""`clapcap retrieval embed | train-clap` and the thin pipeline scripts."""

import runpy
import sys

import pytest

from clapcap.cli import main
from clapcap.data.dump import load_dump


def test_cli_embed(tiny_corpus, tmp_path):
    out = tmp_path / "d.npz"
    assert main(["retrieval", "embed", "--dataset", str(tiny_corpus), "--split", "val", "--out", str(out),
                 "--max-clips", "3", "--caption-column", "paraphrases_v1", "--checkpoint", "random"]) == 0
    dump = load_dump(out)
    assert dump.n_clips == 3 and dump.meta["caption_column"] == "paraphrases_v1"
    assert dump.meta["checkpoint_kind"] == "random"
    assert main(["retrieval", "embed", "--dataset", str(tmp_path / "nope"), "--out", str(out),
                 "--checkpoint", "random"]) == 2


def test_cli_embed_without_a_checkpoint_is_a_usage_error_not_a_random_model(tiny_corpus, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["retrieval", "embed", "--dataset", str(tiny_corpus), "--out", str(tmp_path / "d.npz")])
    assert exit_info.value.code == 2 and "--checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "d.npz").exists()


def test_cli_train_clap_and_embed_pipeline(tiny_corpus, tmp_path, monkeypatch):
    model_dir = tmp_path / "clap"
    (tmp_path / "params.yaml").write_text(
        f"train_clap:\n  dataset_dir: {tiny_corpus}\n  out_dir: {model_dir}\n  optim: {{epochs: 1, batch_size: 8}}\n"
        f"  track: false\n"
        f"embed:\n  out_dir: {tmp_path / 'emb'}\n  datasets: {{tiny: {tiny_corpus}}}\n  splits: [val]\n"
        f"  encoders:\n    default: {{checkpoint: {model_dir / 'model'}, batch_size: 8}}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["retrieval", "train-clap", "--params", "params.yaml", "--no-track"]) == 0
    assert (model_dir / "model" / "config.json").is_file() and (model_dir / "metrics.json").is_file()
    monkeypatch.setattr(sys, "argv", ["embed.py", "default", "tiny"])
    pipeline = __import__("pathlib").Path(__file__).resolve().parents[2] / "pipelines" / "embed.py"
    with pytest.raises(SystemExit) as exc:
        runpy.run_path(str(pipeline), run_name="__main__")
    assert exc.value.code == 0
    assert load_dump(tmp_path / "emb" / "default" / "tiny" / "val.npz").meta["checkpoint"].endswith("model")
