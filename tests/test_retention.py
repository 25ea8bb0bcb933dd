"""Saved runs are managed: listed, removed, pruned by age and size (SPEC 8b)."""

from __future__ import annotations

import os
import time

import pytest
from conftest import SAMPLE_DATA

from kieval_core import KievalInputError, KievalOptionError
from kieval_core.cli import main
from kieval_core.output.outputs import TEMP_MARK
from kieval_core.output.retention import list_runs, prune_runs, remove_run
from kieval_core.output.runs import RunStage


def save(root, run_id: str, age_days: float = 0.0, *models: str) -> None:
    preds = [a for m in models or ("sim_weak",) for a in ("--pred", str(SAMPLE_DATA / f"{m}.jsonl"))]
    assert main(["evaluate", "--gt", str(SAMPLE_DATA / "cord_v2_gt.jsonl"), *preds, "--bootstrap", "0",
                 "--save-run", str(root / run_id)]) == 0
    stamp = time.time() - age_days * 86400
    os.utime(root / run_id / "manifest.json", (stamp, stamp))


@pytest.fixture
def root(tmp_path, capsys):
    save(tmp_path, "old", 40)
    save(tmp_path, "middle", 10, "sim_strong", "sim_weak")
    save(tmp_path, "new", 0)
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "not-a-run" / "notes.txt").write_text("mine")
    capsys.readouterr()
    return tmp_path


def test_runs_are_listed_newest_first_with_size_and_date(root, capsys):
    runs = list_runs(root)
    assert [r.id for r in runs] == ["new", "middle", "old"]
    assert runs[1].models == ("sim_strong", "sim_weak") and all(r.bytes > 10_000 for r in runs)
    assert main(["runs", "--dir", str(root), "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["id", "saved", "size", "models"]
    assert [line.split()[0] for line in lines[1:]] == ["new", "middle", "old"]
    assert "MiB" in lines[1] and "UTC" in lines[1]


def test_dir_goes_before_or_after_the_action(root, tmp_path_factory, capsys):
    """``kieval runs list --dir DIR`` is how people type it (argparse refused it: the option
    belonged to ``runs`` only); an empty folder says where it looked."""
    assert main(["runs", "list", "--dir", str(root)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:]] == ["new", "middle", "old"]
    assert main(["runs", "prune", "--older-than", "20", "--dry-run", "--dir", str(root)]) == 0
    assert "would remove old" in capsys.readouterr().out
    empty = tmp_path_factory.mktemp("empty")
    assert main(["runs", "list", "--dir", str(empty)]) == 0
    said = capsys.readouterr().out
    assert said == f"no saved runs in {empty} (another folder: --dir DIR or KIEVAL_RUNS_DIR)\n"


def test_a_run_is_removed_by_id_and_nothing_else(root, capsys):
    assert main(["runs", "--dir", str(root), "rm", "middle"]) == 0
    assert "removed middle" in capsys.readouterr().out
    assert [r.id for r in list_runs(root)] == ["new", "old"]
    for bad, error in (("not-a-run", KievalInputError), ("../new", KievalOptionError),
                       ("x" * 300, KievalOptionError), ("middle", KievalInputError)):
        with pytest.raises(error):
            remove_run(bad, root)
    assert (root / "not-a-run" / "notes.txt").read_text() == "mine"
    with RunStage(root / "new"), pytest.raises(KievalOptionError, match="another kieval"):
        remove_run("new", root)  # a save into it is under way
    assert main(["runs", "--dir", str(root), "rm", "x" * 300]) == 2
    assert len(capsys.readouterr().err) < 200


def test_prune_by_age_then_by_total_size(root, capsys):
    assert [r.id for r in prune_runs(root, older_than_days=30, dry_run=True).removed] == ["old"]
    assert [r.id for r in list_runs(root)] == ["new", "middle", "old"]
    sizes = {r.id: r.bytes for r in list_runs(root)}
    limit_mb = (sizes["new"] + 1) / 2**20  # room for the newest run only
    prune = ["runs", "--dir", str(root), "prune"]
    assert main([*prune, "--older-than", "30", "--max-total-mb", str(limit_mb)]) == 0
    out = capsys.readouterr().out
    assert "removed old" in out and "removed middle" in out and "removed 2 run(s)" in out
    assert [r.id for r in list_runs(root)] == ["new"]
    assert (root / "not-a-run" / "notes.txt").exists()
    assert main(["runs", "--dir", str(root), "prune"]) == 2


def test_prune_removes_what_killed_saves_left_behind(root):
    left = root / f".new{TEMP_MARK}abc123"
    left.mkdir()
    (left / "manifest.json").write_text("{}")
    prune_runs(root, older_than_days=1000)
    assert left.exists()  # recent: perhaps a save still running
    os.utime(left, (time.time() - 7200, time.time() - 7200))
    with RunStage(root / "new"):  # a save of that run holds its lock: kept
        prune_runs(root, older_than_days=1000)
        assert left.exists()
    prune_runs(root, older_than_days=1000)
    assert not left.exists()
    assert [r.id for r in list_runs(root)] == ["new", "middle", "old"]


# --- issue 33, N4: links, failures and a mistyped --dir --------------------------------------


def test_prune_goes_on_past_a_failure_names_links_and_says_what_it_removed(root, tmp_path_factory, capsys):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    save(elsewhere, "theirs", 50)
    (root / "a-link").symlink_to(elsewhere / "theirs")  # an old run, reached through a link
    assert [r.id for r in list_runs(root)] == ["new", "middle", "old"]
    with RunStage(root / "middle"):  # being saved again: cannot be removed now
        code = main(["runs", "--dir", str(root), "prune", "--older-than", "5"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "removed old" in out and "skipped a-link (a symbolic link)" in out
    assert "removed 1 run(s)" in out and "1 could not be removed" in out
    assert "not removed middle: " in err and "another kieval" in err
    assert [r.id for r in list_runs(root)] == ["new", "middle"]
    assert (elsewhere / "theirs" / "manifest.json").is_file()  # never followed
    with pytest.raises(KievalInputError, match="symbolic link"):
        remove_run("a-link", root)
    assert main(["runs", "--dir", str(root), "rm", "a-link", "middle"]) == 2
    out, err = capsys.readouterr()
    assert "removed middle" in out and "not removed a-link: a symbolic link" in err
    assert main(["runs", "--dir", str(root), "list"]) == 0
    assert "skipped a-link (a symbolic link)" in capsys.readouterr().err


def test_a_dir_that_is_not_a_directory_is_refused(root, capsys):
    for action in (["list"], ["rm", "new"], ["prune", "--older-than", "1"]):
        assert main(["runs", "--dir", str(root / "typo"), *action]) == 2
        assert f"--dir {root / 'typo'}: no such directory" in capsys.readouterr().err
    assert [r.id for r in list_runs(root)] == ["new", "middle", "old"]
