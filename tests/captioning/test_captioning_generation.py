"""Decoding options on tiny captioners overfitted to three captions (both decoders)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threads import one_torch_thread

from clapcap.captioning.config import CaptionerConfig, DecodingConfig
from clapcap.captioning.generation import as_embedding_tensor, generate_captions
from clapcap.captioning.model import create_captioner
from clapcap.captioning.tokenizer import build_tokenizer

CAPTIONS = ["A loud beep. A soft hum.", "Soft clicks play.", "There is a quiet hum."]
FIT = {"gpt2": (1e-2, 150), "t5": (3e-3, 250)}  # (lr, steps) that overfit the three captions


@pytest.fixture(scope="module", params=["gpt2", "t5"])
def overfit(request):
    torch.manual_seed(0)
    tok = build_tokenizer("bpe" if request.param == "gpt2" else "unigram", CAPTIONS * 10, vocab_size=300)
    cfg = CaptionerConfig(decoder=request.param, hidden=32, layers=1, heads=2, prefix_length=4,
                          max_caption_tokens=60, n_positions=128, in_dim=8, dropout=0.0)
    model = create_captioner(cfg, tok)
    x = torch.eye(3, 8) * 3
    lr, steps = FIT[request.param]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.eval()  # no dropout: a deterministic, quick overfit
    # Train until greedy decoding reproduces the captions: float reductions differ with the
    # thread count, so a fixed step budget sometimes stops one token short of overfitting. One
    # thread, whatever an earlier test left set (after the captioning study's tests, which set
    # one thread, T5 stopped one token short: "bep" for "beep").
    with one_torch_thread():
        for step in range(1, 4 * steps + 1):
            loss = model.loss_on_captions(x, CAPTIONS)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step >= steps and step % 50 == 0:
                with torch.no_grad():
                    if generate_captions(model, x, DecodingConfig(max_new_tokens=80)) == CAPTIONS:
                        break
    return model.eval(), x


def test_greedy_reproduces_and_stops_at_eos(overfit):
    model, x = overfit
    out = generate_captions(model, x, DecodingConfig(max_new_tokens=80))
    assert out == CAPTIONS  # stops at EOS: nothing appended after the caption


def test_batched_equals_one_at_a_time_and_no_cache(overfit):
    model, x = overfit
    batched = generate_captions(model, x, DecodingConfig(max_new_tokens=80), batch_size=3)
    assert generate_captions(model, x, DecodingConfig(max_new_tokens=80), batch_size=1) == batched
    assert generate_captions(model, x, DecodingConfig(max_new_tokens=80), use_cache=False) == batched


def test_beam_search_with_length_penalty(overfit):
    model, x = overfit
    beams = {lp: generate_captions(model, x, DecodingConfig(strategy="beam", num_beams=3, length_penalty=lp,
                                                            max_new_tokens=80)) for lp in (-2.0, 1.0, 2.0)}
    # At least one of the three memorised captions. On three captions many pieces tie in
    # frequency, and the tokenizers library's Unigram trainer numbers tied pieces in an order
    # that changes between processes (measured: three builds, three numberings), so the overfit
    # T5 model, and which hypothesis beam search ranks first, differ between test processes. In
    # 18 fixtures beam kept 3, 2 or (once) 1 of the 3 captions; CI (2026-12-06) drew the 1
    # against a bound of 2. A broken beam search keeps none. (The study's T5 tokenizer, trained
    # on thousands of captions, has rebuilt byte-identically in every fresh-clone build.)
    assert sum(a == c for a, c in zip(beams[1.0], CAPTIONS, strict=True)) >= 1
    # a higher length penalty never prefers a shorter finished hypothesis
    assert all(len(a) >= len(b) for a, b in zip(beams[2.0], beams[-2.0], strict=True))


def test_top_p_sampling_is_seeded(overfit):
    model, x = overfit
    cfg = DecodingConfig(strategy="sample", top_p=0.95, temperature=3.0, seed=1, max_new_tokens=80)
    first = generate_captions(model, x, cfg)
    assert generate_captions(model, x, cfg) == first
    assert all(isinstance(c, str) for c in first)
    # a tiny nucleus keeps only the top token: identical to greedy
    assert generate_captions(model, x, DecodingConfig(strategy="sample", top_p=1e-6, max_new_tokens=80)) == CAPTIONS


def _token_ids(model, text):
    return model.tokenizer(text, add_special_tokens=False)["input_ids"]


def test_max_new_tokens_limits_length(overfit):
    model, x = overfit
    out = generate_captions(model, x, DecodingConfig(max_new_tokens=3))
    for text, full in zip(out, CAPTIONS, strict=True):
        assert len(_token_ids(model, text)) <= 3 and full.startswith(text.strip()[:3])


def test_no_repeat_ngram_and_repetition_penalty_change_output(overfit):
    model, x = overfit
    out = generate_captions(model, x[:1], DecodingConfig(no_repeat_ngram_size=1, max_new_tokens=80))[0]
    ids = _token_ids(model, out)
    assert len(ids) == len(set(ids)) or out != CAPTIONS[0]  # no token repeats in the output
    assert out != CAPTIONS[0]  # the reference caption repeats tokens ("A", "hum")
    rep = generate_captions(model, x[:1], DecodingConfig(repetition_penalty=50.0, max_new_tokens=80))[0]
    assert rep != CAPTIONS[0]


def test_trim_to_last_sentence_and_to_words(overfit):
    model, x = overfit
    n = len(_token_ids(model, "A loud beep. A")) + 1  # stops mid second sentence
    raw = generate_captions(model, x[:1], DecodingConfig(max_new_tokens=n))[0]
    assert raw.startswith("A loud beep. A") and raw != CAPTIONS[0]
    cut = generate_captions(model, x[:1], DecodingConfig(max_new_tokens=n, trim_sentences=True))[0]
    assert cut == "A loud beep."
    words = generate_captions(model, x, DecodingConfig(trim_words=2, max_new_tokens=80))
    assert words == [" ".join(c.split()[:2]) for c in CAPTIONS]


def test_a_caption_is_its_first_line():
    from clapcap.captioning.generation import first_line

    assert first_line("\n  a dog barks \nThe dog is brown.\n") == "a dog barks"
    assert first_line("rain falls") == "rain falls" and first_line(" \n ") == ""


def test_frame_level_input_is_mean_pooled(overfit):
    model, x = overfit
    frames = x[:, None, :].repeat(1, 5, 1)  # (B, T, D)
    assert generate_captions(model, frames.numpy(), DecodingConfig(max_new_tokens=80)) == CAPTIONS


@pytest.mark.parametrize("kwargs", [{"strategy": "nucleus"}, {"num_beams": 0}, {"top_p": 0.0},
                                    {"temperature": 0.0}, {"max_new_tokens": 0}, {"trim_words": 0},
                                    {"repetition_penalty": 0.0}, {"no_repeat_ngram_size": -1}])
def test_invalid_decoding_config(kwargs):
    with pytest.raises(ValueError, match="invalid decoding config"):
        DecodingConfig(**kwargs).validate()


def test_bad_embeddings_are_rejected(overfit):
    model, _ = overfit
    with pytest.raises(ValueError, match=r"shape \(B>=1, 8\)"):
        generate_captions(model, np.zeros((2, 5), dtype=np.float32))
    with pytest.raises(ValueError, match="NaN"):
        as_embedding_tensor(np.full((1, 8), np.nan), 8)
    with pytest.raises(TypeError, match="numpy array"):
        as_embedding_tensor([[0.0] * 8], 8)
    with pytest.raises(ValueError, match="B>=1"):
        as_embedding_tensor(np.zeros((0, 8)), 8)
    with pytest.raises(ValueError, match="batch_size"):
        generate_captions(model, np.zeros((1, 8), dtype=np.float32), batch_size=0)


def test_rows_stop_at_the_end_of_their_first_line_with_the_same_captions():
    """A captioner that goes on past a line break (as SmolLM2 does) stops there: the same
    captions as decoding to max_new_tokens, greedy and sampled, in fewer steps."""
    from clapcap.captioning.generation import line_complete

    assert line_complete("a dog\n") and line_complete("\n\n a dog\nmore") and not line_complete("\n  a dog")
    assert not line_complete("") and not line_complete(" \n \n")
    texts = ["A loud beep.\nThen a long tail of words follows here.", "\nSoft clicks play.\nMore text after it.",
             "There is a quiet hum."]
    torch.manual_seed(0)
    tok = build_tokenizer("bpe", texts * 10, vocab_size=300)
    cfg = CaptionerConfig(decoder="gpt2", hidden=32, layers=1, heads=2, prefix_length=4, max_caption_tokens=60,
                          n_positions=128, in_dim=8, dropout=0.0)
    model = create_captioner(cfg, tok).eval()
    x = torch.eye(3, 8) * 3
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        loss = model.loss_on_captions(x, texts)
        opt.zero_grad()
        loss.backward()
        opt.step()
    steps = []
    forward = model.lm.forward
    model.lm.forward = lambda *a, **k: (steps.append(1), forward(*a, **k))[1]
    for cfg_ in (DecodingConfig(max_new_tokens=40), DecodingConfig(strategy="sample", top_p=0.9, max_new_tokens=40)):
        steps.clear()
        stopped = generate_captions(model, x, cfg_)
        n_stopped = len(steps)
        steps.clear()
        full = generate_captions(model, x, cfg_, stop_at_line_end=False)
        assert stopped == full and n_stopped < len(steps)
    assert generate_captions(model, x, DecodingConfig(max_new_tokens=40))[:2] == ["A loud beep.", "Soft clicks play."]
