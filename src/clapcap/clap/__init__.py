"""clapcap.clap: the CLAP model (a transformers ``ClapModel``) and its contrastive trainer.

- ``model``: the tiny default CLAP's config, vocabulary, build, save and load;
- ``preprocessing``: deterministic audio features and caption tokens for ``ClapModel``;
- ``features``: a dataset split's cached input features (for training);
- ``train``: the resumable contrastive ``fit`` loop and ``train_clap`` (RobustCLAP builds on it);
- ``collapse``: the permutation test that refuses a collapsed model;
- ``config``: params.yaml section ``train_clap``.

Inference backends that wrap a trained CLAP live in :mod:`clapcap.encoders`, which imports
this package, never the reverse.
"""
