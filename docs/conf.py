"""Sphinx configuration: the API reference from the docstrings (numpydoc style, via
napoleon) and the Markdown pages of ``docs/`` (via MyST). ``make test`` builds it with
warnings as errors, so a broken docstring or link fails the suite."""

from __future__ import annotations

import importlib.metadata

project = "pmlkit"
author = "pmlkit developers"
copyright = "pmlkit developers, BSD-3-Clause"
release = importlib.metadata.version("pmlkit")
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "figures"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]
html_theme = "alabaster"
