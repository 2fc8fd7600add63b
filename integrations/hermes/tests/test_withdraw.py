"""A call the plugin stops waiting for before its result is withdrawn at once (DELETE /api/sessions/:sid/calls/:id):
the phone gets tool.cancel reason "cancelled" instead of a card that lingers until the relay-side timeout.
Against a real relay (LINEUP_TEST_RELAY), with the paired phone as a raw app client."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import unittest
from pathlib import Path
from typing import Any
from unittest import mock

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fake_hermes import ApprovalRequest, invoke  # noqa: E402
from test_lineup_plugin import RELAY, Inbox, http, in_thread, plugin_for  # noqa: E402

# Far longer than each test runs: a "timeout" cancel cannot be what the phone sees.
LONG_S = 120


def is_cancel(call: dict[str, Any]):
    return lambda f: f.get("type") == "tool.cancel" and f.get("call_id") == call["call_id"]


@unittest.skipUnless(RELAY, "set LINEUP_TEST_RELAY to a relay URL (npm test runs this through test/system/hermes-plugin.test.ts)")
class WithdrawTest(unittest.TestCase):
    def setUp(self) -> None:
        self.inbox = Inbox()
        self.ctx = plugin_for({"LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": self.inbox.dir})
        self.present = self.ctx.transports["lineup"]
        self.plugin = self.present.__self__
        self.calls = sys.modules["hermes_plugins.lineup.lineup_hermes.calls"]

    def phone_call(self) -> tuple[Any, dict[str, Any]]:
        sid, _ = self.inbox.waiting()
        app = self.inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        self.assertIsNotNone(call)
        return app, call

    def test_a_keyboard_interrupt_while_an_approval_waits_withdraws_the_card_as_cancelled(self) -> None:
        relay_cls = type(self.plugin.identity.relay)
        real = relay_cls.request

        def interrupted(relay, method, path, *a, **kw):
            if method == "GET" and "/calls/" in path:
                raise KeyboardInterrupt  # Ctrl-C in Hermes while the approval waits
            return real(relay, method, path, *a, **kw)

        # The first long-poll (the POST) returns 202 after a second, so the wait reaches a GET quickly.
        with mock.patch.object(self.calls, "MAX_WAIT_S", 1), mock.patch.object(relay_cls, "request", interrupted):
            req = ApprovalRequest.make("rm -rf build", "hermes-session-1", LONG_S)
            self.ctx.fire("pre_approval_request", session_key="hermes-session-1", request_id=req.request_id, request_digest=req.digest)
            out = in_thread(invoke, self.present, req)
            app, call = self.phone_call()
            cancel = app.wait_for(is_cancel(call), 20)
            out["thread"].join(20)
        self.assertIsNotNone(cancel, "the card stayed on the phone after the interrupt")
        self.assertEqual(cancel["reason"], "cancelled")
        self.assertEqual(out["value"][0], "deny")
        app.close()

    def test_the_plugins_own_give_up_before_the_relay_timeout_withdraws_the_call(self) -> None:
        session = self.plugin.identity.session("hermes-session-1", os.getcwd())
        args = {"question": "now?", "options": ["a", "b"]}
        out = in_thread(self.calls.call, self.plugin.identity.relay, session, "choice", args, LONG_S, time.monotonic() + 4)
        app, call = self.phone_call()
        cancel = app.wait_for(is_cancel(call), 20)
        out["thread"].join(20)
        self.assertIsNone(out["value"], "the call should have given up without a result")
        self.assertIsNotNone(cancel, "the card stayed on the phone after the plugin gave up")
        self.assertEqual(cancel["reason"], "cancelled")
        # The inbox's waiting list (what the notifications follow) drops it too.
        end = time.monotonic() + 10
        while any(x.get("waiting") for x in http("GET", "/api/inbox", self.inbox.device)["sessions"]) and time.monotonic() < end:
            time.sleep(0.2)
        self.assertEqual([x["waiting"] for x in http("GET", "/api/inbox", self.inbox.device)["sessions"] if x.get("waiting")], [])
        app.close()

    def test_a_hermes_process_that_exits_with_an_approval_open_withdraws_it(self) -> None:
        # A real interpreter shutdown: Hermes' approval worker is a daemon thread, so only atexit still runs.
        script = (
            "import sys, threading\n"
            f"sys.path.insert(0, {str(HERE)!r})\n"
            "from test_lineup_plugin import plugin_for\n"
            "from fake_hermes import ApprovalRequest, invoke\n"
            "import os\n"
            "ctx = plugin_for({'LINEUP_RELAY_URL': os.environ['LINEUP_TEST_RELAY'], 'LINEUP_STATE_DIR': os.environ['STATE']})\n"
            f"req = ApprovalRequest.make('make deploy', 'hermes-exit', {LONG_S})\n"
            "threading.Thread(target=invoke, args=(ctx.transports['lineup'], req), daemon=True).start()\n"
            "sys.stdin.readline()\n"  # the test says when: the phone holds the card
        )
        env = {**os.environ, "STATE": self.inbox.dir, "LINEUP_TEST_RELAY": RELAY, "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, env=env, text=True)
        try:
            app, call = self.phone_call()
            self.assertEqual(call["name"], "permission")
            proc.stdin.write("exit\n")
            proc.stdin.close()
            self.assertEqual(proc.wait(30), 0)
            cancel = app.wait_for(is_cancel(call), 20)
            self.assertIsNotNone(cancel, "the card stayed on the phone after Hermes exited")
            self.assertEqual(cancel["reason"], "cancelled")
            app.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


if __name__ == "__main__":
    unittest.main()
