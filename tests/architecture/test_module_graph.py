"""The module graph's house rules, checked on the product's source (ADR 0066): no import
circle, wherever an import stands, and no module over 300 lines but the two allowed.
The synthetic packages below show that each check fails when its rule is broken."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.architecture.module_graph import (
    cycles,
    describe,
    import_graph,
    oversized,
    product_modules,
)

MAX_LINES = 300
ALLOWED_LONGER = ("domain/stream.py", "entrypoints/composition/settings.py")
"""The aggregate and the settings table: one reason to change each, however long."""


def test_no_product_module_imports_itself_through_others() -> None:
    graph = import_graph(product_modules())
    assert not cycles(graph), "import circles:\n" + describe(graph)


def test_no_product_module_is_over_300_lines_but_the_allowed() -> None:
    modules = product_modules()
    assert {"domain.stream", "entrypoints.composition.settings"} <= set(modules)
    too_long = oversized(modules, MAX_LINES, ALLOWED_LONGER)
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_the_product_graph_is_read_whole() -> None:
    """Every product package is read, and imports are found in each of them."""
    graph = import_graph(product_modules())
    for package in ("domain", "application", "adapters", "entrypoints", "runnel_client"):
        assert any(name.startswith(package) and imports for name, imports in graph.items())
    assert "entrypoints.commands.serve" in graph["entrypoints.commands.processes"]


def write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return product_modules(root, {"a": "", "b": ""})


CIRCLES = {
    "at the top": ({"a/x.py": "import a.y\n", "a/y.py": "import a.x\n"}, ["a.x", "a.y", "a.x"]),
    "inside a function": (
        {"a/x.py": "from a.y import f\n", "a/y.py": "def f():\n    from a.x import g\n"},
        ["a.x", "a.y", "a.x"]),
    "under TYPE_CHECKING": (
        {"a/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a.y import Y\n",
         "a/y.py": "from a.x import X\n"},
        ["a.x", "a.y", "a.x"]),
    "a module named by from-import": (
        {"a/x.py": "from a import y\n", "a/y.py": "from a import x\n"}, ["a.x", "a.y", "a.x"]),
    "relative": ({"a/x.py": "from .y import f\n", "a/y.py": "from . import x\n"},
                 ["a.x", "a.y", "a.x"]),
    "through a package's __init__": (
        {"a/__init__.py": "from a.x import f\n", "a/x.py": "import b.z\n",
         "b/z.py": "from a.w import g\n", "a/w.py": ""},
        ["a", "a.x", "b.z", "a"]),
}


@pytest.mark.parametrize("files, circle", CIRCLES.values(), ids=CIRCLES.keys())
def test_a_circle_is_found_wherever_its_imports_stand(
        tmp_path: Path, files: dict[str, str], circle: list[str]) -> None:
    graph = import_graph(write(tmp_path, {"a/__init__.py": "", "b/__init__.py": "", **files}))
    assert cycles(graph) == [circle]
    assert " -> ".join(circle) in describe(graph)


def test_a_package_gathering_its_own_modules_is_no_circle(tmp_path: Path) -> None:
    graph = import_graph(write(tmp_path, {
        "a/__init__.py": "from a.x import f\nfrom a.y import g\n",
        "a/x.py": "from a import y\n", "a/y.py": "", "b/__init__.py": "",
        "b/z.py": "from a import f\nimport os\n"}))
    assert graph["a.x"] == {"a.y"} and graph["b.z"] == {"a"}
    assert cycles(graph) == []


def test_a_module_over_the_limit_is_reported_unless_allowed(tmp_path: Path) -> None:
    modules = write(tmp_path, {"a/__init__.py": "", "b/__init__.py": "",
                               "a/long.py": "x = 1\n" * 301, "a/full.py": "x = 1\n" * 300,
                               "b/table.py": "x = 1\n" * 400})
    assert oversized(modules, 300, ["b/table.py"], tmp_path) == {"a/long.py": 301}
    assert oversized(modules, 300, [], tmp_path) == {"a/long.py": 301, "b/table.py": 400}
