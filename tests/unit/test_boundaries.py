"""The shape of the code: no module of the repository imports itself through others (no circle),
engine/ knows no UI library, viz/ sees only the torch-free part of the engine, ui/'s rooms import
only the rooms before them, and no file or ui function outgrows a reading."""

import ast
import subprocess
import sys
from pathlib import Path
from tests.paths import ROOT

ENGINE = ROOT / "engine"
TORCH_FREE = ("engine.schema", "engine.environment", "engine.errors")   # what viz may import


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function (a lazy import hides a circle too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:                            # `from .x import y` inside package p: p.x
                package = module_name(path).split(".")[:None if path.name == "__init__.py" else -1]
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)   # `from engine.x import module`
    return names


def tops(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def test_engine_imports_by_full_name():
    for path in ENGINE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        assert not any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(tree)), path


def test_engine_imports_no_ui_library():
    used = set().union(*(tops(imports(p)) for p in ENGINE.rglob("*.py")))
    assert not used & {"gradio", "altair", "pandas", "gradio_client", "ui", "viz"}


PACKAGES = ("app", "engine", "ui", "viz", "scripts", "tests")
UI_ROOMS = ("host", "page", "chapters", "walkthrough", "share", "api")    # each imports only those before it


def graph() -> dict[str, set[str]]:
    """module -> the repository's modules it imports (a `from package import module` counts as the
    module, not the package)."""
    files = {module_name(p): p for p in ROOT.rglob("*.py")
             if p.relative_to(ROOT).parts[0] in PACKAGES or p.name == "app.py"}
    edges = {}
    for name, path in files.items():
        found = set()
        for n in imports(path):
            while n and n not in files:             # `from engine.x import Name` -> engine.x
                n = n.rpartition(".")[0]
            if n and n != name:
                found.add(n)
        # the package itself only where nothing below it was named (`from engine.x import y` with y a module)
        edges[name] = {n for n in found if not any(o.startswith(n + ".") for o in found) or
                       not files[n].name == "__init__.py"}
    return edges


def test_no_import_circle_anywhere():
    edges, state = graph(), {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            assert state.get(n) != 1, "import circle: " + " -> ".join(path + [n])
            if n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert edges["engine.schema.trace"] and edges["ui.chapters.explore"], "the graph missed the imports"


def test_ui_rooms_import_only_the_rooms_before_them():
    for name, deps in graph().items():
        parts = name.split(".")
        if parts[0] != "ui" or len(parts) < 3:
            continue
        room = UI_ROOMS.index(parts[1])
        later = {d for d in deps if d.startswith("ui.") and len(d.split(".")) > 2
                 and UI_ROOMS.index(d.split(".")[1]) > room}
        assert not later, (name, later)


def test_no_ui_function_outgrows_a_reading():
    long = {}
    for path in [*(ROOT / "ui").rglob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 50:
                long[f"{path.relative_to(ROOT)}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert not long, long


def test_schema_room_needs_no_torch():
    for path in (ENGINE / "schema").rglob("*.py"):
        assert not tops(imports(path)) & {"torch", "transformers"}, path
        inside = {n for n in imports(path) if n.startswith("engine.")}
        assert all(n.startswith(TORCH_FREE) for n in inside), (path, inside)


def test_viz_imports_only_the_torch_free_engine():
    viz_imports = set().union(*(imports(p) for p in (ROOT / "viz").rglob("*.py")))
    assert not tops(viz_imports) & {"torch", "transformers", "gradio"}
    engine_parts = {n for n in viz_imports if n.startswith("engine")}
    assert engine_parts, "viz imports nothing of the engine: the check below would pass vacuously"
    assert all(n.startswith(TORCH_FREE) for n in engine_parts), engine_parts - {
        n for n in engine_parts if n.startswith(TORCH_FREE)}
    schema = " ".join(f"import {module_name(p)};" for p in (ENGINE / "schema").glob("*.py"))
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None; "
            f"import viz, engine.environment; {schema} print('ok')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


READING = {"engine": 250, "ui": 300, "viz": 300}          # lines a file may have, by folder


def test_no_file_outgrows_a_reading():
    long = {str(p.relative_to(ROOT)): n for folder, most in READING.items() for p in (ROOT / folder).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > most}
    assert not long, long


# Imports by name at run time (importlib.import_module("...")) are invisible to the checks above.
# The engine may reach outside itself this way in one place only: the `deck` command hands the
# drawing to ui/share/deck.py (the page's side draws; the engine only reads the trace). Listed here so
# that no other such door opens unseen.
BY_NAME_OUTSIDE = {"engine/commands/deck.py": {"ui.share.deck"}}
UI_SIDE = {"gradio", "altair", "pandas", "gradio_client", "ui", "viz"}


def test_engine_reaches_outside_by_name_only_where_listed():
    found = {}
    for path in ENGINE.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        constants = {n.targets[0].id: n.value.value for n in ast.walk(tree) if isinstance(n, ast.Assign)
                     and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                     and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                    "import_module", "__import__") and node.args:
                arg = node.args[0]
                name = (arg.value if isinstance(arg, ast.Constant) else
                        constants.get(arg.id) if isinstance(arg, ast.Name) else None)
                if isinstance(name, str) and name.split(".")[0] in UI_SIDE:
                    found.setdefault(str(path.relative_to(ROOT)), set()).add(name)
    assert found == BY_NAME_OUTSIDE, found
