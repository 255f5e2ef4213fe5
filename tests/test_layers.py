"""The package's layers: every import points down (docs/architecture.md).

Read from the source with ``ast`` (nothing is imported), so a new module or a new import
is checked the moment it exists.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from repo_root import REPO_ROOT

PACKAGE = REPO_ROOT / "infrastore_sqlite"

#: Lower numbers are lower layers; a module may import the layers below and its own
#: package, never a sibling package of its own layer.
LAYERS = {
    "_version": 0,
    "errors": 0,
    "core": 1,
    "model": 2,
    "store": 3,
    "interchange": 4,
    "textfiles": 4,
    "demo": 5,
    "cli": 6,
}

#: The only imports that point up: methods of the reference's API whose work is a
#: container's (``Store.export_sqlite`` / ``import_sqlite`` / ``export_parquet`` /
#: ``import_parquet`` / ``diff_sqlite`` / ``diff_parquet``) load it when called.
#: The containers: packages of the interchange layer that know a file format.
CONTAINERS = [["sqlite"], ["parquet"]]

#: Where ``if TYPE_CHECKING:`` imports are: they name types and run never.
TYPE_ONLY = "TYPE_CHECKING"

CALL_TIME_EXCEPTIONS = {
    ("store.store", "export_sqlite", "interchange.sqlite"),
    ("store.store", "import_sqlite", "interchange.sqlite"),
    ("store.store", "diff_sqlite", "interchange.sqlite"),
    ("store.store", "export_parquet", "interchange.parquet"),
    ("store.store", "import_parquet", "interchange.parquet"),
    ("store.store", "diff_parquet", "interchange.parquet"),
    # The types those methods take and return, named for annotations only.
    ("store.store", "TYPE_CHECKING", "interchange.importing"),
    ("store.store", "TYPE_CHECKING", "interchange.options"),
    ("store.store", "TYPE_CHECKING", "interchange.plan_types"),
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "data" not in p.relative_to(PACKAGE).parts)


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(source: str, module: str, *, is_package: bool) -> list[tuple[str, str | None]]:
    """``(imported module within the package, enclosing function or None)`` for each import."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[tuple[str, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = function
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = child.name
            elif (
                isinstance(child, ast.If)
                and isinstance(child.test, ast.Name)
                and child.test.id == "TYPE_CHECKING"
            ):
                inner = TYPE_ONLY  # its else branch (none in the package) would be missed
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - child.level + 1]
                    target = ".".join([*base, *(child.module.split(".") if child.module else [])])
                    names = (
                        [target] if child.module else [f"{target}.{a.name}" for a in child.names]
                    )
                    found.extend((n.strip("."), inner) for n in names)
                elif child.module and child.module.startswith("infrastore_sqlite."):
                    found.append((child.module.removeprefix("infrastore_sqlite."), inner))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.startswith("infrastore_sqlite."):
                        found.append((alias.name.removeprefix("infrastore_sqlite."), inner))
            visit(child, inner)

    visit(ast.parse(source), None)
    return found


def _layer(module: str) -> int | None:
    return LAYERS.get(module.split(".")[0]) if module else None


