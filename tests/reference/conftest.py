"""Fixtures for reference-captioner tests."""

from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai():
    server = FakeOpenAI()
    yield server
    server.close()


@pytest.fixture(scope="session")
def small_split(tiny_corpus, tmp_path_factory):
    """The tiny corpus' test split dumped once; returns (csv, json) paths."""
    from clapcap.evaluation.reference import dump_split

    return dump_split(tiny_corpus, tmp_path_factory.mktemp("split"))
