"""Fixtures for the RobustCLAP tests: the suite's fake OpenAI server answering as a
paraphrasing model would."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply
from threads import one_torch_thread


def default_answer(body: dict[str, Any]) -> Reply:
    """A well-behaved model: views from the caption; view 2 loses 'metallic clank' to
    'collision', which the correction step restores."""
    system = body["messages"][0]["content"]
    last = body["messages"][-1]["content"]
    if system.startswith("You rewrite"):
        caption = last.removeprefix("Caption: ").rstrip(".")
        v2 = caption.replace("metallic clank", "collision")
        return FakeOpenAI.chat(json.dumps({"view1": f"Heard here: {caption.lower()}.",
                                           "view2": f"One perceives {v2.lower()}."}))
    caption = re.search(r"Caption: (.*)", last).group(1)
    para = re.search(r"Paraphrase: (.*)", last).group(1)
    if "metallic clank" in caption and "collision" in para:
        fixed = para.replace("collision", "clang of metal")
        return FakeOpenAI.chat(json.dumps({"verdict": "rewrite", "missing": ["metallic"], "paraphrase": fixed}))
    return FakeOpenAI.chat(json.dumps({"verdict": "keep", "missing": [], "paraphrase": para}))


@pytest.fixture
def fake_llm() -> Iterator[FakeOpenAI]:
    """The fake server answering paraphrase and correction prompts; ``fake_llm.url`` ends in ``/v1``."""
    fake = FakeOpenAI(default=default_answer)
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    """One intra-op thread: on a shared 2-core machine two threads contend and run ~50x slower."""
    with one_torch_thread():
        yield
