"""Embedding dumps survive SIGKILL: at most the batch in flight is lost, the resumed dump is
byte-identical to an uninterrupted one, and a truncated ``.npz`` is never taken as complete."""

from __future__ import annotations

import pytest

from clapcap.data.dump import load_dump
from clapcap.encoders.base import EncoderConfig
from clapcap.encoders.embed import embed_all, embed_dataset, is_complete
from clapcap.encoders.factory import create_encoder
from clapcap.encoders.partial import BatchStore, partial_dir

CFG = EncoderConfig(name="tiny", batch_size=4)  # train split: 28 clips = 7 audio batches, 140 captions = 9 text


def _counting_encoder() -> tuple[object, dict[str, int]]:
    encoder, calls = create_encoder(CFG), {"audio": 0, "text": 0}
    audio, text = encoder.embed_audio, encoder.embed_text

    def embed_audio(waves):
        calls["audio"] += 1
        return audio(waves)

    def embed_text(texts):
        calls["text"] += 1
        return text(texts)

    encoder.embed_audio, encoder.embed_text = embed_audio, embed_text
    return encoder, calls


@pytest.fixture(scope="module")
def reference(tiny_corpus, tmp_path_factory) -> bytes:
    """The bytes of an uninterrupted dump of the train split (one torch thread, as the killed runs)."""
    import torch

    out, before = tmp_path_factory.mktemp("reference") / "train.npz", torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        embed_dataset(CFG, tiny_corpus, "train", out, progress=False)
    finally:
        torch.set_num_threads(before)
    return out.read_bytes()


def _spec(tiny_corpus, out) -> dict:
    return {"encoder": CFG.to_dict(), "dataset_dir": str(tiny_corpus), "split": "train", "out": str(out)}


def test_sigkill_mid_dump_loses_at_most_the_batch_in_flight(tiny_corpus, tmp_path, sigkill_at, reference,
                                                            one_torch_thread):
    out = tmp_path / "emb" / "train.npz"
    sigkill_at("embed", _spec(tiny_corpus, out), at="audio_batch", n=4)  # batches 1-3 done, 4 in flight
    assert not out.exists()
    assert sorted(p.name for p in partial_dir(out).glob("audio_*.npz")) == [f"audio_00000{i}.npz" for i in range(3)]

    encoder, calls = _counting_encoder()
    embed_dataset(CFG, tiny_corpus, "train", out, progress=False, encoder=encoder)
    assert calls == {"audio": 7 - 3, "text": 9}  # no finished batch is computed again
    assert out.read_bytes() == reference
    assert not partial_dir(out).exists() and sorted(p.name for p in out.parent.iterdir()) == ["train.npz"]


def test_sigkill_while_writing_the_dump_recomputes_nothing(tiny_corpus, tmp_path, sigkill_at, reference,
                                                           one_torch_thread):
    out = tmp_path / "emb" / "train.npz"
    sigkill_at("embed", _spec(tiny_corpus, out), at="dump_write", n=1)  # half the .npz is in a temporary file
    assert not out.exists() and len(list(out.parent.glob(".train.npz.*.tmp.npz"))) == 1

    encoder, calls = _counting_encoder()
    embed_dataset(CFG, tiny_corpus, "train", out, progress=False, encoder=encoder)
    assert calls == {"audio": 0, "text": 0}
    assert out.read_bytes() == reference
    assert sorted(p.name for p in out.parent.iterdir()) == ["train.npz"]  # cut write and progress removed


def test_truncated_dump_is_never_complete(tiny_corpus, tmp_path):
    out = tmp_path / "val.npz"
    embed_dataset(CFG, tiny_corpus, "val", out, progress=False)
    whole, sig = out.read_bytes(), load_dump(out).meta["signature"]
    for cut in (len(whole) // 2, len(whole) - 10, 22):  # mid-array, inside the zip directory, a bare header
        out.write_bytes(whole[:cut])
        assert not is_complete(out, sig), cut
    embed_dataset(CFG, tiny_corpus, "val", out, progress=False)  # recomputed, not trusted
    assert out.read_bytes() == whole and is_complete(out, sig)


def test_progress_of_another_run_is_discarded(tiny_corpus, tmp_path):
    out = tmp_path / "val.npz"
    embed_dataset(CFG, tiny_corpus, "val", tmp_path / "whole.npz", progress=False)
    store = BatchStore(out, "another run")
    store.save("audio", 0, {"embeds": load_dump(tmp_path / "whole.npz").audio_embeds + 1.0})
    embed_dataset(CFG, tiny_corpus, "val", out, progress=False)
    assert out.read_bytes() == (tmp_path / "whole.npz").read_bytes() and not partial_dir(out).exists()


def test_embed_stage_progress_survives_dvc_deleting_its_output(tiny_corpus, tmp_path, monkeypatch, reference,
                                                               one_torch_thread):
    import shutil

    import clapcap.encoders.embed as embed
    from clapcap.encoders.config import EmbedParams

    params = EmbedParams(out_dir=str(tmp_path), datasets={"tiny": str(tiny_corpus)}, splits=["train"],
                         encoders={"enc": CFG})
    crashing, _ = _counting_encoder()
    real_audio = crashing.embed_audio

    def audio_then_crash(waves, done=[]):  # noqa: B006 (a call counter)
        done.append(1)
        if len(done) == 3:
            raise RuntimeError("simulated crash in audio batch 3")
        return real_audio(waves)

    crashing.embed_audio = audio_then_crash
    monkeypatch.setattr(embed, "create_encoder", lambda cfg: crashing)
    with pytest.raises(RuntimeError, match="batch 3"):
        embed_all(params, "enc", "tiny", progress=False)
    # `dvc repro` deletes a stage's outputs (here enc/tiny/) before rerunning it; the progress is elsewhere.
    shutil.rmtree(tmp_path / "enc" / "tiny", ignore_errors=True)
    assert len(list((tmp_path / ".partial" / "enc" / "tiny").glob("*/audio_*.npz"))) == 2

    encoder, calls = _counting_encoder()
    monkeypatch.setattr(embed, "create_encoder", lambda cfg: encoder)
    (out,) = embed_all(params, "enc", "tiny", progress=False)
    assert calls["audio"] == 7 - 2 and out.read_bytes() == reference
    assert sorted(p.name for p in tmp_path.iterdir()) == ["enc"]  # .partial/ removed once done
