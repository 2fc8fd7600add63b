"""The plugin's behaviour, apart from Hermes: approvals as `permission` cards, `lineup_ask`, the session map.

Hermes facts this follows (NousResearch/hermes-agent; files and commits in ../README.md):
- an approval transport gets a frozen ApprovalRequest and must RETURN `request.respond(choice)`; an exception,
  a late answer, another request's answer or a choice outside `allowed_choices` all become deny
  (hermes_cli/approval_transport.py `invoke_approval_transport` / `_validate_decision`);
- the request carries no session key: `pre_approval_request` fires just before it with `session_key`,
  `request_id` and `request_digest` (tools/approval_prompt.py).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any

from .calls import call
from .identity import Identity, Settings
from .relay import LineUpHermesError

log = logging.getLogger("lineup_hermes")

CHOICES = ("once", "session", "always", "deny")
# The card is withdrawn (the relay's timeout) this long before Hermes' deadline, and we answer deny at the
# latest GIVE_UP_MARGIN_S before it; both scale down for short timeouts.
WITHDRAW_MARGIN_S = 5.0
GIVE_UP_MARGIN_S = 1.0
DEFAULT_SESSION = "hermes"
MAX_MAPPED_REQUESTS = 256


def margins(timeout_s: float) -> tuple[int, float]:
    """(the relay-side timeout_s of the card, seconds after which we stop waiting) for Hermes' timeout."""
    t = max(float(timeout_s), 0.0)
    give_up = max(t - min(GIVE_UP_MARGIN_S, t * 0.1), 0.0)
    withdraw = int(max(1, min(t - min(WITHDRAW_MARGIN_S, t * 0.25), give_up)))
    return withdraw, give_up


class LineUpPlugin:
    def __init__(self, settings: Settings) -> None:
        self.identity = Identity(settings)
        self.settings = settings
        self._lock = threading.Lock()
        self._request_session: dict[str, str] = {}
        self._current_session: str | None = None

    # --- hooks: which Hermes session a request belongs to -------------------------------------------------------
    def on_pre_approval_request(self, **kw: Any) -> None:
        rid, key = kw.get("request_id"), kw.get("session_key")
        if isinstance(rid, str) and isinstance(key, str) and key:
            with self._lock:
                self._request_session[rid] = key
                self._current_session = key
                while len(self._request_session) > MAX_MAPPED_REQUESTS:
                    self._request_session.pop(next(iter(self._request_session)))

    def on_session_start(self, **kw: Any) -> None:
        key = kw.get("session_id") or kw.get("session_key")
        if isinstance(key, str) and key:
            with self._lock:
                self._current_session = key

    def _session_key(self, request_id: str | None = None, hint: Any = None) -> str:
        """The Hermes session of a request (mapped by pre_approval_request), else `hint` (a tool call's
        session_id / task_id keyword), else the session a hook named last, else one default session."""
        with self._lock:
            if request_id is not None and request_id in self._request_session:
                return self._request_session.pop(request_id)
            if isinstance(hint, str) and hint:
                return hint
            return self._current_session or DEFAULT_SESSION

    def _lineup_session(self, key: str) -> dict[str, Any]:
        return self.identity.session(key, os.getcwd())

    def _call(self, key: str, name: str, args: dict[str, Any], timeout_s: int, give_up_at: float) -> dict[str, Any] | None:
        """A call in the Hermes session's LineUp session; a session the relay ended is made again once."""
        for attempt in (0, 1):
            s = self._lineup_session(key)
            try:
                return call(self.identity.relay, s, name, args, timeout_s, give_up_at)
            except LineUpHermesError as e:
                if e.code != "session_gone" or attempt:
                    raise
                self.identity.forget(key)
        return None

    # --- the approval transport --------------------------------------------------------------------------------
    def present(self, request: Any) -> Any:
        """Hermes' approval on the phone: exactly `allowed_choices` on the card and the notification; the human's
        choice, or deny when nobody answered before Hermes' deadline (the card is withdrawn first). Relay and
        credential problems raise, so Hermes applies `transport_fallback` (deny, or its own prompt)."""
        started = time.monotonic()
        allowed = [c for c in CHOICES if c in tuple(request.allowed_choices)]
        withdraw_s, give_up_s = margins(request.timeout_seconds)
        key = self._session_key(request.request_id)
        args: dict[str, Any] = {
            "tool_name": "terminal",
            "input": {"command": request.command, "description": request.description},
            "project_directory": os.getcwd(),
            "agent": "Hermes",
            "reason": request.description or "Hermes asks before running this command",
            "choices": allowed,
        }
        if request.pattern_keys:
            args["input"]["pattern_keys"] = list(request.pattern_keys)
        try:
            res = self._call(key, "permission", args, withdraw_s, started + give_up_s)
        except LineUpHermesError as e:
            log.warning("LineUp approval transport: %s", e)
            raise
        choice = choice_of(res, allowed)
        log.info("LineUp approval %s: %s", request.request_id[:8], choice)
        return request.respond(choice)

    # --- the lineup_ask tool -------------------------------------------------------------------------------------
    def ask(self, args: dict[str, Any], **kw: Any) -> str:
        """Hermes dispatches a tool as `handler(args, **kwargs)` (tools/registry.py `dispatch`) and wants a string."""
        question = args.get("question")
        if not isinstance(question, str) or not question.strip():
            return json.dumps({"error": "lineup_ask needs a `question` (markdown)"})
        choices = args.get("choices")
        if choices is not None and (not isinstance(choices, list) or not all(isinstance(c, str) and c.strip() for c in choices)):
            return json.dumps({"error": "`choices` must be a list of non-empty strings"})
        multiple = args.get("multi_select") is True
        t = self.settings.ask_timeout_s
        if choices:
            name, call_args = "choice", {"question": question, "options": choices, "multiple": multiple}
        else:
            name, call_args = "ask_question", {"project_directory": os.getcwd(), "question": question}
        try:
            res = self._call(self._session_key(hint=kw.get("session_id") or kw.get("task_id")), name, call_args, t, time.monotonic() + t + 5)
        except LineUpHermesError as e:
            return json.dumps({"error": str(e), "code": e.code})
        out: dict[str, Any] = {"question": question, "choices_offered": choices or []}
        if res is None or "error" in res:
            err = (res or {}).get("error") or {"code": "timeout"}
            out["error"] = f"no answer from the human ({err.get('code')}: {err.get('message', 'no answer in time')})"
            return json.dumps(out)
        result = res.get("result") or {}
        if name == "choice":
            sel = result.get("selected")
            out["user_response"] = sel if multiple else (sel[0] if isinstance(sel, list) and sel else result.get("message"))
        else:
            out["user_response"] = result.get("message")
        return json.dumps(out, ensure_ascii=False)


