"""The negative check's parts that need no switch: which tests must fail with each overlay,
each test's outcome as the runner records it, and the verdict over those outcomes."""

import json
import unittest

import ptf.testutils
import pytest

from ptf_harness import run
from ptf_harness.base import LosslessTest, outcome_of
from ptf_harness.negative import NEGATIVE, TESTS, Verdict, module_tests


def test_module_tests_are_what_ptf_runs(tmp_path):
    (tmp_path / "m.py").write_text(
        "class Base(object):\n    def helper(self): pass\n"
        "class Runs(Base):\n    def runTest(self): pass\n"
        "class Inherits(Runs):\n    pass\n"
        "class Helperless(Base):\n    pass\n"
    )
    assert module_tests(tmp_path, "m") == ["m.Runs", "m.Inherits"]
    with pytest.raises(ValueError, match="no test module"):
        module_tests(tmp_path, "absent")


def test_pfc_module_lists_its_tests_and_not_its_base():
    names = module_tests(TESTS, "pfc")
    assert "pfc.XoffAtThresholdHeadroomXon" in names and "pfc.PfcWatchdogStorm" in names
    assert "pfc.PfcBase" not in names


def test_every_overlay_exists_and_names_real_tests():
    assert [n.overlay for n in NEGATIVE] == ["no_pfc", "no_ecn", "no_sfc"]
    for neg in NEGATIVE:
        assert neg.path.is_file(), neg.path
        known = {t for m in ("pfc", "ecn", "sfc", "qos", "punt") for t in module_tests(TESTS, m)}
        must = neg.must_fail()
        assert must and set(must) <= known, (neg.overlay, set(must) - known)
        # An exemption is a test of the overlay's own modules, and it is not run.
        own = {t for m in neg.modules for t in module_tests(TESTS, m)}
        assert set(neg.unaffected) <= own and not set(neg.unaffected) & set(must)
    # A test added to pfc.py joins the no_pfc check with no edit of the table.
    no_pfc = NEGATIVE[0]
    assert set(module_tests(TESTS, "pfc")) - set(no_pfc.unaffected) <= set(no_pfc.must_fail())


def test_verdict_needs_every_expected_test_to_fail():
    expected = ["pfc.A", "pfc.B", "pfc.C", "pfc.D", "pfc.E"]
    outcomes = {
        "pfc.A": ("fail", "no XOFF"),
        "pfc.B": ("pass", ""),
        "pfc.C": ("error", "ConnectionRefusedError"),
        "pfc.D": ("skip", "bmv2: no PFC"),
    }
    v = Verdict(expected, outcomes)
    assert not v.ok and v.failed == ["pfc.A"] and v.not_failed == expected[1:]
    text = v.report("with no_pfc.json")
    assert text.splitlines()[0] == "with no_pfc.json: 1 of 5 tests failed as expected"
    assert "ok  pfc.A: failed: no XOFF" in text
    assert "BAD pfc.B: PASSED without the mechanism" in text
    assert "BAD pfc.C: raised an exception" in text
    assert "BAD pfc.D: was skipped" in text
    assert "BAD pfc.E: did not run" in text
    assert Verdict(["pfc.A"], outcomes).ok
    # With a baseline, a test must also have passed with the mechanism on.
    proven = Verdict(["pfc.A"], outcomes, {"pfc.A": ("pass", "")})
    assert proven.ok
    assert proven.report("t").splitlines()[0] == (
        "t: 1 of 1 tests failed as expected, 1 of them passed with the mechanism on"
    )
    broken = Verdict(["pfc.A"], outcomes, {"pfc.A": ("fail", "XOFF missing")})
    assert not broken.ok and broken.not_passing_with == ["pfc.A"]
    assert "BAD pfc.A: failed, but also fail with the mechanism on: XOFF missing" in (
        broken.report("t")
    )
    assert not Verdict([], outcomes).ok, "an empty check proves nothing"


def test_expand_modules_to_tests():
    assert run.expand(["ecn", "pfc.XoffRefresh"]) == ["ecn.EcnMarking", "pfc.XoffRefresh"]


class _Cases(unittest.TestCase):
    __test__ = False  # run by the test below, not collected by pytest

    def test_fail(self):
        self.assertEqual(1, 2, "one is not two")

    def test_error(self):
        raise KeyError("boom")

    def test_fail_true(self):
        self.assertTrue(False, "0 of 300 marked")

    def test_skip(self):
        self.skipTest("bmv2: no PFC reception")

    def test_pass(self):
        pass


def test_outcome_of_tells_assertions_from_exceptions():
    result = unittest.TestResult()
    names = ("test_fail", "test_fail_true", "test_error", "test_skip", "test_pass")
    cases = {n: _Cases(n) for n in names}
    for case in cases.values():
        case.run(result)
    got = {n: outcome_of(c, result) for n, c in cases.items()}
    assert got["test_fail"] == ("fail", "1 != 2 : one is not two")
    assert got["test_fail_true"] == ("fail", "0 of 300 marked")
    assert got["test_error"] == ("error", "KeyError: 'boom'")
    assert got["test_skip"] == ("skip", "bmv2: no PFC reception")
    assert got["test_pass"] == ("pass", "")


class _Recorded(LosslessTest):
    """setUp/tearDown of LosslessTest need PTF's dataplane; run() is what is tested here."""

    __test__ = False

    def setUp(self):
        pass

    def tearDown(self):
        pass

    def runTest(self):
        self.fail("the mechanism is off")


def test_run_appends_the_outcome_to_the_runners_file(tmp_path, monkeypatch):
    path = tmp_path / "outcomes.jsonl"
    monkeypatch.setattr(ptf.testutils, "TEST_PARAMS", {"outcomes": str(path)})
    _Recorded().run(unittest.TestResult())
    _Recorded().run(unittest.TestResult())
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == 2
    assert records[0]["outcome"] == "fail" and records[0]["why"] == "the mechanism is off"
    assert records[0]["test"].endswith("_Recorded")
    assert run.read_outcomes(path) == {records[0]["test"]: ("fail", "the mechanism is off")}
    assert run.summary(run.read_outcomes(path)) == "1 fail"
