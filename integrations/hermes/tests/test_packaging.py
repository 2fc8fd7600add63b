"""Both install forms as Hermes loads them (hermes_cli/plugins_loader.py): the entry point of the group
`hermes_agent.plugins` named like the manifest names a MODULE whose `register` Hermes reads; the folder's
manifest is the plugin.yaml Hermes scans. Python 3.11+ (tomllib)."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class PackagingTest(unittest.TestCase):
    def test_the_entry_point_names_a_module_exposing_register_under_the_manifest_name(self) -> None:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        eps = project["entry-points"]["hermes_agent.plugins"]
        manifest_name = re.search(r"^name:\s*(\S+)", (ROOT / "plugin.yaml").read_text(), re.M).group(1)
        self.assertIn(manifest_name, eps)
        target = eps[manifest_name]
        self.assertNotIn(":", target, "Hermes reads `register` from the module itself")
        sys.path.insert(0, str(ROOT))
        try:
            mod = importlib.import_module(target)
        finally:
            sys.path.remove(str(ROOT))
        self.assertTrue(callable(mod.register))
        self.assertEqual(project["dependencies"], [])
        self.assertEqual(project["requires-python"], ">=3.11")

    def test_the_package_imports_only_the_standard_library(self) -> None:
        stdlib = set(sys.stdlib_module_names)
        for f in (ROOT / "lineup_hermes").glob("*.py"):
            for m in re.finditer(r"^(?:from|import)\s+([A-Za-z_][\w]*)", f.read_text(), re.M):
                name = m.group(1)
                if name != "__future__":
                    self.assertIn(name, stdlib, f"{f.name} imports {name}")


if __name__ == "__main__":
    unittest.main()