class ClarifyOnPhone:
    """Hermes' own `clarify` answered on the phone, through a `tool_execution` middleware
    (`ctx.register_middleware`; hermes_cli/middleware.py `_run_execution_chain`: a middleware's return value is
    the tool's result, and one that does not call `next_call` replaces the execution). `clarify` is an inline
    agent-level tool, but its sequential dispatch runs through that chain (agent/tool_executor.py
    `_run_sequential_call` → `_run_sequential_tool_execution_middleware`). Opt-in: setting `clarify_on_phone`."""

    def __init__(self, plugin: LineUpPlugin) -> None:
        self.plugin = plugin

    def __call__(self, *, tool_name: str = "", args: Any = None, next_call: Any = None, **kw: Any) -> Any:
        # Any other tool, and clarify's batch form (`questions`), run as Hermes would.
        if tool_name != "clarify" or not isinstance(args, dict) or args.get("questions") or not isinstance(args.get("question"), str):
            return next_call(args)
        choices = args.get("choices") or None
        ask = {"question": args["question"], "choices": choices, "multi_select": args.get("multi_select") is True}
        out = self.plugin.ask(ask, session_id=kw.get("session_id"), task_id=kw.get("task_id"))
        # The relay cannot be used (down, revoked, sealed): Hermes' own prompt asks instead.
        if "code" in json.loads(out):
            log.warning("LineUp clarify: %s; Hermes asks in its own UI", json.loads(out).get("error"))
            return next_call(args)
        return out


def choice_of(res: dict[str, Any] | None, allowed: list[str]) -> str:
    """The Hermes choice a `permission` result gives (docs/permissions.md §14): allow → once, session, always,
    deny; anything else — no answer, an error, a declined card, a choice not offered — is deny."""
    if not res or "result" not in res:
        return "deny"
    r = res.get("result") or {}
    msg, behavior = r.get("message"), r.get("behavior")
    choice = {"allow": "once", "session": "session", "always": "always"}.get(msg) if behavior == "allow" else "deny"
    return choice if choice in allowed else "deny"
