"""Pairwise A/B judging study: items, the rating page, LLM judges and agreement.

- :mod:`clapcap.pairwise.pairs`: items from predictions JSONs and a reference split.
- :mod:`clapcap.pairwise.server`: the blind rating page (standard-library HTTP server).
- :mod:`clapcap.pairwise.store`: SQLite vote store (WAL, one commit per vote).
- :mod:`clapcap.pairwise.llm_judge`: audio- and text-LLM judge pools over an
  OpenAI-compatible chat API.
- :mod:`clapcap.pairwise.agreement`: win rates, Fleiss and Cohen kappa.

See docs/pairwise.md.
"""
