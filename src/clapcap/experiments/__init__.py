"""The studies: every experiment of the project has its home here, one subpackage per family.
Each study trains or loads the models of the model packages (``clap/``, ``captioning/``,
``robust/``, ``encoders/``, ``pairwise/``) and measures them; no model package imports this
package (tests/infra/test_architecture.py).

- :mod:`.captioning`: the ClipCap study on the synthetic corpus (ablations, LR search, findings,
  registration records, the DCASE export, the vocabulary and SBERT-sim scores);
- :mod:`.robust`: RobustCLAP's benchmark, seed study, view kinds, views and view sources;
- :mod:`.real`: the real recordings and the real corpus (the tower CLAP, captioning on it,
  RobustCLAP on real captions);
- :mod:`.clap`: the synthetic CLAP's variants;
- :mod:`.pairwise`: the pairwise A/B study end to end.
"""
