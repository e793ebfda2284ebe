"""Forged and edited files are refused, never believed (release model, issue "one release
model").

An honest release plan (per-column and joint-alphabet) and an honest mechanism file are
written, then edited the way an attacker would: numbers, types, sets, radii, deltas, m,
duplicate keys, swapped or replaced mechanisms with digests recomputed, identity
mechanisms. Every edit must be refused with one line; the honest files still load and
release. The expected refusals are decided here from what was edited, never from the code
under test; the re-check of the honest files is compared with an independent computation
(the brute-force worst case over the vertices of the joint l1 ball).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pmlkit
from pmlkit.cli.main import main
from pmlkit.errors import DataError, PlanFileError, ValidationError
from pmlkit.joint import JointGuarantee, ReleasePlan

REF = {"a": ["x", "x", "y"] * 1000, "b": ["u", "v", "u"] * 1000}
DELTA = 1e-6


def _resign(doc: dict[str, Any]) -> dict[str, Any]:
    """A mechanism document with its digest recomputed (anyone can: it is no signature)."""
    content = {k: v for k, v in doc.items() if k != "sha256"}
    canon = json.dumps(content, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return {**content, "sha256": hashlib.sha256(canon.encode()).hexdigest()}


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("plans")
    per = pmlkit.design_joint(REF, 1.2, DELTA, mode="per-column", splits=2, steps=4)
    joint = pmlkit.design_joint(REF, 1.2, DELTA)  # the default: the joint alphabet
    assert joint.mode == "joint alphabet" and per.mode == "per-column"
    per_path = ReleasePlan.from_design(per).save(base / "per")
    joint_path = ReleasePlan.from_design(joint).save(base / "joint")
    ident = pmlkit.design_from_samples(REF["a"], 3.0, DELTA).mechanism
    assert np.allclose(ident.matrix, np.eye(2))  # a valid certified design: the identity
    data = base / "data.csv"
    data.write_text("a,b,id\n" + "".join(f"{p},{q},{i}\n" for i, (p, q) in enumerate(
        itertools.islice(itertools.cycle([("x", "u"), ("x", "v"), ("y", "u")]), 300))))
    return {"per": per_path, "joint": joint_path, "ident": ident, "data": data,
            "per_design": per, "joint_design": joint}


def _brute_force_worst(mechs: list[np.ndarray], center: np.ndarray, radius: float) -> float:
    """Worst case of the product over the l1 ball by the ball's extreme points: the worst
    column value sup_Q log(max W / Q.w) is attained where Q moves radius/2 of mass from
    the entries with the largest w to the one with the smallest (enumerated by brute force
    over every pair of a receiving entry and an ordering of donors)."""
    w = mechs[0]
    for m in mechs[1:]:
        w = np.kron(w, m)
    best = -math.inf
    n = center.size
    for j in range(w.shape[1]):
        col = w[:, j]
        lowest = math.inf
        for recv in range(n):  # put mass on entry recv, take it from the largest entries
            q = center.copy()
            move = min(radius / 2, 1 - q[recv])
            q[recv] += move
            for k in np.argsort(-col):
                if k == recv:
                    continue
                take = min(move, q[k])
                q[k] -= take
                move -= take
            lowest = min(lowest, float(q @ col))
        best = max(best, math.inf if lowest <= 0 else math.log(col.max() / lowest))
    return best


def test_honest_plans_load_and_their_certificate_is_independent(honest: dict[str, Any]) -> None:
    plan = ReleasePlan.load(honest["per"])
    g = plan.guarantee
    assert g.kind == "exact" and g.delta == DELTA and g.m == 3000
    counts = np.zeros(4)
    for (a, b) in zip(REF["a"], REF["b"], strict=True):
        counts[2 * (a == "y") + (b == "v")] += 1  # labels x<y, u<v in row-major order
    assert np.array_equal(g.counts_array(), counts)
    ball = g.set
    assert isinstance(ball, pmlkit.sets.L1Ball)
    assert np.allclose(ball.center, counts / 3000)
    truth = _brute_force_worst([plan.mechanisms[c].matrix for c in ("a", "b")],
                               np.asarray(ball.center), float(ball.radius))
    assert g.certified_eps == pytest.approx(truth, rel=1e-9, abs=1e-12)
    assert g.certified_eps <= 1.2 + 1e-9
    jplan = ReleasePlan.load(honest["joint"])
    assert jplan.release is not None and jplan.mode == "joint alphabet"
    # every written tuple is a pair of the columns' own values
    assert set(jplan.release.output_tuples) <= set(itertools.product("xy", "uv"))


# --------------------------------------------------------------------------------------
# the edits: (name, plan kind, edit of the parsed document or the text)
# --------------------------------------------------------------------------------------

def _g(doc: dict[str, Any]) -> dict[str, Any]:
    gd: dict[str, Any] = doc["joint_guarantee"]["guarantee"]
    return gd


def _set(doc: dict[str, Any]) -> dict[str, Any]:
    s: dict[str, Any] = _g(doc)["set"]
    return s


def _swap_identity(doc: dict[str, Any], folder: Path, ident: pmlkit.Mechanism) -> None:
    """Replace column a's file by a valid certified identity and update the digest."""
    ident.save(folder / doc["mechanism_files"]["a"])
    doc["mechanism_sha256"]["a"] = ident.to_dict()["sha256"]


