"""Regenerate planner/export/data/<engine>-<version>.flags from the engine's own parser.

Not a test (pytest does not collect it): the tool that wrote the checked-in flag lists
of SGLang and vLLM, and checks exported commands against the real parsers.  Neither
engine installs on a CPU machine (both pin CUDA builds of torch and GPU kernels), so it
builds their argument parsers from the wheel's own source with every module that is not
installed here replaced by an inert stub (the parser code itself -- dataclass fields,
``add_argument`` calls, aliases, choices -- runs for real)::

    pip download --no-deps sglang==0.5.14 -d /tmp/w && unzip -q /tmp/w/sglang-*.whl -d /tmp/sg
    python tests/export/extract_flags.py sglang /tmp/sg > planner/export/data/sglang-0.5.14.flags

    pip download --no-deps vllm==0.24.0 -d /tmp/w && unzip -q /tmp/w/vllm-*.whl -x '*.so' -d /tmp/vl
    pip install --target /tmp/deps --no-deps 'transformers>=5.5.3' tokenizers huggingface_hub \
        safetensors regex httpx2      # vLLM reads transformers' version at import
    python tests/export/extract_flags.py vllm /tmp/vl /tmp/deps \
        > planner/export/data/vllm-0.24.0.flags

``--check RUN_DIR/export`` instead parses every ``island-*.sh`` command of that engine
with the real parser and prints one line per island (exit 1 on the first failure).

TensorRT-LLM has no wheel on PyPI (a stub that downloads from NVIDIA's index), so its
list was transcribed from ``tensorrt_llm/commands/serve.py`` (see the list's header).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import re
import shlex
import sys
import types
from pathlib import Path

HEADERS = {
    "sglang": ("SGLang 0.5.14", "sgl-project/sglang",
               "python/sglang/srt/server_args.py (ServerArgs.add_cli_args, the parser of "
               "`python -m sglang.launch_server`)", "sglang==0.5.14"),
    "vllm": ("vLLM 0.24.0", "vllm-project/vllm",
             "vllm/entrypoints/openai/cli_args.py make_arg_parser (with "
             "vllm/engine/arg_utils.py AsyncEngineArgs.add_cli_args; the parser of "
             "`vllm serve`)", "vllm==0.24.0"),
}


class _Meta(type):
    """A stubbed name: a class that tolerates what module-level code does with it."""

    def __new__(mcs, name, bases, ns, **kw):
        return super().__new__(mcs, name, bases, ns)

    def __init__(cls, name, bases, ns, **kw):
        super().__init__(name, bases, ns)

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _new(f"{cls.__name__}.{name}")

    def __getitem__(cls, item):
        return cls

    def __setitem__(cls, key, value):
        pass

    def __contains__(cls, key):
        return False

    def __add__(cls, other):
        return cls

    __radd__ = __mul__ = __rmul__ = __sub__ = __rsub__ = __truediv__ = __or__ = __ror__ = __add__

    def __float__(cls):
        return 0.0

    def __iter__(cls):
        return iter(())

    def __len__(cls):
        return 0

    def __call__(cls, *args, **kwargs):
        if (len(args) == 1 and callable(args[0]) and not kwargs
                and not cls.__name__.endswith(("dumps", "loads"))):
            return args[0]  # used as a decorator
        return _Val("cpu")

    def __bool__(cls):
        return False

    def __int__(cls):
        return 0

    __index__ = __int__

    def __lt__(cls, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__


class _Val(str):
    """What calling a stub returns: a harmless string ("cpu") with stub attributes."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Val("cpu")

    def __call__(self, *args, **kwargs):
        return _Val("cpu")


