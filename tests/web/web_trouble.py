"""A real HTTP server that misbehaves on purpose: 404, non-HTML, oversize, redirect loops, slow
answers, redirects to private and metadata addresses."""

from __future__ import annotations

import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARTICLE = """<!DOCTYPE html><html><head><title>Plain page</title><script>var tracker = 1;</script>
<style>body { color: red }</style></head><body>
<nav><a href="/home">Home navigation</a></nav>
<main><h1>Plain page</h1><p>The answer is forty-two.</p>
<p>See <a href="/other">the other page</a> too.</p></main>
<footer>Footer text here</footer></body></html>"""


def _handler(slow_s: float, big_bytes: int):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def _send(
            self,
            status: int,
            body: bytes,
            ctype: str = "text/html; charset=utf-8",
            headers: dict[str, str] | None = None,
            length: bool = True,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if length:
                self.send_header("Content-Length", str(len(body)))
            else:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path
            if path in ("/ok", "/other"):
                self._send(200, ARTICLE.encode())
            elif path == "/long":
                paras = "".join(f"<p>Paragraph {i}: {'word ' * 60}</p>" for i in range(40))
                self._send(
                    200,
                    f"<html><title>Long</title><body><h1>Long</h1>{paras}"
                    f"<p>The needle is here.</p></body></html>".encode(),
                )
            elif path == "/pdf":
                self._send(200, b"%PDF-1.4 binary", "application/pdf")
            elif path == "/big":
                self._send(200, b"<p>" + b"x" * big_bytes + b"</p>")
            elif path == "/big-chunked":  # no Content-Length: the cap must hold while reading
                self._send(200, b"<p>" + b"y" * big_bytes + b"</p>", length=False)
            elif path == "/loop-a":
                self._send(302, b"", headers={"Location": "/loop-b"})
            elif path == "/loop-b":
                self._send(302, b"", headers={"Location": "/loop-a"})
            elif path.startswith("/hop"):
                n = int(path[4:] or 0)
                self._send(302, b"", headers={"Location": f"/hop{n + 1}"})
            elif path == "/to-private":
                self._send(302, b"", headers={"Location": "http://10.1.2.3/secret"})
            elif path == "/to-metadata":
                self._send(302, b"", headers={"Location": "http://169.254.169.254/latest/meta-data/"})
            elif path == "/slow":
                time.sleep(slow_s)
                self._send(200, ARTICLE.encode())
            elif path == "/latin1":
                self._send(200, "<p>café crème</p>".encode("latin-1"), "text/html; charset=iso-8859-1")
            elif path == "/text":
                self._send(200, b"plain words", "text/plain")
            else:
                self._send(404, b"<h1>Not Found</h1>")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextlib.contextmanager
def serve_trouble(slow_s: float = 3.0, big_bytes: int = 200_000):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(slow_s, big_bytes))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
