"""One LineUp call over the relay's HTTP call API (docs/protocol.md "HTTP calls"): POST the call with the
relay-side `timeout_s`, then long-poll until the result or our own deadline. The relay ends the call at its
`timeout_s` (the phone's card then shows it timed out: the card is withdrawn); we never wait past `give_up_at`.

Whenever we stop waiting before a result — our own give-up, an exception or a KeyboardInterrupt while we wait,
or the process shutting down with a call open (atexit) — the call is withdrawn with
`DELETE /api/sessions/:sid/calls/:call_id`, so the phone shows it cancelled at once instead of at its timeout."""

from __future__ import annotations

import atexit
import secrets
import threading
import time
from typing import Any

from .relay import HTTP_SLACK_S, MAX_WAIT_S, LineUpHermesError, Relay

# How long a withdrawal may take before we give up on it (it is best effort: the relay's timeout still ends the call).
CANCEL_TIMEOUT_S = 3.0

_open_lock = threading.Lock()
_open: dict[str, tuple[Relay, str, str]] = {}  # call_id -> (relay, session id, agent token) of calls we wait for


def call(
    relay: Relay, session: dict[str, Any], name: str, arguments: dict[str, Any], timeout_s: int, give_up_at: float
) -> dict[str, Any] | None:
    """The call's `tool.result` frame (with `result` or `error`), or None when `give_up_at` (time.monotonic())
    came first. Raises LineUpHermesError when the relay cannot be used."""
    sid, token = session["session_id"], session["agent_token"]
    call_id = f"hermes_{secrets.token_urlsafe(12)}"
    frame = {"call_id": call_id, "name": name, "arguments": arguments, "timeout_s": max(1, int(timeout_s))}
    ended = False  # the relay gave us the call's end (a result, an error, or its expiry): nothing to withdraw
    with _open_lock:
        _open[call_id] = (relay, sid, token)
    try:
        wait = _wait_for(give_up_at)
        try:
            status, body = relay.request("POST", f"/api/sessions/{sid}/calls?wait={wait}", token, frame, timeout=wait + HTTP_SLACK_S)
        except LineUpHermesError as e:
            ended = e.status != 0  # the relay refused the call: it never opened
            raise
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
                    ended = True
                    return {"call_id": call_id, "error": {"code": "timeout", "message": "the call timed out on the relay"}}
                raise
        ended = True
        return body if isinstance(body, dict) else None
    finally:
        with _open_lock:
            mine = _open.pop(call_id, None) is not None
        if not ended and mine:
            withdraw(relay, sid, token, call_id)


def withdraw(relay: Relay, sid: str, token: str, call_id: str) -> bool:
    """Best effort: True when the relay withdrew the open call from the phone (its card shows "cancelled")."""
    try:
        relay.request("DELETE", f"/api/sessions/{sid}/calls/{call_id}", token, timeout=CANCEL_TIMEOUT_S)
        return True
    except LineUpHermesError:
        return False  # already ended (404 unknown_call), or the relay is gone: its own timeout ends the call


def withdraw_open_calls() -> int:
    """At process shutdown (atexit): withdraw every call a thread still waits for. Returns how many were withdrawn."""
    with _open_lock:
        calls = list(_open.items())
        _open.clear()
    return sum(withdraw(relay, sid, token, call_id) for call_id, (relay, sid, token) in calls)


atexit.register(withdraw_open_calls)


def _wait_for(give_up_at: float) -> int:
    """Whole seconds to long-poll: as long as the relay allows, never past our deadline."""
    return max(0, min(MAX_WAIT_S, int(give_up_at - time.monotonic())))
