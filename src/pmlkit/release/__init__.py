"""One command releases a whole table: ``pmlkit release --spec release.toml``.

- :mod:`~pmlkit.release.spec`: the declarative spec (TOML) read into a frozen, strictly
  validated :class:`ReleaseSpec`.
- :mod:`~pmlkit.release.design`: the columns designed together so that the whole record
  meets (eps, delta), with one certified :class:`pmlkit.joint.JointGuarantee`.
- :mod:`~pmlkit.release.run`: :func:`release_table`: reference -> designs -> one pass of
  :func:`pmlkit.privatize_file` (untouched columns byte for byte, manifest with the joint
  guarantee) -> estimates from the released data -> the HTML report.
- :mod:`~pmlkit.release.result`: what a release produced (:class:`TableRelease`, one
  :class:`ColumnRelease` per column).
- :mod:`~pmlkit.release.report`: the report a data team signs off (one self-contained HTML
  file, inline SVG, no JavaScript).

Everything here goes beyond the paper (one column released once).
"""

from __future__ import annotations

from .result import ColumnRelease, TableRelease
from .run import release_table
from .spec import ColumnSpec, ReleaseSpec, load_spec

__all__ = ["ColumnRelease", "ColumnSpec", "ReleaseSpec", "TableRelease", "load_spec",
           "release_table"]
