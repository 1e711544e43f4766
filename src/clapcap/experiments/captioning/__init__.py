"""The captioning study on the synthetic corpus, over the model and trainer of
:mod:`clapcap.captioning`: ``study`` (the ablation runs and the decoding grid), ``lr_search``
(the Optuna LR search), ``lr_check`` (each architecture row's own LR), ``findings`` (each stated
comparison, over seeds and clips), ``registry`` (what the champion's registration records),
``dcase`` (the DCASE submission export), ``vocab`` and ``scores`` (vocabulary statistics and
SBERT-sim of the predictions).
"""
