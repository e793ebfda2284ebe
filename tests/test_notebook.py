"""Notebook HTML representations and matplotlib pictures: the drawn data is checked against
independent computations (exact fractions for PML, the hand formula of the Gaussian curve)."""

from __future__ import annotations

import html
import itertools
import math
import re
from fractions import Fraction
from html.parser import HTMLParser

import matplotlib
import numpy as np
import pytest

import pmlkit
from pmlkit._validation import up_text
from pmlkit.errors import ValidationError
from pmlkit.mechanism import Mechanism

matplotlib.use("Agg")

from matplotlib.figure import Figure

from pmlkit.plotting import plot_gaussian_curve, plot_mechanism, plot_pml

# a hand-made mechanism with exact entries (binary fractions: exact in float64)
W_FR = [[Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)],
        [Fraction(1, 8), Fraction(3, 4), Fraction(1, 8)]]
PRIOR_FR = [Fraction(3, 4), Fraction(1, 4)]


def _pml_exact(w: list[list[Fraction]], p: list[Fraction]) -> list[float]:
    out = []
    for j in range(len(w[0])):
        py = sum(p[i] * w[i][j] for i in range(len(w)))
        out.append(math.nan if py == 0 else math.log(max(r[j] for r in w) / py))
    return out


@pytest.fixture(scope="module")
def designed() -> pmlkit.design.DesignResult:
    x = np.array(["Female"] * 40 + ["Male"] * 45 + ["<b>x</b>"] * 15)
    return pmlkit.design_from_samples(x, 1.0, 1e-3)


# -- plots ----------------------------------------------------------------------------------

def test_plot_mechanism_draws_the_matrix_with_labels(designed) -> None:
    mech = designed.mechanism
    ax = plot_mechanism(mech)
    assert np.array_equal(np.asarray(ax.images[0].get_array()), mech.matrix)
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(v) for v in mech.output_labels]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(v) for v in mech.input_labels]
    assert len(ax.texts) == mech.matrix.size  # one annotation per cell
    ax.figure.canvas.draw()  # renders with Agg without error
    # a plain array works too, and an existing axes is used and returned
    own = Figure().add_subplot()
    assert plot_mechanism([[0.5, 0.5], [0.25, 0.75]], ax=own) is own


def test_plot_pml_bars_are_the_exact_pml() -> None:
    w = np.array([[float(v) for v in r] for r in W_FR])
    ax = plot_pml(w, prior=[float(v) for v in PRIOR_FR], eps=0.7)
    heights = [b.get_height() for b in ax.patches]
    expect = _pml_exact(W_FR, PRIOR_FR)
    assert heights == pytest.approx(expect, rel=1e-13, abs=1e-15)
    eps_line = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(eps_line) == 1 and list(eps_line[0].get_ydata()) == [0.7, 0.7]


def test_plot_pml_outcome_that_never_occurs_has_no_bar() -> None:
    w = [[0.5, 0.5, 0.0], [0.25, 0.25, 0.5]]
    ax = plot_pml(w, prior=[1.0, 0.0])
    heights = [b.get_height() for b in ax.patches]
    assert math.isnan(heights[2]) and heights[:2] == pytest.approx([0.0, 0.0], abs=1e-15)


def test_plot_pml_defaults_to_the_recorded_estimate_and_eps(designed) -> None:
    mech = designed.mechanism
    ax = plot_pml(mech)
    p = [Fraction(v).limit_denominator(1000) for v in mech.parameters["prior"]]
    w = [[Fraction(float(v)) for v in r] for r in mech.matrix]
    heights = [b.get_height() for b in ax.patches]
    assert heights == pytest.approx(_pml_exact(w, p), rel=1e-9, abs=1e-12)
    assert max(heights) <= mech.parameters["eps"] + 1e-9  # the estimate is in the set
    eps_line = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert list(eps_line[0].get_ydata()) == [1.0, 1.0]
    with pytest.raises(ValidationError, match="prior must be given"):
        plot_pml([[0.5, 0.5], [0.25, 0.75]])


