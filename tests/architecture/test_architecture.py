"""docs/architecture.md stays true: the import graph of labkit/ has no cycle and respects the layers.

The graph is built with ``ast`` (no import runs) over every module in labkit/. An edge A -> B is a
run-time import of B by A:

* module-level AND function-level imports count (a lazy import inside a function still runs);
* imports under ``if TYPE_CHECKING:`` do NOT count (they never run; annotations only);
* ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, and to ``pkg``;
  importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``: edges to those packages too,
  except a module's own enclosing packages (Python has run them before the module);
* a package ``__init__`` that defines a PEP 562 ``__getattr__`` imports by name: every string in
  it that names one of its submodules is an edge (labkit/__init__.py's lazy public names);
* a package ``__init__`` that calls ``importlib.import_module`` loads its submodules by name: every
  submodule is an edge (labkit/endpoint/operations/, one module per operation, found from the catalogue).

Layers are the folders of labkit/ (nothing but ``__init__.py`` and ``__main__.py`` sits beside them),
each with a face, its ``__init__.py``, whose docstring says what it holds and, on a line of its own,
``May import: a, b.`` (the layer folders it may import; ``nothing``; ``every layer``). This test
reads them from the tree; docs/architecture.md draws them. The one exception is :data:`UPWARD`, a
lazy edge from the floor to the composition root. Inside the engine core, the rooms of
labkit/endpoint/ (:data:`ROOMS`) are layered the same way (:data:`ROOM_MAY_IMPORT`).
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "labkit"
Graph = Mapping[str, set[str]]

#: The package's own modules: the face of the whole package and ``python -m labkit``.
ROOT = "labkit"
ROOT_FILES = ("__init__.py", "__main__.py")


def layer_folders() -> list[str]:
    """The layers: every folder of labkit/ that holds Python modules."""
    return sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and any(p.rglob("*.py")))


def face(layer: str) -> str:
    """A layer's face: its ``__init__``'s docstring (the package's own, for the root)."""
    path = PACKAGE / "__init__.py" if layer == ROOT else PACKAGE / layer / "__init__.py"
    if not path.exists():
        return ""
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def may_import_line(docstring: str) -> str | None:
    """What follows ``May import:`` in a docstring, up to the first full stop (lines joined)."""
    found = re.search(r"(?:^|\n)May import: (.+?)\.(?:\s|$)", docstring, re.DOTALL)
    return " ".join(found.group(1).split()) if found else None


def parse_may_import(text: str, layers: Iterable[str]) -> set[str]:
    """``shared, engine_plugins`` -> those layers; ``nothing`` -> none; ``every layer`` -> all."""
    if text == "nothing":
        return set()
    if text == "every layer":
        return set(layers)
    return {name.strip() for name in re.split(r",| and ", text) if name.strip()}


@functools.cache
def may_import() -> dict[str, set[str]]:
    """Which layers each layer may import, its own included: read from the faces."""
    layers = [*layer_folders(), ROOT]
    allowed: dict[str, set[str]] = {}
    for layer in layers:
        line = may_import_line(face(layer))
        allowed[layer] = (parse_may_import(line, layers) if line is not None else set()) | {layer}
    return allowed


#: The engine core's rooms (by the name under labkit/endpoint/), bottom to top: docs/architecture.md draws them.
ROOMS: dict[str, tuple[str, ...]] = {
    "engine floor": ("errors", "model", "plan", "schema", "values"),
    "wire": ("wire",),
    "expressions": ("expressions",),
    "checks": ("checks",),
    "metering": ("metering",),
    "store": ("store",),
    "partiql": ("partiql",),
    "operations": ("operations",),
    "engine": ("engine", "weak", "__init__"),
}
#: Which rooms a room may import (its own included). Only the engine imports the operations' modules.
ROOM_MAY_IMPORT: dict[str, set[str]] = {
    "engine floor": {"engine floor"},
    "wire": {"engine floor", "wire"},
    "expressions": {"engine floor", "expressions"},
    "checks": {"engine floor", "expressions", "checks"},
    "metering": {"engine floor", "metering"},
    "store": {"engine floor", "wire", "expressions", "checks", "metering", "store"},
    "partiql": {"engine floor", "wire", "expressions", "checks", "partiql"},
    "operations": {"engine floor", "wire", "expressions", "checks", "store", "partiql", "operations"},
    "engine": set(ROOMS),
}
#: The floor's one upward edge: ``connect("embedded")`` asks the composition root for the shared
#: endpoint, inside the function (docs/decisions.md, "One composition root").
UPWARD = {("labkit.shared.backend", "labkit.embedded")}
PATTERNS = ("patterns.singleton", "patterns.uniqueness", "patterns.counter")
#: The client side of faults: notation, race-lab injection, rules, the control client.
FAULTS_CLIENT = ("answers", "kinds", "race", "rules", "control")


# --- the graph ---------------------------------------------------------------------------------
def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_nodes(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import that can run, with whether it sits inside a function (TYPE_CHECKING skipped)."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for branch in node.orelse:
                visit(branch, in_function)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append((node, in_function))
        inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(tree, False)
    return found


def imports_of(name: str, source: str, known: Iterable[str], is_package: bool) -> dict[str, bool]:
    """Modules of ``known`` that module ``name`` imports at run time -> True if only inside functions."""
    known = set(known)
    package = name.split(".") if is_package else name.split(".")[:-1]
    tree = ast.parse(source)
    targets: dict[str, bool] = {}

    def add(target: str, lazy: bool) -> None:
        targets[target] = targets.get(target, True) and lazy

    for node, lazy in import_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, lazy)
            continue
        base = package[: len(package) - node.level + 1] if node.level else []
        module = ".".join([*base, *(node.module.split(".") if node.module else [])])
        add(module, lazy)
        for alias in node.names:
            if f"{module}.{alias.name}" in known:
                add(f"{module}.{alias.name}", lazy)
    if is_package and any(
        isinstance(n, ast.Call) and "import_module" in (getattr(n.func, "attr", None), getattr(n.func, "id", None))
        for n in ast.walk(tree)
    ):  # submodules loaded by name: every one of them
        for module in known:
            if module.startswith(f"{name}.") and "." not in module[len(name) + 1 :]:
                add(module, True)
    if is_package and any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
        for constant in ast.walk(tree):  # PEP 562: names imported on first use, by string
            value = constant.value if isinstance(constant, ast.Constant) else None
            if isinstance(value, str) and f"{name}.{value}" in known:
                add(f"{name}.{value}", True)
    parts = name.split(".")
    enclosing = {".".join(parts[:i]) for i in range(1, len(parts))}
    edges: dict[str, bool] = {}
    for target, lazy in targets.items():
        pieces = target.split(".")
        for i in range(1, len(pieces) + 1):
            module = ".".join(pieces[:i])
            if module in known and module not in enclosing and module != name:
                edges[module] = edges.get(module, True) and lazy
    return edges


def edges_of(name: str) -> dict[str, bool]:
    known = modules()
    path = known[name]
    return imports_of(name, path.read_text(encoding="utf-8"), known, path.name == "__init__.py")


def import_graph() -> dict[str, set[str]]:
    return {name: set(edges_of(name)) for name in modules()}


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as one cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(cycle_path(graph, component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def cycle_path(graph: Graph, component: set[str]) -> list[str]:
    """One concrete cycle through a strongly connected component: a -> b -> ... -> a."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth-first inside the component, back to start
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w == start:
                    path = [start]
                    while v != start:
                        path.insert(1, v)
                        v = parents[v]
                    return [*path, start]
                if w in component and w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start, start]


def reachable(graph: Graph, roots: Iterable[str], skip: Iterable[tuple[str, str]] = ()) -> set[str]:
    """Every module the ``roots`` import, directly or not (edges in ``skip`` left out)."""
    skip = set(skip)
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        v = todo.pop()
        for w in graph.get(v, ()):
            if w not in seen and (v, w) not in skip:
                seen.add(w)
                todo.append(w)
    return seen


def layer_of(module: str) -> str:
    """A module's layer: its folder under labkit/ (the package's own modules: the root; else "?")."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1:] == ["__main__"]:
        return ROOT
    return parts[1] if parts[1] in layer_folders() else "?"


def room_of(module: str) -> str:
    """The room of a module of labkit/endpoint/ (by its first name under labkit/endpoint/)."""
    parts = module.split(".")
    first = parts[2] if len(parts) > 2 else "__init__"
    (room,) = [room for room, members in ROOMS.items() if first in members] or ["?"]
    return room


def in_wing(modules_: Iterable[str], *wings: str) -> list[str]:
    return sorted(m for m in modules_ if any(m == f"labkit.{w}" or m.startswith(f"labkit.{w}.") for w in wings))


@functools.cache
def graph() -> dict[str, set[str]]:
    """labkit's import graph, parsed once, when a test first asks (not at collection: every xdist worker
    collects this module, one runs it)."""
    return import_graph()


# --- the rules ---------------------------------------------------------------------------------
def test_import_graph__no_cycle() -> None:
    """No import cycle anywhere in labkit/ (module- and function-level imports, not TYPE_CHECKING)."""
    found = [" -> ".join(c) for c in cycles(graph())]
    assert not found, "import cycle(s) in labkit/: " + "; ".join(found)


def test_layers__no_module_outside_a_layer_folder() -> None:
    """labkit/ holds layer folders and its own __init__ and __main__, nothing else: a new module goes
    into the folder of its layer (or a new layer folder, with a face)."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ROOT_FILES)
    assert loose == []
    assert [m for m in graph() if layer_of(m) == "?"] == []


@pytest.mark.parametrize("layer", layer_folders())
def test_layers__each_folder_has_a_face__saying_what_it_holds_and_may_import(layer: str) -> None:
    """A layer's __init__ has a docstring with a `May import:` line that names only layer folders."""
    docstring = face(layer)
    line = may_import_line(docstring)
    assert line is not None, f"labkit/{layer}/__init__.py: no docstring with a 'May import: ...' line"
    assert len(docstring.split("May import:")[0].split()) >= 10, "the face says what the layer holds first"
    unknown = parse_may_import(line, layer_folders()) - set(layer_folders())
    assert unknown == set(), f"labkit/{layer}/__init__.py may import {sorted(unknown)}: not layer folders"


def test_layers__each_import_goes_to_an_allowed_layer() -> None:
    """A layer imports only the layers its face's `May import:` line names (and the one UPWARD edge)."""
    allowed = may_import()
    bad = [
        f"{a} ({layer_of(a)}) -> {b} ({layer_of(b)})"
        for a, targets in sorted(graph().items())
        for b in sorted(targets)
        if layer_of(b) not in allowed[layer_of(a)] and (a, b) not in UPWARD
    ]
    assert bad == []


def test_layers__may_import__has_no_cycle() -> None:
    """The faces' `May import:` lines order the layers: no layer may import one that may import it back
    (the root and its lazy names aside), so the layers stack as docs/architecture.md draws them."""
    allowed = {layer: {b for b in targets if b != layer} for layer, targets in may_import().items() if layer != ROOT}
    assert cycles(allowed) == []


def architecture_doc_rules() -> dict[str, set[str]]:
    """docs/architecture.md's table of layer folders: ``| `labkit/x/` | shared, endpoint |`` -> {x: {...}}."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rules: dict[str, set[str]] = {}
    for cells in re.findall(r"^\| ((?:`labkit/\w+/`(?:, )?)+) \| ([^|]+) \|$", doc, re.MULTILINE):
        allowed = parse_may_import(cells[1].split(" (")[0].strip(), layer_folders())
        for layer in re.findall(r"`labkit/(\w+)/`", cells[0]):
            rules[layer] = allowed
    return rules


def test_architecture_doc__draws_every_layer_folder_with_its_faces_rule() -> None:
    """docs/architecture.md's picture names every layer folder, and its table says what each face says."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    picture = doc.split("```")[1]
    assert [layer for layer in layer_folders() if f"{layer}/" not in picture] == []
    faces = {layer: allowed - {layer} for layer, allowed in may_import().items() if layer != ROOT}
    assert architecture_doc_rules() == faces


def test_rooms__every_engine_module_in_exactly_one_room() -> None:
    """A new module of labkit/endpoint/ must be placed in a room (and docs/architecture.md) before it can land."""
    engine = [m for m in graph() if layer_of(m) == "endpoint"]
    assert [m for m in engine if room_of(m) == "?"] == []
    members = [m for room in ROOMS.values() for m in room]
    assert len(members) == len(set(members))


def test_rooms__each_engine_import_goes_to_an_allowed_room() -> None:
    """Inside labkit/endpoint/, a room imports only the rooms ROOM_MAY_IMPORT lists: the wire and the
    store know no operation, the operations' modules are loaded by the engine alone."""
    bad = [
        f"{a} ({room_of(a)}) -> {b} ({room_of(b)})"
        for a, targets in sorted(graph().items())
        if layer_of(a) == "endpoint"
        for b in sorted(targets)
        if layer_of(b) == "endpoint" and room_of(b) not in ROOM_MAY_IMPORT[room_of(a)]
    ]
    assert bad == []


def test_upward_edge__floor_reaches_the_composition_root_lazily_only() -> None:
    """backend imports labkit.embedded inside connect() only, and the root never reaches backend:
    so the edge cannot close a cycle, and `import labkit.shared.backend` does not load the engine."""
    for a, b in UPWARD:
        assert edges_of(a)[b] is True, f"{a} imports {b} at module level"
        assert a not in reachable(graph(), [b])


def test_engine_core__imports_no_plugin() -> None:
    """labkit/endpoint/ reaches nothing but itself and the floor: no throughput, faults, storms,
    composition root, race lab, pattern or lab — not even inside a function."""
    core = [m for m in graph() if layer_of(m) == "endpoint"]
    wings = ("engine_plugins", "embedded", "races", "patterns", "lab")
    assert in_wing(reachable(graph(), core), *wings) == []


def test_floor__imports_no_wing() -> None:
    """The shared floor reaches no race lab, engine, pattern, plug-in or lab (but for UPWARD)."""
    floor = [m for m in graph() if layer_of(m) == "shared"]
    wings = ("races", "endpoint", "patterns", "engine_plugins", "lab", "embedded")
    assert in_wing(reachable(graph(), floor, skip=UPWARD), *wings) == []


def test_engine_plugins__reach_no_engine() -> None:
    """throughput and faults talk to the engine through labkit.shared.engine_hooks, never by import."""
    plugins = [m for m in graph() if layer_of(m) == "engine_plugins"]
    assert in_wing(reachable(graph(), plugins), "endpoint", "embedded") == []


@pytest.mark.parametrize("module", FAULTS_CLIENT)
def test_faults_client_side__imports_no_engine(module: str) -> None:
    """Fault notation, race-lab injection, rules and the control client never load the engine."""
    reached = reachable(graph(), [f"labkit.engine_plugins.faults.{module}"])
    assert in_wing(reached, "endpoint", "embedded", "engine_plugins.faults.injector") == []


@pytest.mark.parametrize("path", [p for n, p in modules().items() if layer_of(n) == "patterns"], ids=str)
def test_pattern__imports__never_the_race_lab_or_another_pattern(path: Path) -> None:
    """A pattern stands on the floor only: no labkit.races, no other pattern."""
    name = module_name(path)
    own = ".".join(name.split(".")[1:3])
    assert in_wing(graph()[name], "races", *(w for w in PATTERNS if w != own)) == []


@pytest.mark.parametrize("path", [p for n, p in modules().items() if layer_of(n) == "races"], ids=str)
def test_race_lab__imports__never_a_pattern(path: Path) -> None:
    """The race lab works on any actor: it imports no pattern."""
    assert in_wing(graph()[module_name(path)], "patterns") == []


def test_moto__imported_only_by_the_engine() -> None:
    """moto is the engine's business: only labkit/endpoint/ imports it."""
    outside = []
    for name, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n, _ in import_nodes(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n, _ in import_nodes(tree) if isinstance(n, ast.ImportFrom) and not n.level}
        if any(n.split(".")[0] == "moto" for n in names) and layer_of(name) != "endpoint":
            outside.append(name)
    assert outside == []


def test_engines_and_endpoints__constructed_only_in_the_composition_root() -> None:
    """Hooks are attached in one place: no labkit module but embedded.py calls DynamoEngine(...)
    or EmbeddedEndpoint(...)."""
    builders = {"DynamoEngine", "EmbeddedEndpoint"}
    found = sorted(
        name
        for name, path in modules().items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in builders
    )
    assert set(found) == {"labkit.embedded"}


# --- import hygiene (in a fresh interpreter) ---------------------------------------------------
HEAVY = ("pandas", "boto3", "botocore", "moto", "matplotlib", "labkit.endpoint", "labkit.embedded")


@pytest.mark.parametrize(
    "statement", ["import labkit", "import labkit.shared.errors", "from labkit.shared import errors"]
)
def test_import__cheap__no_pandas_boto3_moto_or_engine(statement: str) -> None:
    """`import labkit` / `import labkit.shared.errors` load the error tree only (as -X importtime shows)."""
    code = f"{statement}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = out.stdout.split()
    assert [m for m in loaded if any(m == h or m.startswith(h + ".") for h in HEAVY)] == []
    assert "labkit.shared.errors" in loaded


@pytest.mark.parametrize("statement", ["import labkit.shared.intercept", "import labkit.shared.catalogue"])
def test_import__floor_modules__no_pandas_no_race_lab_no_engine(statement: str) -> None:
    """The interception floor (the plugin's and the race lab's) loads botocore only; the catalogue nothing."""
    code = f"{statement}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = out.stdout.split()
    heavy = ("pandas", "boto3", "moto", "matplotlib", "labkit.races", "labkit.endpoint", "labkit.embedded")
    assert [m for m in loaded if any(m == h or m.startswith(h + ".") for h in heavy)] == []
    if statement.endswith("operations"):
        assert "botocore" not in loaded


def test_import__public_name__loaded_on_first_use() -> None:
    """labkit.connect, labkit.races and labkit.FlagStore still work: imported when first touched."""
    code = (
        "import sys, labkit\nassert 'labkit.shared.backend' not in sys.modules\n"
        "print(labkit.connect.__module__, labkit.races.__name__, labkit.FlagStore.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["labkit.shared.backend", "labkit.races", "FlagStore"]


#: What the first answer of ``labkit serve`` and of the plugin's endpoint does not need (docs/testing.md, start-up).
NOT_SERVED = (
    "labkit.races",
    "labkit.engine_plugins.faults.kinds",
    "labkit.engine_plugins.faults.race",
    "labkit.endpoint.store.durable",
)


def test_import__labkit_serve__engine_built_without_the_race_lab_or_its_faults() -> None:
    """`labkit serve`'s imports and a memory-only engine load neither the race lab, its fault notation nor the data
    directory's module (decision 227)."""
    code = (
        "import sys\nfrom labkit.commands.cli import build_parser\nbuild_parser()\n"
        "from labkit.embedded import build_engine\nbuild_engine()\nprint('\\n'.join(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = out.stdout.split()
    assert "labkit.engine_plugins.faults.injector" in loaded
    assert [m for m in loaded if any(m == h or m.startswith(h + ".") for h in NOT_SERVED)] == []


def test_import__labkit_commands_cli__no_botocore_no_engine_until_a_command_runs() -> None:
    """`import labkit.commands.cli` loads neither botocore nor labkit's client or engine: a command imports its own."""
    code = "import labkit.commands.cli\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    loaded = out.stdout.split()
    heavy = ("boto3", "botocore", "moto", "labkit.shared.backend", "labkit.endpoint", "labkit.embedded")
    assert [m for m in loaded if any(m == h or m.startswith(h + ".") for h in heavy)] == []
    assert "labkit.commands.cli" in loaded


def test_import__faults_names__loaded_on_first_use_and_control_is_the_function() -> None:
    """Every name of labkit.engine_plugins.faults resolves; `control` stays the function once its module is imported."""
    code = (
        "import labkit.engine_plugins.faults as f\nimport labkit.engine_plugins.faults.control\n"
        "missing = [n for n in f.__all__ if getattr(f, n, None) is None]\n"
        "from labkit.engine_plugins.faults import control\nprint(missing, callable(control), type(control).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["[]", "True", "function"]


# --- the checker itself ------------------------------------------------------------------------
def test_cycles__a_cycle__named_as_a_path() -> None:
    """The cycle finder finds a planted cycle and names it module by module."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_of__function_level_counts_type_checking_does_not() -> None:
    """A lazy import is an edge (marked lazy); an import under TYPE_CHECKING is none."""
    source = (
        "from typing import TYPE_CHECKING\nfrom . import constants as C\n"
        "if TYPE_CHECKING:\n    from ..races import run_interleaving\n"
        "def f():\n    from ..embedded import shared_endpoint\n"
    )
    known = {"labkit", "labkit.shared.constants", "labkit.races", "labkit.embedded", "labkit.shared.backend"}
    assert imports_of("labkit.shared.backend", source, known, False) == {
        "labkit.shared.constants": False,
        "labkit.embedded": True,
    }


def test_imports_of__package_loading_submodules_by_name__imports_each() -> None:
    """A package __init__ that calls importlib.import_module has an edge (lazy) to each of its submodules."""
    known = {"labkit.p", "labkit.p.a", "labkit.p.b", "labkit.p.b.deep", "labkit.q"}
    source = "import importlib\ndef load(n):\n    return importlib.import_module(f'{__name__}.{n}')\n"
    assert imports_of("labkit.p", source, known, True) == {"labkit.p.a": True, "labkit.p.b": True}


def test_imports_of__submodule_import__runs_its_package() -> None:
    """Importing labkit.endpoint.engine from outside runs labkit/endpoint/__init__ too."""
    known = {"labkit", "labkit.endpoint", "labkit.endpoint.engine", "labkit.engine_plugins.throughput"}
    edges = imports_of("labkit.engine_plugins.throughput", "from ..endpoint.engine import X\n", known, False)
    assert set(edges) == {"labkit.endpoint", "labkit.endpoint.engine"}


def test_may_import_line__read_from_a_face__names_nothing_every_layer_or_a_list() -> None:
    """A face's `May import:` line (wrapped or not) becomes a set of layers; none, all, or those named."""
    doc = "Holds things.\n\nMay import: shared, engine_plugins\nand races. Then more prose."
    assert may_import_line(doc) == "shared, engine_plugins and races"
    assert parse_may_import("shared, engine_plugins and races", ["x"]) == {"shared", "engine_plugins", "races"}
    assert parse_may_import("nothing", ["a", "b"]) == set()
    assert parse_may_import("every layer", ["a", "b"]) == {"a", "b"}
    assert may_import_line("Holds things; may import: shared.") is None
