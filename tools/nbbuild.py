"""Tiny helpers for the lesson builders: markdown and code cells, written with nbformat.

A builder lists its cells with :func:`md` and :func:`code` and calls :func:`write`; then execute
the notebook from a clean kernel (docs/notebooks.md). Sources are dedented and stripped, so a
builder can indent its cell text like ordinary Python.
"""

from __future__ import annotations

import textwrap

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def md(text: str) -> nbformat.NotebookNode:
    """A markdown cell."""
    return new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text: str) -> nbformat.NotebookNode:
    """A code cell (outputs come from executing the notebook)."""
    return new_code_cell(textwrap.dedent(text).strip("\n"))


def write(path: str, cells: list[nbformat.NotebookNode]) -> None:
    """Write ``cells`` as a python3 notebook at ``path`` (no outputs yet)."""
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, path)
