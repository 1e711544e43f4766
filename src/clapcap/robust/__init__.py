"""RobustCLAP: multi-view contrastive fine-tuning of CLAP on paraphrase views, and a
paraphrase-robustness benchmark (see docs/robust.md).

- :mod:`clapcap.robust.loss`: the multi-view loss and its progressive schedule;
- :mod:`clapcap.robust.data`: batches of features + caption + aligned views;
- :mod:`clapcap.robust.train`: the ``robust_train`` step;
- its studies (the benchmark, seeds, kinds, views, view sources) live in
  :mod:`clapcap.experiments.robust`;
- :mod:`clapcap.robust.config`: the params sections. Paraphrase generation lives in
  :mod:`clapcap.paraphrase`.
"""
