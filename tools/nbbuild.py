"""Tiny helpers for the lesson builders: markdown and code cells, written with nbformat.

A builder lists its cells with :func:`md` and :func:`code` and calls :func:`write`; then execute
the notebook from a clean kernel (docs/notebooks.md). Sources are dedented and stripped, so a
builder can indent its cell text like ordinary Python.
"""

from __future__ import annotations

import textwrap
from typing import cast

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def md(text: str) -> nbformat.NotebookNode:
    """A markdown cell."""
    return cast(nbformat.NotebookNode, new_markdown_cell(textwrap.dedent(text).strip("\n")))  # type: ignore[no-untyped-call]


def code(text: str) -> nbformat.NotebookNode:
    """A code cell (outputs come from executing the notebook)."""
    return cast(nbformat.NotebookNode, new_code_cell(textwrap.dedent(text).strip("\n")))  # type: ignore[no-untyped-call]


def write(path: str, cells: list[nbformat.NotebookNode]) -> None:
    """Write ``cells`` as a python3 notebook at ``path`` (no outputs yet)."""
    nb = new_notebook(cells=cells)  # type: ignore[no-untyped-call]
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.write(nb, path)  # type: ignore[no-untyped-call]
