"""clapcap.encoders: audio encoders behind the embedding dumps.

One factory, ``factory.create_encoder``, builds every backend from its config (``base``):

- from an ``EncoderConfig``, the CLAP backends (each an ``AudioTextEncoder``): ``hf_clap``
  (transformers ``ClapModel`` with deterministic preprocessing, and the MLflow pyfunc loader
  of a CLAP); ``laion`` (laion_clap ``CLAP_Module``; ``hf_cache``: its offline HF cache;
  ``convert``: laion -> HF); and the audio-only ``frames`` (frame-level HF audio encoders,
  mean over real-audio frames) and ``logmel`` (log-mel statistics);
- from a ``PretrainedEncoderConfig``, the real pretrained audio encoders that install
  offline, mean-pooled by ``pooling``: ``sfx`` (aisfx's CNN), ``whisper`` (Whisper tiny.en,
  its CTranslate2 ``model.bin`` read by ``ct2`` and converted by ``whisper_ct2``), ``crepe``
  (torchcrepe), ``yamnet`` (YAMNet, the torch module of ``clapcap.pretrained.yamnet``).

One dump writer, ``embed.embed_dataset`` (resume state in ``partial``), for both configs;
``crosscheck``: the checkpoint-identity step; ``config``: params.yaml sections ``embed``,
``embed_pretrained`` and ``checkpoint_identity``.

Submodules import torch/transformers lazily; see docs/encoders.md.
"""
