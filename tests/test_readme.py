"""Every command the README shows gives exactly what the README shows."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from commands import kieval_command

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text("utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.DOTALL)
#: Python blocks marked as tested (an HTML comment right before them), run in order.
TESTED = re.findall(r"<!-- tested[^>]*-->\n```python\n(.*?)```", README, re.DOTALL)


def _commands(kind: str) -> list[tuple[str, str | None]]:
    """(command, the text block right after it) for the README's bash blocks of ``kind``."""
    out = []
    for i, (language, body) in enumerate(BLOCKS):
        if language != "bash":
            continue
        command = body.replace("\\\n", " ").strip()
        if command.startswith(kind):
            following = BLOCKS[i + 1] if i + 1 < len(BLOCKS) and BLOCKS[i + 1][0] == "text" else None
            out.append((command, following[1] if following else None))
    return out


def test_the_readme_starts_with_the_two_commands():
    first = BLOCKS[0][1].strip().splitlines()
    assert first[0].startswith("pip install -e '.[dashboard]' && kieval dashboard")
    assert first[1].startswith("pip install -e '.[test]' && python -m pytest")


def test_the_evaluate_example_prints_what_the_readme_shows(tmp_path):
    ((command, expected),) = _commands("kieval evaluate")
    os.symlink(ROOT / "sample_data", tmp_path / "sample_data")
    argv = shlex.split(command)
    assert argv[0] == "kieval"
    argv[0] = kieval_command()  # this environment's command, not the first on PATH
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert (tmp_path / "report.json").is_file() and (tmp_path / "errors.csv").is_file()


def test_the_ci_entry_point_runs_both_readme_commands_in_a_fresh_venv():
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    first, second = (line.split("#")[0].strip() for line in BLOCKS[0][1].strip().splitlines()[:2])
    assert f'"{first}"' in ci and second in ci
    assert "python3 -m venv" in ci and "/venv/bin/activate" in ci
    assert ci.index("/venv/bin/activate") < ci.index(first) < ci.index(second)


def test_the_tested_python_blocks_run(tmp_path, monkeypatch):
    assert TESTED, "the README marks no Python block as tested"
    os.symlink(ROOT / "sample_data", tmp_path / "sample_data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())  # never a store of yours
    namespace: dict = {}
    for block in TESTED:
        exec(compile(block, "README.md", "exec"), namespace)


def formats_table() -> str:
    """The README's table of input formats, as the readers say it (name, file names, what
    they are, whether auto-detection finds them)."""
    from kieval_core.read.readers import READERS

    rows = ["| format | files | what | detected |", "|---|---|---|---|"]
    for reader in READERS.values():
        files = ", ".join(f"`{s}`" for s in reader.suffixes)
        if reader.files_function is not None:
            alone = reader.file_function is None
            files += " (a directory or `.zip` of them)" if alone else ", or a directory of them"
        detected = "yes" if reader.sniff or reader.sniff_files else "only with `--format`"
        what = reader.description.replace("|", "\\|")
        rows.append(f"| `{reader.name}` | {files} | {what} | {detected} |")
    return "\n".join(rows) + "\n"


def test_the_readme_lists_every_reader():
    """Adding a reader adds its row here (the README's table is the readers' own words), and
    the `--format` list is the readers' names."""
    from kieval_core.read.readers import FORMATS

    assert formats_table() in README
    assert f"`--format {'|'.join(FORMATS)}`" in README.replace("`--format\n", "`--format ")
