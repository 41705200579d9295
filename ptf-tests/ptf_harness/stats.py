"""Statistical bounds for the randomised checks (ECMP spread, ECN marking, CoPP rate).

Every bound is two-sided at a stated false-failure probability, so a correct switch fails a
run about that rarely and a broken one (all flows on one member, no marks, marks everywhere)
fails by a wide margin. No SciPy: the chi-square quantile uses the Wilson-Hilferty cube
approximation (within 2% for 3 or more degrees of freedom, erring high in the tail,
so the stated false-failure probability is an upper bound), the normal quantile the
standard library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

# One false failure in a million runs per check.
FALSE_FAILURE = 1e-6


def chi_square(observed: list[int], expected: list[float]) -> float:
    if len(observed) != len(expected) or not observed:
        raise ValueError("observed and expected must be the same non-empty length")
    if any(e <= 0 for e in expected):
        raise ValueError("expected counts must be positive")
    return sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))


def chi_square_critical(dof: int, alpha: float = FALSE_FAILURE) -> float:
    """The value a chi-square statistic with `dof` degrees of freedom exceeds with probability
    `alpha` (Wilson-Hilferty)."""
    if dof < 1:
        raise ValueError("at least one degree of freedom")
    z = NormalDist().inv_cdf(1 - alpha)
    h = 2 / (9 * dof)
    return dof * (1 - h + z * math.sqrt(h)) ** 3


@dataclass(frozen=True)
class Spread:
    counts: list[int]
    statistic: float
    critical: float

    @property
    def uniform(self) -> bool:
        return self.statistic <= self.critical

    def explain(self, names: list[str]) -> str:
        n = sum(self.counts)
        share = n / len(self.counts)
        per = ", ".join(f"{m}: {c}" for m, c in zip(names, self.counts, strict=True))
        return (
            f"{n} flows over {len(self.counts)} members ({per}; {share:.1f} each if uniform): "
            f"chi-square {self.statistic:.1f}, bound {self.critical:.1f} "
            f"(false-failure probability {FALSE_FAILURE:g})"
        )


def uniform_spread(counts: list[int], alpha: float = FALSE_FAILURE) -> Spread:
    """Chi-square goodness of fit of `counts` against an even spread."""
    n = sum(counts)
    expected = [n / len(counts)] * len(counts)
    return Spread(
        list(counts), chi_square(counts, expected), chi_square_critical(len(counts) - 1, alpha)
    )


def binomial_interval(n: int, p: float, alpha: float = FALSE_FAILURE) -> tuple[int, int]:
    """Counts of successes in `n` Bernoulli(p) trials outside which a correct implementation
    falls with probability below `alpha` (normal approximation with continuity correction;
    exact at p = 0 and p = 1)."""
    if not 0 <= p <= 1:
        raise ValueError(f"probability {p} outside [0, 1]")
    if p == 0:
        return 0, 0
    if p == 1:
        return n, n
    z = NormalDist().inv_cdf(1 - alpha / 2)
    sd = math.sqrt(n * p * (1 - p))
    low = math.floor(n * p - z * sd - 0.5)
    high = math.ceil(n * p + z * sd + 0.5)
    return max(0, low), min(n, high)
