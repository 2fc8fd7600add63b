"""Hermes' own `clarify` on the phone (setting `clarify_on_phone`): the plugin's `tool_execution` middleware
answers it through LineUp; other tools, and clarify when the relay cannot be used, run as Hermes would.
The chain is driven as hermes_cli/middleware.py runs it (fake_hermes.FakeContext.run_tool)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_lineup_plugin import RELAY, Inbox, closed_port, in_thread, plugin_for  # noqa: E402

SIX = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-east"]


def hermes_clarify(calls: list[dict[str, Any]]):
    """Hermes' own clarify UI (the terminal call of the chain): records that it ran."""

    def run(args: dict[str, Any]) -> str:
        calls.append(args)
        return json.dumps({"question": args.get("question"), "choices_offered": args.get("choices") or [], "user_response": "from the terminal"})

    return run


class ClarifyRegistrationTest(unittest.TestCase):
    def test_without_the_setting_no_middleware_is_registered_and_clarify_stays_hermes_own(self) -> None:
        ctx = plugin_for({"LINEUP_RELAY_URL": "http://127.0.0.1:9", "LINEUP_STATE_DIR": tempfile.mkdtemp()})
        self.assertEqual(ctx.middleware, {})

    def test_other_tools_pass_through_the_middleware_untouched(self) -> None:
        ctx = plugin_for({"LINEUP_RELAY_URL": "http://127.0.0.1:9", "LINEUP_STATE_DIR": tempfile.mkdtemp()}, {"clarify_on_phone": True})
        self.assertEqual(len(ctx.middleware["tool_execution"]), 1)
        got = ctx.run_tool("terminal", {"command": "ls"}, lambda a: f"ran {a['command']}", session_id="s", task_id="t")
        self.assertEqual(got, "ran ls")

    def test_a_relay_that_is_down_falls_back_to_hermes_own_clarify(self) -> None:
        url = f"http://127.0.0.1:{closed_port()}"
        env = {"LINEUP_RELAY_URL": url, "LINEUP_STATE_DIR": tempfile.mkdtemp(), "LINEUP_MACHINE_CREDENTIAL": "lum1.x.mc_x.secret"}
        ctx = plugin_for(env, {"clarify_on_phone": True})
        calls: list[dict[str, Any]] = []
        got = json.loads(ctx.run_tool("clarify", {"question": "Which?", "choices": ["a", "b"]}, hermes_clarify(calls), session_id="s"))
        self.assertEqual(got["user_response"], "from the terminal")
        self.assertEqual(len(calls), 1)


@unittest.skipUnless(RELAY, "set LINEUP_TEST_RELAY to a relay URL (npm test runs this through test/system/hermes-plugin.test.ts)")
class ClarifyOnPhoneTest(unittest.TestCase):
    def test_hermes_clarify_with_six_choices_is_answered_on_the_phone_and_hermes_own_ui_never_runs(self) -> None:
        inbox = Inbox()
        ctx = plugin_for({"LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": inbox.dir}, {"clarify_on_phone": True})
        calls: list[dict[str, Any]] = []
        args = {"question": "Which **region**?", "choices": SIX}
        out = in_thread(lambda: ctx.run_tool("clarify", args, hermes_clarify(calls), session_id="hermes-clarify-1", task_id="t1"))
        sid, listed = inbox.waiting()
        app = inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        self.assertIsNotNone(call)
        self.assertEqual(call["name"], "choice")
        self.assertEqual(call["arguments"]["options"], SIX)
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "ap-east", "selected": ["ap-east"]}})
        out["thread"].join(30)
        got = json.loads(out["value"])
        self.assertEqual(got, {"question": "Which **region**?", "choices_offered": SIX, "user_response": "ap-east"})
        self.assertEqual(calls, [], "Hermes' own clarify prompt ran as well")
        app.close()

    def test_a_free_text_clarify_becomes_a_question_card(self) -> None:
        inbox = Inbox()
        ctx = plugin_for({"LINEUP_RELAY_URL": RELAY, "LINEUP_STATE_DIR": inbox.dir}, {"clarify_on_phone": True})
        calls: list[dict[str, Any]] = []
        out = in_thread(lambda: ctx.run_tool("clarify", {"question": "Anything else?"}, hermes_clarify(calls), session_id="hermes-clarify-2"))
        sid, _ = inbox.waiting()
        app = inbox.app(sid)
        call = app.wait_for(lambda f: f.get("type") == "tool.call", 10)
        self.assertEqual(call["name"], "ask_question")
        app.send({"type": "tool.result", "call_id": call["call_id"], "result": {"message": "ship it"}})
        out["thread"].join(30)
        self.assertEqual(json.loads(out["value"])["user_response"], "ship it")
        self.assertEqual(calls, [])
        app.close()


if __name__ == "__main__":
    unittest.main()
