"""A blocking client for the host's tool gateway, used from inside the kernel.

One short-lived unix-socket connection per request: nothing to resynchronise after a timeout or
a fork, and a connect costs tens of microseconds. Text that is not valid Unicode (a lone surrogate
in an argument or a notepad value) is sent as U+FFFD, never an exception (`protocol.encode`).
"""

from __future__ import annotations

import itertools
import os

from workbench.runtime.protocol import DEFAULT_SOCKET, ENV_SOCKET, decode, encode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ToolCallError(Exception):
    """A host tool failed or was called wrongly; the message is the host's."""

    def __init__(self, message: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool


class ToolArgumentError(TypeError):
    """A tool stub was called with arguments its signature does not accept (checked in the kernel)."""


class GatewayClient:
    """Sends requests to the gateway at `socket_path` (default: $WORKBENCH_GATEWAY)."""

    def __init__(self, socket_path: str | None = None, token: str | None = None, timeout_s: float = 60.0) -> None:
        self.socket_path = socket_path or os.environ.get(ENV_SOCKET) or DEFAULT_SOCKET
        self.token = token
        self.timeout_s = timeout_s
        self._ids = itertools.count(1)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the reply; raises ToolCallError when the gateway is unreachable."""
        import socket

        message = dict(message, id=next(self._ids), token=self.token)
        payload = encode(message)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout_s)
        try:
            try:
                sock.connect(self.socket_path)
            except OSError as exc:
                raise ToolCallError(
                    f"cannot reach the tool gateway at {self.socket_path} ({exc.strerror or exc}); "
                    f"tools only work in a kernel started by workbench with {ENV_SOCKET} set"
                ) from None
            try:
                sock.sendall(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the gateway hung up mid-request (e.g. over its size limit): read why
            buf = bytearray()
            try:
                while not buf.endswith(b"\n"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    buf += chunk
            except ConnectionResetError:
                if not buf.endswith(b"\n"):
                    raise
        except TimeoutError:
            raise ToolCallError(f"the tool gateway did not answer within {self.timeout_s:g} s") from None
        except OSError as exc:
            raise ToolCallError(f"lost the tool gateway connection ({exc})") from None
        finally:
            sock.close()
        if not buf:
            raise ToolCallError("the tool gateway closed the connection without a reply")
        try:
            reply = decode(bytes(buf))
        except ValueError:
            raise ToolCallError("the tool gateway sent a malformed reply") from None
        return reply