def _new(name: str) -> type:
    def schema(cls, source, handler):
        from pydantic_core import core_schema
        return core_schema.any_schema()
    return _Meta(name.replace(".", "_"), (), {"__module__": "stub",
                 "__get_pydantic_core_schema__": classmethod(schema)})


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _new(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stub a module only when nothing can import it and the importer is the engine's own
    code (``roots``), except files matching ``real`` (platform detection must fail
    honestly); third-party ``try: import x`` fallbacks keep their ImportError."""

    def __init__(self, roots: tuple[str, ...], real: tuple[str, ...] = ()) -> None:
        self.roots, self.real, self.stubbed = roots, real, set()

    def find_spec(self, name, path, target=None):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                if finder.find_spec(name, path, target) is not None:
                    return None
            except Exception:
                continue
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith(("<frozen", __file__)):
            frame = frame.f_back
        caller = frame.f_code.co_filename if frame is not None else ""
        if not caller.startswith(self.roots) or any(r in caller for r in self.real):
            return None
        self.stubbed.add(name.split(".")[0])
        return importlib.machinery.ModuleSpec(name, self, is_package=True)

    def create_module(self, spec):
        module = _Stub(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


def sglang_parser(root: str):
    sys.path.insert(0, root)
    finder = StubFinder((root,))
    sys.meta_path.insert(0, finder)
    import argparse

    from sglang.srt.server_args import ServerArgs  # type: ignore[import-not-found]

    parser = argparse.ArgumentParser(prog="python -m sglang.launch_server")
    ServerArgs.add_cli_args(parser)
    return parser, finder


def vllm_parser(root: str, deps: str):
    sys.path[:0] = [root, deps]
    finder = StubFinder((root, os.path.join(deps, "huggingface_hub")), ("vllm/platforms/",))
    sys.meta_path.insert(0, finder)
    from vllm.platforms import current_platform  # type: ignore[import-not-found]

    current_platform.device_type = "cpu"  # DeviceConfig's default needs one
    from vllm.entrypoints.openai.cli_args import make_arg_parser  # type: ignore
    from vllm.utils.argparse_utils import FlexibleArgumentParser  # type: ignore

    return make_arg_parser(FlexibleArgumentParser(prog="vllm serve")), finder


def _commands(export_dir: Path, launcher: str):
    """(script, argv after the launcher) of every engine command in the island scripts."""
    for script in sorted(export_dir.glob("island-*.sh")):
        text = script.read_text().replace("\\\n", " ")
        for line in text.splitlines():
            words = shlex.split(line, comments=True)
            if launcher in words:
                yield script.name, words[words.index(launcher) + len(launcher.split()):]


def main(argv: list[str]) -> int:
    check = None
    if "--check" in argv:
        k = argv.index("--check")
        check = Path(argv[k + 1])
        argv = argv[:k] + argv[k + 2:]
    engine = argv[0]
    with contextlib.redirect_stdout(sys.stderr):  # the engines log to stdout on import
        if engine == "sglang":
            parser, finder = sglang_parser(argv[1])
            launcher = "sglang.launch_server"
        elif engine == "vllm":
            parser, finder = vllm_parser(argv[1], argv[2])
            launcher = "serve"
        else:
            raise SystemExit(f"unknown engine {engine!r}: sglang or vllm")
    if check is not None:
        for name, args in _commands(check, launcher):
            # the shell's part: placeholders of a second server (NODE_RANK 1)
            args = [re.sub(r"\$\(\(NODE_RANK \* (\d+)\)\)", lambda m: m.group(1), a)
                    .replace("$NODE_RANK", "1").replace("$LEADER_ADDR", "127.0.0.1")
                    .replace("$MODEL_PATH", "models/m") for a in args]
            parser.parse_args(args)  # exits 2 with the parser's own message on a bad flag
            print(f"{name}: parsed by the {engine} parser ({len(args)} words)")
        return 0
    label, repo, path, wheel = HEADERS[engine]
    flags = sorted(parser._option_string_actions)
    print(f"# {label}: every option string of its command-line parser, one per line.")
    print(f"# repository: github.com/{repo}")
    print(f"# file: {path}")
    print(f"# version: {wheel} (PyPI wheel), the version perfmodel/data/kernels was measured "
          "under")
    print("# how: tests/export/extract_flags.py built the package's own parser with the "
          "modules it could not import on CPU stubbed")
    print(f"# stubbed imports: {', '.join(sorted(finder.stubbed))}")
    for flag in flags:
        print(flag)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
