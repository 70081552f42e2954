"""An HTTP/1.1 request written byte for byte on a socket: headers no client library sends
(bytes that are not UTF-8, a header a client should not set)."""

from __future__ import annotations

import socket


def raw_request(port: int, method: str, path: str, headers: list[bytes]) -> tuple[int, bytes]:
    """Send ``method path`` to 127.0.0.1:``port`` with ``headers`` (each ``b"Name: value"``,
    sent as given); the answer's status and body."""
    head = b"\r\n".join(
        [
            f"{method} {path} HTTP/1.1".encode(),
            f"Host: 127.0.0.1:{port}".encode(),
            b"Connection: close",
            b"Content-Length: 0",
            *headers,
        ]
    )
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + b"\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    _, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), body
