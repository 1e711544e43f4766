"""Reference captioners: off-the-shelf models captioning the shared split (see docs/reference.md).

- :mod:`.config`: typed settings (``params.yaml`` section ``reference``) and ``find_spec``.
- :mod:`.progress`: the per-clip JSONL progress cache that makes runs resumable.
- :mod:`.hf_local`: a local Hugging Face audio-language model (Qwen2-Audio style).
- :mod:`.api`: an OpenAI-compatible chat API that accepts audio input.
- :mod:`.generate`: one entry point per reference, plus the import of external predictions.
"""
