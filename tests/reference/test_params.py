"""The `reference` params section: strict parsing of nested reference specs."""

from __future__ import annotations

import pytest

from clapcap.config import ConfigError, load_section
from clapcap.reference.config import ReferenceParams, find_spec

YAML = """
reference:
  dataset_dir: data/corpus
  leakage: {metric: cider_d, alpha: 0.01}
  api_concurrency: 1
  references:
    - name: lp_music_caps_transfer
      backend: import
      predictions_file: results/lp.json
      held_out_name: lp_music_caps_transfer_clean
    - name: qwen3_omni_captioner
      backend: openai_api
      api: {base_url: "https://example.invalid/v1", model: m, api_key_env: DASHSCOPE_API_KEY, stream: true}
      generation: {max_new_tokens: 256, prompt: ""}
      trim_words: 50
"""


def test_reference_params_parse(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(YAML)
    params = load_section(ReferenceParams, "reference", path)
    spec = find_spec(params, "qwen3_omni_captioner")
    assert spec.api.stream is True and spec.generation.max_new_tokens == 256 and spec.trim_words == 50
    assert find_spec(params, "lp_music_caps_transfer").generation.max_new_tokens == 128  # default
    with pytest.raises(ValueError, match="configured"):
        find_spec(params, "missing")


def test_reference_params_reject_unknown_and_secret_keys(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(YAML.replace("api_key_env: DASHSCOPE_API_KEY", "api_key: sk-123"))
    with pytest.raises(ConfigError, match="api_key"):
        load_section(ReferenceParams, "reference", path)
    path.write_text(YAML.replace("backend: import", "backend: imported"))
    with pytest.raises(ConfigError, match="backend"):
        load_section(ReferenceParams, "reference", path)
