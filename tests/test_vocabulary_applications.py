"""The application modules speak the one vocabulary: ``rng=`` for randomness (an integer
seed here: research code) and ``prior`` for a distribution. Each former spelling still
works for one release, warns with a DeprecationWarning naming both, and gives exactly the
same result; the new spelling does not warn."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pmlkit import audit
from pmlkit.experiments import get_figure
from pmlkit.experiments.tighter_sets import counts_of


def _old_and_new(call_old, call_new):
    with pytest.warns(DeprecationWarning, match=r"'seed' is deprecated.*use 'rng'|'p' is "
                      r"deprecated.*use 'prior'"):
        old = call_old()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = call_new()
    return old, new


def test_figure_compute_seed_is_rng():
    fig = get_figure("upperbound")
    old, new = _old_and_new(lambda: fig.compute(iterations=20, seed=5),
                            lambda: fig.compute(iterations=20, rng=5))
    assert old.equals(new)
    # the seed matters (so equality above is not vacuous)
    assert not new.equals(fig.compute(iterations=20, rng=6))


def test_gauss_figure_compute_seed_is_rng():
    fig = get_figure("gauss")
    old, new = _old_and_new(lambda: fig.compute(iterations=5, seed=1),
                            lambda: fig.compute(iterations=5, rng=1))
    assert old.equals(new)


def test_reproduce_seed_is_rng(tmp_path):
    from pmlkit.experiments.report import reproduce

    old, new = _old_and_new(
        lambda: reproduce(["upperbound"], tmp_path / "a", iterations=5, seed=2),
        lambda: reproduce(["upperbound"], tmp_path / "b", iterations=5, rng=2))
    assert (tmp_path / "a" / "upperbound.csv").read_bytes() \
        == (tmp_path / "b" / "upperbound.csv").read_bytes()
    assert [r.name for r in old] == [r.name for r in new] == ["upperbound"]


def test_run_audit_seed_is_rng():
    kw = {"trials": 3, "families": ("coverage",), "deltas": (0.3,)}
    old, new = _old_and_new(lambda: audit.run_audit(seed=4, **kw),
                            lambda: audit.run_audit(rng=4, **kw))
    # the rows (every count) agree; the seed's commitment is salted afresh on each run
    assert old.rows == new.rows and old.seed == new.seed
    assert new.seed == 4 and "seeded" in new.rng


def test_audit_joint_seed_is_rng():
    old, new = _old_and_new(lambda: audit.audit_joint(trials=3, seed=4, sizes=(100,)),
                            lambda: audit.audit_joint(trials=3, rng=4, sizes=(100,)))
    assert old.to_dict() == new.to_dict()


def test_both_spellings_are_refused():
    from pmlkit.errors import ValidationError

    with pytest.raises(ValidationError, match="rng"):
        audit.run_audit(rng=1, seed=1)


def test_counts_of_p_is_prior():
    old, new = _old_and_new(lambda: counts_of(p=np.array([0.5, 0.25, 0.25]), m=7),
                            lambda: counts_of(prior=np.array([0.5, 0.25, 0.25]), m=7))
    # 7 * (0.5, 0.25, 0.25) = 3.5, 1.75, 1.75: floors 3, 1, 1 and the two missing records
    # go to the largest remainders 0.75, 0.75
    assert old.tolist() == new.tolist() == [3, 2, 2]


def test_plot_pml_eps_and_ax_are_keyword_only():
    import matplotlib

    matplotlib.use("Agg")
    from pmlkit.plotting import plot_pml

    w = [[0.75, 0.25], [0.25, 0.75]]
    with pytest.warns(DeprecationWarning, match="eps.*by position"):
        old = plot_pml(w, [0.2, 0.8], 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = plot_pml(w, [0.2, 0.8], eps=0.9)
    heights = [float(b.get_height()) for b in new.patches]
    assert [float(b.get_height()) for b in old.patches] == heights
    assert old.lines[0].get_ydata()[0] == new.lines[0].get_ydata()[0] == 0.9
    # independent: P_Y = (0.2*0.75 + 0.8*0.25, 0.2*0.25 + 0.8*0.75) = (0.35, 0.65)
    assert heights == pytest.approx([np.log(0.75 / 0.35), np.log(0.75 / 0.65)], rel=1e-12)
