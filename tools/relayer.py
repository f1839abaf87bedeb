#!/usr/bin/env python3
"""Move labkit's modules into their layer folders, and rewrite every import and mention, from ONE table.

    python tools/relayer.py            # move (git mv) and rewrite; prints what it did
    python tools/relayer.py --dry-run  # print what it would do, change nothing

:data:`MOVES` is the table: an old path under ``labkit/`` (a module or a package) -> its new path. The
script then

1. plans every rewrite against the tree as it is (each file read where it is now, under its old name);
2. ``git mv``-s every file of every moved module or package (file by file, new files of a moved package
   included) and removes the folders left empty;
3. writes the rewritten files at their new paths:

   * relative imports inside ``labkit/`` resolved from where the module WAS, mapped, and written
     relative to where it IS (``from ..errors import X`` in ``labkit/faults/kinds.py`` becomes
     ``from ...shared.errors import X`` in ``labkit/engine_plugins/faults/kinds.py``);
   * ``from labkit import errors`` / ``from . import operations as ops``: a submodule named in an import
     list follows its module (split into one statement per new package when they part);
   * every dotted mention ``labkit.<old>`` (absolute imports, ``monkeypatch`` targets, entry points,
     docstrings, docs, notebooks) and every path ``labkit/<old>`` (or ``tests/<old>``, for a test
     folder named after its layer) in any text file of the repository; a generated notebook's cell
     ids follow their cells' new sources (as ``tools/notebooks.py`` makes them);
   * paths built from parts in tests and tools (``LABKIT / "exercises" / "solutions.py"``);
   * the lazy names of a PEP 562 package (``labkit/__init__.py``'s ``_LAZY`` values: ``"backend"`` ->
     ``"shared.backend"``);
4. sorts the imports of the Python files it changed (``ruff check --select I --fix``, ``ruff format``).

Idempotent: a source that no longer exists is skipped when its target does (already moved); a source
that exists nowhere fails loudly. Run twice, the second run changes nothing. A top-level module of
``labkit/`` that the table does not place is named at the end (a new module: add it to the table).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "labkit"

#: old path -> new path, both relative to the repository. A package moves with everything under it;
#: an entry inside a moved package (in old terms) renames that file within the move.
MOVES: dict[str, str] = {
    # the shared floor: what every layer may stand on
    "labkit/errors.py": "labkit/shared/errors.py",
    "labkit/_errors_map.py": "labkit/shared/_errors_map.py",
    "labkit/codec.py": "labkit/shared/codec.py",
    "labkit/constants.py": "labkit/shared/constants.py",
    "labkit/capacity.py": "labkit/shared/capacity.py",
    "labkit/validation.py": "labkit/shared/validation.py",
    "labkit/partition_keys.py": "labkit/shared/partition_keys.py",
    "labkit/numbers.py": "labkit/shared/numbers.py",
    "labkit/engine_hooks.py": "labkit/shared/engine_hooks.py",
    "labkit/operations": "labkit/shared/catalogue",  # one `operations/` package: the engine's
    "labkit/operations/catalogue.py": "labkit/shared/catalogue/records.py",
    "labkit/intercept": "labkit/shared/intercept",
    "labkit/intercept/calls.py": "labkit/shared/intercept/wrapper.py",  # one `calls.py`: the race lab's
    "labkit/routing.py": "labkit/shared/routing.py",
    "labkit/compat.py": "labkit/shared/compat.py",
    "labkit/backend_choice.py": "labkit/shared/backend_choice.py",
    "labkit/backend.py": "labkit/shared/backend.py",
    "labkit/table.py": "labkit/shared/table.py",
    # the engine's plug-ins (the engine core, labkit/endpoint/, stays where it is)
    "labkit/throughput.py": "labkit/engine_plugins/throughput.py",
    "labkit/faults": "labkit/engine_plugins/faults",
    # the composition root: one module, the layer's face
    "labkit/embedded.py": "labkit/embedded/__init__.py",
    # the patterns the lessons teach (the race lab, labkit/races/, stays where it is)
    "labkit/singleton": "labkit/patterns/singleton",
    "labkit/uniqueness": "labkit/patterns/uniqueness",
    "labkit/counter.py": "labkit/patterns/counter.py",
    # the lab a notebook works in: its first cell (the face), pictures, checks, files, exercises
    "labkit/lab.py": "labkit/lab/__init__.py",
    "labkit/invariants.py": "labkit/lab/invariants.py",
    "labkit/plots.py": "labkit/lab/plots.py",
    "labkit/artifacts.py": "labkit/lab/artifacts.py",
    "labkit/storms.py": "labkit/lab/storms.py",
    "labkit/costs": "labkit/lab/costs",
    "labkit/exercises": "labkit/lab/exercises",
    # the pytest plugin stays where its entry point names it; its per-session state is not "a session"
    "labkit/pytest_plugin/session.py": "labkit/pytest_plugin/state.py",
    # the commands
    "labkit/cli.py": "labkit/commands/cli.py",
    "labkit/launcher.py": "labkit/commands/launcher.py",
    "labkit/jupyter_settings": "labkit/commands/jupyter_settings",
    # the tests of a layer under its folder's name
    "tests/floor": "tests/shared",
    "tests/views": "tests/lab",
}
#: What may stay at the top of labkit/ (besides the layer folders).
TOP = {"__init__.py", "__main__.py"}
#: Files never rewritten: this script (its table names the old paths) and its test.
SKIP = {"tools/relayer.py", "tests/commands/test_relayer.py"}


class RelayerError(Exception):
    """The table and the tree disagree: nothing was changed."""


# --- names ---------------------------------------------------------------------------------------
def module_of(path: str) -> str | None:
    """``labkit/faults/kinds.py`` -> ``labkit.faults.kinds``; a package's ``__init__.py`` -> the package."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def map_path(path: str, moves: dict[str, str] = MOVES) -> str:
    """A repository path after the moves (longest matching entry first; renames inside a moved package
    are applied on top of the package's move)."""
    new = path
    for old in sorted(moves, key=len, reverse=True):
        if path == old or path.startswith(old + "/"):
            new = moves[old] + path[len(old) :]
            break
    return new


