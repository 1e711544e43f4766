"""The one fake OpenAI-compatible chat server of the test suite (127.0.0.1 only).

Every LLM client of the project (paraphrasing, pairwise judges, reference API captioners)
talks to ``POST <base_url>/chat/completions`` through ``clapcap.llm.ChatClient``, so one
fake serves them all. Tests shape its answers with, in this order of precedence:

1. ``fail_first``: status codes answered (with ``Retry-After: 0``) before anything else;
2. ``by_model[model]``: replies consumed for requests naming that model;
3. ``script``: replies consumed for any request;
4. ``default(body)``: the answer once the scripts are used up (by default
   ``caption.format(n=<request number>)`` as the assistant message).

A reply is a ``(status, payload, headers)`` tuple (payload: a JSON-able object, or a raw
string or bytes sent as is) or a callable taking the request body and returning one;
:meth:`FakeOpenAI.chat`, :meth:`FakeOpenAI.error` and :meth:`FakeOpenAI.raw` build them. A
request with ``"stream": true`` answered by a chat reply is streamed as server-sent events.
``requests`` records ``{"path", "auth", "headers", "body"}`` of each request;
``on_request(n, body)`` runs before answering (a test can hold a request there), and
``delay_s``/``max_active`` measure concurrency.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, Any, dict[str, str]]
Step = Reply | Callable[[dict[str, Any]], Reply]


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client killed mid-answer
            super().handle_error(request, client_address)


class FakeOpenAI:
    """A fake ``/v1/chat/completions`` server in a thread; :meth:`close` stops it."""

    def __init__(self, default: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_first: list[int] = []
        self.by_model: dict[str, list[Step]] = {}
        self.script: list[Step] = []
        self.caption = "a caption number {n}."
        self.default = default  # None: answer caption.format(n=<request number>)
        self.on_request: Callable[[int, dict[str, Any]], None] | None = None
        self.delay_s = 0.0
        self.active = self.max_active = 0
        self._lock = threading.Lock()
        self.server = _QuietServer(("127.0.0.1", 0), _handler(self))
        self.url = self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @staticmethod
    def chat(content: str) -> Reply:
        """A 200 chat-completion answer carrying ``content``."""
        return 200, {"id": "x", "object": "chat.completion",
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                  "finish_reason": "stop"}]}, {}

    @staticmethod
    def error(status: int, headers: dict[str, str] | None = None) -> Reply:
        """An error answer with a small JSON body."""
        return status, {"error": f"status {status}"}, dict(headers or {})

    @staticmethod
    def raw(status: int, text: str | bytes) -> Reply:
        """An answer whose body is ``text`` as is (e.g. not JSON, or bytes that are not UTF-8)."""
        return status, text, {}

    def _next(self, body: dict[str, Any], headers: dict[str, str], path: str) -> tuple[int, Step]:
        with self._lock:
            self.requests.append({"path": path, "auth": headers.get("Authorization", ""),
                                  "headers": headers, "body": body})
            n = len(self.requests)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            if self.fail_first:
                return n, self.error(self.fail_first.pop(0), {"Retry-After": "0"})
            per_model = self.by_model.get(body.get("model", ""), [])
            if per_model:
                return n, per_model.pop(0)
            if self.script:
                return n, self.script.pop(0)
            return n, self.default or self.chat(self.caption.format(n=n))

    def respond(self, body: dict[str, Any], headers: dict[str, str], path: str) -> Reply:
        """Record the request and choose its reply (see the module docstring)."""
        n, step = self._next(body, headers, path)
        try:
            if self.on_request is not None:
                self.on_request(n, body)
            time.sleep(self.delay_s)
            return step(body) if callable(step) else step
        finally:
            with self._lock:
                self.active -= 1

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep the test output quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if not self.path.endswith("/chat/completions"):
                status, payload, headers = 404, {"error": f"no route {self.path}"}, {}
            else:
                status, payload, headers = fake.respond(body, dict(self.headers), self.path)
            if status == 200 and body.get("stream") and isinstance(payload, dict):
                self._stream(payload["choices"][0]["message"]["content"])
                return
            if isinstance(payload, bytes):
                data = payload
            else:
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, text: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for word in text.split(" "):
                chunk = {"choices": [{"delta": {"content": word + " "}}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    return Handler
