"""Experiments that span several concepts: each trains models of one package and measures them
through others, so it sits above all of them (nothing in the library imports it).

- :mod:`.clap_variants`: variants of the synthetic CLAP, each trained (``clap/``), embedded
  (``encoders/``) and compared, paired, with the synthetic CLAP (``retrieval/``).
"""
