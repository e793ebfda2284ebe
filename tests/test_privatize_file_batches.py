"""CSV inputs are read in batches of at most files.CSV_BATCH_ROWS rows: the batches only
split the work, so the output file is the same, byte for byte, under one seed."""

from __future__ import annotations

import numpy as np

import pmlkit
from pmlkit.privatization import files, privatize_file


def test_csv_batch_size_does_not_change_the_output(tmp_path, monkeypatch):
    g = np.random.default_rng(0)
    sexes = np.array(["F", "M"])[g.integers(0, 2, 5000)]
    notes = np.array(['plain', 'a,b', 'say "hi"', ''])[g.integers(0, 4, 5000)]
    lines = ["id,sex,note"] + [f'{i},{s},"{n.replace(chr(34), chr(34) * 2)}"'
                               if ("," in n or '"' in n) else f"{i},{s},{n}"
                               for i, (s, n) in enumerate(zip(sexes, notes, strict=True))]
    src = tmp_path / "in.csv"
    src.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    mech = pmlkit.Mechanism(np.array([[0.7, 0.3], [0.4, 0.6]]), ("F", "M"), ("F", "M"))
    outs = []
    for cap in (1 << 17, 97, 1):
        monkeypatch.setattr(files, "CSV_BATCH_ROWS", cap)
        for fmt in ("csv", "parquet"):
            out = tmp_path / f"out_{cap}.{fmt}"
            privatize_file(mech, src, out, "sex", rng=11, manifest=False)
            outs.append((fmt, out))
    csvs = [p.read_bytes() for f, p in outs if f == "csv"]
    assert csvs[0] == csvs[1] == csvs[2]
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for f, p in outs if f == "parquet"]
    assert tables[0].equals(tables[1]) and tables[0].equals(tables[2])
    # untouched cells byte for byte: every line keeps its id and note text
    src_lines = src.read_bytes().split(b"\r\n")
    out_lines = csvs[0].split(b"\r\n")
    assert len(src_lines) == len(out_lines)
    for a, b in zip(src_lines[1:-1], out_lines[1:-1], strict=True):
        ida, _, resta = a.partition(b",")
        idb, _, restb = b.partition(b",")
        assert ida == idb and resta[2:] == restb[2:] and restb[:1] in (b"F", b"M")
