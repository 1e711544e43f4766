"""clapcap.clap: the CLAP model (a transformers ``ClapModel``) and its contrastive trainer.

- ``model``: the tiny synthetic CLAP's config, vocabulary, build, save and load;
- ``preprocessing``: deterministic audio features and caption tokens for ``ClapModel``;
- ``features``: a dataset split's cached input features (for training);
- ``optim``: the optimiser block every CLAP family's params nest (``OptimConfig``) and its
  AdamW with warm-up and cosine;
- ``task``: ``ClapTask``, what one CLAP family's training differs in (model, batches, loss,
  parameter groups, text freezing, validation), and the shared batches, loss and recall;
- ``tasks``: the synthetic CLAP's two tasks (scratch and MiniLM text towers);
- ``train``: the one trainer: the resumable ``fit`` loop, ``train(task, optim)`` and the
  ``train_clap`` step (RobustCLAP's task trains through the same ``train``);
- ``collapse``: the permutation test that refuses a collapsed model;
- ``minilm``: the CLAP whose text tower is the real all-MiniLM-L6-v2; ``frozen_text``: its
  frozen text layers, computed once;
- ``towers``, ``towers_train``: the tower CLAP (frozen YAMNet and MiniLM, trained heads);
- ``config``: params.yaml section ``train_clap`` (the tracked entry that trains either tower
  is :func:`clapcap.tracked.clap.run_synth_clap`).

The variants study (train, embed, compare) is :mod:`clapcap.experiments.clap.variants`.

Inference backends that wrap a trained CLAP live in :mod:`clapcap.encoders`, which imports
this package, never the reverse.
"""
