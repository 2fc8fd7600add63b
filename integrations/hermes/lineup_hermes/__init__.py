"""LineUp for Hermes Agent: `register(ctx)` wires the approval transport `lineup`, the `lineup_ask` tool, the
session hooks and `hermes lineup join CODE` (README.md). Python 3.11+, standard library only."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from .plugin import ClarifyOnPhone, LineUpPlugin
from .identity import settings_from
from .relay import LineUpHermesError

__all__ = ["register", "LineUpHermesError", "ASK_SCHEMA"]

ASK_SCHEMA: dict[str, Any] = {
    "name": "lineup_ask",
    "description": (
        "Ask the human a question on their phone (LineUp) and wait for the answer. `question` is markdown. "
        "With `choices` (any number) they pick one (or several with multi_select); without, they type a reply. "
        "Use it instead of clarify when you need more than 4 choices or the human is away from the terminal."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "the question, in markdown"},
            "choices": {"type": "array", "items": {"type": "string"}, "description": "the options (any number); omit for a free-text reply"},
            "multi_select": {"type": "boolean", "description": "let the human pick several choices"},
        },
        "required": ["question"],
    },
}


def register(ctx: Any) -> None:
    plugin = LineUpPlugin(settings_from(ctx.get_config))
    ctx.register_approval_transport("lineup", plugin.present)
    ctx.register_hook("pre_approval_request", plugin.on_pre_approval_request)
    ctx.register_hook("on_session_start", plugin.on_session_start)
    ctx.register_tool(
        name="lineup_ask",
        toolset="lineup",
        schema=ASK_SCHEMA,
        handler=plugin.ask,
        description=ASK_SCHEMA["description"],
        emoji="📱",
    )
    if ctx.get_config("clarify_on_phone", False) is True:
        # Hermes' own clarify on the phone (README "What reaches the phone"): a tool_execution middleware. A Hermes
        # without middleware keeps its own clarify (an exception here would unload the whole plugin).
        add = getattr(ctx, "register_middleware", None)
        if callable(add):
            add("tool_execution", ClarifyOnPhone(plugin))
        else:
            logging.getLogger("lineup_hermes").warning("clarify_on_phone: this Hermes has no register_middleware; clarify stays in Hermes")
    ctx.register_cli_command(
        name="lineup",
        help="LineUp: join this machine to your LineUp inbox",
        setup_fn=_setup_cli,
        handler_fn=lambda ns: _run_cli(plugin, ns),
        description="hermes lineup join CODE — redeem a join code from the LineUp app (Settings → Machines)",
    )


def _setup_cli(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lineup_action")
    j = sub.add_parser("join", help="join this machine to a LineUp inbox with a code from the app")
    j.add_argument("code")
    j.add_argument("--name", default=None, help="this machine's name in the inbox")
    sub.add_parser("status", help="which relay and inbox the plugin uses")


def _run_cli(plugin: LineUpPlugin, ns: argparse.Namespace) -> int:
    try:
        if getattr(ns, "lineup_action", None) == "join":
            got = plugin.identity.join(ns.code, ns.name)
            print(f"joined inbox {got['inbox_id']} on {plugin.identity.relay.base} as machine {got['machine_id']}")
            return 0
        plugin.identity.credential()
        print(f"LineUp relay {plugin.identity.relay.base}: this machine has an inbox credential")
        return 0
    except LineUpHermesError as e:
        print(f"lineup: {e}", file=sys.stderr)
        return 1
