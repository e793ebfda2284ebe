"""The UCI Adult (Census Income) data set: a checked loader, a downloader and a synthetic
stand-in.

Location (first match wins): the ``path`` argument (a folder holding ``adult.data`` /
``adult.test``, or one of the files), the ``PMLKIT_DATA`` environment variable (same
meaning), then the user cache ``~/.cache/pmlkit/adult`` (``$XDG_CACHE_HOME/pmlkit/adult``
when set). Every file is checked against the SHA-256 published with the original UCI
files before it is parsed; a mismatch raises :class:`~pmlkit.errors.DataError`.

Format quirks handled (see the data's README): no header row (the 15 names are
:data:`ADULT_COLUMNS`), a space after each comma, ``?`` for missing values (workclass,
occupation, native-country), a junk first line in ``adult.test``, a trailing ``.`` on the
test file's income labels, and a blank last line.

Citation: Becker, B. & Kohavi, R. (1996). Adult. UCI Machine Learning Repository,
doi:10.24432/C5XW20 (CC BY 4.0).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._optional import require
from ._validation import user_path
from .errors import DataError, ValidationError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "ADULT_COLUMNS",
    "ADULT_SHA256",
    "ADULT_URL",
    "adult_cache_dir",
    "download_adult",
    "find_adult",
    "load_adult",
    "synthetic_adult",
]

#: The 15 column names, in file order (from adult.names).
ADULT_COLUMNS: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income")

#: SHA-256 of the original UCI files.
ADULT_SHA256: dict[str, str] = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
}

#: Where :func:`download_adult` fetches the files from.
ADULT_URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"

_SPLIT_FILES = {"data": ("adult.data",), "test": ("adult.test",),
                "both": ("adult.data", "adult.test")}

#: Marginals of the real data (adult.data + adult.test) used by :func:`synthetic_adult`.
P_MALE = 32650 / 48842
P_HIGH_INCOME_GIVEN_SEX = {"Male": 9918 / 32650, "Female": 1769 / 16192}


def adult_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pmlkit/adult`` or ``~/.cache/pmlkit/adult``.

    Examples
    --------
    >>> adult_cache_dir().parts[-2:]
    ('pmlkit', 'adult')
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pmlkit" / "adult"


def _how_to_get() -> str:
    return ("get the UCI Adult files (adult.data, adult.test) with "
            "pmlkit.datasets.download_adult() when online, or download them from "
            f"{ADULT_URL} (doi:10.24432/C5XW20) into {adult_cache_dir()}, or point "
            "PMLKIT_DATA (or path=) at the folder holding them")


def find_adult(path: str | os.PathLike[str] | None = None, *,
               files: tuple[str, ...] = ("adult.data",)) -> Path:
    """The folder holding the Adult ``files`` (see the module docstring for the order).

    Raises DataError, explaining how to get the data, when none is found.

    Examples
    --------
    >>> import tempfile
    >>> empty = tempfile.mkdtemp()
    >>> find_adult(empty)
    Traceback (most recent call last):
    ...
    pmlkit.errors.DataError: UCI Adult file 'adult.data' not found in ... (from path); get ...
    """
    candidates: list[tuple[str, Path]] = []
    if path is not None:
        p = user_path(path)
        candidates.append(("path", p.parent if p.is_file() else p))
    elif os.environ.get("PMLKIT_DATA"):
        p = user_path(os.environ["PMLKIT_DATA"], "PMLKIT_DATA")
        candidates.append(("PMLKIT_DATA", p.parent if p.is_file() else p))
    else:
        candidates.append(("cache", adult_cache_dir()))
    for _, folder in candidates:
        if all((folder / f).is_file() for f in files):
            return folder
    where, folder = candidates[0]
    missing = [f for f in files if not (folder / f).is_file()]
    raise DataError(f"UCI Adult file {missing[0]!r} not found in {str(folder)!r} (from "
                    f"{where}); {_how_to_get()}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(path: Path) -> None:
    want = ADULT_SHA256[path.name]
    got = _sha256(path)
    if got != want:
        raise DataError(
            f"{str(path)!r} has SHA-256 {got}, expected {want} (the original UCI file); it "
            f"was modified or is another version; {_how_to_get()}")


def _read(path: Path) -> pd.DataFrame:
    pd = require("pandas", "loading the Adult data")

    test = path.name == "adult.test"
    df = pd.read_csv(path, names=list(ADULT_COLUMNS), skipinitialspace=True, na_values="?",
                     skiprows=1 if test else 0, skip_blank_lines=True)
    df = df.dropna(how="all")
    if test:
        df["income"] = df["income"].str.rstrip(".")
    return df


def load_adult(path: str | os.PathLike[str] | None = None, *, split: str = "data",
               verify: bool = True) -> pd.DataFrame:
    """Load UCI Adult as a pandas DataFrame with the 15 :data:`ADULT_COLUMNS`.

    Parameters
    ----------
    path
        Folder holding the files (or one of them); default ``PMLKIT_DATA``, then the cache.
    split
        ``"data"`` (adult.data, 32,561 rows), ``"test"`` (adult.test, 16,281 rows) or
        ``"both"`` (48,842 rows, data then test, with a fresh RangeIndex).
    verify
        Check the files' SHA-256 against :data:`ADULT_SHA256` (default; strongly advised).

    Returns
    -------
    pandas.DataFrame
        Missing values (``?``) as NaN; income labels ``"<=50K"`` / ``">50K"`` in both
        splits (the test file's trailing ``.`` removed).

    Raises
    ------
    DataError
        Files not found (the message says how to get them) or SHA-256 mismatch.

    Examples
    --------
    With the files in ``PMLKIT_DATA`` (or the cache, see :func:`download_adult`):

    >>> df = load_adult(split="both")  # doctest: +SKIP
    >>> len(df), round((df["sex"] == "Male").mean(), 4)  # doctest: +SKIP
    (48842, 0.6685)
    """
    if split not in _SPLIT_FILES:
        raise ValidationError(f"split must be one of 'data', 'test', 'both', got {split!r}")
    names = _SPLIT_FILES[split]
    folder = find_adult(path, files=names)
    frames = []
    for name in names:
        f = folder / name
        if verify:
            _verify(f)
        frames.append(_read(f))
    if len(frames) == 1:
        return frames[0]
    pd = require("pandas", "loading the Adult data")

    return pd.concat(frames, ignore_index=True)


def download_adult(cache_dir: str | os.PathLike[str] | None = None, *,
                   timeout: float = 60.0) -> Path:
    """Download adult.data, adult.test and adult.names from the UCI archive (needs network).

    Files are written atomically into ``cache_dir`` (default :func:`adult_cache_dir`) and
    verified against :data:`ADULT_SHA256`; a file already present and correct is kept.
    Returns the folder. Raises DataError on a network failure or checksum mismatch.

    Examples
    --------
    Online only (so not run here); afterwards :func:`load_adult` finds the files:

    >>> folder = download_adult()  # doctest: +SKIP
    >>> sorted(p.name for p in folder.iterdir())  # doctest: +SKIP
    ['adult.data', 'adult.names', 'adult.test']
    """
    import tempfile
    import urllib.error
    import urllib.request

    folder = user_path(cache_dir, "cache_dir") if cache_dir is not None else adult_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for name, digest in ADULT_SHA256.items():
        target = folder / name
        if target.is_file() and _sha256(target) == digest:
            continue
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out, \
                    urllib.request.urlopen(ADULT_URL + name, timeout=timeout) as resp:
                out.write(resp.read())
            if _sha256(Path(tmp)) != digest:
                raise DataError(f"downloaded {name} does not match its SHA-256 {digest}")
            os.replace(tmp, target)
        except (urllib.error.URLError, OSError) as exc:
            raise DataError(f"could not download {ADULT_URL + name}: {exc}") from exc
        finally:
            Path(tmp).unlink(missing_ok=True)
    return folder


def synthetic_adult(n: int, *, rng: Any = None) -> pd.DataFrame:
    """A SYNTHETIC stand-in for Adult: columns ``sex`` and ``income`` only.

    ``sex`` is ``"Male"`` with probability 32650/48842 (the real Adult marginal, train +
    test) and ``income`` is ``">50K"`` with the real conditional probabilities given sex
    (9918/32650 for Male, 1769/16192 for Female), so both marginals and their dependence
    match the real data. Nothing else about real people is reproduced. ``rng``: see
    :func:`pmlkit.rng.resolve_rng` (an int seed for a reproducible sample).

    Examples
    --------
    >>> df = synthetic_adult(20_000, rng=0)
    >>> list(df.columns), df.attrs["synthetic"]
    (['sex', 'income'], True)
    >>> bool(abs((df["sex"] == "Male").mean() - 32650 / 48842) < 0.02)  # the real marginal
    True
    """
    import numpy as np
    pd = require("pandas", "loading the Adult data")

    from ._validation import check_count
    from .rng import resolve_rng

    n = check_count(n, "n")
    g = resolve_rng(rng).generator
    male = g.random(n) < P_MALE
    p_high = np.where(male, P_HIGH_INCOME_GIVEN_SEX["Male"], P_HIGH_INCOME_GIVEN_SEX["Female"])
    high = g.random(n) < p_high
    df = pd.DataFrame({"sex": np.where(male, "Male", "Female"),
                       "income": np.where(high, ">50K", "<=50K")})
    df.attrs["synthetic"] = True
    return df
