"""Real pretrained weights that install offline from the package registries, and what is built on them.

- :mod:`.assets`: where each installed asset lives (one clear error when it is missing);
- :mod:`.sbert`: ``sbert_sim_minilm``, aac-metrics' SBERT-sim function run with all-MiniLM-L6-v2.

Nothing here touches the network: every model is read from an installed package folder.
"""
