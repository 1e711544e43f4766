"""clapcap.encoders: CLAP backends and other audio encoders, embedding dumps.

- ``base``: ``EncoderConfig``, the ``AudioEncoder``/``AudioTextEncoder`` protocols, ``create_encoder``;
- ``hf_clap``: transformers ``ClapModel`` with deterministic preprocessing;
- ``laion``: laion_clap ``CLAP_Module``; ``hf_cache``: its offline HF cache; ``convert``: laion -> HF;
- ``frames``: frame-level HF audio encoders (mean over real-audio frames);
- ``tiny``: the embedded default tiny CLAP (build/save/load); ``features``: cached training features;
- ``embed``: ``embed_dataset`` -> embedding dump; ``crosscheck``: the checkpoint-identity step;
- ``config``: params.yaml sections ``train_clap``, ``embed``, ``checkpoint_identity``.

Submodules import torch/transformers lazily; see docs/encoders.md.
"""