def _swap_columns(doc: dict[str, Any], folder: Path, ident: pmlkit.Mechanism) -> None:
    f, d = doc["mechanism_files"], doc["mechanism_sha256"]
    f["a"], f["b"] = f["b"], f["a"]
    d["a"], d["b"] = d["b"], d["a"]


def _edit_mechanism_matrix(doc: dict[str, Any], folder: Path, ident: pmlkit.Mechanism) -> None:
    """Edit column a's matrix towards the identity, keep its guarantee, re-sign it."""
    path = folder / doc["mechanism_files"]["a"]
    m = json.loads(path.read_text())
    m["matrix"] = [[0.999, 0.001], [0.001, 0.999]]
    m = _resign(m)
    path.write_text(json.dumps(m))
    doc["mechanism_sha256"]["a"] = m["sha256"]


def _lower_mechanism_certificate(doc: dict[str, Any], folder: Path,
                                 ident: pmlkit.Mechanism) -> None:
    """Replace column a by the identity whose own file claims eps 0.1, re-signed."""
    m = ident.to_dict()
    m["guarantee"]["eps"] = m["guarantee"]["certified_eps"] = 0.1
    m = _resign(m)
    (folder / doc["mechanism_files"]["a"]).write_text(json.dumps(m))
    doc["mechanism_sha256"]["a"] = m["sha256"]


def _point_set(doc: dict[str, Any]) -> None:
    c = _set(doc)["center"]
    _g(doc)["set"] = {"kind": "box", "lower": c, "upper": c}


def _move_count(doc: dict[str, Any]) -> None:
    counts = doc["joint_guarantee"]["counts"]["count"]
    counts[0] += 1
    counts[1] -= 1


