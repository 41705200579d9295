"""What the suite skips against bmv2: the table names real tests, README documents each entry,
ECN and SFC are not among them, and `register_write` goes through the runtime CLI there,
checked against the real p4-switch with its `--thrift-port` server and the built
simple_switch_CLI on p4src's pipeline."""

import pytest

from lossless_kit.switch import SwitchProcess, free_port
from lossless_paths import BIN, PTF_TESTS
from ptf_harness.base import LosslessTest
from ptf_harness.bmv2_limits import BMV2_LIMITS, bmv2_limit
from ptf_harness.negative import TESTS, module_tests


def test_every_entry_names_existing_tests_and_is_documented():
    readme = (PTF_TESTS / "README.md").read_text()
    for key in BMV2_LIMITS:
        module, _, test = key.partition(".")
        names = module_tests(TESTS, module)
        assert names and (not test or key in names), key
        shown = f"`{key}`" if test else f"`{key}.*` ({len(names)})"
        assert shown in readme, f"ptf-tests/README.md does not list {shown}"


def test_a_module_entry_covers_its_tests_and_ecn_sfc_run_on_bmv2():
    for test in module_tests(TESTS, "pfc"):
        assert bmv2_limit(test) == BMV2_LIMITS["pfc"]
    for module in ("ecn", "sfc", "l3", "punt"):
        for test in module_tests(TESTS, module):
            assert bmv2_limit(test) is None, test


class _Cli(LosslessTest):
    __test__ = False

    def runTest(self):
        pass


@pytest.fixture
def switch_with_cli(tmp_path, compiled_pipeline):
    sw = SwitchProcess(
        BIN / "p4-switch",
        json_path=compiled_pipeline / "lossless.json",
        grpc_addr=f"127.0.0.1:{free_port()}",
        thrift_port=free_port(),
        log_path=tmp_path / "switch.log",
    )
    with sw:
        test = _Cli()
        test.target = "bmv2"
        test.params = {"runtime_cli": sw.runtime_cli()}
        yield test


def test_register_write_on_bmv2_goes_through_the_runtime_cli(switch_with_cli):
    test = switch_with_cli
    test.register_write("queue_bytes", 27, 150_000)
    assert test.runtime_cli("register_read queue_bytes 27") == "queue_bytes[27]= 150000\n"
    with pytest.raises(AssertionError, match=r"queue_bytes\[100000\] = 1: .*INVALID_INDEX"):
        test.register_write("queue_bytes", 100_000, 1)
    with pytest.raises(AssertionError, match="no_such_register.*Invalid register"):
        test.register_write("no_such_register", 0, 1)
