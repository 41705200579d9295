"""Statistical bounds against published chi-square and normal tables."""

import pytest

from ptf_harness.stats import (
    binomial_interval,
    chi_square,
    chi_square_critical,
    uniform_spread,
)


@pytest.mark.parametrize(
    "dof, alpha, table",
    # Upper critical values of the chi-square distribution (NIST/SEMATECH e-Handbook, 1.3.6.7.4).
    [(3, 0.001, 16.266), (10, 0.001, 29.588), (3, 0.05, 7.815), (30, 0.01, 50.892)],
)
def test_chi_square_quantile_within_two_percent(dof, alpha, table):
    assert chi_square_critical(dof, alpha) == pytest.approx(table, rel=0.02)


def test_chi_square_statistic():
    assert chi_square([10, 30], [20, 20]) == 10.0


def test_uniform_spread_accepts_even_and_rejects_skewed():
    assert uniform_spread([100, 98, 103, 99]).uniform
    skewed = uniform_spread([400, 0, 0, 0])
    assert not skewed.uniform
    assert "chi-square 1200.0" in skewed.explain(["a", "b", "c", "d"])


def test_binomial_interval():
    assert binomial_interval(50, 0.0) == (0, 0)
    assert binomial_interval(50, 1.0) == (50, 50)
    low, high = binomial_interval(300, 0.25)
    assert low < 75 < high
    # Five-sigma-ish at 1e-6: about 4.9 standard deviations (7.5) each side.
    assert 30 < low < 40 and 110 < high < 120
    with pytest.raises(ValueError):
        binomial_interval(10, 1.5)
