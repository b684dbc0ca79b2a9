"""Two structural rules, checked on the source of every module of the project's packages.

1. **No import cycles.** The import graph has one node per module and one edge per import statement found
   anywhere in the module: at the top, under ``if TYPE_CHECKING:`` and inside functions. A type-only or a
   deferred import still makes the two modules change together, and is one refactor away from an import
   that fails at start-up. A cycle is a strongly connected component of more than one module.

   How an import names its target:
   * ``import a.b.c`` and ``from a.b.c import name`` import module ``a.b.c``; ``from a.b import c``, where
     ``a.b.c`` is a module, imports the submodule ``a.b.c`` (not the package ``a.b``).
   * Importing a package means importing its ``__init__`` (Python runs it); so a package that re-exports
     its submodules, and a submodule that takes a name from its own package's ``__init__``
     (``from pkg import Name``), close a cycle. Import the defining submodule instead.
   * The implicit import of a module's parent packages (``import a.b.c`` runs ``a/__init__`` and
     ``a/b/__init__`` first) is not an edge: every submodule would otherwise be in a cycle with a package
     that re-exports it.

2. **No reads of another object's private attributes outside its own module.** ``x._name`` (any access:
   read, write, call) is a reach into another object's internals unless
   * ``x`` is ``self``, ``cls`` or ``super()``, or a module-level name of the same module (a class or
     function of this module reaching its own class attributes), or
   * ``_name`` belongs to this module: a class of this module defines it (``self._name = ...``, or a
     method / class attribute ``_name``) and no project module this module imports defines it too. (Without
     types the checker cannot tell whose ``_closed`` ``x._closed`` is; when the imported modules also
     define ``_name``, it counts as a reach.) or
   * ``_name`` is in ``ALLOWED_PRIVATE_NAMES``: the standard library's public API spelled with an
     underscore.
   ``__dunder__`` names are not private.

A split class hands its helper modules a small typed context (a Protocol or a dataclass of collaborators),
never itself; see ``pykafka_client/admin/admin_context.py`` for the admin's.

The allow-lists ``PENDING_CYCLES`` and ``PENDING_PRIVATE_REACHES`` name what remains in areas being
reshaped on other branches (issue 23, items 2-5); they may only shrink: an entry that no longer matches
fails the test too, so that it is deleted when its area is fixed.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pykafka_client", "mini_broker", "spark_connector", "pyspark_pykafka")

#: Private-looking names that are the documented public API of the standard library.
ALLOWED_PRIVATE_NAMES = frozenset({
    # collections.namedtuple / typing.NamedTuple API
    "_replace", "_asdict", "_fields", "_make", "_field_defaults",
    # enum.Enum lookup table (value -> member), documented in the enum HOWTO
    "_value2member_map_", "_member_map_", "_missing_",
    # sys._getframe, os._exit
    "_getframe", "_exit",
    # concurrent.futures.Future's hook that runs the done-callbacks: FutureRecordMetadata subclasses Future and
    # completes its futures outside their condition (one batch at a time), so it calls the hook itself
    "_invoke_callbacks",
})

# --- known remaining findings in areas other branches reshape (issue 23); shrink at merge ----------------

#: Import cycles left in areas owned by other branches (each a set of modules forming one cycle).
PENDING_CYCLES: tuple[frozenset[str], ...] = (
)

#: Private reaches left in areas owned by other branches: module -> the reaching expressions (as written,
#: with repeats).
PENDING_PRIVATE_REACHES: Mapping[str, tuple[str, ...]] = {}


# --- the model --------------------------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def all_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


@cache
def parsed(module: str) -> ast.Module:
    return ast.parse(all_modules()[module].read_text(encoding="utf-8"))


def imported_modules(module: str, tree: ast.Module, known: Iterable[str], is_package: bool) -> set[str]:
    """The project modules ``tree`` (the source of ``module``) imports, by the rules in the docstring."""
    known = set(known)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = alias.name
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module or ""
            for alias in node.names:
                sub = f"{parent}.{alias.name}"
                target = sub if sub in known else parent
                if target in known:
                    found.add(target)
    found.discard(module)
    return found


@cache
def import_graph() -> dict[str, frozenset[str]]:
    modules = all_modules()
    return {
        name: frozenset(imported_modules(name, parsed(name), modules, path.name == "__init__.py"))
        for name, path in modules.items()
    }


def cycles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def defined_privates(tree: ast.Module) -> set[str]:
    """Private names a module's own classes and body define: ``self._x = ...`` / ``cls._x = ...``, private
    methods and classes, and private names assigned at module or class level (not local variables, not
    ``other._x = ...``)."""
    names: set[str] = set()
    scopes: list[list[ast.stmt]] = [tree.body]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            scopes.append(node.body)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _is_private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _is_private(node.name):
            names.add(node.name)
    for body in scopes:
        for stmt in body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name) and _is_private(t.id))
    return names


def module_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def private_reaches(tree: ast.Module, own: set[str], imported_own: set[str]) -> list[tuple[int, str]]:
    """(line, expression) of every reach into another object's private attribute in ``tree``.

    ``own``: the private names this module defines; ``imported_own``: those the modules it imports define.
    """
    mine = own - imported_own
    local = module_level_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _is_private(node.attr):
            continue
        receiver = node.value
        if isinstance(receiver, ast.Name) and (receiver.id in ("self", "cls") or receiver.id in local):
            continue
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super":
            continue
        if node.attr in mine or node.attr in ALLOWED_PRIVATE_NAMES:
            continue
        found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


@cache
def all_private_reaches() -> dict[str, list[tuple[int, str]]]:
    graph = import_graph()
    defined = {name: defined_privates(parsed(name)) for name in all_modules()}
    result: dict[str, list[tuple[int, str]]] = {}
    for name in all_modules():
        imported_own: set[str] = set()
        for dep in graph[name]:
            imported_own |= defined[dep]
        reaches = private_reaches(parsed(name), defined[name], imported_own)
        if reaches:
            result[name] = reaches
    return result


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _per_package(counts: Counter[str]) -> str:
    return ", ".join(f"{pkg}: {n}" for pkg, n in sorted(counts.items())) or "none"


# --- the rules --------------------------------------------------------------------------------------------


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    pending = set(PENDING_CYCLES)
    new = [c for c in found if c not in pending]
    stale = [c for c in PENDING_CYCLES if c not in found]
    graph = import_graph()
    lines = []
    for component in sorted(new, key=sorted):
        lines.append("  cycle: " + ", ".join(sorted(component)))
        for module in sorted(component):
            inside = sorted(graph[module] & component)
            lines.append(f"    {all_modules()[module].relative_to(ROOT)} imports {', '.join(inside)}")
    for component in stale:
        lines.append("  no longer a cycle, delete it from PENDING_CYCLES: " + ", ".join(sorted(component)))
    per_package = Counter(_package(min(c)) for c in new)
    assert not lines, (
        f"{len(found)} import cycles ({len(new)} not allowed; {len(found) - len(new)} pending in other areas); "
        f"not allowed per package: {_per_package(per_package)}. Break each by giving the lower module a "
        "typed context (Protocol) instead of importing its owner, or by moving the shared type down:\n"
        + "\n".join(lines)
    )


def test_no_private_reaches_into_other_objects() -> None:
    found = all_private_reaches()
    lines = []
    per_package: Counter[str] = Counter()
    total = sum(len(v) for v in found.values())
    for module, reaches in sorted(found.items()):
        allowed = Counter(PENDING_PRIVATE_REACHES.get(module, ()))
        for line, expr in reaches:
            if allowed[expr] > 0:
                allowed[expr] -= 1
                continue
            per_package[_package(module)] += 1
            lines.append(f"  {all_modules()[module].relative_to(ROOT)}:{line}: {expr}")
    for module, exprs in sorted(PENDING_PRIVATE_REACHES.items()):
        left = Counter(expr for _, expr in found.get(module, []))
        for expr, n in sorted(Counter(exprs).items()):
            if left[expr] < n:
                lines.append(f"  {module}: {expr} is gone, delete it from PENDING_PRIVATE_REACHES")
    assert not lines, (
        f"{total} reads of another object's private attributes outside its module "
        f"({sum(per_package.values())} not allowed, in {len({m for m in found})} modules); not allowed per "
        f"package: {_per_package(per_package)}. Give the owner a public, typed member (or pass a typed "
        "context) instead:\n" + "\n".join(lines)
    )


# --- the checker itself -----------------------------------------------------------------------------------


def test_cycles_finds_components_only() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}, "f": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]


def test_imports_resolve_submodules_relative_imports_and_type_checking() -> None:
    known = {"p", "p.a", "p.b", "p.sub", "p.sub.c"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from p.a import A\n"
        "def f():\n    from . import b\n    from .sub import c\n    import p.sub.c.deeper\n"
        "from p import Name\n"
    )
    assert imported_modules("p.x", ast.parse(source), known, False) == {"p.a", "p.b", "p.sub.c", "p"}
    assert imported_modules("p.sub", ast.parse("from . import c\nfrom .. import a\n"), known, True) == {
        "p.sub.c", "p.a"
    }


def test_private_reach_rules() -> None:
    source = (
        "import sys\n"
        "class Box:\n"
        "    _shared = 1\n"
        "    def __init__(self):\n        self._mine = 1\n"
        "    def eq(self, other):\n        return other._mine == self._mine\n"
        "    def up(self):\n        return super()._x + Box._shared + self.__dict__['a']\n"
        "def reach(admin, r):\n"
        "    admin._lock.acquire()\n"
        "    return r._replace(a=1), sys._getframe(), admin.thing._timer\n"
    )
    tree = ast.parse(source)
    assert private_reaches(tree, defined_privates(tree), set()) == [(11, "admin._lock"), (12, "admin.thing._timer")]
    # assigning another object's private attribute, or a local variable, does not make the name this module's
    other = ast.parse("def f(x):\n    _lock = 1\n    x._lock = _lock\n    return x._lock\n")
    assert private_reaches(other, defined_privates(other), set()) == [(3, "x._lock"), (4, "x._lock")]
    # the same name defined by an imported module is someone else's too
    assert private_reaches(tree, defined_privates(tree), {"_mine"})[0] == (7, "other._mine")
