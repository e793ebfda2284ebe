"""The warning that the data released is the mechanism's reference sample, detected from
what the mechanism file discloses anyway: the reference label counts (issue 32, case 5).

Copies of the reference (shuffled, reversed, one row dropped or added, a trailing newline,
split over files) must warn in the API, for files (local and Dask engines), on the command
line and in the scikit-learn transformer; an independent sample must not (Adult's test file
released with a mechanism designed from its training file), and the rate of spurious
warnings on independent samples is the stated level.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, chi2_contingency

from pmlkit import privatize, privatize_file
from pmlkit._provenance import REUSE_ALPHA, reference_counts, reuse_test
from pmlkit.cli.main import main
from pmlkit.design import design_from_samples
from pmlkit.errors import PMLWarning

GEN = np.random.default_rng(5)
P = [0.45, 0.3, 0.15, 0.1]
LABELS = ["lo", "mid", "hi", "top"]
REF = [str(v) for v in GEN.choice(LABELS, 3000, p=P)]
FRESH = [str(v) for v in GEN.choice(LABELS, 3000, p=P)]  # same population, other people


@pytest.fixture(scope="module")
def mech() -> Any:
    return design_from_samples(REF, 1.0, 1e-3).mechanism


def _warnings(fn: Any, *args: Any, **kw: Any) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args, **kw)
    return [str(w.message) for w in caught if issubclass(w.category, PMLWarning)]


def _copies(ref: list[str]) -> dict[str, list[str]]:
    order = np.random.default_rng(1).permutation(len(ref))
    return {"same": ref, "shuffled": [ref[i] for i in order], "reversed": ref[::-1],
            "one row dropped": ref[1:], "one row added": [*ref, ref[0]],
            "doubled": ref + ref}


# -- the statistic ------------------------------------------------------------------------------

def test_the_statistic_is_pearsons_chi_square_and_its_lower_tail() -> None:
    gen = np.random.default_rng(0)
    for _ in range(200):
        k = int(gen.integers(2, 8))
        p = gen.dirichlet(np.ones(k))
        r = gen.multinomial(int(gen.integers(50, 3000)), p)
        c = gen.multinomial(int(r.sum() * gen.uniform(0.4, 2.5)), p)
        res = reuse_test(r, c)
        keep = (r + c) > 0
        if res is None:
            m, n = r.sum(), c.sum()
            assert max(m, n) > 3 * min(m, n) or keep.sum() < 2
            continue
        stat, _, dof, _ = chi2_contingency(np.stack([r[keep], c[keep]]), correction=False)
        assert res.df == dof
        assert res.statistic == pytest.approx(stat, rel=1e-9, abs=1e-12)
        assert res.p_lower == pytest.approx(chi2.cdf(stat, dof), rel=1e-9, abs=1e-15)
        assert res.warn == (res.p_lower <= REUSE_ALPHA)


def test_copies_give_zero_or_near_zero_and_no_test_far_from_the_size() -> None:
    r = np.array([300, 500, 200])
    assert reuse_test(r, r).statistic == 0.0 and reuse_test(r, r).p_lower == 0.0
    assert reuse_test(r, 2 * r).statistic == 0.0  # the reference twice
    assert reuse_test(r, r // 4) is None  # 4x smaller: no power, no test
    assert reuse_test([10, 0], [10, 0]) is None  # one label seen: nothing to compare


def test_spurious_warnings_on_independent_samples_come_at_the_stated_rate() -> None:
    # the calibration claim of the docs: about REUSE_ALPHA of independent samples of the
    # reference's population (similar size) warn; a reference trimmed by 1% always does
    gen = np.random.default_rng(11)
    p = np.array(P)
    trials = 2000
    fp = power = 0
    for _ in range(trials):
        r = gen.multinomial(4000, p)
        fp += reuse_test(r, gen.multinomial(3000, p)).warn  # type: ignore[union-attr]
        part = gen.multivariate_hypergeometric(r, 3960)
        power += reuse_test(r, part).warn  # type: ignore[union-attr]
    sd = np.sqrt(REUSE_ALPHA * (1 - REUSE_ALPHA) / trials)
    assert abs(fp / trials - REUSE_ALPHA) < 4 * sd
    assert power / trials > 0.99


def test_the_counts_come_from_the_recorded_estimate(mech: Any) -> None:
    got = reference_counts(mech)
    assert got is not None
    assert got.tolist() == [REF.count(lab) for lab in mech.input_labels]
    assert reference_counts(mech.minimal_record()) is None  # no counts, no test


# -- in memory ----------------------------------------------------------------------------------

def test_copies_of_the_reference_warn_in_memory(mech: Any) -> None:
    for name, data in _copies(REF).items():
        for form in (data, np.array(data), pd.Series(data), pd.Categorical(data)):
            got = _warnings(privatize, mech, form)
            assert len(got) == 1 and "reference sample" in got[0], (name, type(form))
    frame = pd.DataFrame({"edu": REF[::-1], "x": 0})
    got = _warnings(privatize, mech, frame, columns="edu")
    assert len(got) == 1 and "column 'edu'" in got[0]


def test_copies_warn_for_arrow_and_polars(mech: Any) -> None:
    pa = pytest.importorskip("pyarrow")
    rev = REF[::-1]
    for form in (pa.array(rev), pa.chunked_array([pa.array(rev[:100]), pa.array(rev[100:])]),
                 pa.array(rev).dictionary_encode()):
        assert len(_warnings(privatize, mech, form)) == 1
    assert len(_warnings(privatize, mech, pa.table({"edu": rev}), columns="edu")) == 1
    pl = pytest.importorskip("polars")
    assert len(_warnings(privatize, mech, pl.Series("edu", rev))) == 1
    assert len(_warnings(privatize, mech, pl.DataFrame({"edu": rev}), columns="edu")) == 1


def test_an_independent_sample_does_not_warn(mech: Any) -> None:
    res = reuse_test(reference_counts(mech), [FRESH.count(lab) for lab in mech.input_labels])
    assert res is not None and res.p_lower > 0.2  # far from the threshold, not luck
    with warnings.catch_warnings():
        warnings.simplefilter("error", PMLWarning)
        privatize(mech, FRESH)
        privatize(mech, pd.DataFrame({"edu": FRESH}), columns="edu")
        privatize(mech.minimal_record(), REF)  # a minimal record has no counts to compare


# -- files, the command line, Dask -------------------------------------------------------------

def _write(path: Path, labels: list[str], tail: str = "") -> Path:
    path.write_text("id,edu\n" + "".join(f"{i},{v}\n" for i, v in enumerate(labels)) + tail)
    return path


@pytest.mark.parametrize("case", ["shuffled", "reversed", "one row dropped",
                                  "one row added", "same"])
def test_privatize_file_warns_on_a_copy(tmp_path: Path, mech: Any, case: str) -> None:
    src = _write(tmp_path / "in.csv", _copies(REF)[case], tail="\n" if case == "same" else "")
    got = _warnings(privatize_file, mech, src, tmp_path / "out.csv", "edu")
    assert len(got) == 1 and "in.csv" in got[0] and "reference sample" in got[0]


def test_privatize_file_parquet_and_split_inputs(tmp_path: Path, mech: Any) -> None:
    pytest.importorskip("pyarrow")
    pd.DataFrame({"edu": REF[::-1]}).to_parquet(tmp_path / "in.parquet")
    got = _warnings(privatize_file, mech, tmp_path / "in.parquet", tmp_path / "o.parquet",
                    "edu")
    assert len(got) == 1
    # the reference cut in two files: each half is tested too (a half of the reference is
    # caught only part of the time: pmlkit._provenance), the two together always warn
    a = _write(tmp_path / "a.csv", REF[:1500])
    b = _write(tmp_path / "b.csv", REF[1500:])
    (tmp_path / "out").mkdir()
    got = _warnings(privatize_file, mech, [a, b], tmp_path / "out", "edu")
    assert any("the 2 inputs" in g for g in got)


def test_privatize_file_does_not_warn_on_other_data(tmp_path: Path, mech: Any) -> None:
    src = _write(tmp_path / "in.csv", FRESH)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = privatize_file(mech, src, tmp_path / "out.csv", "edu")
    assert not [w for w in caught if issubclass(w.category, PMLWarning)]
    assert rep.rows == len(FRESH)


def test_cli_privatize_prints_one_warning_line(tmp_path: Path, mech: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    mech.save(tmp_path / "m.json")
    for labels, tail, warned in ((REF[::-1], "\n", True), (FRESH, "", False)):
        src = _write(tmp_path / "in.csv", labels, tail)
        code = main(["privatize", "--mechanism", str(tmp_path / "m.json"), "--input",
                     str(src), "--column", "edu", "--output", str(tmp_path / "o.csv"),
                     "--overwrite"])
        err = capsys.readouterr().err
        assert code == 0
        lines = [ln for ln in err.splitlines() if "reference sample" in ln]
        assert len(lines) == int(warned)
        assert all(ln.startswith("pmlkit: warning: ") for ln in lines)


def test_dask_engine_warns_on_a_copy(tmp_path: Path, mech: Any) -> None:
    pytest.importorskip("distributed")
    from pmlkit.privatization._dask import privatize_file_dask

    src = _write(tmp_path / "in.csv", REF[::-1])
    got = _warnings(privatize_file_dask, mech, src, tmp_path / "out", "edu",
                    block_bytes=8 << 10)  # several pieces: the counts are summed
    assert len(got) == 1 and "reference sample" in got[0]


# -- scikit-learn --------------------------------------------------------------------------------

def test_sklearn_transformer_warns_once_or_on_request_not_at_all() -> None:
    pytest.importorskip("sklearn")
    from pmlkit.sklearn import SELF_REFERENCE_WARNING, PMLPrivatizer

    ref = pd.DataFrame({"edu": REF})
    fresh = pd.DataFrame({"edu": FRESH})
    got = _warnings(PMLPrivatizer(eps=1.0, delta=1e-3).fit_transform, ref)
    assert got == [SELF_REFERENCE_WARNING]  # once: the count test does not repeat it
    with warnings.catch_warnings():
        warnings.simplefilter("error", PMLWarning)
        PMLPrivatizer(eps=1.0, delta=1e-3, allow_self_reference=True).fit_transform(ref)
        PMLPrivatizer(eps=1.0, delta=1e-3).fit(ref).transform(fresh)
        PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref).fit_transform(fresh)
    # fit on the reference, transform a shuffled copy of it: the count test catches it
    fitted = PMLPrivatizer(eps=1.0, delta=1e-3).fit(ref)
    got = _warnings(fitted.transform, ref.sample(frac=1.0, random_state=0))
    assert len(got) == 1 and "reference sample" in got[0]
    got = _warnings(PMLPrivatizer(eps=1.0, delta=1e-3, reference=ref).fit_transform,
                    ref.iloc[::-1])
    assert len(got) == 1 and "reference sample" in got[0]
    from pmlkit.errors import ValidationError

    with pytest.raises(ValidationError, match="allow_self_reference must be True or False"):
        PMLPrivatizer(allow_self_reference="yes").fit(ref)


# -- Adult: the training file's copies warn, the test file does not -----------------------------

ADULT = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
         "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
         "hours-per-week", "native-country", "income"]


def test_adult_test_file_does_not_warn_and_copies_of_the_training_file_do(
        adult_dir: Path) -> None:
    train = pd.read_csv(adult_dir / "adult.data", names=ADULT, skipinitialspace=True,
                        dtype=str)
    test = pd.read_csv(adult_dir / "adult.test", names=ADULT, skipinitialspace=True,
                       dtype=str, skiprows=1)
    for col in ("sex", "race", "education", "marital-status", "relationship", "workclass"):
        mech = design_from_samples(train[col].to_numpy(), 2.0, 1e-6, max_seconds=5).mechanism
        with warnings.catch_warnings():
            warnings.simplefilter("error", PMLWarning)
            privatize(mech, test[col].to_numpy())  # another sample: no warning
        for name, data in _copies(list(train[col])).items():
            assert len(_warnings(privatize, mech, np.array(data))) == 1, (col, name)
        # the first half of the training file: caught where the column has enough
        # labels to tell a part of the reference from an independent sample (module
        # docstring of pmlkit._provenance); with 2 labels (sex) it cannot be told
        if col in ("education", "marital-status", "workclass"):
            assert len(_warnings(privatize, mech, train[col][:len(train) // 2])) == 1


def test_adult_on_the_command_line(adult_dir: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["design", "--reference", str(adult_dir / "adult.data"), "--names", "adult",
                 "--column", "race", "--epsilon", "2", "--delta", "1e-6",
                 "--output", str(tmp_path / "race.json")]) == 0
    copy = tmp_path / "copy.data"
    copy.write_bytes((adult_dir / "adult.data").read_bytes() + b"\n")  # a trailing newline
    capsys.readouterr()
    for src, warned in ((adult_dir / "adult.test", False), (copy, True)):
        assert main(["privatize", "--mechanism", str(tmp_path / "race.json"), "--names",
                     "adult", "--input", str(src), "--column", "race", "--output",
                     str(tmp_path / "out.csv"), "--overwrite"]) == 0
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if "reference sample" in ln]
        assert len(lines) == int(warned), err


def test_lazy_collections_are_not_computed_for_the_test(mech: Any) -> None:
    dd = pytest.importorskip("dask.dataframe")
    import dask

    calls = []

    def counting_get(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return dask.get(*args, **kw)

    lazy = dd.from_pandas(pd.Series(REF[::-1]), npartitions=3)
    with dask.config.set(scheduler=counting_get):
        out = privatize(mech, lazy)  # stays lazy: nothing computed, no warning
    assert calls == [] and type(out).__module__.startswith("dask")


def test_a_joint_release_warns_on_a_copy_of_its_joint_reference(tmp_path: Path) -> None:
    """A joint release's records are counted as tuples of its columns' labels against the
    joint reference counts its mechanism records: the reference itself, reordered, warns
    (naming the columns); an independent sample of the same law does not."""
    from pmlkit.joint import design_joint

    rng = np.random.default_rng(5)

    def sample(n: int) -> pd.DataFrame:
        return pd.DataFrame({"a": rng.choice(["x", "y"], n, p=[0.3, 0.7]),
                             "b": rng.choice(["u", "v", "w"], n, p=[0.5, 0.3, 0.2])})

    ref = sample(3000)
    release = design_joint(ref, 1.0, 1e-6, mode="joint").release
    assert reference_counts(release.mechanism) is not None
    copy = tmp_path / "copy.csv"
    ref.iloc[::-1].to_csv(copy, index=False)
    got = _warnings(privatize_file, release, copy, tmp_path / "o1.csv", ["a", "b"])
    assert len(got) == 1 and "columns ['a', 'b']" in got[0] and "reference sample" in got[0]
    fresh = tmp_path / "fresh.csv"
    sample(3000).to_csv(fresh, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        privatize_file(release, fresh, tmp_path / "o2.csv", ["a", "b"])
    assert not [w for w in caught if issubclass(w.category, PMLWarning)]
