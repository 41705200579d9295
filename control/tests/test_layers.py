"""The controller package holds only the controller: lossless_ctl imports nothing of the lab kit
(lossless_kit), the lab (lossless_topo), the PTF harness or the test doubles. The arrow goes
from them to the controller, never back; lossless_paths (the repository's layout) is below
all of them."""

import ast
import sys
from pathlib import Path

import lossless_ctl

PACKAGE = Path(lossless_ctl.__file__).parent
# Besides the standard library and the PyPI packages of pyproject.toml's dependencies.
OURS_ALLOWED = {"lossless_ctl", "lossless_paths"}
OURS = {"lossless_kit", "lossless_topo", "ptf_harness", "fake_p4runtime", "standins"}


def imported(path: Path) -> set[str]:
    """Top-level names of every module `path` imports, at any depth (functions included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level > 0:
                names.add("lossless_ctl")
            elif node.module:
                names.add(node.module.split(".")[0])
    return names


def test_the_controller_imports_no_lab_code():
    files = sorted(PACKAGE.glob("*.py"))
    assert len(files) > 10, files  # the package was found, not an empty directory
    wrong = {f.name: sorted(imported(f) & OURS) for f in files if imported(f) & OURS}
    assert wrong == {}


def test_everything_the_controller_imports_is_allowed():
    """Nothing first-party beyond OURS_ALLOWED: a new package of ours would show here."""
    third_party = {"google", "grpc", "grpc_tools", "tqdm", "p4", "pyroute2"}
    for f in sorted(PACKAGE.glob("*.py")):
        unknown = imported(f) - OURS_ALLOWED - third_party - set(sys.stdlib_module_names)
        assert unknown == set(), f"{f.name} imports {sorted(unknown)}"


def test_the_check_sees_an_import_from_the_lab(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from lossless_topo.switch import LosslessSwitch\n")
    assert imported(module) & OURS == {"lossless_topo"}
