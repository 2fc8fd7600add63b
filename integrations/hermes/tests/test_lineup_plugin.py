"""The Hermes plugin against a real relay (LINEUP_TEST_RELAY: the node test project's `wrangler dev`, set when
`npm test` runs this through test/system/hermes-plugin.test.ts), loaded the way Hermes loads a folder plugin,
with a fake Hermes context and host (fake_hermes.py) and a raw app client as the paired phone (ws_app.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest
import urllib.request
from pathlib import Path
from typing import Any
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fake_hermes import ApprovalRequest, FakeContext, invoke  # noqa: E402
from ws_app import WsApp  # noqa: E402

RELAY = os.environ.get("LINEUP_TEST_RELAY", "")
DEV_KEY = "lineup-dev-relay-key"  # the test's own key to make an inbox; the plugin never sees it


def load_folder_plugin() -> types.ModuleType:
    """As hermes_cli/plugins_loader.py `_load_directory_module` does: package `hermes_plugins.<slug>`, the plugin
    directory as its only search location (not on sys.path)."""
    sys.modules.setdefault("hermes_plugins", types.ModuleType("hermes_plugins"))
    for k in [k for k in sys.modules if k.startswith("hermes_plugins.lineup")]:
        del sys.modules[k]
    spec = importlib.util.spec_from_file_location("hermes_plugins.lineup", HERE.parent / "__init__.py", submodule_search_locations=[str(HERE.parent)])
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["hermes_plugins.lineup"] = mod
    spec.loader.exec_module(mod)
    return mod


def http(method: str, path: str, token: str | None, body: Any = None) -> Any:
    req = urllib.request.Request(RELAY + path, data=None if body is None else json.dumps(body).encode(), method=method)
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=15) as r:
        raw = r.read()
        return json.loads(raw) if raw else None


class Inbox:
    """A fresh inbox with one machine (written to a temp state dir in the adapter's format) and one paired device."""

    def __init__(self) -> None:
        made = http("POST", "/api/inboxes", DEV_KEY, {"machine_name": "hermes-test"})
        self.machine, self.machine_id = made["machine_credential"], made["machine_id"]
        code = http("POST", "/api/inbox/pairings", self.machine, {})["code"]
        self.device = http("POST", "/api/pair", None, {"code": code, "name": "test phone"})["device_credential"]
        self.dir = tempfile.mkdtemp(prefix="lineup-hermes-")
        inbox = {"relayUrl": RELAY.rstrip("/"), "inboxId": made["inbox_id"], "machineId": self.machine_id, "machineCredential": self.machine}
        Path(self.dir, "sessions.json").write_text(json.dumps({"version": 1, "sessions": [], "clients": {}, "inboxes": [inbox]}))

    def waiting(self, timeout: float = 20) -> tuple[str, dict[str, Any]]:
        """The first session of the inbox with a waiting call, as the phone's inbox lists it."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for s in http("GET", "/api/inbox", self.device)["sessions"]:
                if s.get("waiting"):
                    return s["session_id"], s
            time.sleep(0.2)
        raise AssertionError("no call reached the inbox")

    def app(self, session_id: str) -> WsApp:
        a = WsApp(RELAY, session_id, self.device)
        assert a.wait_for(lambda f: f.get("type") == "hello", 10)
        tools = [{"name": n, "type": "action", "description": "", "inputSchema": {"type": "object"}} for n in ("permission", "choice", "ask_question")]
        a.send({"type": "tool.list", "tools": tools})
        return a


def plugin_for(env: dict[str, str], settings: dict[str, Any] | None = None) -> FakeContext:
    ctx = FakeContext(settings)
    with mock.patch.dict(os.environ, env, clear=False):
        for k in ("LINEUP_MACHINE_CREDENTIAL",):
            if k not in env:
                os.environ.pop(k, None)
        load_folder_plugin().register(ctx)
    return ctx


def in_thread(fn, *args) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t = threading.Thread(target=lambda: out.update(value=fn(*args)), daemon=True)
    t.start()
    out["thread"] = t
    return out


@unittest.skipUnless(RELAY, "set LINEUP_TEST_RELAY to a relay URL (npm test runs this through test/system/hermes-plugin.test.ts)")
class HermesPluginTest(unittest.TestCase):
    def setUp(self) -> None:
        self.inbox = Inbox()
        self.ctx = plugin_for({"LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": self.inbox.dir})
        self.present = self.ctx.transports["lineup"]

    def ask(self, timeout: float = 60, **kw) -> tuple[ApprovalRequest, dict[str, Any]]:
        req = ApprovalRequest.make("rm -rf build", "hermes-session-1", timeout, **kw)
        self.ctx.fire("pre_approval_request", command=req.command, description=req.description, pattern_key=req.pattern_key,
                      pattern_keys=req.pattern_keys, session_key="hermes-session-1", surface="transport:lineup",
                      request_id=req.request_id, request_digest=req.digest)
        return req, in_thread(invoke, self.present, req)

    def test_registers_the_transport_tool_hooks_and_cli_command_through_the_real_signatures(self) -> None:
        self.assertEqual(set(self.ctx.transports), {"lineup"})
        self.assertEqual(set(self.ctx.hooks), {"pre_approval_request", "on_session_start"})
        self.assertEqual(self.ctx.tools["lineup_ask"]["schema"]["name"], "lineup_ask")
        self.assertIn("lineup", self.ctx.cli)
        with self.assertRaises(AttributeError):
            self.ctx.register_clarify_handler  # noqa: B018 - Hermes has no such member

    def test_an_approval_answered_session_on_the_phone_returns_session_with_exactly_hermes_choices_offered(self) -> None:
        req, out = self.ask()
        sid, listed = self.inbox.waiting()
        self.assertIn("hermes", listed["label"].lower())
        self.assertEqual(listed["waiting"][0]["options"], ["once", "session", "deny"])  # the notification's taps
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        self.assertIsNotNone(call)
        self.assertEqual(call["name"], "permission")
        self.assertEqual(call["arguments"]["choices"], ["once", "session", "deny"])
        self.assertEqual(call["arguments"]["input"]["command"], "rm -rf build")
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "session", "behavior": "allow"}})
        out["thread"].join(30)
        self.assertEqual(out["value"], ("session", None))
        app.close()

    def test_an_approval_denied_on_the_phone_returns_deny(self) -> None:
        req, out = self.ask()
        sid, _ = self.inbox.waiting()
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "deny", "behavior": "deny"}})
        out["thread"].join(30)
        self.assertEqual(out["value"], ("deny", None))
        app.close()

    def test_always_answered_where_hermes_did_not_offer_it_is_deny_not_an_invalid_choice(self) -> None:
        req, out = self.ask()
        sid, _ = self.inbox.waiting()
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "always", "behavior": "allow"}})
        out["thread"].join(30)
        self.assertEqual(out["value"], ("deny", None))
        app.close()

    def test_an_unanswered_approval_is_denied_before_hermes_deadline_and_its_card_withdrawn(self) -> None:
        req, out = self.ask(timeout=6)
        sid, _ = self.inbox.waiting()
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        self.assertIsNotNone(call)
        cancel = app.wait_for(lambda f: f.get("type") == "tool.cancel" and f.get("call_id") == call["call_id"], 15)
        out["thread"].join(15)
        # Hermes' host counts an answer after its deadline as a "timeout" failure: ours came in time, as deny.
        self.assertEqual(out["value"], ("deny", None))
        self.assertIsNotNone(cancel, "the card was not withdrawn")
        self.assertEqual(cancel["reason"], "timeout")
        app.close()

    def test_lineup_ask_puts_a_six_choice_question_on_the_phone_and_returns_the_pick(self) -> None:
        handler = self.ctx.tools["lineup_ask"]["handler"]
        six = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east"]
        out = in_thread(lambda: handler({"question": "Which **region**?", "choices": six}, task_id="hermes-session-1"))
        sid, listed = self.inbox.waiting()
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        self.assertEqual(call["name"], "choice")
        self.assertEqual(call["arguments"]["options"], six)
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "ap-east", "selected": ["ap-east"]}})
        out["thread"].join(30)
        got = json.loads(out["value"])
        self.assertEqual(got["user_response"], "ap-east")
        self.assertEqual(got["choices_offered"], six)
        app.close()

    def test_an_approval_and_a_question_of_one_hermes_session_share_one_lineup_session(self) -> None:
        req, out = self.ask()
        sid, _ = self.inbox.waiting()
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "allow", "behavior": "allow"}})
        out["thread"].join(30)
        self.assertEqual(out["value"], ("once", None))
        asked = in_thread(lambda: self.ctx.tools["lineup_ask"]["handler"]({"question": "Anything else?"}, task_id="hermes-session-1"))
        q = app.wait_for(lambda f: f.get("type") == "tool.call" and f.get("name") == "ask_question", 15)
        self.assertIsNotNone(q, "the question did not reach the same LineUp session")
        app.send({"type": "tool.result", "call_id": q["call_id"], "result": {"message": "no, ship it"}})
        asked["thread"].join(30)
        self.assertEqual(json.loads(asked["value"])["user_response"], "no, ship it")
        self.assertEqual(len(http("GET", "/api/inbox", self.inbox.device)["sessions"]), 1)
        app.close()

    def test_hermes_lineup_join_redeems_a_code_from_the_app_and_the_plugin_then_uses_it(self) -> None:
        code = http("POST", "/api/inbox/join-codes", self.inbox.device, {})["code"]
        d = tempfile.mkdtemp(prefix="lineup-hermes-join-")
        ctx = plugin_for({"LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": d})
        import argparse

        parser = argparse.ArgumentParser(prog="hermes lineup")
        ctx.cli["lineup"]["setup_fn"](parser)
        ns = parser.parse_args(["join", code, "--name", "build box"])
        self.assertEqual(ctx.cli["lineup"]["handler_fn"](ns), 0)
        saved = json.loads(Path(d, "hermes.json").read_text())
        self.assertTrue(saved["inbox"]["machineCredential"].startswith("lum1."))
        self.assertEqual(os.stat(Path(d, "hermes.json")).st_mode & 0o777, 0o600)
        machines = {m["name"] for m in http("GET", "/api/inbox", self.inbox.device)["machines"]}
        self.assertIn("build box", machines)
        # A second use of the code is refused clearly.
        self.assertEqual(ctx.cli["lineup"]["handler_fn"](parser.parse_args(["join", code])), 1)

    def test_an_inbox_another_machine_turned_e2e_on_is_refused_instead_of_sent_plaintext(self) -> None:
        # The adapter of the repository turns E2E on for the inbox (a key epoch on the relay); the plugin, with the
        # same inbox's credential but no keys, must not create a plaintext session in it.
        bin_ = HERE.parents[2] / "adapter" / "bin" / "lineup.mjs"
        env = {**os.environ, "LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": self.inbox.dir}
        done = subprocess.run(["node", str(bin_), "e2e", "on"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90)
        self.assertEqual(done.returncode, 0, done.stderr)
        ctx = plugin_for({"LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": tempfile.mkdtemp(), "LINEUP_MACHINE_CREDENTIAL": self.inbox.machine})
        choice, failure = invoke(ctx.transports["lineup"], ApprovalRequest.make("ls", "k", 30))
        self.assertEqual(choice, "deny")
        self.assertIn("end-to-end encryption is on for this LineUp inbox", failure or "")
        self.assertEqual(http("GET", "/api/inbox", self.inbox.device)["sessions"], [])

    def test_a_revoked_machine_credential_fails_clearly_and_hermes_denies(self) -> None:
        req, out = self.ask()  # makes the session first
        sid, _ = self.inbox.waiting()
        http("DELETE", f"/api/inbox/machines/{self.inbox.machine_id}", self.inbox.device)
        out["thread"].join(30)
        self.assertEqual(out["value"][0], "deny")
        req2 = ApprovalRequest.make("rm -rf build", "hermes-session-1", 30)
        self.ctx.fire("pre_approval_request", session_key="hermes-session-1", request_id=req2.request_id, request_digest=req2.digest)
        choice, failure = invoke(self.present, req2)
        self.assertEqual(choice, "deny")
        self.assertIn("revoked", failure or "")
        self.assertIn("hermes lineup join", failure or "")


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class HermesPluginWithoutRelayTest(unittest.TestCase):
    def test_a_relay_that_is_down_fails_clearly_and_hermes_denies(self) -> None:
        d = tempfile.mkdtemp(prefix="lineup-hermes-")
        url = f"http://127.0.0.1:{closed_port()}"
        ctx = plugin_for({"LINEUP_RELAY_URL": url, "LINEUP_STATE_DIR": d, "LINEUP_MACHINE_CREDENTIAL": "lum1.x.mc_x.secret"})
        choice, failure = invoke(ctx.transports["lineup"], ApprovalRequest.make("ls", "k", 30))
        self.assertEqual(choice, "deny")
        self.assertIn("cannot be reached", failure or "")

    def test_a_relay_url_without_a_scheme_fails_clearly_at_use_and_register_still_succeeds(self) -> None:
        ctx = plugin_for({"LINEUP_RELAY_URL": "relay.example.com", "LINEUP_STATE_DIR": tempfile.mkdtemp()})
        choice, failure = invoke(ctx.transports["lineup"], ApprovalRequest.make("ls", "k", 30))
        self.assertEqual(choice, "deny")
        self.assertIn("not an http(s):// URL", failure or "")

    def test_a_machine_with_e2e_on_is_refused_clearly_instead_of_sending_the_approval_in_plaintext(self) -> None:
        d = tempfile.mkdtemp(prefix="lineup-hermes-")
        url = f"http://127.0.0.1:{closed_port()}"  # refused before any request: nothing is sent anywhere
        e2e = {"on": True, "machineKey": {}, "keys": {"1": "k"}, "roster": [], "pending": []}
        inbox = {"relayUrl": url, "inboxId": "ib", "machineId": "mc", "machineCredential": "lum1.ib.mc.s", "e2e": e2e}
        Path(d, "sessions.json").write_text(json.dumps({"version": 1, "sessions": [], "clients": {}, "inboxes": [inbox]}))
        ctx = plugin_for({"LINEUP_RELAY_URL": url, "LINEUP_STATE_DIR": d})
        choice, failure = invoke(ctx.transports["lineup"], ApprovalRequest.make("ls", "k", 30))
        self.assertEqual(choice, "deny")
        self.assertIn("end-to-end encryption is on", failure or "")

    def test_no_credential_tells_the_user_to_join(self) -> None:
        ctx = plugin_for({"LINEUP_RELAY_URL": "http://127.0.0.1:9", "LINEUP_STATE_DIR": tempfile.mkdtemp()})
        choice, failure = invoke(ctx.transports["lineup"], ApprovalRequest.make("ls", "k", 30))
        self.assertEqual(choice, "deny")
        self.assertIn("hermes lineup join CODE", failure or "")


if __name__ == "__main__":
    unittest.main()
