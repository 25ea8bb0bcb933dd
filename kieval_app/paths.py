"""Where the dashboard's files are: the source checkout, or the installed package.

From a checkout (or an editable install) ``app.py``, ``app_pages/``, ``.streamlit/`` and
``sample_data/`` sit next to the ``kieval_app`` package; in a wheel the build copies them
into ``kieval_app/_bundle`` (see ``setup.py``).
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def app_root() -> Path:
    """The directory holding ``app.py``."""
    bundle = _HERE / "_bundle"
    return bundle if (bundle / "app.py").is_file() else _HERE.parent


def sample_dir() -> Path:
    return app_root() / "sample_data"


#: The dashboard's favicon (shipped in the package: no page load fetches an icon).
ICON = _HERE / "icon.png"