def dotted_moves(moves: dict[str, str] = MOVES) -> dict[str, str]:
    """old dotted module -> new dotted module, for every entry whose dotted name changes."""
    found: dict[str, str] = {}
    for old in moves:
        old_mod = module_of(old) if old.endswith(".py") else old.replace("/", ".")
        new = map_path(old, moves)
        new_mod = module_of(new) if new.endswith(".py") else new.replace("/", ".")
        package = (ROOT / old / "__init__.py").exists() or (ROOT / new / "__init__.py").exists()
        if old_mod and new_mod and old_mod != new_mod and (old.endswith(".py") or package):
            found[old_mod] = new_mod
    return found


def map_module(name: str, dotted: dict[str, str]) -> str:
    for old in sorted(dotted, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return dotted[old] + name[len(old) :]
    return name


# --- the files -----------------------------------------------------------------------------------
def repo_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return sorted({p for p in out.stdout.splitlines() if (ROOT / p).is_file()})


@dataclass(frozen=True)
class Move:
    old: str
    new: str


def plan_moves(files: Iterable[str]) -> list[Move]:
    """Every file to ``git mv``; fails on a table entry that exists neither before nor after."""
    files = list(files)
    for old in MOVES:
        here = (ROOT / old).exists()
        target = ROOT / map_path(old)
        if not here and not target.exists():
            raise RelayerError(f"{old} does not exist, and neither does its target {map_path(old)}")
    moves = []
    for path in files:
        new = map_path(path)
        if new != path:
            if (ROOT / new).exists():
                raise RelayerError(f"cannot move {path}: {new} exists already")
            moves.append(Move(path, new))
    return moves


# --- rewriting Python imports --------------------------------------------------------------------
@dataclass
class Context:
    modules: set[str]  # every module and package of labkit/ as the tree is now
    dotted: dict[str, str]


def _package_of(module: str, is_init: bool) -> list[str]:
    parts = module.split(".")
    return parts if is_init else parts[:-1]


def _relative(target: str, package: list[str]) -> tuple[int, str]:
    """``target`` written relative to ``package``: (level, module after the dots)."""
    parts = target.split(".")
    common = 0
    while common < min(len(parts), len(package)) and parts[common] == package[common]:
        common += 1
    return len(package) - common + 1, ".".join(parts[common:])


def _alias_text(name: str, asname: str | None) -> str:
    return f"{name} as {asname}" if asname else name


def rewrite_import_from(
    node: ast.ImportFrom, old: tuple[str, bool], new: tuple[str, bool], ctx: Context
) -> list[str] | None:
    """The statement(s) replacing ``node`` (each without indentation), or None when it stays.

    ``old`` and ``new`` are the module's name and whether it is a package's ``__init__``, before and
    after the move: a relative import is resolved from the old place and written from the new one."""
    (old_module, old_is_init), (new_module, new_is_init) = old, new
    moved = old != new
    if node.level:
        base_parts = _package_of(old_module, old_is_init)
        base_parts = base_parts[: len(base_parts) - node.level + 1]
        base = ".".join([*base_parts, *(node.module.split(".") if node.module else [])])
    elif node.module:
        base = node.module
    else:
        return None
    groups: dict[str, list[str]] = {}
    changed = moved and bool(node.level)
    for alias in node.names:
        full = f"{base}.{alias.name}"
        if alias.name != "*" and full in ctx.modules:
            new_full = map_module(full, ctx.dotted)
            parent, _, leaf = new_full.rpartition(".")
            asname = alias.asname or (alias.name if leaf != alias.name else None)
            text = _alias_text(leaf, asname)
        else:
            parent = map_module(base, ctx.dotted)
            text = _alias_text(alias.name, alias.asname)
        if parent != base or text != _alias_text(alias.name, alias.asname):
            changed = True
        groups.setdefault(parent, []).append(text)
    if not changed:
        return None
    statements = []
    new_package = _package_of(new_module, new_is_init)
    for parent, names in groups.items():
        if node.level:
            level, rest = _relative(parent, new_package)
            source = "." * level + rest
        else:
            source = parent
        statements.append(f"from {source} import {', '.join(names)}")
    return statements


def _offsets(data: bytes) -> list[int]:
    starts = [0]
    for i, b in enumerate(data):
        if b == 10:
            starts.append(i + 1)
    return starts


def rewrite_python(text: str, old_path: str, new_path: str, ctx: Context, warnings: list[str]) -> str:
    """Relative and ``from labkit... import submodule`` imports, and PEP 562 lazy names."""
    data = text.encode("utf-8")
    try:
        tree = ast.parse(data)
    except SyntaxError:
        return text
    old_module, new_module = module_of(old_path), module_of(new_path)
    if old_module is None or new_module is None:
        return text
    is_init = old_path.endswith("__init__.py")
    new_is_init = new_path.endswith("__init__.py")
    starts = _offsets(data)
    edits: list[tuple[int, int, bytes]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        statements = rewrite_import_from(node, (old_module, is_init), (new_module, new_is_init), ctx)
        if statements is None:
            continue
        start = starts[node.lineno - 1] + node.col_offset
        end = starts[node.end_lineno - 1] + node.end_col_offset  # type: ignore[operator]
        indent = data[starts[node.lineno - 1] : start].decode("utf-8")
        original = data[start:end].decode("utf-8")
        if len(statements) == 1 and _only_source_changes(node, statements[0]):
            new_source = statements[0].split(" import ", 1)[0]
            replacement = re.sub(r"^from\s+[.\w]+", new_source, original, count=1)
        elif len(statements) == 1 and "\n" in original:
            head, names = statements[0].split(" import ", 1)
            inner = "".join(f"{indent}    {n},\n" for n in names.split(", "))
            replacement = f"{head} import (\n{inner}{indent})"
            if "#" in original:
                warnings.append(f"{new_path}:{node.lineno}: comments inside a rewritten import were dropped")
        else:
            if indent.strip():
                raise RelayerError(f"{old_path}:{node.lineno}: cannot split an import that does not start its line")
            if len(statements) > 1 and "\n" in original:
                raise RelayerError(f"{old_path}:{node.lineno}: a multi-line import to split: edit it by hand first")
            replacement = ("\n" + indent).join(statements)
        edits.append((start, end, replacement.encode("utf-8")))
    edits.extend(_lazy_name_edits(tree, starts, old_module, new_module, is_init, ctx))
    for start, end, new_bytes in sorted(edits, reverse=True):
        data = data[:start] + new_bytes + data[end:]
    return data.decode("utf-8")


def _only_source_changes(node: ast.ImportFrom, statement: str) -> bool:
    names = statement.split(" import ", 1)[1].split(", ")
    return names == [_alias_text(a.name, a.asname) for a in node.names]


def _lazy_name_edits(
    tree: ast.Module,
    starts: list[int],
    old_module: str,
    new_module: str,
    is_init: bool,
    ctx: Context,
) -> list[tuple[int, int, bytes]]:
    """A PEP 562 package's lazy table: dict values naming its submodules follow them."""
    if not is_init or not any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        return []
    edits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for value in node.values:
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                continue
            full = f"{old_module}.{value.value}"
            if full not in ctx.modules:
                continue
            new_full = map_module(full, ctx.dotted)
            if not new_full.startswith(new_module + "."):
                raise RelayerError(f"{old_module}: lazy name {value.value!r} moves out of the package")
            new_value = new_full[len(new_module) + 1 :]
            if new_value != value.value:
                start = starts[value.lineno - 1] + value.col_offset
                end = starts[value.end_lineno - 1] + value.end_col_offset  # type: ignore[operator]
                edits.append((start, end, f'"{new_value}"'.encode()))
    return edits


# --- rewriting mentions --------------------------------------------------------------------------
def mention_patterns(dotted: dict[str, str]) -> list[tuple[re.Pattern[str], dict[str, str]]]:
    """Dotted names (``labkit.errors``) and paths (``labkit/errors.py``, ``labkit/faults/``, ``tests/floor``)."""
    dot = re.compile(rf"(?<![\w.])({'|'.join(re.escape(k) for k in sorted(dotted, key=len, reverse=True))})(?!\w)")
    by_path = {old: map_path(old) for old in MOVES if map_path(old) != old}
    path = re.compile(rf"(?<![\w./-])({'|'.join(re.escape(k) for k in sorted(by_path, key=len, reverse=True))})(?!\w)")
    return [(dot, dotted), (path, by_path)]


def rewrite_mentions(text: str, patterns: list[tuple[re.Pattern[str], dict[str, str]]]) -> str:
    dot, by_dot = patterns[0]
    path, by_path = patterns[1]
    text = dot.sub(lambda m: by_dot[m.group(1)], text)
    return path.sub(lambda m: by_path[m.group(1)], text)


_FROM_LINE = re.compile(rf"\bfrom ({PACKAGE}(?:\.\w+)*) import (\w+(?: as \w+)?(?:, \w+(?: as \w+)?)*)")


def rewrite_from_lines(text: str, ctx: Context, where: str, warnings: list[str]) -> str:
    """In docs and notebooks: ``from labkit import costs`` -> ``from labkit.lab import costs``."""

    def one(m: re.Match[str]) -> str:
        base, names = m.group(1), m.group(2).split(", ")
        groups: dict[str, list[str]] = {}
        for item in names:
            name, _, asname = item.partition(" as ")
            full = f"{base}.{name}"
            if full in ctx.modules:
                parent, _, leaf = map_module(full, ctx.dotted).rpartition(".")
                groups.setdefault(parent, []).append(_alias_text(leaf, asname or (name if leaf != name else None)))
            else:
                groups.setdefault(map_module(base, ctx.dotted), []).append(item)
        if len(groups) > 1:
            warnings.append(f"{where}: '{m.group(0)}' imports from several layers now: edit by hand")
            return m.group(0)
        ((parent, items),) = groups.items()
        return f"from {parent} import {', '.join(items)}"

    return _FROM_LINE.sub(one, text)


_SEGMENTS = re.compile(rf'(?:"{PACKAGE}"|\bLABKIT\b|\bPACKAGE\b)((?:\s*/\s*"[\w.]+")+)')


def rewrite_segments(text: str) -> str:
    """Paths built from parts in tests and tools: ``LABKIT / "exercises" / "solutions.py"``."""

    def one(m: re.Match[str]) -> str:
        parts = re.findall(r'"([\w.]+)"', m.group(1))
        new = map_path("/".join([PACKAGE, *parts]))
        if new == "/".join([PACKAGE, *parts]):
            return m.group(0)
        head = m.group(0)[: m.start(1) - m.start(0)]
        return head + "".join(f' / "{part}"' for part in new.split("/")[1:])

    return _SEGMENTS.sub(one, text)


def _cell_ids(notebook: dict[str, Any]) -> list[str]:
    """The ids ``tools/notebooks.py`` gives a generated notebook's cells: a digest of type and source."""
    ids: list[str] = []
    seen: dict[str, int] = {}
    for cell in notebook.get("cells", []):
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        digest = hashlib.sha1(f"{cell.get('cell_type')}\0{text}".encode()).hexdigest()[:8]
        seen[digest] = seen.get(digest, 0) + 1
        ids.append(digest if seen[digest] == 1 else f"{digest}-{seen[digest]}")
    return ids


def renew_cell_ids(old_text: str, new_text: str) -> str:
    """A generated notebook whose cells were rewritten: each cell's id follows its new source (a cell id
    that was not the digest of its old source, a hand-made notebook's, is left alone)."""
    try:
        old, new = json.loads(old_text), json.loads(new_text)
    except ValueError:
        return new_text
    cells = new.get("cells", [])
    current = [cell.get("id") for cell in cells]
    if current != _cell_ids(old):
        return new_text
    for was, now in zip(current, _cell_ids(new), strict=True):
        if was != now:
            new_text = new_text.replace(f'"id": "{was}"', f'"id": "{now}"', 1)
    return new_text


# --- running -------------------------------------------------------------------------------------
def modules_now(files: Iterable[str]) -> set[str]:
    found: set[str] = set()
    for path in files:
        if path.endswith(".py"):
            module = module_of(path)
            assert module is not None
            parts = module.split(".")
            found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return found


def ruff() -> list[str] | None:
    here = Path(sys.executable).with_name("ruff")
    found = str(here) if here.exists() else shutil.which("ruff")
    return [found] if found else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    files = repo_files()
    try:
        moves = plan_moves(files)
    except RelayerError as e:
        print(f"relayer: {e}", file=sys.stderr)
        return 1
    where = {m.old: m.new for m in moves}
    ctx = Context(modules=modules_now(files), dotted=dotted_moves())
    patterns = mention_patterns(ctx.dotted)
    warnings: list[str] = []
    rewritten: dict[str, str] = {}  # new path -> new text
    try:
        for path in files:
            if path in SKIP:
                continue
            try:
                text = (ROOT / path).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            new_path = where.get(path, path)
            new = text
            if path.endswith(".py"):
                new = rewrite_segments(rewrite_python(new, path, new_path, ctx, warnings))
            new = rewrite_from_lines(new, ctx, path, warnings)
            new = rewrite_mentions(new, patterns)
            if path.endswith(".ipynb") and new != text:
                new = renew_cell_ids(text, new)
            if new != text:
                rewritten[new_path] = new
    except RelayerError as e:
        print(f"relayer: {e}", file=sys.stderr)
        return 1
    for move in moves:
        print(f"move     {move.old} -> {move.new}")
    for path in sorted(rewritten):
        print(f"rewrite  {path}")
    if args.dry_run:
        for w in warnings:
            print(f"warning  {w}")
        print(f"relayer: {len(moves)} files to move, {len(rewritten)} files to rewrite (dry run: nothing changed)")
        return 0
    for move in moves:
        (ROOT / move.new).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "mv", move.old, move.new], cwd=ROOT, check=True)
    for old in sorted(MOVES, key=len, reverse=True):  # folders the moves left empty (bytecode aside)
        folder = ROOT / old
        if folder.is_dir():
            for cache in sorted(folder.rglob("__pycache__"), reverse=True):
                shutil.rmtree(cache)
            for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
                if not any(sub.iterdir()):
                    sub.rmdir()
            if not any(folder.iterdir()):
                folder.rmdir()
    for path, text in rewritten.items():
        (ROOT / path).write_text(text, encoding="utf-8")
    changed_py = sorted(p for p in rewritten if p.endswith(".py"))
    tool = ruff()
    if changed_py and tool:
        subprocess.run([*tool, "check", "--select", "I", "--fix", "--quiet", *changed_py], cwd=ROOT, check=False)
        subprocess.run([*tool, "format", "--quiet", *changed_py], cwd=ROOT, check=False)
        subprocess.run(["git", "add", *rewritten], cwd=ROOT, check=True)
    elif changed_py:
        warnings.append("ruff not found: imports left unsorted")
    left = sorted(p.name for p in (ROOT / PACKAGE).glob("*.py") if p.name not in TOP)
    for name in left:
        warnings.append(f"labkit/{name} is a top-level module the table does not place")
    for w in warnings:
        print(f"warning  {w}")
    print(f"relayer: {len(moves)} files moved, {len(rewritten)} files rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
