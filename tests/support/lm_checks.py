"""Checks that a converted pretrained LM is a trained language model, not random weights."""

from __future__ import annotations

from typing import Any

SENTENCE = "A dog barks twice while rain falls on the roof."
SHUFFLED = "roof dog the twice barks falls rain on A while."


def assert_prefers_english(model: Any, tok: Any) -> None:
    """A pretrained LM gives English lower NLL than the same words shuffled (by 2 nats), and
    a randomly initialised copy of it gives the sentence far higher NLL (by 3 nats)."""
    import torch

    def nll(lm: Any, text: str) -> float:
        ids = tok(text, return_tensors="pt").input_ids  # the tokenizer's own specials (<bos> for Gemma)
        with torch.no_grad():
            return lm(ids, labels=ids).loss.item()

    assert nll(model, SENTENCE) + 2.0 < nll(model, SHUFFLED)
    torch.manual_seed(0)
    random = type(model)(model.config).eval()
    assert nll(random, SENTENCE) > nll(model, SENTENCE) + 3.0


def saved_without_lm(model: Any, folder: Any, lm_dir: Any) -> Any:
    """Save ``model`` (its pretrained LM frozen and untrained) to ``folder``: the checkpoint holds
    no LM tensor and names ``lm_dir``, and the reloaded captioner equals ``model`` tensor for
    tensor (the LM from its folder, the rest from weights.pt). Returns the reloaded captioner."""
    import torch

    from clapcap.captioning.model import frozen_lm_dir, load_captioner

    model.save(folder)
    saved = torch.load(folder / "weights.pt", weights_only=True)
    assert saved and not any(k.startswith("lm.") for k in saved)
    assert frozen_lm_dir(folder) == str(lm_dir)
    loaded = load_captioner(folder)
    for k, v in model.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k]), k
    return loaded
