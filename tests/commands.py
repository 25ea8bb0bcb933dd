"""The ``kieval`` command installed beside the running interpreter.

Tests run the command the environment under test installed, not whatever ``kieval`` comes
first on ``PATH``: ``.venv/bin/python -m pytest`` without activating the environment must
test that environment's command.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path


def kieval_command() -> str:
    """The path of the ``kieval`` script of this interpreter's environment (its scripts
    directory, or the user scheme's for a ``pip install --user``)."""
    schemes = [sysconfig.get_default_scheme(), f"{os.name}_user"]
    name = "kieval.exe" if os.name == "nt" else "kieval"
    candidates = [Path(sysconfig.get_path("scripts", scheme)) / name for scheme in schemes]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    msg = f"no kieval command beside this interpreter (looked at {', '.join(map(str, candidates))}); " \
          "install the project into this environment: pip install -e '.[test]'"
    raise FileNotFoundError(msg)
