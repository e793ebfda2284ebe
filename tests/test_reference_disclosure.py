"""What the files pmlkit writes disclose about the reference sample: its label counts and
nothing else (issue 32, case 2).

pmlkit 0.1 wrote an unsalted SHA-256 of the reference labels in record order (and of the
reference file's bytes) into mechanism files, minimal records and manifests. Whoever knows
the order of the reference records (an ID-sorted roster) and reads the counts in the file
tries the orderings that fit the counts and recovers every label by position. Here the
attack is run against every file pmlkit writes: the designs (API and command line, full and
minimal records), the manifests of ``privatize_file`` and ``pmlkit privatize``, and the
release plan of ``pmlkit joint design``; and the stronger check that nothing in them
depends on the order of the records: designed from a permuted copy of the reference, every
file is byte for byte the same.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from pmlkit import privatize_file, privatize_with_report
from pmlkit.cli.main import main
from pmlkit.design import design_from_samples
from pmlkit.errors import MechanismFileError
from pmlkit.mechanism import Mechanism

# the reference: 16 people in roster (ID) order, 7 "F" and 9 "M"; C(16, 7) = 11440
# orderings fit the counts the files disclose
GEN = np.random.default_rng(32)
SEX = [str(v) for v in GEN.permutation(["F"] * 7 + ["M"] * 9)]
EDU = [str(v) for v in GEN.choice(["lo", "hi"], 16)]
OTHER = [str(v) for v in GEN.choice(["F", "M"], 30)]  # the data released (not the reference)
HEX = re.compile(r"[0-9a-f]{64}")


def _csv_bytes(sex: list[str], edu: list[str] | None = None) -> bytes:
    """The reference file as the test writes it: the roster order, IDs 0..m-1."""
    if edu is None:
        return ("id,sex\n" + "".join(f"{i},{s}\n" for i, s in enumerate(sex))).encode()
    return ("id,sex,edu\n" + "".join(f"{i},{s},{e}\n" for i, (s, e) in
                                     enumerate(zip(sex, edu, strict=True)))).encode()


def _candidate_hashes(seq: list[str]) -> list[str]:
    """Every way the old code (and a few obvious others) hashed a labelling."""
    texts = [b"pmlkit-sample/v1\x00" + "\x1f".join(seq).encode(),  # old sample_sha256
             _csv_bytes(seq),                                       # old file_sha256
             "\n".join(seq).encode(), ",".join(seq).encode(), "".join(seq).encode(),
             "\x1f".join(seq).encode(), json.dumps(seq).encode()]
    return [hashlib.sha256(t).hexdigest() for t in texts]


def _attack(digests: set[str]) -> list[list[str]]:
    """The labellings of the roster that fit the counts (7 F, 9 M) and whose hash (any
    way) is one of ``digests``."""
    found = []
    for pos in itertools.combinations(range(16), 7):
        seq = ["M"] * 16
        for i in pos:
            seq[i] = "F"
        if digests.intersection(_candidate_hashes(seq)):
            found.append(seq)
    return found


def _hexes(paths: list[Path], *texts: str) -> set[str]:
    found: set[str] = set()
    for p in paths:
        found |= set(HEX.findall(p.read_text(encoding="utf-8").lower()))
    for t in texts:
        found |= set(HEX.findall(t.lower()))
    return found


def test_the_attack_recovers_the_labels_from_the_old_fingerprint() -> None:
    # the attack is real: the digest pmlkit 0.1 wrote gives the labels away by position
    old = hashlib.sha256(b"pmlkit-sample/v1\x00" + "\x1f".join(SEX).encode()).hexdigest()
    assert _attack({old}) == [SEX]
    old_file = hashlib.sha256(_csv_bytes(SEX)).hexdigest()
    assert _attack({old_file}) == [SEX]


def _design_everything(folder: Path, sex: list[str], edu: list[str],
                       capsys: pytest.CaptureFixture[str]) -> tuple[list[Path], str]:
    """Every file pmlkit writes from this reference (in this record order): returns the
    files and the command line's printed output."""
    folder.mkdir()
    ref = folder / "ref.csv"
    ref.write_bytes(_csv_bytes(sex, edu))
    data = folder / "data.csv"
    data.write_text("id,sex\n" + "".join(f"{i},{s}\n" for i, s in enumerate(OTHER)))
    files = []
    mech = design_from_samples(sex, 1.0, 0.05).mechanism
    files.append(mech.save(folder / "api.json"))
    files.append(mech.minimal_record().save(folder / "api-min.json"))
    out = []
    for record in ("full", "minimal"):
        assert main(["design", "--reference", str(ref), "--column", "sex", "--epsilon", "1",
                     "--delta", "0.05", "--record", record, "--json",
                     "--output", str(folder / f"cli-{record}.json")]) == 0
        out.append(capsys.readouterr().out)
        files.append(folder / f"cli-{record}.json")
    report = privatize_file(mech, data, folder / "out-api.csv", "sex", rng=1)
    files.append(folder / "out-api.csv.pmlkit.json")
    out.append(json.dumps(report.to_dict()))
    # a Parquet output carries the record in its key-value metadata too
    pq = pytest.importorskip("pyarrow.parquet")
    pd.DataFrame({"sex": OTHER}).to_parquet(folder / "data.parquet")
    privatize_file(mech, folder / "data.parquet", folder / "out.parquet", "sex", rng=1)
    files.append(folder / "out.parquet.pmlkit.json")
    meta = pq.read_metadata(folder / "out.parquet").metadata[b"pmlkit"]
    (folder / "out.parquet.metadata.json").write_bytes(meta)
    files.append(folder / "out.parquet.metadata.json")
    _, rep = privatize_with_report(mech, pd.Series(OTHER), rng=1)
    out.append(json.dumps(rep.to_dict()))
    for record in ("full", "minimal"):
        assert main(["privatize", "--mechanism", str(folder / f"cli-{record}.json"),
                     "--input", str(data), "--column", "sex", "--seed", "1", "--json",
                     "--output", str(folder / f"out-cli-{record}.csv")]) == 0
        out.append(capsys.readouterr().out)
        files.append(folder / f"out-cli-{record}.csv.pmlkit.json")
    assert main(["joint", "design", "--reference", str(ref), "--columns", "sex,edu",
                 "--epsilon", "2", "--delta", "0.05", "--mode", "per-column", "--json",
                 "--out-dir", str(folder / "plan")]) == 0
    out.append(capsys.readouterr().out)
    files += sorted((folder / "plan").iterdir())
    return files, "\n".join(out).replace(str(folder), "<folder>")


