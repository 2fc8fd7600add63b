"""Who the plugin is on the relay: this machine's inbox credential, and one LineUp session per Hermes session.

The credential comes from, in this order: LINEUP_MACHINE_CREDENTIAL; the plugin's own file
`<state dir>/hermes.json` (written by `hermes lineup join CODE`); the `lineup` adapter's `<state dir>/sessions.json`
(when `lineup` already made or joined this machine's inbox on the same relay). Never RELAY_KEY.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .relay import LineUpHermesError, Relay, normalize_url

DEFAULT_RELAY_URL = "http://127.0.0.1:8787"
PLUGIN_FILE = "hermes.json"
ADAPTER_FILE = "sessions.json"


@dataclass(frozen=True)
class Settings:
    relay_url: str
    state_dir: Path
    credential_env: str | None
    ask_timeout_s: int


def settings_from(get_config: Callable[..., Any], env: dict[str, str] | None = None) -> Settings:
    """Environment first, then the plugin's settings (`plugins.entries.lineup.settings.*`, ctx.get_config)."""
    e = os.environ if env is None else env
    relay = e.get("LINEUP_RELAY_URL") or get_config("relay_url", None) or DEFAULT_RELAY_URL
    state = e.get("LINEUP_STATE_DIR") or get_config("state_dir", None) or str(Path.home() / ".lineup")
    try:
        ask = int(get_config("ask_timeout_s", 600))
    except (TypeError, ValueError):
        ask = 600
    return Settings(str(relay), Path(state).expanduser(), e.get("LINEUP_MACHINE_CREDENTIAL") or None, max(10, min(ask, 86_400)))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        v = json.loads(path.read_text("utf-8"))
        return v if isinstance(v, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_json(path: Path, value: dict[str, Any]) -> None:
    """Atomically, mode 0600 (it holds the machine credential and agent tokens), in a 0700 directory."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2)
    os.replace(tmp, path)


class Identity:
    """This machine's inbox on one relay, and the LineUp session of each Hermes session (memory is a cache of
    `<state dir>/hermes.json`)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # A bad URL does not fail register() (Hermes would unload the plugin): every use raises it instead.
        try:
            self._relay: Relay | LineUpHermesError = Relay(settings.relay_url)
        except LineUpHermesError as e:
            self._relay = e
        self._lock = threading.Lock()
        self._sessions: dict[str, dict[str, Any]] = {}

    @property
    def relay(self) -> Relay:
        if isinstance(self._relay, LineUpHermesError):
            raise self._relay
        return self._relay

    # --- the credential -------------------------------------------------------------------------------------
    def credential(self) -> str:
        if self.settings.credential_env:
            return self.settings.credential_env
        mine = _read_json(self.settings.state_dir / PLUGIN_FILE).get("inbox") or {}
        if isinstance(mine, dict) and mine.get("relayUrl") == self.relay.base and isinstance(mine.get("machineCredential"), str):
            return mine["machineCredential"]
        for ib in _read_json(self.settings.state_dir / ADAPTER_FILE).get("inboxes") or []:
            if not isinstance(ib, dict) or ib.get("relayUrl") != self.relay.base:
                continue
            if isinstance(ib.get("e2e"), dict) and ib["e2e"].get("on") is True:
                raise LineUpHermesError(
                    "sealed",
                    "end-to-end encryption is on for this machine's LineUp inbox (lineup e2e on); the Hermes plugin cannot seal "
                    "approvals, so it refuses to send them in plaintext. Set security.approval.transport_fallback: builtin to answer "
                    "in Hermes, or `lineup e2e off` (docs/e2e.md)",
                )
            if isinstance(ib.get("machineCredential"), str):
                return ib["machineCredential"]
        raise LineUpHermesError(
            "no_credential",
            f"this machine has no LineUp inbox on {self.relay.base}: run `hermes lineup join CODE` (a join code from the LineUp "
            f"app: Settings → Machines), or `lineup connect` once, or set LINEUP_MACHINE_CREDENTIAL",
        )

    def join(self, code: str, machine_name: str | None = None) -> dict[str, Any]:
        """Redeems a join code (POST /api/join) and keeps the credential in `<state dir>/hermes.json`."""
        code = code.strip()
        if "#" in code or "&k=" in code:
            raise LineUpHermesError(
                "sealed", "this join code carries an end-to-end key (CODE#SECRET): the Hermes plugin cannot hold E2E keys; use a plain join code"
            )
        _, body = self.relay.request("POST", "/api/join", None, {"code": code, "machine_name": machine_name or f"{socket.gethostname()[:50]} · Hermes"})
        with self._lock:
            state = _read_json(self.settings.state_dir / PLUGIN_FILE)
            state["inbox"] = {
                "relayUrl": self.relay.base,
                "inboxId": body["inbox_id"],
                "machineId": body["machine_id"],
                "machineCredential": body["machine_credential"],
            }
            state["sessions"] = {}
            self._sessions.clear()
            _write_json(self.settings.state_dir / PLUGIN_FILE, state)
        return {"inbox_id": body["inbox_id"], "machine_id": body["machine_id"]}

    # --- sessions ---------------------------------------------------------------------------------------------
    def session(self, session_key: str, project_dir: str) -> dict[str, Any]:
        """The LineUp session of a Hermes session (created on first use, labelled with the project)."""
        with self._lock:
            s = self._sessions.get(session_key)
            if s is None:
                saved = (_read_json(self.settings.state_dir / PLUGIN_FILE).get("sessions") or {}).get(session_key)
                if isinstance(saved, dict) and saved.get("relayUrl") == self.relay.base:
                    s = self._sessions[session_key] = saved
            if s is not None:
                return s
        return self._create(session_key, project_dir)

    def forget(self, session_key: str) -> None:
        with self._lock:
            self._sessions.pop(session_key, None)
            state = _read_json(self.settings.state_dir / PLUGIN_FILE)
            if (state.get("sessions") or {}).pop(session_key, None) is not None:
                _write_json(self.settings.state_dir / PLUGIN_FILE, state)

    def _create(self, session_key: str, project_dir: str) -> dict[str, Any]:
        cred = self.credential()
        # A sealed inbox (an E2E key epoch) would see plaintext from us: refuse instead (documented limit).
        _, inbox = self.relay.request("GET", "/api/inbox", cred)
        if isinstance(inbox, dict) and isinstance(inbox.get("e2e"), dict) and (inbox["e2e"].get("epoch") or 0) > 0:
            raise LineUpHermesError(
                "sealed",
                "end-to-end encryption is on for this LineUp inbox; the Hermes plugin cannot seal approvals, so it refuses to send them "
                "in plaintext (set security.approval.transport_fallback: builtin to answer in Hermes; docs/e2e.md)",
            )
        project = os.path.basename(os.path.normpath(project_dir)) or project_dir
        body = {"label": f"{project} · Hermes"[:120], "project_dir": project_dir[:1024], "host": socket.gethostname()[:64] or "hermes"}
        _, made = self.relay.request("POST", "/api/inbox/sessions", cred, body)
        s = {"relayUrl": self.relay.base, "session_id": made["session_id"], "agent_token": made["agent_token"], "project_dir": project_dir}
        with self._lock:
            self._sessions[session_key] = s
            state = _read_json(self.settings.state_dir / PLUGIN_FILE)
            sessions = state.get("sessions") if isinstance(state.get("sessions"), dict) else {}
            sessions[session_key] = s
            # Keep the file small: the newest 200 Hermes sessions (dicts keep insertion order).
            state["sessions"] = dict(list(sessions.items())[-200:])
            _write_json(self.settings.state_dir / PLUGIN_FILE, state)
        return s
