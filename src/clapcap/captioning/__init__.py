"""clapcap.captioning: the ClipCap-style captioner and its trainer.

The model: ``model``, ``projection``, ``decoders`` (``smollm2``: the pretrained SmolLM2
decoder's folder), ``tokenizer``, ``generation``, ``serving``. Training and scoring: ``data``,
``train`` (the two training stages), ``evaluate`` (score a checkpoint on a split); ``config``
holds the torch-free params. The study (ablations, LR search, findings) lives in
:mod:`clapcap.experiments.captioning`.
"""
