"""The package's floors hold: imports point down only, no runner imports another, and the domain
core imports no Dagster.

Floors, lowest first (README "Map of the code"):

0. ground: ``core/{settings,durable,text,textfile,failpoints,sources,outcome,backoff}.py``
1. ``core/models/``, ``core/capture/``, ``core/knowledge/`` (peers: none imports another)
2. ``core/index/`` (the table, its writer, its freshness)
3. ``core/search/`` (retrieval, ranking, context, listing: reads of the index)
4. ``core/home.py`` (the composition root: it builds the parts below for everything above)
5. ``core/audit/``
6. the runners: ``core/write_path/``, ``core/dream/``, ``core/reconcile.py``, ``core/legacy/``,
   ``core/erase/``
   (peers: no runner imports another)
7. ``core/ops/`` (use cases that cross runners)
8. the faces: ``cli.py``, ``demo.py``, ``definitions.py``, ``defs/``, ``server/``

A module may import a lower floor, or its own package. Every import counts: at the top, inside a
function, and under ``TYPE_CHECKING`` (a deferred import hides an arrow from a reader; it does
not remove it). A module no floor names fails the test until it is placed here.
"""

import ast
from pathlib import Path

import pytest

import memory_assets

PACKAGE = Path(memory_assets.__file__).parent
GROUND = {"settings", "durable", "text", "textfile", "failpoints", "sources", "outcome", "backoff"}
FLOORS: dict[str, int] = {
    "core.models": 1,
    "core.capture": 1,
    "core.knowledge": 1,
    "core.index": 2,
    "core.search": 3,
    "core.home": 4,
    "core.audit": 5,
    "core.write_path": 6,
    "core.dream": 6,
    "core.reconcile": 6,
    "core.legacy": 6,
    "core.erase": 6,
    "core.ops": 7,
    "cli": 8,
    "demo": 8,
    "definitions": 8,
    "defs": 8,
    "server": 8,
}
FACES = FLOORS["cli"]


def place(module: str) -> tuple[int, str] | None:
    """``module`` (dotted, below ``memory_assets``) -> (floor, the package it belongs to)."""
    parts = module.split(".")
    if parts == ["core"] or (len(parts) == 2 and parts[0] == "core" and parts[1] in GROUND):
        return 0, "ground"
    if parts == [""]:
        return FACES, "faces"  # memory_assets/__init__.py
    for depth in (2, 1):
        name = ".".join(parts[:depth])
        if name in FLOORS:
            floor = FLOORS[name]
            return floor, "faces" if floor == FACES else name
    return None