Edit = Callable[..., None]
EDITS: list[tuple[str, str, Edit]] = [
    ("joint set radius edited to 0", "per", lambda d: _set(d).update(radius=0.0)),
    ("joint set radius halved", "per", lambda d: _set(d).update(radius=_set(d)["radius"] / 2)),
    ("delta edited from 1e-6 to 1e-12", "per", lambda d: _g(d).update(delta=1e-12)),
    ("delta edited to 0.5", "per", lambda d: _g(d).update(delta=0.5)),
    ("m edited to 10^9", "per", lambda d: _g(d).update(m=10**9)),
    ("m as a float", "per", lambda d: _g(d).update(m=3000.0)),
    ("set replaced by one point", "per", _point_set),
    ("set center shifted", "per", lambda d: _set(d).update(
        center=[v + (0.01 if i == 0 else -0.01 if i == 1 else 0.0)
                for i, v in enumerate(_set(d)["center"])])),
    ("certified eps and eps lowered", "per", lambda d: _g(d).update(
        eps=_g(d)["eps"] / 2, certified_eps=_g(d)["certified_eps"] / 2)),
    ("eps below the certified eps", "per", lambda d: _g(d).update(eps=_g(d)["eps"] / 2)),
    ("eps as a string", "per", lambda d: _g(d).update(eps=str(_g(d)["eps"]))),
    ("eps as true", "per", lambda d: _g(d).update(eps=True)),
    ("eps negative", "per", lambda d: _g(d).update(eps=-1.0, certified_eps=-1.0)),
    ("counts moved between cells", "per", _move_count),
    ("one count added", "per", lambda d: d["joint_guarantee"]["counts"]["count"].__setitem__(
        0, d["joint_guarantee"]["counts"]["count"][0] + 1)),
    ("counts as floats", "per", lambda d: d["joint_guarantee"]["counts"].update(
        count=[float(c) for c in d["joint_guarantee"]["counts"]["count"]])),
    ("kind edited to chain-rule bound", "per", lambda d: d["joint_guarantee"].update(
        kind="chain-rule bound")),
    ("method edited to box-cp", "per", lambda d: _g(d).update(method="box-cp")),
    ("basis edited to all", "per", lambda d: _g(d).update(basis="all", delta=0.0, m=None,
                                                          method=None)),
    ("guarantee schema version 1", "per", lambda d: d["joint_guarantee"].update(version=1)),
    ("guarantee field dropped", "per", lambda d: d["joint_guarantee"].pop("warning")),
    ("guarantee columns renamed", "per", lambda d: d["joint_guarantee"].update(
        columns=["a", "c"])),
    ("column labels of a swapped with b's", "per", lambda d: d["joint_guarantee"].update(
        column_labels=d["joint_guarantee"]["column_labels"][::-1])),
    ("worst output of the wrong length", "per", lambda d: d["joint_guarantee"].update(
        worst_output=["x"])),
    ("plan version 1", "per", lambda d: d.update(version=1)),
    ("plan format renamed", "per", lambda d: d.update(format="pmlkit-plan")),
    ("unexpected plan field", "per", lambda d: d.update(note="trust me")),
    ("plan field dropped", "per", lambda d: d.pop("split")),
    ("split entry as a string", "per", lambda d: d.update(split=["0.5", "0.5"])),
    ("mode edited to joint alphabet", "per", lambda d: d.update(mode="joint alphabet")),
    ("mechanism file outside the plan's folder", "per", lambda d: d["mechanism_files"].update(
        a="../a.json")),
    ("mechanism file by absolute path", "per", lambda d: d["mechanism_files"].update(
        a="/etc/passwd")),
    ("mechanism digest of another file", "per", lambda d: d["mechanism_sha256"].update(
        a=d["mechanism_sha256"]["b"])),
    ("identity mechanism swapped in, digest updated", "per+files", _swap_identity),
    ("columns' mechanism files swapped, digests swapped", "per+files", _swap_columns),
    ("mechanism matrix edited and re-signed", "per+files", _edit_mechanism_matrix),
    ("identity with a lowered own certificate, re-signed", "per+files",
     _lower_mechanism_certificate),
    ("joint plan: output tuple outside the column's domain", "joint",
     lambda d: d["joint_release"]["output_tuples"][0].__setitem__(0, "z")),
    ("joint plan: output tuples dropped", "joint",
     lambda d: d["joint_release"].update(output_tuples=[])),
    ("joint plan: release labels differ from the guarantee's", "joint",
     lambda d: d["joint_release"].update(column_labels=[["y", "x"], ["u", "v"]])),
    ("joint plan: certified eps lowered", "joint", lambda d: _g(d).update(
        eps=_g(d)["eps"] / 2, certified_eps=_g(d)["certified_eps"] / 2)),
    ("joint plan: radius edited to 0", "joint", lambda d: _set(d).update(radius=0.0)),
    ("joint plan: per-column mode without files", "joint", lambda d: d.update(
        mode="per-column")),
]
TEXT_EDITS: list[tuple[str, str, Callable[[str], str]]] = [
    ("a second joint_guarantee key", "per",
     lambda t: t.rstrip().rstrip("}") + ', "joint_guarantee": {}}'),
    ("a duplicate key inside the set", "per",
     lambda t: t.replace('"radius":', '"radius": 0.0, "radius":', 1)),
    ("NaN certified eps", "per",
     lambda t: t.replace('"certified_eps":', '"certified_eps": NaN, "x":', 1)),
    ("not JSON", "per", lambda t: t[: len(t) // 2]),
]


def _copy_plan(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in src.parent.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst / src.name


def test_the_suite_has_at_least_30_edits() -> None:
    assert len(EDITS) + len(TEXT_EDITS) >= 30


@pytest.mark.parametrize("name, kind, edit", EDITS, ids=[e[0] for e in EDITS])
def test_an_edited_plan_is_refused(honest: dict[str, Any], tmp_path: Path, name: str,
                                   kind: str, edit: Edit) -> None:
    path = _copy_plan(honest["joint" if kind == "joint" else "per"], tmp_path / "plan")
    doc = json.loads(path.read_text())
    before = copy.deepcopy(doc)
    if kind.endswith("+files"):
        edit(doc, path.parent, honest["ident"])
    else:
        edit(doc)
    assert json.dumps(doc) != json.dumps(before) or kind.endswith("+files")
    path.write_text(json.dumps(doc))
    with pytest.raises(PlanFileError) as err:
        ReleasePlan.load(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("release plan ")


@pytest.mark.parametrize("name, kind, edit", TEXT_EDITS, ids=[e[0] for e in TEXT_EDITS])
def test_an_edited_plan_text_is_refused(honest: dict[str, Any], tmp_path: Path, name: str,
                                        kind: str, edit: Callable[[str], str]) -> None:
    path = _copy_plan(honest[kind], tmp_path / "plan")
    text = path.read_text()
    path.write_text(edit(text))
    with pytest.raises(PlanFileError) as err:
        ReleasePlan.load(path)
    assert "\n" not in str(err.value)


def test_the_identity_swap_is_refused_by_the_command_line_in_one_line(
        honest: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reported attack: a column's file replaced by a certified identity at eps = 3 and
    the plan's digest updated; today's code released the column raw on every row."""
    path = _copy_plan(honest["per"], tmp_path / "plan")
    doc = json.loads(path.read_text())
    _swap_identity(doc, path.parent, honest["ident"])
    path.write_text(json.dumps(doc))
    out = tmp_path / "out.csv"
    code = main(["privatize", "--plan", str(path), "--input", str(honest["data"]),
                 "--column", "a", "--column", "b", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and not out.exists()
    assert err.count("\n") == 1 and err.startswith("pmlkit: error: release plan")
    assert "does not hold for these mechanisms" in err


def test_the_honest_plan_releases_with_its_guarantee_in_the_manifest(
        honest: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.csv"
    code = main(["privatize", "--plan", str(honest["per"]), "--input", str(honest["data"]),
                 "--column", "a", "--column", "b", "--output", str(out), "--seed", "3"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    man = json.loads((tmp_path / "out.csv.pmlkit.json").read_text())
    g = JointGuarantee.from_dict(man["joint_guarantee"])
    plan = ReleasePlan.load(honest["per"])
    assert g == plan.guarantee
    g.verify([plan.mechanisms["a"], plan.mechanisms["b"]])


def test_a_manifest_guarantee_is_re_checked_when_given_to_privatize_file(
        honest: dict[str, Any], tmp_path: Path) -> None:
    """A joint guarantee handed over as a dict is read strictly: edited, it is refused."""
    from pmlkit.privatization import privatize_file

    plan = ReleasePlan.load(honest["per"])
    doc = plan.guarantee.to_dict()
    doc["guarantee"]["m"] = 10**9
    with pytest.raises(ValidationError, match="guarantee's m is 1000000000"):
        privatize_file(dict(plan.mechanisms), honest["data"], tmp_path / "o.csv",
                       ["a", "b"], joint_guarantee=doc)
    assert not (tmp_path / "o.csv").exists()


def test_infinite_worst_case_never_passes_the_re_check() -> None:
    """The old tolerance 1e-9 * max(1, |value|) is infinite when the value is: an infinite
    worst case must be refused, whatever the claim."""
    rr_a = pmlkit.Mechanism(pmlkit.randomized_response(2, 1.0).matrix, ("x", "y"))
    rr_b = pmlkit.Mechanism(pmlkit.randomized_response(2, 1.0).matrix, ("u", "v"))
    g = pmlkit.joint_guarantee([rr_a, rr_b], REF, DELTA)
    # the pair (y, v) is never observed: the l1 ball reaches distributions with no mass
    # there, and a mechanism that reveals that pair exactly has an infinite worst case
    reveal = pmlkit.Mechanism(np.eye(2), ("u", "v"))
    with pytest.raises(DataError, match="does not hold"):
        g.verify([pmlkit.Mechanism(np.eye(2), ("x", "y")), reveal])


# --------------------------------------------------------------------------------------
# manifests: the record of a release, re-checked in the model when a later pass reads it
# --------------------------------------------------------------------------------------

def _released(honest: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
              ) -> Path:
    out = tmp_path / "out.csv"
    code = main(["privatize", "--plan", str(honest["per"]), "--input", str(honest["data"]),
                 "--column", "a", "--column", "b", "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    return out


def _identity_entry(doc: dict[str, Any], ident: pmlkit.Mechanism) -> None:
    entry = doc["privatized"]["a"]
    entry["mechanism"] = ident.to_dict()
    entry["mechanism_sha256"] = ident.to_dict()["sha256"]


MANIFEST_EDITS: list[tuple[str, Callable[[dict[str, Any], pmlkit.Mechanism], None]]] = [
    ("joint eps lowered", lambda d, i: _g_of(d).update(eps=_g_of(d)["eps"] / 2,
                                                       certified_eps=_g_of(d)["eps"] / 2)),
    ("joint m edited", lambda d, i: _g_of(d).update(m=10**9)),
    ("joint radius 0", lambda d, i: _g_of(d)["set"].update(radius=0.0)),
    ("entry mechanism replaced by the identity, digest updated", _identity_entry),
    ("entry digest edited", lambda d, i: d["privatized"]["a"].update(
        mechanism_sha256="0" * 64)),
    ("joint guarantee of another column set", lambda d, i: d["joint_guarantee"].update(
        columns=["a", "c"])),
]


def _g_of(doc: dict[str, Any]) -> dict[str, Any]:
    gd: dict[str, Any] = doc["joint_guarantee"]["guarantee"]
    return gd


def test_the_honest_manifest_is_read_back(honest: dict[str, Any], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from pmlkit.privatization.files import previous_privatization

    out = _released(honest, tmp_path, capsys)
    rec = previous_privatization(out)
    assert rec is not None and sorted(rec["privatized"]) == ["a", "b"]


@pytest.mark.parametrize("name, edit", MANIFEST_EDITS, ids=[e[0] for e in MANIFEST_EDITS])
def test_an_edited_manifest_is_refused_by_the_next_pass(
        honest: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
        edit: Callable[[dict[str, Any], pmlkit.Mechanism], None]) -> None:
    from pmlkit.privatization.files import previous_privatization

    out = _released(honest, tmp_path, capsys)
    man = tmp_path / "out.csv.pmlkit.json"
    doc = json.loads(man.read_text())
    edit(doc, honest["ident"])
    man.write_text(json.dumps(doc))
    with pytest.raises(DataError) as err:
        previous_privatization(out)
    assert "\n" not in str(err.value)
    # and the command line refuses a next pass over it in one line
    code = main(["privatize", "--mechanism", str(honest["per"].parent / "a.json"), "--input",
                 str(out), "--column", "a", "--output", str(tmp_path / "again.csv"),
                 "--allow-repeat", "--no-joint-guarantee"])
    assert code != 0 and capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "again.csv").exists()


def test_a_promise_just_below_the_worst_case_is_refused() -> None:
    """A promise ``eps`` below the recomputed worst case by more than that computation's
    rounding is refused on load, even by 2e-9 or 1e-12 nats (a 1e-9 tolerance in the
    file's favour accepted both); a promise within rounding of it (a tie: what files of
    older versions record) still loads."""
    from pmlkit.worstcase import leakage_capacity, refutes

    mech = pmlkit.design_from_samples([0] * 60 + [1] * 40, eps=1.0, delta=0.05).mechanism
    doc = mech.to_dict()
    actual = leakage_capacity(mech.matrix, mech.guarantee.set)
    assert pmlkit.Mechanism.from_dict(doc).certified

    def forged(eps: float) -> dict[str, Any]:
        out = copy.deepcopy(doc)
        out["guarantee"]["eps"] = out["guarantee"]["certified_eps"] = eps
        out["provenance"]["details"]["design_eps"] = eps
        return _resign(out)

    for below in (1.9e-9, 1e-12):
        assert refutes(mech.matrix, mech.guarantee.set, actual - below)
        with pytest.raises(pmlkit.errors.MechanismFileError, match="does not hold"):
            pmlkit.Mechanism.from_dict(forged(actual - below))
    assert pmlkit.Mechanism.from_dict(forged(actual)).certified


def test_a_joint_promise_just_below_its_worst_case_is_refused() -> None:
    rr_a = pmlkit.Mechanism(pmlkit.randomized_response(2, 1.0).matrix, ("x", "y"))
    rr_b = pmlkit.Mechanism(pmlkit.randomized_response(2, 1.0).matrix, ("u", "v"))
    g = pmlkit.joint_guarantee([rr_a, rr_b], REF, DELTA)
    doc = g.to_dict()
    assert JointGuarantee.from_dict(doc).verify([rr_a, rr_b]) is not None
    forged = copy.deepcopy(doc)
    forged["guarantee"]["eps"] = forged["guarantee"]["certified_eps"] = g.certified_eps - 5e-10
    with pytest.raises(DataError, match="does not hold"):
        JointGuarantee.from_dict(forged).verify([rr_a, rr_b])


def test_a_mechanism_with_a_false_guarantee_is_not_released(tmp_path: Path) -> None:
    """A Mechanism built in Python with a guarantee its matrix breaks (the identity
    claiming eps 0.01), or with a sample-based set its record does not support, was
    released by the library, which wrote the claim into the manifest next to the data
    (the command line refuses such files; the library did not)."""
    from pmlkit.guarantee import PMLGuarantee
    from pmlkit.privatization import privatize_file
    from pmlkit.sets import L1Ball

    g = PMLGuarantee(eps=0.01, set=L1Ball(np.array([0.5, 0.5]), 0.2), certified_eps=0.01,
                     basis="given")
    false = pmlkit.Mechanism(np.eye(2), ["F", "M"], ["F", "M"], guarantee=g)
    assert not false.certified
    (tmp_path / "in.csv").write_text("sex\n" + "F\nM\n" * 20)
    with pytest.raises(ValidationError, match="states a guarantee that does not hold"):
        privatize_file(false, tmp_path / "in.csv", tmp_path / "out.csv", "sex")
    with pytest.raises(ValidationError, match="states a guarantee that does not hold"):
        pmlkit.privatize(false, np.array(["F", "M"], dtype=object))
    assert not (tmp_path / "out.csv").exists()
    assert not (tmp_path / "out.csv.pmlkit.json").exists()
    # the same matrix without a guarantee, or with the one it can promise, is released
    privatize_file(pmlkit.Mechanism(np.eye(2), ["F", "M"], ["F", "M"]),
                   tmp_path / "in.csv", tmp_path / "out.csv", "sex")
    # a designed mechanism (its set rebuilt from its counts on reading) is released
    designed = pmlkit.design_from_samples(["F", "M", "M"] * 30, 1.0, 1e-3).mechanism
    privatize_file(designed, tmp_path / "in.csv", tmp_path / "out2.csv", "sex")


def test_a_hand_built_confidence_set_is_not_written_next_to_data(tmp_path: Path) -> None:
    """A ConfidenceSet built by hand (a ball of radius 1e-6 claimed from 10 records at
    delta 1e-12) certifies the matrix over its set, but its coverage does not follow from
    its sample: a reader refuses the record, so the release refuses to write it."""
    from pmlkit.confidence import ConfidenceSet
    from pmlkit.guarantee import PMLGuarantee
    from pmlkit.privatization import privatize_file
    from pmlkit.sets import L1Ball

    cs = ConfidenceSet(set=L1Ball(np.array([0.5, 0.5]), 1e-6), method="l1", delta=1e-12,
                       m=10, n=2, description="hand-built", p_hat=np.array([0.5, 0.5]))
    rr = pmlkit.randomized_response(2, 1.0)
    cert = rr.worst_case_over(cs.set)
    g = PMLGuarantee.from_confidence_set(cs, eps=cert, certified_eps=cert)
    mech = pmlkit.Mechanism(rr.matrix, ["F", "M"], ["F", "M"], guarantee=g)
    assert mech.certified  # the matrix meets eps over the stated set...
    (tmp_path / "in.csv").write_text("sex\n" + "F\nM\n" * 20)
    with pytest.raises(ValidationError, match="its own record does not support"):
        privatize_file(mech, tmp_path / "in.csv", tmp_path / "out.csv", "sex")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_save_refuses_a_false_certificate(tmp_path: Path) -> None:
    """``Mechanism.save`` wrote the identity's claim of eps 0.01 into a file that ``load``
    then refused: a false certificate handed to whoever reads the file."""
    from pmlkit.guarantee import PMLGuarantee
    from pmlkit.sets import L1Ball

    g = PMLGuarantee(eps=0.01, set=L1Ball(np.array([0.5, 0.5]), 0.2), certified_eps=0.01,
                     basis="given")
    false = pmlkit.Mechanism(np.eye(2), ["F", "M"], ["F", "M"], guarantee=g)
    with pytest.raises(ValidationError, match="save refuses to write a false certificate"):
        false.save(tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()
    pmlkit.Mechanism(np.eye(2), ["F", "M"], ["F", "M"]).save(tmp_path / "plain.json")
    assert not pmlkit.Mechanism.load(tmp_path / "plain.json", allow_uncertified=True).certified


def test_a_plan_built_in_python_with_a_false_guarantee_is_not_saved(
        honest: dict[str, Any], tmp_path: Path) -> None:
    """A ReleasePlan built in Python from an honest guarantee and other mechanisms (the
    identity, which gives every record away) is refused by save, and nothing is written;
    the honest plan saves."""
    plan = ReleasePlan.load(honest["per"])
    keep = {c: pmlkit.Mechanism(np.eye(2), m.input_labels, m.output_labels)
            for c, m in plan.mechanisms.items()}
    forged = ReleasePlan(plan.columns, "per-column", plan.guarantee, keep)
    # the worst case of the identity pair over the set, computed independently
    ball = plan.guarantee.set
    truth = _brute_force_worst([np.eye(2), np.eye(2)], np.asarray(ball.center),
                               float(ball.radius))
    assert truth > plan.guarantee.eps + 0.5
    with pytest.raises(DataError, match="does not hold for these mechanisms"):
        forged.save(tmp_path / "forged")
    assert not (tmp_path / "forged").exists()
    assert (plan.save(tmp_path / "honest")).exists()
