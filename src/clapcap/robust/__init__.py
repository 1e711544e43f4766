"""RobustCLAP: multi-view contrastive fine-tuning of CLAP on paraphrase views, and a
paraphrase-robustness benchmark (see docs/robust.md).

- :mod:`clapcap.robust.loss`: the multi-view loss and its progressive schedule;
- :mod:`clapcap.robust.data`: batches of features + caption + aligned views;
- :mod:`clapcap.robust.train`: the ``robust_train`` step;
- :mod:`clapcap.robust.benchmark` / :mod:`clapcap.robust.report`: the ``robust_benchmark``
  step and its Markdown/LaTeX tables;
- :mod:`clapcap.robust.config`: the params sections. Paraphrase generation lives in
  :mod:`clapcap.paraphrase`.
"""
