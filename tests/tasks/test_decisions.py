"""rueval.scoring.decisions against statsmodels on random data, and against the formulas they name."""

import math

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from rueval.scoring.decisions import (
    ALPHA,
    DEFAULT_DISCORDANCE,
    POWER,
    binary_outcomes,
    clustered_standard_error,
    holm,
    items_needed,
    mcnemar_exact,
    minimum_detectable_effect,
    naive_standard_error,
    paired_outcomes,
)
from rueval.tasks import BENCHMARKS, TASKS, Example

RNG = np.random.default_rng(39)


def test_mcnemar_exact_is_statsmodels() -> None:
    for _ in range(300):
        n = int(RNG.integers(1, 400))
        right_a = RNG.random(n) < RNG.random()
        right_b = np.where(RNG.random(n) < RNG.random(), right_a, RNG.random(n) < 0.5)
        pair = paired_outcomes(right_a, right_b)
        table = [[np.sum(right_a & right_b), pair.a_only], [pair.b_only, np.sum(~right_a & ~right_b)]]
        assert pair.p_value == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-10)
    assert mcnemar_exact(0, 0) == 1.0 == mcnemar([[5, 0], [0, 5]], exact=True).pvalue


def test_holm_is_multipletests() -> None:
    for size in (1, 2, 5, 30):
        for _ in range(50):
            p_values = RNG.random(size) ** 3  # many small ones, where the correction matters
            p_values[RNG.random(size) < 0.2] = p_values[0]  # ties
            expected = multipletests(p_values, method="holm")[1]
            assert holm(list(p_values)) == pytest.approx(list(expected), abs=1e-10)


def test_clustered_standard_error_is_statsmodels_cluster_ols() -> None:
    """statsmodels' default small-sample factor, G / (G - 1) * (N - 1) / (N - K), is rueval's G / (G - 1)
    for the mean (K = 1): compared with it as it is, and with that factor undone by hand."""
    for _ in range(100):
        items = int(RNG.integers(2, 60))
        repeats = RNG.integers(1, 6, size=items)  # episodes or prompts per item, unequal
        clusters = np.repeat(np.arange(items), repeats)
        ability = RNG.random(items)
        values = (RNG.random(clusters.size) < ability[clusters]).astype(float)
        if values.min() == values.max():
            continue
        ones = np.ones(clusters.size)
        fitted = OLS(values, ones).fit(cov_type="cluster", cov_kwds={"groups": clusters})
        assert clustered_standard_error(values, clusters) == pytest.approx(fitted.bse[0], abs=1e-10)
        uncorrected = OLS(values, ones).fit(cov_type="cluster", cov_kwds={"groups": clusters, "use_correction": False})
        factor = items / (items - 1)
        assert clustered_standard_error(values, clusters) == pytest.approx(
            uncorrected.bse[0] * math.sqrt(factor), abs=1e-10
        )


def test_clustered_standard_error_grows_with_items_scored_alike() -> None:
    """Five episodes of items each right or wrong every time: the clustered error is about sqrt(5) times the
    naive one, which takes the repeats for independent items."""
    right = RNG.random(400) < 0.6
    values, clusters = np.repeat(right, 5).astype(float), np.repeat(np.arange(400), 5)
    ratio = clustered_standard_error(values, clusters) / naive_standard_error(values)
    assert ratio == pytest.approx(math.sqrt(5), rel=0.01)


def connor_n(d: float, p_d: float) -> float:
    """Connor (1987): n = (z_{1-a/2} sqrt(p_d) + z_{1-b} sqrt(p_d - d^2))^2 / d^2, evaluated as written."""
    z_a, z_b = norm.ppf(1 - ALPHA / 2), norm.ppf(POWER)
    return (z_a * math.sqrt(p_d) + z_b * math.sqrt(p_d - d**2)) ** 2 / d**2


def test_minimum_detectable_effect_solves_connors_formula() -> None:
    for _ in range(500):
        n, p_d = int(RNG.integers(10, 100_000)), float(RNG.uniform(0.01, 1))
        d = minimum_detectable_effect(n, p_d)
        if d is None:  # too few items: the formula's d for this n would exceed the discordance
            assert connor_n(p_d, p_d) > n
            continue
        assert connor_n(d, p_d) == pytest.approx(n, abs=1e-6)
        assert items_needed(d, p_d) == math.ceil(n - 1e-9)


