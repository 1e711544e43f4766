"""SmolLM2-135M from its GGUF package to a plain HF folder, and it is a real pretrained LM."""

from __future__ import annotations

import json

import pytest
from lm_checks import assert_prefers_english

from clapcap.captioning.smollm2 import SOURCE, convert_smollm2, gguf_file

pytestmark = pytest.mark.slow  # de-quantising the GGUF file takes about 40 s on 2 cores


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    return convert_smollm2(tmp_path_factory.mktemp("smol") / "smollm2")


def test_converted_folder_loads_as_a_plain_causal_lm(converted):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(converted), local_files_only=True).eval()
    tok = AutoTokenizer.from_pretrained(str(converted), local_files_only=True)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert (model.config.hidden_size, model.config.num_hidden_layers, len(tok)) == (576, 30, 49152)
    assert json.loads((converted / SOURCE).read_text())["file"] == gguf_file().name
    # Captions end, and generation stops, on the model's own end token, not the GGUF's <|im_start|>.
    assert tok.eos_token == tok.pad_token == "<|im_end|>"
    assert tok.eos_token_id == model.config.eos_token_id == model.generation_config.eos_token_id == 2

    # A pretrained LM prefers English to the same words shuffled; a random one cannot tell.
    assert_prefers_english(model, tok)


def test_second_conversion_is_skipped(converted, caplog):
    import logging

    weights = next(converted.glob("*.safetensors")).stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger="clapcap.captioning.smollm2"):
        assert convert_smollm2(converted) == converted
    assert "already converted" in caplog.text
    assert next(converted.glob("*.safetensors")).stat().st_mtime_ns == weights