def imports_of(source: str) -> list[tuple[int, str]]:
    """(line, imported module below ``memory_assets``) for every import of the package in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "memory_assets" or node.module.count(".") == 1:
                # ``from memory_assets.core import text``: the names may be modules themselves.
                names = [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == "memory_assets" or name.startswith("memory_assets."):
                found.append((node.lineno, name.removeprefix("memory_assets").lstrip(".")))
    return found


def violations(module: str, source: str) -> list[str]:
    """Every import in ``source`` (the text of ``module``) that breaks the floors, as a sentence."""
    where = place(module)
    if where is None:
        return [f"{module}: on no floor; place it in FLOORS (memory_assets_tests/test_tiers.py)"]
    floor, package = where
    out = []
    for line, target in imports_of(source):
        there = place(target) or place(target.rpartition(".")[0])
        if there is None:
            out.append(f"{module}:{line} imports {target}, which is on no floor")
            continue
        to_floor, to_package = there
        if to_package == package:
            continue
        if to_floor > floor:
            out.append(f"{module}:{line} imports {target} (floor {to_floor}) from floor {floor}: an arrow up")
        elif to_floor == floor:
            out.append(
                f"{module}:{line} imports {target}: {package} and {to_package} are peers on floor {floor}"
            )
    return out


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def test_every_import_points_down_and_no_runner_imports_another() -> None:
    found = []
    for module, path in _modules():
        found += violations(module, path.read_text(encoding="utf-8"))
    assert found == []


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        # knowledge reading the index: the arrow the per-turn MEMORY.md writer once drew
        (
            "core.knowledge.memory_md",
            "def f():\n    from memory_assets.core.index.store import quote\n",
            "an arrow up",
        ),
        ("core.dream.lint", "from memory_assets.core.write_path.classifier import similarity\n", "peers"),
        ("core.capture.daily_log", "from memory_assets.core.knowledge import vault\n", "peers"),
        (
            "core.index.store",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from memory_assets.core.home import Home\n",
            "an arrow up",
        ),
        ("core.audit.checks", "import memory_assets.defs.resources\n", "an arrow up"),
        # the table's tier reading search: search reads the index, never the other way
        ("core.index.indexer", "from memory_assets.core.search.ranking import Hit\n", "an arrow up"),
        ("core.search.ranking", "from memory_assets.core.audit.checks import run_checks\n", "an arrow up"),
        ("core.brand_new", "import json\n", "on no floor"),
    ],
)
def test_the_floor_check_fails_on_a_wrong_import(module: str, source: str, expected: str) -> None:
    assert any(expected in v for v in violations(module, source))


def test_a_downward_import_passes() -> None:
    source = "from memory_assets.core.index.store import MemoryStore\nfrom memory_assets.core import text\n"
    assert violations("core.write_path.process", source) == []
    assert (
        violations("defs.index.assets", "from memory_assets.defs.resources import MemoryHomeResource\n") == []
    )


def test_domain_core_imports_no_dagster() -> None:
    offenders = []
    for module, path in _modules():
        if not (module.startswith("core") or module == "cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "dagster"]
    assert offenders == []


WRITER = "core.index.table_writer"
WRITER_USERS = {"core.index.indexer"}  # design §7 invariant 2: the indexer is the only writer


def writer_importers(module: str, source: str) -> list[str]:
    """Where ``source`` imports the table writer, unless ``module`` is the indexer (or the writer)."""
    if module in WRITER_USERS or module == WRITER:
        return []
    return [
        f"{module}:{line} imports {target}"
        for line, target in imports_of(source)
        if target.startswith(WRITER)
    ]


def test_only_the_indexer_obtains_the_table_writer() -> None:
    found = []
    for module, path in _modules():
        found += writer_importers(module, path.read_text(encoding="utf-8"))
    assert found == []
    assert writer_importers(
        "core.legacy.backup", "from memory_assets.core.index.table_writer import TableWriter\n"
    )
    assert writer_importers("cli", "def f():\n    import memory_assets.core.index.table_writer\n")


def test_the_store_has_no_write_method() -> None:
    from memory_assets.core.index.store import MemoryStore

    writes = {
        "apply_diff",
        "replace_source",
        "recreate",
        "table_for_write",
        "migrate",
        "optimize",
        "delete_ids",
    }
    assert writes.isdisjoint(dir(MemoryStore))


# -- the environment is read by the settings modules only ------------------------------------------

SETTINGS_MODULES = {"core.settings", "server.config", "defs.env"}
ENVIRONMENT_CALLS = {"environ", "getenv", "putenv", "unsetenv", "environb"}


def environment_reads(module: str, source: str) -> list[str]:
    """Where ``source`` touches the process's environment (``os.environ``, ``os.getenv``, ...),
    unless ``module`` is a settings module."""
    if module in SETTINGS_MODULES:
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in ENVIRONMENT_CALLS
        ):
            found.append(f"{module}:{node.lineno} reads os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [
                f"{module}:{node.lineno} imports os.{a.name}"
                for a in node.names
                if a.name in ENVIRONMENT_CALLS
            ]
    return found


def test_only_the_settings_modules_read_the_environment() -> None:
    """A variable is read in ``core/settings.py``, ``server/config.py`` or ``defs/env.py``, so every
    one the package reads is named (and checked) in one of them."""
    found = []
    for module, path in _modules():
        found += environment_reads(module, path.read_text(encoding="utf-8"))
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "import os\nX = os.environ.get('MEMORY_X')\n",
        "import os\nos.environ.setdefault('LANCEDB_LOG', 'error')\n",
        "import os\ndef f():\n    return os.getenv('MEMORY_X')\n",
        "from os import environ\n",
    ],
)
def test_the_environment_check_fails_on_a_raw_read(source: str) -> None:
    assert environment_reads("core.index.store", source)
    assert environment_reads("defs.env", source) == []


# -- the faces call the facade -----------------------------------------------------------------------

FACADE = ("core.ops", "core.home", "core.search")
# What the faces import from the core today beyond the facade and values (error, result and value
# types, constants; issue 41, item 7): a face module -> the core modules whose behaviour it still
# reaches past ``Home``, ``core.ops`` and ``core.search``. This list may only shrink: a new entry fails the test below, and so does an
# entry no longer needed (remove it). Move a face onto the facade, then take its line out.
FACE_EXCEPTIONS: dict[str, set[str]] = {
    # The ground floor's plumbing for a face's own files, output and process, which no use case of
    # the core owns: the CLI's own output file (`dagster-yaml --out`: durable.write_atomic), text
    # shortened for printing (text.excerpt), the native libraries' log level (settings.quiet_native_logs).
    "cli": {"core.durable", "core.settings", "core.text"},
    # The demo plays an assistant writing its daily logs directly (the race beside the reindexes),
    # and sets the native libraries' log level.
    "demo": {"core.capture.daily_log", "core.settings"},
    # The server's own files: its token file (lock, signature, atomic write) and Idempotency-Key
    # records (atomic write); its disk gate on the root (free bytes, disk full: 507 and /ready).
    "server.auth": {"core.durable"},
    "server.idempotency": {"core.durable"},
    "server.service": {"core.durable"},
    # A settings module: the server's variables parsed by the core's number rule.
    "server.config": {"core.settings"},
    # Request validation: a `said` of only whitespace is refused (text.clean_text).
    "server.schemas": {"core.text"},
}


def _is_value(module: str, name: str) -> bool:
    """Whether ``module.name`` is a value that may cross the facade rather than behaviour: an error
    type, a result or other value type (a dataclass, a NamedTuple, an Enum: ``TurnResult``,
    ``Settings``, ``IndexKey``) or a constant. A function, a class of another kind (``Indexer``,
    ``MemoryStore``) or a module is behaviour, which a face reaches through ``core.ops``,
    ``core.home`` or ``core.search``."""
    import dataclasses
    import enum
    import importlib
    import inspect

    found = getattr(importlib.import_module(f"memory_assets.{module}"), name, None)
    if inspect.ismodule(found):
        return False
    if isinstance(found, type):
        return (
            issubclass(found, (BaseException, enum.Enum))
            or dataclasses.is_dataclass(found)
            or (issubclass(found, tuple) and hasattr(found, "_fields"))
        )
    return not callable(found)


def past_the_facade(source: str) -> set[str]:
    """The core modules ``source`` imports other than the facade's (``core.ops``, ``core.home``,
    ``core.search``); an import of values only (error, result and value types, constants:
    ``_is_value``) is not counted."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = [(node.module, [a.name for a in node.names])]
        else:
            continue
        for name, names in targets:
            if not name.startswith("memory_assets.core"):
                continue
            module = name.removeprefix("memory_assets.")
            if module == "core" and names:  # ``from memory_assets.core import text``
                found |= {f"core.{n}" for n in names if not f"core.{n}".startswith(FACADE)}
                continue
            if module == "core" or module.startswith(FACADE):
                continue
            if names and all(_is_value(module, n) for n in names):
                continue
            found.add(module)
    return found


