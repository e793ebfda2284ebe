"""Randomness foot-guns: fork, pickling, hand-labelled secure sources, seeds in records."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle

import numpy as np
import pandas as pd
import pytest

from pmlkit import Mechanism, privatize_file
from pmlkit.errors import ValidationError
from pmlkit.rng import RandomSource, resolve_rng, seed_commitment


def _draws_in_forked_child(src: RandomSource, n: int = 8) -> np.ndarray:
    """Fork, draw ``n`` uniforms from ``src`` in the child, send them back via a pipe."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        try:
            os.close(r)
            os.write(w, src.generator.random(n).tobytes())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return np.frombuffer(data, dtype=np.float64)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform without fork")
def test_secure_source_created_before_fork_differs_in_each_child():
    src = resolve_rng(None)
    gen = src.generator  # a reference taken before the fork is re-keyed too
    a = _draws_in_forked_child(src)
    b = _draws_in_forked_child(src)
    parent = gen.random(8)
    assert a.size == b.size == 8
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, parent) and not np.array_equal(b, parent)
    # children spawned after the fork differ from the parent's too (fresh key material)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.write(w, src.spawn(1)[0].generator.random(4).tobytes())
        finally:
            os._exit(0)
    os.close(w)
    child_spawn = np.frombuffer(os.read(r, 4096), dtype=np.float64)
    os.close(r)
    os.waitpid(pid, 0)
    assert not np.array_equal(child_spawn, src.spawn(1)[0].generator.random(4))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="platform without fork")
def test_seeded_source_stays_reproducible_across_fork():
    # research streams are reproducible by design (and say so): the fork hook leaves them
    a = _draws_in_forked_child(resolve_rng(5))
    np.testing.assert_array_equal(a, np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(5))).random(8))


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_copying_a_secure_source_never_replays_its_stream(how):
    src = resolve_rng(None)
    dup = pickle.loads(pickle.dumps(src)) if how == "pickle" else copy.deepcopy(src)
    assert dup.seeded is False and "re-keyed" in dup.description
    start = dup.generator.random(16)
    parent = src.generator.random(16)  # the parent's stream from the same position
    assert not np.array_equal(start, parent)
    assert not np.intersect1d(start, parent).size
    c1, c2 = src.spawn(1)[0], dup.spawn(1)[0]
    assert not np.array_equal(c1.generator.random(4), c2.generator.random(4))


def test_task_children_replay_their_own_stream_only():
    # the Dask engine's one-child-per-partition carrier keeps its key across a pickle, so a
    # recomputed partition releases the same output, not a second independent one
    child = resolve_rng(None).spawn(1)[0].for_task()
    a = pickle.loads(pickle.dumps(child)).generator.random(4)
    b = pickle.loads(pickle.dumps(child)).generator.random(4)
    np.testing.assert_array_equal(a, b)


def test_hand_built_source_over_a_seeded_generator_cannot_be_labelled_secure():
    gen = np.random.default_rng(1)
    with pytest.raises(ValidationError, match="seeded must be True"):
        RandomSource(gen, False, "AESCounter keyed from os.urandom (secure)")
    with pytest.raises(ValidationError, match="seeded must be True"):  # even with key bytes
        RandomSource(gen, False, "secure", _material=os.urandom(32))
    with pytest.raises(ValidationError, match="seeded must be True or False"):
        RandomSource(gen, 0, "x")  # type: ignore[arg-type]
    ok = RandomSource(gen, True, "mine")
    assert ok.seeded is True
    assert resolve_rng(gen).seeded is True


def test_seed_commitment_is_salted_sha256_and_seed_absent():
    src = resolve_rng(1234)
    assert src.seed_salt is not None and len(bytes.fromhex(src.seed_salt)) == 16
    expected = hashlib.sha256(b"pmlkit-seed/" + bytes.fromhex(src.seed_salt)
                              + b"1234").hexdigest()
    assert f"sha256:{expected}" in src.description
    assert seed_commitment(1234, src.seed_salt) == expected
    assert "1234" not in src.description.replace(expected, "")
    # a fresh salt per run: two records of the same seed are not linkable
    assert resolve_rng(1234).description != src.description


def test_manifest_no_longer_contains_the_seed(tmp_path):
    seed = 987654321
    pd.DataFrame({"sex": ["F", "M", "F", "M"] * 5}).to_csv(tmp_path / "d.csv", index=False)
    mech = Mechanism([[0.8, 0.2], [0.3, 0.7]], ("F", "M"), ("F", "M"))
    privatize_file(mech, tmp_path / "d.csv", tmp_path / "o.csv", "sex", rng=seed)
    text = (tmp_path / "o.csv.pmlkit.json").read_text()
    manifest = json.loads(text)
    assert manifest["seeded"] is True and "commitment sha256:" in manifest["rng"]
    assert str(seed) not in text
    for f in tmp_path.iterdir():  # nothing written beside the output holds the seed
        assert str(seed).encode() not in f.read_bytes()


def test_cli_seeded_run_prints_the_salt_and_records_only_a_commitment(tmp_path, capsys):
    import re

    from pmlkit import L1Ball, leakage_capacity
    from pmlkit.cli.main import main

    w = np.array([[0.8, 0.2], [0.3, 0.7]])
    ball = L1Ball([0.5, 0.5], 0.1)
    Mechanism(w, ("F", "M"), ("F", "M"), uncertainty_set=ball.to_dict(),
              certified_eps=leakage_capacity(w, ball)).save(tmp_path / "m.json")
    pd.DataFrame({"sex": ["F", "M"] * 10}).to_csv(tmp_path / "d.csv", index=False)
    seed = 424242
    code = main(["privatize", "--mechanism", str(tmp_path / "m.json"), "--input",
                 str(tmp_path / "d.csv"), "--column", "sex", "--output",
                 str(tmp_path / "o.csv"), "--seed", str(seed)])
    err = capsys.readouterr().err
    assert code == 0
    salt = re.search(r"seed commitment salt ([0-9a-f]{32})", err).group(1)
    text = (tmp_path / "o.csv.pmlkit.json").read_text()
    assert str(seed) not in text and f"sha256:{seed_commitment(seed, salt)}" in text
    for f in tmp_path.iterdir():
        assert salt.encode() not in f.read_bytes() and str(seed).encode() not in f.read_bytes()
