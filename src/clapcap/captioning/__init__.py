"""clapcap.captioning: the ClipCap-style captioner and its study.

The model: ``model``, ``projection``, ``decoders`` (``smollm2``: the pretrained SmolLM2
decoder's folder), ``tokenizer``, ``generation``, ``serving``. The experiments: ``data``,
``train``, ``lr_search``, ``study``, ``findings``, ``registry``; ``config`` holds the
torch-free params.
"""
