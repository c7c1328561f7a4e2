"""The binary-classifier ceiling: closed forms against brute force over every two-valued scorer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from pcctune.evaluation.bound import best_two_valued_spearman, binary_bound, exact_rho, paper_rho


def _brute_force(gold: np.ndarray) -> float:
    """Max scipy Spearman over all 2^n − 2 non-constant two-valued predictions."""
    best = -1.0
    for pattern in itertools.product([0.0, 1.0], repeat=len(gold)):
        if 0 < sum(pattern) < len(gold):
            best = max(best, spearmanr(pattern, gold).statistic)
    return best


@pytest.mark.parametrize("n", range(2, 12))
def test_exact_bound_equals_brute_force_over_all_two_valued_scorers(n):
    gold = np.arange(n, dtype=float)
    assert binary_bound(n).exact == pytest.approx(_brute_force(gold), abs=1e-12)


@pytest.mark.parametrize("n", range(2, 12))
def test_paper_formula_is_one_minus_six_sum_d2_with_tie_averaged_ranks(n):
    gold = np.arange(n, dtype=float)
    best = -1.0
    for k in range(1, n):
        pred = np.r_[np.zeros(n - k), np.ones(k)]
        d = rankdata(pred) - rankdata(gold)
        rho = 1 - 6 * (d**2).sum() / (n * (n * n - 1))
        assert paper_rho(n, k) == pytest.approx(rho, abs=1e-12)
        best = max(best, rho)
    assert binary_bound(n).paper == pytest.approx(best, abs=1e-12)
    assert paper_rho(n, binary_bound(n).paper_k) == max(paper_rho(n, k) for k in range(1, n))


def test_a_bound_for_ten_billion_pairs_is_closed_form_not_a_search():
    bound = binary_bound(10**10)  # a search over k would take minutes
    assert bound.paper_k == bound.exact_k == 5 * 10**9
    assert bound.paper == pytest.approx(0.875, abs=1e-12) and bound.exact == pytest.approx(math.sqrt(3) / 2, abs=1e-12)


def test_limits_and_parity():
    odd, even = binary_bound(1001), binary_bound(1000)
    assert odd.exact == pytest.approx(math.sqrt(3) / 2, abs=1e-15)  # exactly √3/2 for odd n
    assert even.exact == pytest.approx(math.sqrt(3) / 2 * 1000 / math.sqrt(1000**2 - 1), abs=1e-15)
    assert even.paper == pytest.approx(1 - (1000**2 - 4) / (8 * (1000**2 - 1)), abs=1e-15)
    assert 0.875 < even.paper < 0.875 + 1e-6 and odd.paper == pytest.approx(0.875, abs=1e-6)  # from above
    assert exact_rho(10**6, 5 * 10**5) == pytest.approx(math.sqrt(3) / 2, abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_best_split_with_tied_gold_scores_equals_brute_force(seed):
    gold = np.random.default_rng(seed).integers(0, 4, size=10).astype(float)  # many ties
    rho, k = best_two_valued_spearman(gold)
    assert rho == pytest.approx(_brute_force(gold), abs=1e-12)
    assert 0 < k < 10


def test_constant_gold_has_no_ceiling():
    assert best_two_valued_spearman(np.ones(5)) == (0.0, 0)


def test_bound_cli(capsys, tmp_path, mini_senteval):
    from tests.conftest import assert_one_line_error, run_cli

    code, out = run_cli(["bound", "--n", "1000", "--n", "1001", "--plot", str(tmp_path / "b.png")], capsys)
    assert code == 0 and "0.875000" in out and "0.866026" in out and "0.866025" in out
    assert (tmp_path / "b.png").stat().st_size > 1000
    code, out = run_cli(
        [
            "bound",
            "--test-sets",
            "--data",
            str(mini_senteval),
            "--output",
            str(tmp_path / "b.json"),
            "--plot",
            str(tmp_path / "c.png"),
        ],
        capsys,
    )
    assert code == 0 and "SICKRelatedness" in out and (tmp_path / "b.json").is_file()
    assert_one_line_error(*run_cli(["bound", "--n", "1"], capsys), "at least 2")
    assert_one_line_error(*run_cli(["bound"], capsys), "give --n")
