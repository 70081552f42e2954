"""Raw, time-bounded Kafka protocol probes: is a broker answering, which brokers does it know.

Raw requests rather than a client library: something else listening on the
port, or a broker still starting, answers with an error string and cannot hang
the caller.
"""

from __future__ import annotations

import socket
import struct

_API_VERSIONS, _METADATA = 18, 3


def kafka_api_versions_error(host: str, port: int, timeout: float) -> str | None:
    """None when host:port answers a Kafka ApiVersions request, else why not.

    A raw, time-bounded request: something else listening on the port (or a
    broker still starting) cannot hang the caller.
    """
    answer = _request(host, port, _API_VERSIONS, 0, b"", timeout)
    if isinstance(answer, str):
        return answer
    if len(answer) < 2:
        return "a truncated ApiVersions answer"
    (error_code,) = struct.unpack_from(">h", answer)
    if error_code != 0:
        return f"ApiVersions error code {error_code}"
    return None


def kafka_known_brokers(host: str, port: int, timeout: float) -> tuple[set[int], int] | str:
    """The broker ids and the controller id the broker at host:port reports, else why not.

    A cluster whose nodes all answer may not have registered every broker yet;
    an admin request routed to an unregistered controller then fails.
    """
    answer = _request(host, port, _METADATA, 1, struct.pack(">i", 0), timeout)  # no topics
    if isinstance(answer, str):
        return answer
    try:
        (count,) = struct.unpack_from(">i", answer)
        offset, brokers = 4, set()
        for _ in range(count):
            (node_id,) = struct.unpack_from(">i", answer, offset)
            offset += 4
            (host_length,) = struct.unpack_from(">h", answer, offset)
            offset += 2 + host_length + 4  # host, port
            (rack_length,) = struct.unpack_from(">h", answer, offset)
            offset += 2 + max(rack_length, 0)
            brokers.add(node_id)
        (controller,) = struct.unpack_from(">i", answer, offset)
    except struct.error:
        return "a truncated Metadata answer"
    return brokers, controller


def _request(
    host: str, port: int, api_key: int, version: int, payload: bytes, timeout: float
) -> bytes | str:
    """Send one request (header v1) and return the answer after its correlation id."""
    correlation_id = 0x60A1
    client_id = b"goaicore-probe"
    body = struct.pack(">hhih", api_key, version, correlation_id, len(client_id))
    body += client_id + payload
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(struct.pack(">i", len(body)) + body)
            (size,) = struct.unpack(">i", _read_exactly(sock, 4))
            if not 4 <= size <= 1 << 20:
                return f"not a Kafka answer (size {size})"
            answer = _read_exactly(sock, size)
    except OSError as err:
        return f"{type(err).__name__}: {err}"
    (answered_id,) = struct.unpack_from(">i", answer)
    if answered_id != correlation_id:
        return f"not a Kafka answer (correlation id {answered_id})"
    return answer[4:]


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("connection closed before a full answer")
        data += chunk
    return data