def _same_run(text: str, parquet: bool = False) -> str:
    """The seeded runs' commitments to their seed use a fresh random salt (pmlkit.rng):
    masked for the comparison (they are not functions of the reference; the attack below
    still tries them). A Parquet output holds that commitment in its metadata, so its
    digest in the manifest is masked too (its content is compared in the test)."""
    text = re.sub(r"commitment sha256:[0-9a-f]{64}", "commitment", text)
    if not parquet:
        return text
    return re.sub(r'("data": \{[^}]*"sha256": )"[0-9a-f]{64}"', r"\1<output digest>", text)


def test_no_file_pmlkit_writes_depends_on_the_order_of_the_reference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    perm = GEN.permutation(16)
    files, printed = _design_everything(tmp_path / "a", SEX, EDU, capsys)
    files2, printed2 = _design_everything(tmp_path / "b", [SEX[i] for i in perm],
                                          [EDU[i] for i in perm], capsys)
    assert len(files) == len(files2) == 12
    for f, g in zip(files, files2, strict=True):
        assert f.name == g.name
        pq = "parquet" in f.name
        a = _same_run(f.read_text(encoding="utf-8").replace(str(f.parent), "<folder>"), pq)
        b = _same_run(g.read_text(encoding="utf-8").replace(str(g.parent), "<folder>"), pq)
        assert a == b, f.name  # byte for byte, apart from the folder and the seed's salt
    assert _same_run(printed) == _same_run(printed2)
    assert pd.read_parquet(tmp_path / "a" / "out.parquet").equals(
        pd.read_parquet(tmp_path / "b" / "out.parquet"))
    # and the brute-force attack of issue 32 finds nothing in any of them
    digests = _hexes(files, printed)
    assert digests, "the files hold digests (of the mechanisms and outputs)"
    assert _attack(digests) == []
    # the counts are there (the files disclose them), nothing beyond
    doc = json.loads((tmp_path / "a" / "cli-full.json").read_text())
    assert doc["guarantee"]["m"] == 16 and doc["provenance"]["estimate"] == [7 / 16, 9 / 16]
    assert "reference" not in doc["provenance"]["details"]


# -- files of pmlkit 0.1, which carry the fingerprint, still load ------------------------------

