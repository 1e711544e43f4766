"""A fake OpenAI-compatible chat server for tests (no network beyond 127.0.0.1)."""

from __future__ import annotations


class FakeOpenAI:
    """A fake OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1 (thread)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[dict] = []
        self.fail_first: list[int] = []     # status codes answered before succeeding
        self.active = 0
        self.max_active = 0
        self.delay_s = 0.0
        self.on_request = None              # called as on_request(n, body) before answering
        self.caption = "a caption number {n}."  # the answer to request number n
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802
                import json
                import time

                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                          "body": body})
                    status = fake.fail_first.pop(0) if fake.fail_first else 200
                    fake.active += 1
                    fake.max_active = max(fake.max_active, fake.active)
                    n = len(fake.requests)
                if fake.on_request is not None:
                    fake.on_request(n, body)
                time.sleep(fake.delay_s)
                with fake._lock:
                    fake.active -= 1
                if status != 200:
                    self.send_response(status)
                    self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b'{"error": "busy"}')
                    return
                text = fake.caption.format(n=n)
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for word in text.split(" "):
                        chunk = {"choices": [{"delta": {"content": word + " "}}]}
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # a client killed mid-answer
                import sys

                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
