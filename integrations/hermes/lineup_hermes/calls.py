"""One LineUp call over the relay's HTTP call API (docs/protocol.md "HTTP calls"): POST the call with the
relay-side `timeout_s`, then long-poll until the result or our own deadline. The relay ends the call at its
`timeout_s` (the phone's card then shows it timed out: the card is withdrawn); we never wait past `give_up_at`."""

from __future__ import annotations

import secrets
import time
from typing import Any

from .relay import HTTP_SLACK_S, MAX_WAIT_S, LineUpHermesError, Relay


def call(
    relay: Relay, session: dict[str, Any], name: str, arguments: dict[str, Any], timeout_s: int, give_up_at: float
) -> dict[str, Any] | None:
    """The call's `tool.result` frame (with `result` or `error`), or None when `give_up_at` (time.monotonic())
    came first. Raises LineUpHermesError when the relay cannot be used."""
    sid, token = session["session_id"], session["agent_token"]
    call_id = f"hermes_{secrets.token_urlsafe(12)}"
    frame = {"call_id": call_id, "name": name, "arguments": arguments, "timeout_s": max(1, int(timeout_s))}
    wait = _wait_for(give_up_at)
    status, body = relay.request("POST", f"/api/sessions/{sid}/calls?wait={wait}", token, frame, timeout=wait + HTTP_SLACK_S)
    while status == 202:
        if time.monotonic() >= give_up_at - 0.2:
            return None
        wait = _wait_for(give_up_at)
        if wait == 0:
            time.sleep(0.2)
        try:
            status, body = relay.request("GET", f"/api/sessions/{sid}/calls/{call_id}?wait={wait}", token, timeout=wait + HTTP_SLACK_S)
        except LineUpHermesError as e:
            if e.code == "unknown_call":
                # Expired on the relay between two polls: it timed out there.
                return {"call_id": call_id, "error": {"code": "timeout", "message": "the call timed out on the relay"}}
            raise
    return body if isinstance(body, dict) else None


def _wait_for(give_up_at: float) -> int:
    """Whole seconds to long-poll: as long as the relay allows, never past our deadline."""
    return max(0, min(MAX_WAIT_S, int(give_up_at - time.monotonic())))
