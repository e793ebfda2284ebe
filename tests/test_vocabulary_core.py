"""The release-0.2 vocabulary of the core, analysis and confidence layers: every renamed or
newly keyword-only parameter keeps its old spelling for one release. For each change: the
old spelling still works, warns :class:`DeprecationWarning` and gives the same result as
the new spelling, which does not warn."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import pmlkit as pk
from pmlkit.errors import ValidationError

P = [0.4, 0.2, 0.2, 0.2]


def _new(call):
    """Call the new spelling with every warning turned into an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


def _old(call, *names):
    with pytest.warns(DeprecationWarning) as caught:
        out = call()
    text = " ".join(str(w.message) for w in caught)
    for name in names:
        assert name in text
    # each warning names the caller's line (here), never a line inside pmlkit
    assert [w.filename for w in caught] == [__file__] * len(caught)
    return out


# --- bounds: scalar parameters by keyword -----------------------------------------------

KEYWORD_ONLY = [
    # (new call, old positional call, names the warning must mention)
    (lambda: pk.eps_bound(eps=1.0, beta=0.1), lambda: pk.eps_bound(1.0, 0.1), ("eps", "beta")),
    (lambda: pk.eps_bound(eps=1.0, beta=[0.0, 0.1]), lambda: pk.eps_bound(1.0, [0.0, 0.1]),
     ("eps", "beta")),
    (lambda: pk.eps_bound(eps=1.0, beta=0.1), lambda: pk.eps_bound(1.0, beta=0.1), ("eps",)),
    (lambda: pk.leakage_bound(eps=0.3, distance=0.2), lambda: pk.leakage_bound(0.3, 0.2),
     ("eps", "distance")),
    (lambda: pk.lipschitz_bound(capacity=0.7, distance=0.1),
     lambda: pk.lipschitz_bound(0.7, 0.1), ("capacity", "distance")),
    (lambda: pk.delta_min(eps=0.5, eps_target=0.7, m=100, n=2),
     lambda: pk.delta_min(0.5, 0.7, 100, 2), ("eps", "eps_target", "m", "n")),
    (lambda: pk.sensitivity_bound(P, eps=0.5, beta=0.1),
     lambda: pk.sensitivity_bound(0.5, P, 0.1), ("eps", "prior", "beta")),
    (lambda: pk.sensitivity_bound(P, eps=0.5, beta=0.1),
     lambda: pk.sensitivity_bound(0.5, prior=P, beta=0.1), ("eps",)),
    (lambda: pk.sensitivity_bound(P, eps=0.5, beta=[0.0, 0.1]),
     lambda: pk.sensitivity_bound(0.5, P, [0.0, 0.1]), ("eps", "prior", "beta")),
    # m and n of the Weissman radius: swapped positionally they silently gave another radius
    (lambda: pk.l1_radius(1e-6, m=1000, n=4), lambda: pk.l1_radius(1e-6, 1000, 4),
     ("m", "n")),
    (lambda: pk.l1_failure_probability(0.2, m=1000, n=4),
     lambda: pk.l1_failure_probability(0.2, 1000, 4), ("m", "n")),
    (lambda: pk.l1_radius_known_kappa(1e-6, m=1000, n=4, kappa=0.3),
     lambda: pk.l1_radius_known_kappa(1e-6, 1000, 4, 0.3), ("m", "n", "kappa")),
]


@pytest.mark.parametrize(("new", "old", "names"), KEYWORD_ONLY)
def test_old_positional_bounds_warn_and_agree(new, old, names):
    np.testing.assert_array_equal(_old(old, *names), _new(new))


def test_new_bounds_spelling_matches_the_closed_forms():
    # independent hand formulas (natural logs), so the renamed calls compute the same thing
    assert pk.eps_bound(eps=1.0, beta=0.1) == pytest.approx(1 - math.log(1 - 0.05 * math.e))
    assert pk.leakage_bound(eps=math.log(2), distance=0.5) == pytest.approx(math.log(4))
    assert pk.lipschitz_bound(capacity=math.log(2), distance=0.05) == pytest.approx(0.1)
    g = math.exp(-0.5) - math.exp(-0.7)
    assert pk.delta_min(eps=0.5, eps_target=0.7, m=100, n=2) == pytest.approx(
        2 * math.exp(-200 * g * g))
    # region 2 of P (-log 0.8 <= 0.5 < -log 0.6)
    assert pk.sensitivity_bound(P, eps=0.5, beta=0.1) == pytest.approx(
        -math.log(1 - 0.05 * math.exp(0.5)))
    # the old all-keyword spelling of sensitivity_bound was never ambiguous: still silent
    assert _new(lambda: pk.sensitivity_bound(eps=0.5, prior=P, beta=0.1)) == \
        pk.sensitivity_bound(P, eps=0.5, beta=0.1)


