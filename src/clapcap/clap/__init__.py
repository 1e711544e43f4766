"""clapcap.clap: the CLAP model (a transformers ``ClapModel``) and its contrastive trainer.

- ``model``: the tiny synthetic CLAP's config, vocabulary, build, save and load;
- ``preprocessing``: deterministic audio features and caption tokens for ``ClapModel``;
- ``features``: a dataset split's cached input features (for training);
- ``train``: the resumable contrastive ``fit`` loop and ``train_clap`` (RobustCLAP builds on it);
- ``collapse``: the permutation test that refuses a collapsed model;
- ``minilm``: the CLAP whose text tower is the real all-MiniLM-L6-v2 (the default);
  ``minilm_train``: its trainer; ``frozen_text``: its frozen text layers, computed once;
- ``default``: the ``train_clap`` section as the MiniLM CLAP's params (the tracked entry that
  trains either tower is :func:`clapcap.tracked.clap.run_synth_clap`);
- ``config``: params.yaml section ``train_clap``.

The variants study (train, embed, compare) is :mod:`clapcap.experiments.clap.variants`.

Inference backends that wrap a trained CLAP live in :mod:`clapcap.encoders`, which imports
this package, never the reverse.
"""