def test_items_needed_is_connors_n_rounded_up() -> None:
    for _ in range(500):
        p_d = float(RNG.uniform(0.01, 1))
        d = float(RNG.uniform(0.001, p_d))
        assert items_needed(d, p_d) == math.ceil(connor_n(d, p_d) - 1e-9)
    with pytest.raises(ValueError, match="difference 0.3, discordance 0.2"):
        items_needed(0.3, 0.2)


def test_unpaired_test_misses_what_mcnemar_sees_on_paired_data() -> None:
    """The issue's case (lm-eval's #3831: p = 0.080 unpaired, 0.008 paired on the same data). This table of two
    runs on 200 items is one of those a search over small tables finds to give those two figures: 137 items both
    right, 22 only A, 7 only B. The unpaired z-test of lm-eval's comparison script (the difference over the root of
    the two squared standard errors) takes the runs for independent samples; McNemar's test looks at the 29 items
    where they differ."""
    n, both_right, a_only, b_only = 200, 137, 22, 7
    neither = n - both_right - a_only - b_only
    a = np.r_[np.ones(both_right + a_only), np.zeros(b_only + neither)]
    b = np.r_[np.ones(both_right), np.zeros(a_only), np.ones(b_only), np.zeros(neither)]
    z = (a.mean() - b.mean()) / math.hypot(naive_standard_error(a), naive_standard_error(b))
    unpaired = 2 * norm.sf(abs(z))
    paired = paired_outcomes(a, b).p_value
    assert (round(unpaired, 3), round(paired, 3)) == (0.080, 0.008)
    assert paired == pytest.approx(mcnemar([[both_right, a_only], [b_only, neither]], exact=True).pvalue, abs=1e-12)


def test_binary_outcomes_only_for_zero_one_means() -> None:
    """RCB's accuracy is a mean of 0/1 values, its average F1 a metric of the whole sample; examples scored
    in groups (MuSeRC's questions) are not paired one by one."""
    rcb = TASKS["rcb"]
    examples = [Example(idx=i, fields={}, label=label) for i, label in enumerate(["entailment", "neutral"])]
    predictions = ["entailment", "entailment"]
    assert binary_outcomes(rcb, examples, predictions, "accuracy") == [1.0, 0.0]
    assert binary_outcomes(rcb, examples, predictions, "avg_f1") is None
    grouped = [Example(idx=e.idx, fields={}, label=e.label, group=0) for e in examples]
    assert binary_outcomes(rcb, grouped, predictions, "accuracy") is None


def test_power_prints_the_items_needed_and_the_official_test_sets_effect(cli) -> None:
    result = cli("power", "-t", "parus,rcb", "--delta", "3", "--discordance", "0.2")
    assert result.exit_code == 0, result.stderr
    needed = math.ceil(connor_n(0.03, 0.2))
    for name in ("parus", "rcb"):
        official = BENCHMARKS["rsg"].official_count(name, "test")
        effect = minimum_detectable_effect(official, 0.2)
        shown = "no difference (too few items)" if effect is None else f"{100 * effect:.1f} points"
        assert f"{name}: {needed:,} items show 3 points" in result.stdout
        assert f"its official test set of {official:,} records shows {shown}" in result.stdout
    default = cli("power", "-t", "parus", "--delta", "3")
    assert f"{math.ceil(connor_n(0.03, DEFAULT_DISCORDANCE)):,} items" in default.stdout
    assert f"(discordance {DEFAULT_DISCORDANCE:g})" in default.stdout
    for flags, said in (
        (("--delta", "30", "--discordance", "0.2"), "error: --delta 30: expected above 0 and at most the discordance"),
        (("--delta", "3", "--discordance", "1.5"), "error: --discordance 1.5: expected a share of the items"),
    ):
        refused = cli("power", "-t", "parus", *flags)
        assert refused.exit_code == 2 and refused.stderr.startswith(said) and refused.stderr.count("\n") == 1
