"""Fixtures for reference-captioner tests."""

from __future__ import annotations

import pytest


def _fake_openai_cls():
    """Load tests/reference/fake_openai.py by path (test folders are not packages)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("fake_openai.py")
    spec = importlib.util.spec_from_file_location("clapcap_test_fake_openai", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FakeOpenAI


@pytest.fixture
def fake_openai():
    server = _fake_openai_cls()()
    yield server
    server.close()


@pytest.fixture(scope="session")
def small_split(tiny_corpus, tmp_path_factory):
    """The tiny corpus' test split dumped once; returns (csv, json) paths."""
    from clapcap.evaluation.reference import dump_split

    return dump_split(tiny_corpus, tmp_path_factory.mktemp("split"))
