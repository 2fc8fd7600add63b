"""Test-only: a raw LineUp app client (a paired phone without a browser) over a small RFC 6455 client —
handshake (§4.1), masked client frames (§5.3), 7/16/64-bit lengths (§5.2), fragments, ping/pong, close."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time
import urllib.parse
from typing import Any


class WsApp:
    def __init__(self, relay_url: str, session_id: str, credential: str) -> None:
        u = urllib.parse.urlsplit(relay_url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (
            f"GET /api/sessions/{session_id}/ws HTTP/1.1\r\nHost: {u.netloc}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: lineup.v1, lineup.token.{credential}\r\n\r\n"
        )
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" ":
            raise ConnectionError(f"handshake refused: {status!r}")
        self.frames: list[dict[str, Any]] = []

    def send(self, obj: dict[str, Any]) -> None:
        self._send(0x1, json.dumps(obj).encode())

    def _send(self, opcode: int, payload: bytes) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("socket closed")
            out += chunk
        return out

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The next JSON frame, or None after `timeout` seconds or a close."""
        self.sock.settimeout(timeout)
        data = b""
        try:
            while True:
                b0, b1 = self._read(2)
                n = b1 & 0x7F
                if n == 126:
                    n = struct.unpack("!H", self._read(2))[0]
                elif n == 127:
                    n = struct.unpack("!Q", self._read(8))[0]
                mask = self._read(4) if b1 & 0x80 else b""
                payload = self._read(n)
                if mask:
                    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
                op = b0 & 0x0F
                if op == 0x9:
                    self._send(0xA, payload)
                elif op == 0x8:
                    return None
                elif op in (0x0, 0x1):
                    data += payload
                    if b0 & 0x80:
                        if data == b"pong":
                            data = b""
                            continue
                        return json.loads(data)
        except (socket.timeout, TimeoutError, ConnectionError):
            return None

    def wait_for(self, pred, timeout: float) -> dict[str, Any] | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            f = self.recv(max(0.05, end - time.monotonic()))
            if f is None:
                return None
            self.frames.append(f)
            if pred(f):
                return f
        return None

    def close(self) -> None:
        try:
            self._send(0x8, struct.pack("!H", 1000))
        except OSError:
            pass
        self.sock.close()
