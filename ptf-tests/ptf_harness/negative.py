"""The suite's negative check (issue 10): each test fails when the behaviour it checks is
broken. For PFC, ECN and SFC the mechanism is turned off in the controller's config (an overlay
from config/) while the tests still expect it; every test that checks the mechanism must then
fail with an assertion (an exception is a broken test, not a detected fault, and a skip proves
nothing).

A module named in `modules` contributes every test in it, so a test added to pfc.py joins the
check without an edit here; `unaffected` names the tests of those modules that check something
the overlay leaves in place, with why.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from lossless_paths import PTF_TESTS

TESTS = PTF_TESTS / "tests"
CONFIG = PTF_TESTS / "config"


@dataclass(frozen=True)
class Negative:
    overlay: str  # config/<overlay>.json
    modules: tuple[str, ...]
    tests: tuple[str, ...] = ()  # single tests of other modules that rely on the mechanism
    unaffected: dict[str, str] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return CONFIG / f"{self.overlay}.json"

    def must_fail(self, tests_dir: Path = TESTS) -> list[str]:
        names = [t for m in self.modules for t in module_tests(tests_dir, m)]
        return [t for t in names if t not in self.unaffected] + list(self.tests)


NEGATIVE: tuple[Negative, ...] = (
    Negative(
        "no_pfc",
        modules=("pfc",),
        tests=("sfc.SfcSourceOnOwnHostPort",),
        unaffected={
            "pfc.LossyDropAboveThreshold": "checks lossy PG 1 (DSCP 10) and 802.3x PAUSE, "
            "which no_pfc leaves as they are",
        },
    ),
    Negative("no_ecn", modules=("ecn",)),
    Negative("no_sfc", modules=("sfc",)),
)


def module_tests(tests_dir: Path, module: str) -> list[str]:
    """`module.Class` for every class PTF runs from tests/<module>.py: those with a runTest of
    their own or from a base class in the same module (read from the source, not imported, so
    this works without PTF's dataplane)."""
    path = tests_dir / f"{module}.py"
    if not path.is_file():
        raise ValueError(f"no test module {path}")
    tree = ast.parse(path.read_text())
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def runs(name: str) -> bool:
        node = classes.get(name)
        if node is None:
            return False
        if any(isinstance(n, ast.FunctionDef) and n.name == "runTest" for n in node.body):
            return True
        return any(isinstance(b, ast.Name) and runs(b.id) for b in node.bases)

    return [f"{module}.{name}" for name in classes if runs(name)]


@dataclass(frozen=True)
class Verdict:
    """Whether every test expected to fail did, from the outcomes the runner collected."""

    expected: list[str]
    outcomes: dict[str, tuple[str, str]]  # test -> (outcome, why)
    # The same tests without the overlay (`--baseline`): a test that fails there too shows
    # nothing about the mechanism.
    baseline: dict[str, tuple[str, str]] | None = None

    @property
    def failed(self) -> list[str]:
        return [t for t in self.expected if self.outcomes.get(t, ("",))[0] == "fail"]

    @property
    def not_failed(self) -> list[str]:
        return [t for t in self.expected if t not in self.failed]

    @property
    def not_passing_with(self) -> list[str]:
        """Tests that did not pass without the overlay (none when there was no baseline)."""
        if self.baseline is None:
            return []
        return [t for t in self.expected if self.baseline.get(t, ("",))[0] != "pass"]

    @property
    def ok(self) -> bool:
        return bool(self.expected) and not self.not_failed and not self.not_passing_with

    def report(self, title: str) -> str:
        head = f"{title}: {len(self.failed)} of {len(self.expected)} tests failed as expected"
        if self.baseline is not None:
            proven = len(set(self.failed) - set(self.not_passing_with))
            head += f", {proven} of them passed with the mechanism on"
        lines = [head]
        for t in self.expected:
            outcome, why = self.outcomes.get(t, ("not run", ""))
            mark = "ok  " if outcome == "fail" else "BAD "
            said = {
                "fail": "failed",
                "pass": "PASSED without the mechanism",
                "error": "raised an exception (a broken test, not a detected fault)",
                "skip": "was skipped (proves nothing)",
            }.get(outcome, "did not run")
            if self.baseline is not None and t in self.not_passing_with:
                mark = "BAD "
                outcome, why = self.baseline.get(t, ("did not run", ""))
                said += f", but also {outcome} with the mechanism on"
            lines.append(f"  {mark}{t}: {said}" + (f": {why}" if why else ""))
        return "\n".join(lines)
