"""Test-only: Hermes' side of a plugin, written from its source (NousResearch/hermes-agent; README.md cites
files and commits). `FakeContext` has exactly the PluginContext methods the plugin may call, with Hermes'
signatures (any other attribute raises AttributeError, as on the real object); `ApprovalRequest` /
`ApprovalDecision` and `invoke` follow hermes_cli/approval_transport.py: the transport runs on a worker
thread, the host waits `timeout_seconds`, and an exception, a late or mismatched decision, a non-decision or
a choice outside `allowed_choices` all become deny with a failure code."""

from __future__ import annotations

import hashlib
import inspect
import asyncio
import json
import queue
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class ApprovalDecision:
    request_id: str
    request_digest: str
    choice: str


@dataclass(frozen=True)
class ApprovalRequest:
    schema_version: int
    request_id: str
    digest: str
    command: str
    description: str
    pattern_key: str
    pattern_keys: tuple[str, ...]
    surface: str
    timeout_seconds: float
    allowed_choices: tuple[str, ...]

    @classmethod
    def make(cls, command: str, session_key: str, timeout_seconds: float, allow_session=True, allow_permanent=False) -> "ApprovalRequest":
        choices = ["once"] + (["session"] if allow_session else []) + (["always"] if allow_permanent else []) + ["deny"]
        fields = dict(schema_version=1, request_id=uuid.uuid4().hex, command=command, description="dangerous: recursive delete",
                      pattern_key="rm -rf", pattern_keys=["rm -rf"], surface="cli", timeout_seconds=timeout_seconds, allowed_choices=choices)
        digest = hashlib.sha256(json.dumps({**fields, "session_key": session_key}, sort_keys=True).encode()).hexdigest()
        return cls(**{**fields, "pattern_keys": ("rm -rf",), "allowed_choices": tuple(choices)}, digest=digest)

    def respond(self, choice: str) -> ApprovalDecision:
        return ApprovalDecision(self.request_id, self.digest, choice)


def invoke(present: Callable[[ApprovalRequest], Any], request: ApprovalRequest) -> tuple[str, str | None]:
    """(choice, failure) as Hermes' host decides it."""
    results: queue.Queue = queue.Queue(maxsize=1)
    deadline = time.monotonic() + request.timeout_seconds

    def run() -> None:
        try:
            v = present(request)
            if inspect.isawaitable(v):
                v = asyncio.run(v)
            results.put(("result", v, time.monotonic()))
        except BaseException as e:  # noqa: BLE001 - Hermes fails closed on any exit
            results.put(("error", e, time.monotonic()))

    threading.Thread(target=run, daemon=True).start()
    try:
        kind, value, done = results.get(timeout=max(deadline - time.monotonic(), 0))
    except queue.Empty:
        return "deny", "timeout"
    if done > deadline:
        return "deny", "timeout"
    if kind == "error":
        return "deny", f"error: {value}"
    if not isinstance(value, ApprovalDecision):
        return "deny", "invalid"
    if value.request_id != request.request_id or value.request_digest != request.digest:
        return "deny", "stale"
    if value.choice not in request.allowed_choices:
        return "deny", "invalid"
    return value.choice, None


_TRANSPORT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class FakeContext:
    """PluginContext (hermes_cli/plugins.py): only the members the plugin may use, with their real signatures."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self._settings = dict(settings or {})
        self.transports: dict[str, Callable] = {}
        self.hooks: dict[str, list[Callable]] = {}
        self.tools: dict[str, dict[str, Any]] = {}
        self.cli: dict[str, dict[str, Any]] = {}
        self.middleware: dict[str, list[Callable]] = {}

    def register_approval_transport(self, name: str, present_fn: Callable) -> None:
        name = name.lower()
        if not _TRANSPORT_NAME.match(name) or name == "builtin":
            raise ValueError(f"invalid approval transport name {name!r}")
        if name in self.transports:
            raise ValueError(f"approval transport {name!r} already registered")
        if not callable(present_fn):
            raise TypeError("present_fn must be callable")
        self.transports[name] = present_fn

    def register_hook(self, hook_name: str, callback: Callable) -> None:
        self.hooks.setdefault(hook_name, []).append(callback)

    def register_tool(self, name: str, toolset: str, schema: dict, handler: Callable, check_fn: Callable | None = None,
                      requires_env: list | None = None, is_async: bool = False, description: str = "", emoji: str = "",
                      override: bool = False) -> None:
        if override:
            raise RuntimeError("PluginToolOverrideError: tools.override not granted")
        if name == "clarify":
            return None  # shadowing a core tool without override is refused
        self.tools[name] = {"toolset": toolset, "schema": schema, "handler": handler, "is_async": is_async}

    def register_cli_command(self, name: str, help: str, setup_fn: Callable, handler_fn: Callable | None = None,
                             description: str = "") -> None:
        self.cli[name] = {"help": help, "setup_fn": setup_fn, "handler_fn": handler_fn}

    def register_middleware(self, kind: str, callback: Callable) -> None:
        if not callable(callback):
            raise ValueError("non-callable middleware")
        self.middleware.setdefault(kind, []).append(callback)

    def get_config(self, key: str, default: Any = None) -> Any:
        return self._settings.get(key, default)

    def set_config(self, key: str, value: Any) -> None:
        self._settings[key] = value

    def inject_message(self, content: str, role: str = "user", *, session_key: str | None = None) -> bool:
        return False

    # Host side: run a tool through the tool_execution middleware chain as hermes_cli/middleware.py
    # `_run_execution_chain` does: keyword arguments, single-use `next_call`, the callback's return is the result.
    def run_tool(self, tool_name: str, args: dict[str, Any], terminal: Callable[[dict[str, Any]], Any], **context: Any) -> Any:
        callbacks = self.middleware.get("tool_execution", [])

        def call_at(i: int, payload: dict[str, Any]) -> Any:
            if i >= len(callbacks):
                return terminal(payload)
            used = False

            def next_call(next_payload: Any = None) -> Any:
                nonlocal used
                if used:
                    raise RuntimeError("next_call() more than once")
                used = True
                return call_at(i + 1, payload if next_payload is None else next_payload)

            kw = {"telemetry_schema_version": "hermes.observer.v1", "middleware_schema_version": "hermes.middleware.v1", **context}
            return callbacks[i](tool_name=tool_name, args=payload, original_args=args, next_call=next_call, **kw)

        return call_at(0, args)

    # Host side: fire a hook the way Hermes does (keyword arguments; return values ignored).
    def fire(self, hook_name: str, **kwargs: Any) -> None:
        for cb in self.hooks.get(hook_name, []):
            cb(**kwargs)