def test_plot_gaussian_curve_is_the_calibration() -> None:
    from pmlkit.additive import calibrate_gaussian

    rng = np.random.default_rng(5)
    cal = calibrate_gaussian(rng.choice(["a", "b"], 2000), 1.0, 1e-3, positive="a")
    ax = plot_gaussian_curve(cal)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"direct", "paper"} and ax.get_yscale() == "log"
    d1, d2 = np.asarray(cal.delta1), cal.delta2
    direct = lines["direct"]
    # direct curve: (eps, delta1 + delta2 - delta1 delta2), by hand
    expect = d1 + d2 - d1 * d2
    keep = expect > 0
    assert np.array_equal(direct.get_xdata(), np.asarray(cal.eps)[keep])
    assert np.allclose(direct.get_ydata(), expect[keep], rtol=1e-12, atol=0)
    # paper curve: eps* = eps - log(1 - beta e^eps / 2), points with a vacuous eps* left out
    arg = 1 - cal.beta * np.exp(np.asarray(cal.eps)) / 2
    finite = (arg > 0) & keep
    with np.errstate(invalid="ignore", divide="ignore"):
        eps_star = np.asarray(cal.eps) - np.log(arg)
    assert np.allclose(lines["paper"].get_xdata(), eps_star[finite], rtol=1e-12)
    with pytest.raises(ValidationError, match="GaussianCalibration"):
        plot_gaussian_curve({"sigma": 1})


# -- HTML -----------------------------------------------------------------------------------

class _Cells(HTMLParser):
    """Rows of the first table: lists of (tag, attrs, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, dict, str]]] = []
        self.cell: tuple[str, dict] | None = None
        self.text = ""
        self.tables = 0

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables += 1
        if self.tables != 1:
            return
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell, self.text = (tag, dict(attrs)), ""

    def handle_endtag(self, tag):
        if self.tables == 1 and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append((*self.cell, self.text))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.text += data


def _parse(text: str) -> list[list[tuple[str, dict, str]]]:
    p = _Cells()
    p.feed(text)
    return p.rows


def test_mechanism_html_holds_the_matrix_labels_and_pml(designed) -> None:
    mech = designed.mechanism
    text = mech._repr_html_()
    assert "<b>x</b>" not in text and "&lt;b&gt;x&lt;/b&gt;" in text  # labels escaped
    assert "<script" not in text
    rows = _parse(text)
    assert [c[2] for c in rows[0][1:]] == [str(v) for v in mech.output_labels]
    body = rows[1:1 + mech.n_inputs]
    greens = []
    for i, row in enumerate(body):
        assert row[0][2] == str(mech.input_labels[i])
        vals = [float(c[2]) for c in row[1:]]
        assert vals == pytest.approx(list(mech.matrix[i]), rel=5e-4, abs=1e-12)
        for c in row[1:]:
            greens.append(int(re.search(r"rgb\(\d+,(\d+),", c[1]["style"]).group(1)))
    # heat colour: a larger probability is never lighter (green channel non-increasing)
    order = np.argsort(mech.matrix.ravel(), kind="stable")
    assert all(greens[a] >= greens[b] for a, b in itertools.pairwise(order))
    pml_row = rows[1 + mech.n_inputs]
    p = [Fraction(v).limit_denominator(1000) for v in mech.parameters["prior"]]
    w = [[Fraction(float(v)) for v in r] for r in mech.matrix]
    assert [float(c[2]) for c in pml_row[1:]] == pytest.approx(_pml_exact(w, p), rel=5e-4)
    assert "certified eps" in text and "UNCERTIFIED" not in text


def test_html_of_uncertified_and_large_mechanisms() -> None:
    text = Mechanism([[0.5, 0.5], [0.25, 0.75]], ["a", "b"])._repr_html_()
    assert "UNCERTIFIED" in text and "PML at" not in text  # no estimate recorded
    big = np.full((50, 45), 1 / 45)
    text = Mechanism(big)._repr_html_()
    rows = _parse(text)
    assert "showing 40 x 40" in text and len(rows[0]) == 1 + 40 + 1


def test_guarantee_html(designed) -> None:
    g = designed.guarantee
    text = g._repr_html_()
    # (a leakage is shown rounded up: never below what was computed)
    assert f"({up_text(g.eps)}, {g.delta:.3g})-PML" in text
    assert f"{up_text(g.certified_eps, 9)}" in text and f"m = {g.m}" in text
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
    both = designed._repr_html_()
    assert both.startswith(designed.mechanism._repr_html_()) and both.endswith(text)


def test_joint_guarantee_html() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, 400), rng.integers(0, 3, 400)
    g = pmlkit.design_joint([a, b], 1.5, 0.05, mode="per-column", splits=2, steps=3).guarantee
    text = g._repr_html_()
    assert f"{g.certified_eps:.9g}" in text and g.kind in text
    assert html.escape(g.warning) in text and "<b>not</b> a guarantee" in text
