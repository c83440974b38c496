"""The pytest plugins are registered the pytest way: a ``pytest11`` entry point per plugin, named
like its module (so the root conftest.py naming the same modules never registers one twice), state
in ``config.stash``, no plugin importing another plugin's module (shared helpers live in
plugins/api.py), no torch thread settings in a plugin."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p for p in (ROOT / "plugins").glob("*.py") if p.stem not in ("__init__", "api"))

pytestmark = pytest.mark.cpu


def test_every_plugin_has_an_entry_point_named_like_its_module_and_the_conftest_names_the_same():
    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    modules = {f"plugins.{p.stem}" for p in PLUGINS}
    assert eps == {m: m for m in modules}
    conftest = (ROOT / "conftest.py").read_text()
    named = set(re.findall(r'"(plugins\.\w+)"', conftest))
    assert named == modules


@pytest.mark.parametrize("path", PLUGINS, ids=lambda p: p.stem)
def test_plugin_shape(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plugins."):
            assert node.module == "plugins.api", f"{path.name} imports {node.module}: share through plugins/api.py"
        if isinstance(node, ast.Import):
            for a in node.names:
                assert not a.name.startswith("plugins.") or a.name == "plugins.api", f"{path.name} imports {a.name}"
        if isinstance(node, ast.Attribute):
            assert node.attr not in ("set_num_threads", "set_num_interop_threads"), \
                f"{path.name} sets torch threads: a suite setting (tests/conftest.py), not a plugin's"
    for node in tree.body:  # session state lives in config.stash, not in module globals
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value = node.value
            empty = (isinstance(value, (ast.List, ast.Dict, ast.Set)) and not getattr(value, "elts", None)
                     and not getattr(value, "keys", None))
            assert not empty, f"{path.name}:{node.lineno}: a module-level container is session state: use config.stash"


def test_no_double_registration(pytester):
    """The conftest names the plugins; when an entry point already loaded one (installed checkout) the
    name is taken and pytest skips it. Simulated: register the module under its name first."""
    pytester.makeconftest('pytest_plugins = ["plugins.hardware", "plugins.artifacts", "plugins.parity"]\n')
    pytester.makepyfile("def test_ok():\n    assert True\n")
    import plugins.hardware as hw

    res = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:xdist", "--no-matrix",
                                       plugins=[hw])
    res.assert_outcomes(passed=1)
