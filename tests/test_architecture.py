"""The house plan holds: packages depend downward only and no module imports itself
back (docs/architecture.md).

Read from the source, not by importing it: every ``import`` statement counts -- at
module level, inside functions and under ``TYPE_CHECKING`` -- because a function-level
import is still a dependency, only a hidden one.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Lowest first.  A module may import from its own layer or a lower one; within a
#: layer, the module graph must still be acyclic (checked separately).
LAYERS: list[tuple[str, ...]] = [
    ("perfmodel",),
    ("planner", "planner.core"),
    ("planner.fleet",),
    ("planner.workload",),
    ("planner.inner",),
    ("planner.outer",),
    ("planner.context",),
    ("planner.run",),
    ("planner.sim",),
    ("planner.plan",),
    ("planner.closed_plan", "planner.report", "planner.whatif", "planner.export"),
    ("planner.services",),
    ("planner.schedule",),
    ("planner.cli",),
]


def modules() -> dict[str, Path]:
    out = {}
    for pkg in ("perfmodel", "planner"):
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _targets(name: str, path: Path, node: ast.AST, known: dict[str, Path]) -> list[str]:
    """The project modules one import statement reaches (the longest known prefix)."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            here = here[: len(here) - node.level + 1]
            base = ".".join([*here, base] if base else here)
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                  for a in node.names]
    else:
        return []
    out = []
    for w in wanted:
        while w and w not in known:
            w = w.rpartition(".")[0]
        if w and w != name:
            out.append(w)
    return out


def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            graph[name].update(_targets(name, path, node, known))
    return graph


def layer_of(module: str) -> int:
    best, depth = None, -1
    for k, layer in enumerate(LAYERS):
        for prefix in layer:
            if (module == prefix or module.startswith(prefix + ".")) and \
                    prefix.count(".") > depth:
                best, depth = k, prefix.count(".")
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_has_a_layer():
    for name in modules():
        layer_of(name)


def test_imports_point_downward():
    upward = [f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})"
              for a, targets in import_graph().items() for b in sorted(targets)
              if layer_of(b) > layer_of(a)]
    assert upward == []


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_perfmodel_stands_alone():
    leaks = sorted(f"{a} imports {b}" for a, targets in import_graph().items()
                   if a.startswith("perfmodel") for b in targets
                   if not b.startswith("perfmodel"))
    assert leaks == []


def test_the_checker_sees_a_cycle_and_an_upward_import():
    # The check itself can fail: a two-module cycle and a perf model importing the CLI.
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("planner.cli.main") > layer_of("perfmodel.island")


def test_planner_reads_island_timing_through_the_interface():
    # The planner, the pipeline mapping and the simulator consume perfmodel.timing (and
    # the island tables), never the phase or memory models directly; only `planner
    # perf`, which prints the perf model's own breakdown, may look inside.
    inside = ("perfmodel.prefill", "perfmodel.decode", "perfmodel.memory")
    leaks = sorted(f"{a} imports {b}" for a, targets in import_graph().items()
                   if a.startswith("planner") and a != "planner.cli.perf"
                   for b in targets if b.startswith(inside))
    assert leaks == []


def test_docs_list_the_enforced_layers():
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("<!-- layers: begin")[1].split("<!-- layers: end -->")[0]
    rows = [line.split()[1:] for line in block.splitlines() if line[:2].strip().isdigit()]
    assert rows == [list(layer) for layer in LAYERS]