def test_the_faces_import_only_the_facade_and_error_types() -> None:
    found: dict[str, set[str]] = {}
    for module, path in _modules():
        where = place(module)
        if where is not None and where[0] == FACES:
            reached = past_the_facade(path.read_text(encoding="utf-8"))
            if reached:
                found[module] = reached
    new = {m: sorted(s - FACE_EXCEPTIONS.get(m, set())) for m, s in found.items()}
    assert {m: s for m, s in new.items() if s} == {}, (
        "a face reaches past the facade (core.ops, core.home, core.search)"
    )
    gone = {m: sorted(s - found.get(m, set())) for m, s in FACE_EXCEPTIONS.items()}
    assert {m: s for m, s in gone.items() if s} == {}, "no longer imported: take these out of FACE_EXCEPTIONS"


def test_the_facade_check_counts_behaviour_and_not_a_value() -> None:
    assert past_the_facade("from memory_assets.core.index.indexer import Indexer\n") == {"core.index.indexer"}
    assert past_the_facade("from memory_assets.core import text\n") == {"core.text"}
    assert past_the_facade("from memory_assets.core.write_path.process import process_turns\n") == {
        "core.write_path.process"
    }
    # a value beside behaviour from the same module still counts the module
    assert past_the_facade("from memory_assets.core.dream.runner import DreamResult, run_dream\n") == {
        "core.dream.runner"
    }
    assert past_the_facade("from memory_assets.core.settings import SettingsError\n") == set()
    assert past_the_facade("from memory_assets.core.write_path.process import TurnResult\n") == set()
    assert past_the_facade("from memory_assets.core.index.store import MAX_VERSIONS\n") == set()
    assert (
        past_the_facade("from memory_assets.core.home import Home\nimport memory_assets.core.ops.users\n")
        == set()
    )


# -- an object's private state is its own --------------------------------------------------------------


def _declared(cls: ast.ClassDef) -> set[str]:
    """The private attributes a class declares: class-level annotations and ``self._x = ...``."""
    names = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "self"
            ):
                names.add(target.attr)
    return {n for n in names if n.startswith("_")}


def foreign_private_writes(module: str, source: str) -> list[str]:
    """Where ``source`` assigns a private attribute (``x._name = ...``) of an object other than
    ``self``, outside the methods of a class that declares that attribute (the store's state
    written by the writer was issue 41's example)."""
    found: list[str] = []

    def visit(node: ast.AST, own: set[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, _declared(child))
                continue
            targets: list[ast.expr] = []
            if isinstance(child, ast.Assign):
                targets = child.targets
            elif isinstance(child, (ast.AugAssign, ast.AnnAssign)):
                targets = [child.target]
            for target in targets:
                for part in ast.walk(target):
                    if (
                        isinstance(part, ast.Attribute)
                        and part.attr.startswith("_")
                        and not part.attr.startswith("__")
                        and not (isinstance(part.value, ast.Name) and part.value.id in ("self", "cls"))
                        and part.attr not in own
                    ):
                        found.append(f"{module}:{child.lineno} writes {ast.unparse(part)}")
            visit(child, own)

    visit(ast.parse(source), set())
    return found


def test_no_module_writes_another_objects_private_state() -> None:
    found = []
    for module, path in _modules():
        found += foreign_private_writes(module, path.read_text(encoding="utf-8"))
    assert found == []


def test_the_private_state_check_fails_on_a_foreign_write() -> None:
    writer = "class TableWriter:\n    def commit(self):\n        self.store._version = None\n"
    assert foreign_private_writes("core.index.table_writer", writer)
    own = "class Batches:\n    _held: dict\n    @classmethod\n    def load(cls):\n        b = cls()\n        b._held = {}\n"
    assert foreign_private_writes("defs.homes.batches", own) == []