def _legacy(mech: Mechanism, fingerprint: dict[str, Any], version: int = 2
            ) -> dict[str, Any]:
    """The document pmlkit 0.1 wrote: the fingerprint in the record, the digest over it."""
    doc = mech.to_dict(format_version=version)
    del doc["sha256"]
    if version == 2:
        doc["provenance"]["details"]["reference"] = fingerprint
    else:
        doc["parameters"]["reference"] = fingerprint
    doc["sha256"] = hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":"),
                                              allow_nan=False).encode()).hexdigest()
    return doc


@pytest.mark.parametrize("version", [1, 2])
def test_old_files_load_and_the_fingerprint_is_never_written_again(
        tmp_path: Path, version: int) -> None:
    mech = design_from_samples(SEX, 1.0, 0.05).mechanism
    old_digest = hashlib.sha256(b"pmlkit-sample/v1\x00" + "\x1f".join(SEX).encode()).hexdigest()
    fp = {"records": 16, "sample_sha256": old_digest, "file_size": 100,
          "file_sha256": hashlib.sha256(_csv_bytes(SEX)).hexdigest()}
    doc = _legacy(mech, fp, version)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    back = Mechanism.load(path)
    assert back.certified and "reference" not in back.parameters
    saved = back.save(tmp_path / "new.json").read_text()
    small = back.minimal_record().to_json()
    assert old_digest not in saved and old_digest not in small
    assert _attack(_hexes([], saved, small)) == []
    if version == 2:
        assert back.to_dict() == mech.to_dict()  # the same mechanism, fingerprint gone
    # a manifest written from it carries no fingerprint either
    data = tmp_path / "data.csv"
    data.write_text("sex\n" + "\n".join(OTHER) + "\n")
    privatize_file(back, data, tmp_path / "out.csv", "sex", rng=0)
    manifest = (tmp_path / "out.csv.pmlkit.json").read_text()
    assert old_digest not in manifest and _attack(_hexes([], manifest)) == []


def test_an_old_minimal_record_with_only_the_digests_loads(tmp_path: Path) -> None:
    small = design_from_samples(SEX, 1.0, 0.05).mechanism.minimal_record()
    doc = _legacy(small, {"sample_sha256": "ab" * 32})
    back = Mechanism.from_dict(doc)
    assert back.certified and "ab" * 32 not in back.to_json()


def test_an_old_manifest_still_gives_its_mechanism(tmp_path: Path) -> None:
    # a manifest of pmlkit 0.1: its mechanism document carries the fingerprint and its
    # mechanism_sha256 is that document's digest
    from pmlkit.inference import find_mechanism

    mech = design_from_samples(SEX, 1.0, 0.05).mechanism
    data = tmp_path / "data.csv"
    data.write_text("sex\n" + "\n".join(OTHER) + "\n")
    privatize_file(mech, data, tmp_path / "out.csv", "sex", rng=0)
    man = tmp_path / "out.csv.pmlkit.json"
    doc = json.loads(man.read_text())
    old = _legacy(mech, {"records": 16, "sample_sha256": "cd" * 32})
    doc["privatized"]["sex"]["mechanism"] = old
    doc["privatized"]["sex"]["mechanism_sha256"] = old["sha256"]
    doc["mechanism_sha256"] = old["sha256"]
    doc["mechanisms_sha256"] = {"sex": old["sha256"]}
    man.write_text(json.dumps(doc))
    found, _ = find_mechanism(tmp_path / "out.csv", "sex")
    assert found.to_dict() == mech.to_dict()
    # an edited document is still caught by its own digest
    old["matrix"][0] = old["matrix"][0][::-1]
    doc["privatized"]["sex"]["mechanism"] = old
    man.write_text(json.dumps(doc))
    with pytest.raises(MechanismFileError, match=r"'sha256' does not match its content"):
        find_mechanism(tmp_path / "out.csv", "sex")


def test_labels_that_do_not_sort_are_ordered_without_the_sample_order() -> None:
    # mixed label types cannot be sorted; their order used to be the first appearance,
    # which told which label came first in the reference
    labels: list[Any] = [1] * 9 + ["x"] * 7 + [2.5] * 4 + ["y"] * 3
    perm = [labels[i] for i in GEN.permutation(len(labels))]
    a = design_from_samples(labels, 1.0, 0.05).mechanism
    b = design_from_samples(perm, 1.0, 0.05).mechanism
    assert a.to_json() == b.to_json()
