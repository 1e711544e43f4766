"""The captioning experiments, over the model of :mod:`clapcap.captioning`: ``train`` (the two
training stages), ``lr_search`` (the Optuna LR search), ``evaluate`` (score a checkpoint on a
split), ``study`` (the ablation runs and the decoding grid), ``findings`` (each stated
comparison, over seeds and clips) and ``registry`` (what the champion's registration records).

Nothing in the model part (config, tokenizer, decoders, projection, model, generation, serving)
imports this package (tests/infra/test_architecture.py).
"""
