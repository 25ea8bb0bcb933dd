"""Startup: the package and `kieval --help` import no heavy library until something is
computed (times are measured in bench/bench_startup.py, not here)."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import kieval_core

HEAVY = ("pandas", "numpy", "scipy", "pyarrow", "plotly", "rapidfuzz", "orjson", "dateutil", "phonenumbers")


def _imported_after(code: str) -> list[str]:
    probe = (f"import sys\n{code}\n"
             f"print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))), "
             "file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return done.stderr.split()


def test_import_and_help_import_no_heavy_library():
    assert _imported_after("import kieval_core") == []
    for argv in (["--help"], ["evaluate", "--help"], ["route", "--help"], ["dashboard", "--help"],
                 ["runs", "--help"]):
        help_code = ("from kieval_core.cli import main\n"
                     f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass")
        assert _imported_after(help_code) == [], argv


def test_the_parser_offers_the_registries_own_names(capsys):
    """``kieval evaluate --help`` takes the formats, comparators and metric families from
    their registries (no copy to keep equal), and a wrong name is refused naming the valid
    ones: argparse's choices for ``--format``, the registries' own errors for the others."""
    from kieval_core.choices import FAMILIES
    from kieval_core.cli import _parser, main
    from kieval_core.count.comparators import COMPARATORS, REGISTRY
    from kieval_core.read.readers import FORMATS, READERS

    assert ("auto", *READERS) == FORMATS
    assert {name.partition(":")[0] for name in COMPARATORS} == set(REGISTRY)
    evaluate = _parser("evaluate")._subparsers._group_actions[0].choices["evaluate"]
    options = {action.dest: action for action in evaluate._actions}
    assert options["format"].choices is FORMATS
    assert ", ".join(COMPARATORS) in options["compare"].help
    assert ", ".join(FAMILIES) in options["metrics"].help
    valid = {"--format": ", ".join(map(repr, FORMATS)), "--compare": ", ".join(COMPARATORS),
             "--metrics": ", ".join(FAMILIES)}
    for option, wrong in (("--format", "xml"), ("--compare", "total=money"), ("--metrics", "kieval,f1")):
        argv = ["evaluate", "--gt", "gt.jsonl", "--pred", "pred.jsonl", option, wrong]
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
        said = capsys.readouterr().err
        assert code == 2, option
        assert wrong.rpartition("=")[2].rpartition(",")[2] in said and valid[option] in said, said


def test_every_public_name_resolves_and_evaluate_stays_the_function():
    from kieval_core.evaluate import ENGINES  # imports the module named like the function

    assert ENGINES
    for name in kieval_core.__all__:
        assert getattr(kieval_core, name) is not None
    assert callable(kieval_core.evaluate) and kieval_core.evaluate.__name__ == "evaluate"
    assert sorted(dir(kieval_core)) == sorted(set(dir(kieval_core)))


def test_the_chosen_command_still_gets_all_its_options(capsys):
    from kieval_core.cli import main

    for argv in (["evaluate", "--help"], ["dashboard", "--help"], ["runs", "--help"]):
        with contextlib.suppress(SystemExit):
            main(argv)
    out = capsys.readouterr().out
    assert "--bootstrap" in out and "--format {auto," in out and "--port" in out and "prune" in out


def test_kieval_evaluate_keeps_freed_memory_for_reuse():
    """In the CLI process glibc keeps a freed 96 MiB block for the next one (no page faults
    again), in a thread too; by default it is unmapped and the next block faults its pages
    in afresh."""
    import os

    import pytest

    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            pytest.skip("not glibc")
    except (AttributeError, ValueError, OSError):
        pytest.skip("not glibc")
    probe = ("import resource, sys, threading\n"
             "from kieval_core import cli\n"
             "if sys.argv[1] == 'kept':\n    cli._keep_freed_memory()\n"
             "faults = []\n"
             "def allocate():\n"
             "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
             "    block = b'x' * (96 << 20)\n"
             "    del block\n"
             "    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
             "for _ in range(3):\n"
             "    if sys.argv[2] == 'thread':\n"
             "        worker = threading.Thread(target=allocate)\n"
             "        worker.start()\n"
             "        worker.join()\n"
             "    else:\n"
             "        allocate()\n"
             "print(faults[-1])")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def faults(mode: str, where: str) -> int:
        done = subprocess.run([sys.executable, "-c", probe, mode, where], capture_output=True, text=True,
                              check=True, env=env)
        return int(done.stdout)

    for where in ("main", "thread"):  # a thread (evaluate parses in one) shares the heap
        assert faults("default", where) > 10_000, where  # 24,576 pages of 4 KiB
        assert faults("kept", where) < 1_000, where
