"""Fixtures for reference-captioner tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def small_split(tiny_corpus, tmp_path_factory):
    """The tiny corpus' test split dumped once; returns (csv, json) paths."""
    from clapcap.evaluation.shared_split import dump_split

    return dump_split(tiny_corpus, tmp_path_factory.mktemp("split"))
