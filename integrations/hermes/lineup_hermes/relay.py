"""The relay's HTTP API, with the standard library only (urllib): inbox sessions, join codes and HTTP calls
(docs/protocol.md "HTTP calls", docs/inbox.md). Every failure is one LineUpHermesError with a code and a
sentence a Hermes user can act on; nothing here ever sends RELAY_KEY."""

from __future__ import annotations

import json
import re
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

# The relay answers an HTTP call's long-poll within `wait` (0-55 s); we ask for at most this much at once.
MAX_WAIT_S = 25
# Extra time our socket waits beyond `wait` before it calls the relay unreachable.
HTTP_SLACK_S = 10


class LineUpHermesError(Exception):
    """One error class: `code` is machine-readable (bad_config, relay_down, revoked, sealed, http_<status>, …)."""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


def normalize_url(url: str) -> str:
    """`http(s)://host[:port][/path]` without a trailing slash; ws(s) maps to http(s); anything else is bad_config."""
    u = (url or "").strip()
    if not re.match(r"^(https?|wss?)://", u, re.I):
        raise LineUpHermesError(
            "bad_config",
            f"the relay URL {u!r} is not an http(s):// URL (LINEUP_RELAY_URL or the plugin's relay_url setting)",
        )
    p = urllib.parse.urlsplit(re.sub(r"^ws", "http", u, flags=re.I))
    if not p.hostname:
        raise LineUpHermesError("bad_config", f"the relay URL {u!r} names no host")
    return f"{p.scheme.lower()}://{p.netloc}{p.path.rstrip('/')}"


class Relay:
    """One relay, by its base URL."""

    def __init__(self, base_url: str) -> None:
        self.base = normalize_url(base_url)

    def request(self, method: str, path: str, token: str | None, body: Any = None, timeout: float = 15) -> tuple[int, Any]:
        """One request; returns (status, JSON body) for 2xx; raises LineUpHermesError otherwise."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("accept", "application/json")
        if data is not None:
            req.add_header("content-type", "application/json")
        if token:
            req.add_header("authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                raw = res.read()
                return res.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raise _http_error(e, self.base, path) from None
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise LineUpHermesError(
                "relay_down", f"the LineUp relay at {self.base} cannot be reached ({reason}); is it running and is LINEUP_RELAY_URL right?"
            ) from None
        except ValueError:
            raise LineUpHermesError("bad_response", f"the relay at {self.base} answered {path} with something that is not JSON") from None


def _http_error(e: urllib.error.HTTPError, base: str, path: str) -> LineUpHermesError:
    code, msg = f"http_{e.code}", ""
    try:
        err = json.loads(e.read() or b"{}").get("error") or {}
        code, msg = str(err.get("code") or code), str(err.get("message") or "")
    except (ValueError, AttributeError):
        pass
    if e.code == 401 and path.startswith("/api/inbox"):
        return LineUpHermesError(
            "revoked",
            f"the relay at {base} refused this machine's inbox credential (401 {code}: it was revoked or belongs to another relay); "
            "join again with `hermes lineup join CODE` (a join code from the LineUp app)",
            401,
        )
    if e.code == 404 and code == "session_not_found":
        return LineUpHermesError("session_gone", msg or "the LineUp session ended", 404)
    return LineUpHermesError(code, f"the relay at {base} answered {e.code} {code} to {path}{': ' + msg if msg else ''}", e.code)
