"""Folder form of the LineUp plugin for Hermes Agent ($HERMES_HOME/plugins/lineup/): Hermes imports this
package as ``hermes_plugins.lineup`` and calls ``register(ctx)``. The code is the ``lineup_hermes`` package
beside this file (also installable with pip: pyproject.toml, entry point group ``hermes_agent.plugins``)."""

from .lineup_hermes import register

__all__ = ["register"]
