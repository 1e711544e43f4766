"""Fixtures for the RobustCLAP tests: a fake OpenAI-compatible chat server on 127.0.0.1.

(Helpers live here because the suite runs with ``--import-mode=importlib``, where test
modules cannot import sibling helper modules.)
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Reply = tuple[int, Any, dict[str, str]]  # (status, JSON body or raw str, headers)


def chat_reply(content: str) -> Reply:
    """A 200 chat-completion answer carrying ``content``."""
    return 200, {"id": "x", "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}]}, {}


def default_answer(body: dict[str, Any]) -> Reply:
    """A well-behaved model: views from the caption; view 2 loses 'metallic clank' to
    'collision', which the correction step restores."""
    system = body["messages"][0]["content"]
    last = body["messages"][-1]["content"]
    if system.startswith("You rewrite"):
        caption = last.removeprefix("Caption: ").rstrip(".")
        v2 = caption.replace("metallic clank", "collision")
        return chat_reply(json.dumps({"view1": f"Heard here: {caption.lower()}.",
                                      "view2": f"One perceives {v2.lower()}."}))
    caption = re.search(r"Caption: (.*)", last).group(1)
    para = re.search(r"Paraphrase: (.*)", last).group(1)
    if "metallic clank" in caption and "collision" in para:
        fixed = para.replace("collision", "clang of metal")
        return chat_reply(json.dumps({"verdict": "rewrite", "missing": ["metallic"], "paraphrase": fixed}))
    return chat_reply(json.dumps({"verdict": "keep", "missing": [], "paraphrase": para}))


@dataclass
class FakeLLM:
    """The running fake server: ``url``, the ``requests`` it saw, and a ``script`` of
    replies (callables taking the request body) consumed first, before ``default``."""

    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    script: list[Callable[[dict[str, Any]], Reply] | Reply] = field(default_factory=list)
    default: Callable[[dict[str, Any]], Reply] = default_answer
    lock: threading.Lock = field(default_factory=threading.Lock)

    @staticmethod
    def chat(content: str) -> Reply:
        """A 200 chat-completion answer carrying ``content`` (for scripts)."""
        return chat_reply(content)

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self.lock:
            self.requests.append({"body": body, "headers": headers})
            item = self.script.pop(0) if self.script else self.default
        return item(body) if callable(item) else item


def _handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/chat/completions":
                status, payload, headers = 404, {"error": f"no route {self.path}"}, {}
            else:
                status, payload, headers = fake.respond(body, dict(self.headers))
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # keep the test output quiet
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client killed mid-answer
            super().handle_error(request, client_address)


def start_fake_llm() -> tuple[FakeLLM, Callable[[], None]]:
    """Start a server thread; returns the fake and a function that stops it."""
    fake = FakeLLM()
    server = _QuietServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return fake, stop


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    """A fake OpenAI-compatible server on 127.0.0.1; base URL ``fake_llm.url`` ends in ``/v1``."""
    fake, stop = start_fake_llm()
    try:
        yield fake
    finally:
        stop()


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    """One intra-op thread: on a shared 2-core machine two threads contend and run ~50x slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