def test_sensitivity_bound_refuses_mixed_orders():
    with pytest.raises(ValidationError, match="prior by position"):
        pk.sensitivity_bound(P, 0.5, 0.1)  # neither the old nor the new order
    with pytest.raises(ValidationError, match="both by position and by keyword"):
        pk.sensitivity_bound(0.5, P, eps=0.4)
    with pytest.raises(ValidationError, match="eps both by position and by keyword"):
        pk.eps_bound(1.0, 0.1, eps=1.0)


# --- estimation: a distribution is a prior ----------------------------------------------

def test_kappa_p_is_now_prior():
    from pmlkit.estimation import kappa

    q = [0.4, 0.35, 0.25]
    new = _new(lambda: kappa(prior=q))
    assert new == _old(lambda: kappa(p=q), "'p'", "'prior'")
    assert new == pytest.approx(0.4)  # best split {0.4} | {0.35, 0.25}, found by hand
    assert _new(lambda: kappa(q)) == new  # positional callers are untouched
    with pytest.raises(ValidationError, match="prior must sum to 1"):
        kappa([0.5, 0.6])


# --- confidence sets: confidence= names the method --------------------------------------

@pytest.mark.parametrize("name", ["l1", "box-cp", "box-kl", "box-lower", "l1-kappa",
                                  "l1-box", "auto"])
def test_confidence_set_method_is_now_confidence(name):
    counts = [30, 70]
    new = _new(lambda: pk.confidence_set(counts, 0.05, confidence=name))
    old = _old(lambda: pk.confidence_set(counts, 0.05, method=name), "'method'",
               "'confidence'")
    assert new.method == old.method == name
    assert new.to_dict() == old.to_dict()


def test_confidence_set_new_spelling_agrees_with_scipy():
    # independent: scipy's exact (Clopper-Pearson) two-sided interval for P(x1)
    from scipy.stats import binomtest

    ci = binomtest(30, 100).proportion_ci(0.95, "exact")
    cs = pk.confidence_set([30, 70], 0.05, confidence="box-cp")
    np.testing.assert_allclose(cs.set.lower, [ci.low, 1 - ci.high], rtol=1e-12)
    np.testing.assert_allclose(cs.set.upper, [ci.high, 1 - ci.low], rtol=1e-12)


def test_confidence_set_refuses_both_spellings_and_names_the_new_one():
    with pytest.raises(ValidationError, match="got both 'confidence' and its deprecated"):
        pk.confidence_set([30, 70], 0.05, confidence="l1", method="l1")
    with pytest.raises(ValidationError, match="confidence must be one of"):
        pk.confidence_set([30, 70], 0.05, confidence="wilson")
    with pytest.raises(ValidationError, match="confidence 'box-cp' takes no option split"):
        pk.confidence_set([30, 70], 0.05, confidence="box-cp", split=0.3)


# --- pmlkit itself speaks the new vocabulary ----------------------------------------------

#: name -> (deprecated keywords, largest number of positional arguments allowed)
_DEPRECATED_SPELLINGS = {
    "confidence_set": ({"method"}, None),
    "kappa": ({"p"}, None),
    "eps_bound": (set(), 0),
    "leakage_bound": (set(), 0),
    "lipschitz_bound": (set(), 0),
    "delta_min": (set(), 0),
    "sensitivity_bound": (set(), 1),
}


def test_no_module_of_pmlkit_uses_a_deprecated_spelling():
    """A deprecated spelling inside pmlkit would warn every user (the command line prints
    warnings on stderr): the library, its command line and its benchmarks call the new
    spellings. Static, so it also covers code paths no test runs."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    offenders = []
    for path in sorted([*root.joinpath("src", "pmlkit").rglob("*.py"),
                        *root.joinpath("benchmarks").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(
                f, ast.Attribute) else None
            args = list(node.args)
            if name not in _DEPRECATED_SPELLINGS and args and isinstance(args[0], ast.Name) \
                    and args[0].id in _DEPRECATED_SPELLINGS:
                # a call through a helper, e.g. _try(confidence_set, counts, delta, method=..)
                name, args = args[0].id, args[1:]
            if name not in _DEPRECATED_SPELLINGS:
                continue
            old_kw, max_pos = _DEPRECATED_SPELLINGS[name]
            kws = {k.arg for k in node.keywords}
            bad = (kws & old_kw) or (max_pos is not None and len(args) > max_pos)
            if name == "sensitivity_bound" and args and "eps" not in kws:
                bad = True  # sensitivity_bound(eps, ...) in the old order
            if bad:
                offenders.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    assert not offenders, offenders
