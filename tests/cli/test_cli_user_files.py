"""Issue 32: nothing a user gave -- an interrupted run's checkpoint, a study's finished
cells -- is deleted or changed by a run that refuses it or fails; every refusal is one
line, exit 2, and the file is still there byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ARGS = ("plan", "--search", "divider", "--iterations", "2", "--batch-size", "4",
        "--ranges", "8", "--no-exact", "--no-homogeneous", "-q")


@pytest.fixture(scope="module")
def saved(tmp_path_factory, small_inventory):
    """A checkpoint of an interrupted divider run (Ctrl-C at the third evaluation)."""
    from planner.cli.main import run
    from planner.context.evaluate import LayoutEvaluator

    d = tmp_path_factory.mktemp("ckpt")
    out = d / "run"
    real = LayoutEvaluator.__call__
    calls = {"n": 0}

    def faulty(ev, layout):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(ev, layout)

    LayoutEvaluator.__call__ = faulty  # type: ignore[method-assign]
    try:
        rc = run([*ARGS, "--inventory", str(small_inventory), "--seed", "0", "--out",
                  str(out)])
    finally:
        LayoutEvaluator.__call__ = real  # type: ignore[method-assign]
    assert rc == 130
    ckpt = d / ".run.checkpoint.json"
    assert ckpt.is_file()
    return ckpt


def _copy(saved, tmp_path, edit=None):
    ckpt = tmp_path / ".run.checkpoint.json"
    shutil.copy(saved, ckpt)
    if edit is not None:
        doc = json.loads(ckpt.read_text())
        edit(doc)
        ckpt.write_text(json.dumps(doc))
    return ckpt, ckpt.read_bytes()


def _one_line(err: str) -> str:
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _ax_empty(doc):
    doc["state"]["ax"] = {}


def _bad_layout(doc):
    doc["tracker"]["history"][0]["layout"] = [["H999", -3]]


def _unknown_gpu(doc):
    doc["tracker"]["history"][0]["layout"] = [["H999", 8]]


@pytest.mark.parametrize("extra,edit,needle", [
    (("--seed", "1", "--resume"), None, "belongs to another run"),
    (("--seed", "0"), None, "an interrupted run's checkpoint is there"),
    (("--seed", "0", "--resume", "--search", "auto"), None, "keeps no checkpoint"),
    (("--seed", "0", "--resume"), _ax_empty, "state.ax"),
    (("--seed", "0", "--resume"), _bad_layout, "layout"),
    (("--seed", "0", "--resume"), _unknown_gpu, "outside the run's inventory"),
])
def test_a_refused_checkpoint_stays_byte_for_byte(run_cli, saved, small_inventory, tmp_path,
                                                   extra, edit, needle):
    ckpt, before = _copy(saved, tmp_path, edit)
    rc, _, err = run_cli(*ARGS, "--inventory", str(small_inventory), "--out",
                         str(tmp_path / "run"), *extra)
    line = _one_line(err)
    assert rc == 2 and needle in line and "--checkpoint" not in line
    assert ckpt.read_bytes() == before
    assert not (tmp_path / "run").exists()


def test_garbage_and_a_folder_are_refused_and_kept(run_cli, small_inventory, tmp_path):
    ckpt = tmp_path / ".run.checkpoint.json"
    ckpt.write_text("garbage\n")
    for search in ("divider", "auto"):
        args = [a if a != "divider" else search for a in ARGS]
        rc, _, err = run_cli(*args, "--inventory", str(small_inventory), "--out",
                             str(tmp_path / "run"), "--resume")
        assert rc == 2 and ckpt.read_text() == "garbage\n", err
        assert not (tmp_path / "run").exists()
    ckpt.unlink()
    ckpt.mkdir()
    (ckpt / "mine.txt").write_text("keep")
    for extra in (("--resume",), ()):
        rc, _, err = run_cli(*ARGS, "--inventory", str(small_inventory), "--out",
                             str(tmp_path / "run"), *extra)
        line = _one_line(err)
        assert rc == 2 and "folder" in line
        assert (ckpt / "mine.txt").read_text() == "keep"
        assert not (tmp_path / "run").exists()


def test_done_store_never_wipes_earlier_work(tmp_path):
    from planner.core.errors import PlannerError
    from planner.core.execution import DoneStore

    store = DoneStore(tmp_path / "cells", {"a": 1}, resume=False)
    store.put("k", {"v": 1})
    files = sorted(p.read_bytes() for p in (tmp_path / "cells").iterdir())
    with pytest.raises(PlannerError, match="resume it with --resume"):
        DoneStore(tmp_path / "cells", {"a": 1}, resume=False)
    with pytest.raises(PlannerError, match="belong to another run"):
        DoneStore(tmp_path / "cells", {"a": 2}, resume=True)
    assert sorted(p.read_bytes() for p in (tmp_path / "cells").iterdir()) == files
    again = DoneStore(tmp_path / "cells", {"a": 1}, resume=True)
    assert again.get("k") == {"v": 1}


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_inputs_are_refused_by_kind_before_they_are_read(run_cli, tmp_path, kind):
    import os

    if kind == "fifo":
        path = tmp_path / "inv.yaml"
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "inv.yaml"
        path.mkdir()
    for argv in (("plan", "--inventory", str(path), "--out", str(tmp_path / "o")),
                 ("whatif", str(path), "--out", str(tmp_path / "w"))):
        rc, _, err = run_cli(*argv)
        line = _one_line(err)
        assert rc == 2 and str(path) in line
        assert not (tmp_path / "o").exists() and not (tmp_path / "w").exists()


def test_an_integer_too_large_for_a_float_is_one_line(run_cli, tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("gpus:\n  - {type: H200, count: 1" + "0" * 400 + ", price_per_hour: 4}\n")
    rc, _, err = run_cli("plan", "--inventory", str(inv), "--out", str(tmp_path / "o"))
    line = _one_line(err)
    assert rc == 2 and "count" in line and "too large" in line and len(line) < 300
