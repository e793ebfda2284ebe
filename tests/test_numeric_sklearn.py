"""PMLPrivatizer with numeric columns (``numeric=``): designed on their grid, released as
grid values in their own dtype, drawn from the mechanism's rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

pytest.importorskip("sklearn")

from pmlkit.errors import ValidationError
from pmlkit.sklearn import PMLPrivatizer


def _data(seed, n):
    g = np.random.default_rng(seed)
    return pd.DataFrame({"sex": g.choice(["F", "M"], n),
                         "age": np.clip(np.round(g.normal(45, 15, n)), 5, 99).astype(np.int64)})


def test_numeric_column_released_on_its_grid():
    ref, X = _data(0, 3000), _data(1, 400)
    priv = PMLPrivatizer(eps=1.0, delta=1e-6, reference=ref, numeric={"age": "18:90:1"},
                         rng=3).fit(X)
    mech = priv.mechanisms_[1]
    assert mech.input_labels == tuple(range(18, 91))  # 73 labels: max_categories not applied
    assert priv.guarantees_[1].certified_eps <= 1.0
    out = priv.transform(X)
    assert out.dtypes["age"] == np.int64 and out["sex"].isin(["F", "M"]).all()
    assert set(out["age"]) <= set(range(18, 91))
    # the released law of one input value is the mechanism's row of its clamped code
    big = pd.DataFrame({"sex": ["F"] * 20_000, "age": np.full(20_000, 99, dtype=np.int64)})
    big.loc[::2, "age"] = 47
    rel = priv.transform(big)["age"].to_numpy()
    for value, row in ((99, 72), (47, 29)):  # 99 is clamped to 90, the last row
        _check_row(rel[big["age"].to_numpy() == value], np.asarray(mech)[row])


def _check_row(got, w):
    counts = np.array([(got == v).sum() for v in range(18, 91)])
    exp = w * got.size
    assert counts[w == 0].sum() == 0  # never an output outside the row's support
    keep = exp >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    e = np.append(exp[keep], exp[~keep].sum())
    obs, e = obs[e > 0], e[e > 0]
    if e.size == 1:  # a deterministic row (the LP may answer one value)
        assert obs[0] == got.size
    else:
        assert stats.chisquare(obs, e).pvalue > 1e-4


def test_numeric_grid_for_every_column_and_bad_specs():
    g = np.random.default_rng(2)
    ref = g.integers(0, 12, (2000, 2)).astype(np.float64)
    priv = PMLPrivatizer(eps=2.0, delta=1e-6, reference=ref, numeric="0:10:1",
                         utility="squared", rng=1).fit(ref[:10])
    out = priv.transform(ref[:200])
    assert out.dtype == np.float64 and set(np.unique(out)) <= set(range(11))
    with pytest.raises(ValidationError, match="numeric names column 'height'"):
        PMLPrivatizer(reference=_data(0, 100), numeric={"height": "0:1:1"}).fit(_data(1, 10))
    with pytest.raises(ValidationError, match="LOWER:UPPER:STEP"):
        PMLPrivatizer(reference=ref, numeric="0:10").fit(ref[:10])