def _container(module: str) -> str | None:
    """``interchange.sqlite`` for a module of a container's package, else None."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "interchange" and parts[1:2] in CONTAINERS else None


def _violations(module: str, imports: list[tuple[str, str | None]]) -> list[str]:
    own = _layer(module)
    if own is None:  # the package root and __main__ sit above every layer
        return []
    wrong = []
    for target, function in imports:
        where = f"{target or 'the package root'} (in {function or 'the module'})"
        layer = _layer(target)
        if layer is None:
            wrong.append(where)
        elif (module, function, ".".join(target.split(".")[:2])) in CALL_TIME_EXCEPTIONS:
            continue
        elif layer > own:
            wrong.append(where)
        elif layer == own and own > 0 and target.split(".")[0] != module.split(".")[0]:
            wrong.append(where)  # siblings (the interchange, the text files) stand apart
        elif (
            module.startswith("interchange")
            and _container(target)
            and _container(target) != _container(module)
        ):
            wrong.append(where)  # what the containers share knows no container, nor each other
    return wrong


@pytest.mark.parametrize("path", _modules(), ids=_dotted)
def test_imports_point_down(path: Path) -> None:
    module = _dotted(path)
    source = path.read_text(encoding="utf-8")
    wrong = _violations(module, _imports(source, module, is_package=path.name == "__init__.py"))
    assert not wrong, f"{module} imports above its layer: {', '.join(wrong)}"


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("core.probe", "from ..store import Store\n"),
        ("store.probe", "import infrastore_sqlite.interchange.plan\n"),
        ("interchange.probe", "def f():\n    from .sqlite import writer\n"),
        ("interchange.parquet.probe", "from ..sqlite.cells import decode_cells\n"),
        ("store.probe", "def export_sqlite():\n    from ..cli import cli\n"),
        ("model", "from . import cli\n"),
        ("store.probe", "from .. import __version__\n"),
        ("textfiles.reading", "from ..demo import data_file\n"),
        ("interchange.probe", "from ..textfiles import to_json\n"),
        ("store.probe", "if TYPE_CHECKING:\n    from ..interchange.options import Selection\n"),
        ("store.store", "if TYPE_CHECKING:\n    from ..interchange.sqlite import writer\n"),
    ],
)
def test_the_checker_sees_an_upward_import(module: str, source: str) -> None:
    assert _violations(module, _imports(source, module, is_package=False))


def test_click_only_in_the_command_line() -> None:
    users = [
        _dotted(p)
        for p in _modules()
        if not _dotted(p).startswith("cli")
        and any(
            (isinstance(n, ast.Import) and any(a.name == "click" for a in n.names))
            or (isinstance(n, ast.ImportFrom) and n.module == "click")
            for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        )
    ]
    assert users == []


# ------------------------------------------------------------------ rooms within a package
#: Within these packages each module is a room with one job, and a room imports only the
#: rooms before it in its list (type hints under ``if TYPE_CHECKING:`` excepted: the store's
#: rooms name the ``Store`` they serve, but never call into the facade). ``__init__`` sits
#: above its package's rooms. A new module of such a package must be placed in its list.
ROOM_ORDER = {
    "store": [
        "tracing",
        "rows",
        "direct",
        "arrays",
        "prepare",
        "rowcheck",
        "catalog",
        "segments",
        "state",
        "conflicts",
        "journal",
        "damage",
        "readers",
        "api",
        "queries",
        "reading",
        "transactions",
        "writing",
        "maintenance",
        "rebuild",
        "catalog_copy",
        "lifecycle",
        "repair",
        "store",
    ],
    "interchange.importing": [
        "limits",
        "options",
        "report",
        "places",
        "keys",
        "specs",
        "filing",
        "building",
        "batches",
        "run",
    ],
    "model": ["kinds", "base", "arrow", "static", "forecasts", "slicing"],
    "core.elements": ["kinds", "codec"],
    "interchange.sqlite.reader": ["decoding", "tables", "lookup", "group", "source"],
}


def _runtime_sibling_imports(path: Path, package: str) -> set[str]:
    """The rooms of ``package`` that the module at ``path`` imports when it runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def type_only(node: ast.AST) -> bool:
        test = getattr(node, "test", None)
        return isinstance(node, ast.If) and (
            (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
        )

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if type_only(child):
                continue
            if isinstance(child, ast.ImportFrom) and child.level == 1:
                if child.module:
                    found.add(child.module.split(".")[0])
                else:
                    found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                dotted = child.module.removeprefix("infrastore_sqlite.")
                if dotted.startswith(package + "."):
                    found.add(dotted.removeprefix(package + ".").split(".")[0])
            visit(child)

    visit(tree)
    return found


def _room_cases() -> list[tuple[str, str]]:
    return [(package, room) for package, rooms in ROOM_ORDER.items() for room in rooms]


@pytest.mark.parametrize(("package", "room"), _room_cases())
def test_rooms_import_only_the_rooms_before_them(package: str, room: str) -> None:
    rooms = ROOM_ORDER[package]
    path = PACKAGE.joinpath(*package.split("."), f"{room}.py")
    assert path.is_file(), f"{package}.{room} is listed in ROOM_ORDER but does not exist"
    later = _runtime_sibling_imports(path, package) - set(rooms[: rooms.index(room)]) - {room}
    assert not later, f"{package}.{room} imports rooms listed after it: {sorted(later)}"


@pytest.mark.parametrize("package", sorted(ROOM_ORDER))
def test_every_room_is_placed(package: str) -> None:
    folder = PACKAGE.joinpath(*package.split("."))
    present = {p.stem for p in folder.glob("*.py")} - {"__init__"}
    assert present == set(ROOM_ORDER[package]), (
        f"{package}: modules not placed in ROOM_ORDER: {sorted(present - set(ROOM_ORDER[package]))}"
    )


def test_the_room_checker_sees_a_later_room(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from .base import Series\n"
        "from infrastore_sqlite.model.static import SingleTimeSeries\n"
        "def f():\n    from . import forecasts\n"
        "if TYPE_CHECKING:\n    from .kinds import X\n",
        encoding="utf-8",
    )
    assert _runtime_sibling_imports(probe, "model") == {"base", "static", "forecasts"}


# ------------------------------------------------------------------------- store rooms' edges
# The store's rooms receive what they work with as constructor arguments (issue 35): the
# shared state (``state.StoreState``) and the rooms they call. So the edges the rooms use
# at run time are the annotations of their constructors, and those must point to rooms
# placed before them in ROOM_ORDER, never to the ``Store`` facade.
STATE_CLASS = "StoreState"


def _imported_from(tree: ast.Module) -> dict[str, str]:
    """Each name a module imports from a sibling (``from .x import Name``) -> ``x``,
    those imported only for type checking included."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            for alias in node.names:
                names[alias.asname or alias.name] = node.module.split(".")[0]
    return names


def _room_edges(source: str) -> dict[str, list[str]]:
    """``class -> [sibling module of each constructor parameter's annotation]`` for every
    class whose constructor receives the store's state (a room); ``"?"`` for a parameter
    whose type is not a sibling's class."""
    tree = ast.parse(source)
    origin = _imported_from(tree)
    edges: dict[str, list[str]] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        init = next(
            (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None
        )
        if init is None:
            continue
        params = [*init.args.args[1:], *init.args.kwonlyargs]
        annotations = [ast.unparse(a.annotation) if a.annotation else "" for a in params]
        if STATE_CLASS not in annotations:
            continue
        edges[cls.name] = [origin.get(a.strip("'\""), "?") for a in annotations]
    return edges


def _store_rooms() -> list[str]:
    return [r for r in ROOM_ORDER["store"] if r != "store"]


@pytest.mark.parametrize("room", _store_rooms())
def test_store_rooms_receive_only_earlier_rooms(room: str) -> None:
    rooms = ROOM_ORDER["store"]
    source = PACKAGE.joinpath("store", f"{room}.py").read_text(encoding="utf-8")
    for cls, modules in _room_edges(source).items():
        assert "store" not in modules, f"store.{room}.{cls} receives the Store facade"
        later = [m for m in modules if m not in rooms[: rooms.index(room)]]
        assert not later, (
            f"store.{room}.{cls}'s constructor receives {later}: a room receives the state "
            "and rooms placed before it in ROOM_ORDER only"
        )


def test_the_store_composes_every_room() -> None:
    """Every room class is built by ``Store.__init__`` (the composition root)."""
    rooms = {
        cls
        for room in _store_rooms()
        for cls in _room_edges(PACKAGE.joinpath("store", f"{room}.py").read_text("utf-8"))
    }
    tree = ast.parse(PACKAGE.joinpath("store", "store.py").read_text(encoding="utf-8"))
    store = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Store")
    init = next(f for f in store.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    built = {
        n.func.id
        for n in ast.walk(init)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    assert len(rooms) >= 5
    assert rooms <= built, f"rooms not composed in Store.__init__: {sorted(rooms - built)}"


def test_the_room_edge_checker_sees_a_later_room_and_the_facade() -> None:
    probe = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .state import StoreState\n"
        "    from .writing import Writing\n"
        "    from .store import Store\n"
        "class Room:\n"
        "    def __init__(self, state: StoreState, writing: Writing, store: Store) -> None:\n"
        "        pass\n"
        "class Helper:\n"
        "    def __init__(self, store: Store) -> None:\n"
        "        pass\n"
    )
    assert _room_edges(probe) == {"Room": ["state", "writing", "store"]}


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.joinpath("store").glob("*.py")), ids=lambda p: p.stem
)
def test_no_store_module_reaches_through_a_private_attribute(path: Path) -> None:
    """``self._a._b`` (or ``x._a._b``) is a reach into another object's private state: a
    room uses what another room or the state offers publicly."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    reaches = [
        f"{path.name}:{n.lineno} {ast.unparse(n)}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
        and isinstance(n.value, ast.Attribute)
        and n.value.attr.startswith("_")
        and not n.value.attr.startswith("__")
    ]
    assert not reaches, f"private reaches into another object: {reaches}"


# ------------------------------------------------------------------------- room sizes
# Size is a signal, not a rule: a module past ~1,200 lines is looked at again (does it
# still hold one responsibility?), and only one past 1,500 fails here. Never split a class
# or a concept across files to meet a count (issue 35).
MAX_MODULE_LINES = 1500


@pytest.mark.parametrize("path", _modules(), ids=_dotted)
def test_no_module_over_1500_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, (
        f"{_dotted(path)} has {lines} lines: does it still hold one responsibility? Split it "
        "by concept, never by count (docs/architecture.md)"
    )


# ------------------------------------------------------------------------- no circles
def _runtime_imports(source: str, module: str, *, is_package: bool) -> list[tuple[str, str | None]]:
    """:func:`_imports` of ``module``, less those under ``if TYPE_CHECKING:`` (names for
    type hints, never run) and the container loads of :data:`CALL_TIME_EXCEPTIONS` (the
    ``Store`` methods that load a container when called)."""
    tree = ast.parse(source)

    class _DropTypeOnly(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.AST | None:
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                return None
            return self.generic_visit(node)

    source = ast.unparse(_DropTypeOnly().visit(tree))
    return [
        (target, function)
        for target, function in _imports(source, module, is_package=is_package)
        if (module, function, ".".join(target.split(".")[:2])) not in CALL_TIME_EXCEPTIONS
    ]


def _import_graph(modules: dict[str, list[tuple[str, str | None]]]) -> dict[str, set[str]]:
    """``{module: the package's modules it imports}``: each import resolved to the longest
    module name it starts with (``from ..model import X`` is ``model``, the package)."""
    graph: dict[str, set[str]] = {}
    for module, imports in modules.items():
        edges = graph.setdefault(module, set())
        for target, _function in imports:
            parts = target.split(".") if target else []
            while parts and ".".join(parts) not in modules:
                parts.pop()
            resolved = ".".join(parts)
            if resolved in modules and resolved != module:
                edges.add(resolved)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one
    module (Tarjan's algorithm, iterative), each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def test_no_import_circle() -> None:
    """No module of the package imports, directly or through others, a module that imports
    it: at module level or inside a function (a call-time import closes a circle as surely,
    only later), the ``Store`` methods that load a container when called excepted."""
    graph = _import_graph(
        {
            _dotted(p): _runtime_imports(
                p.read_text(encoding="utf-8"), _dotted(p), is_package=p.name == "__init__.py"
            )
            for p in _modules()
        }
    )
    circles = _circles(graph)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_the_circle_finder_sees_a_circle() -> None:
    # The circle issue 35 found: the model loaded the Parquet container's Arrow form, which
    # imports the model (here shortened to three modules, one import inside a method).
    modules = {
        "model": [("model.static", None)],
        "model.static": [("interchange.parquet.arrow", "to_arrow")],
        "interchange.parquet.arrow": [("model", None)],
        "core.periods": [],
        "errors": [],
    }
    assert _circles(_import_graph(modules)) == [
        ["interchange.parquet.arrow", "model", "model.static"]
    ]
    del modules["interchange.parquet.arrow"]
    assert _circles(_import_graph(modules)) == []


def test_the_circle_finder_skips_type_hints_and_store_methods() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from ..interchange.plan import ExportPlan\n"
        "def export_sqlite():\n    from ..interchange.sqlite import export_sqlite\n"
        "def other():\n    from ..interchange.parquet import export_parquet\n"
    )
    assert _runtime_imports(source, "store.store", is_package=False) == [
        ("interchange.parquet", "other")
    ]


# ------------------------------------------------------------------------------ privacy
# A name another module uses is public: no module imports an underscore name from another
# module of the package. Privacy is marked on a helper module instead (``location/_object``):
# only the modules of its own package import it.


def _private_imports(source: str, module: str, *, is_package: bool) -> list[str]:
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - node.level + 1]
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        elif node.module and node.module.startswith("infrastore_sqlite."):
            target = node.module.removeprefix("infrastore_sqlite.")
        else:
            continue
        for alias in node.names:
            name = alias.name
            if (PACKAGE / Path(*target.split("."), f"{name}.py")).is_file() or (
                PACKAGE / Path(*target.split("."), name)
            ).is_dir():
                target_module, name = f"{target}.{name}", ""
            else:
                target_module = target
            if name.startswith("_") and not name.startswith("__"):
                found.append(f"{module} imports {name} from {target_module}")
            # A private module (``_object``) is for the modules of its own package.
            parts = target_module.split(".")
            for i, part in enumerate(parts):
                if part.startswith("_") and not part.startswith("__"):
                    owner = ".".join(parts[:i])  # "" for the package root's ``_version``
                    if owner and not (module == owner or module.startswith(owner + ".")):
                        found.append(f"{module} imports the private module {target_module}")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: _dotted(p) or "__init__")
def test_no_underscore_name_crosses_a_module(path: Path) -> None:
    module = _dotted(path)
    found = _private_imports(
        path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
    )
    assert not found, "; ".join(found) + " (a name another module uses is public)"


@pytest.mark.parametrize(
    ("module", "source"),
    [
        ("store.store", "from .reading import _DEFAULT_BATCH_BYTES\n"),
        ("cli.add", "from ..interchange.parquet.location._object import ObjectLocation\n"),
    ],
)
def test_the_privacy_checker_sees_a_private_import(module: str, source: str) -> None:
    assert _private_imports(source, module, is_package=False)
