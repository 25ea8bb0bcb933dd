"""Build hook: ship the dashboard (app.py, its pages, its config and the sample data) in
the wheel, under ``kieval_app/_bundle``, so ``kieval dashboard`` works from an installed
package and not only from a source checkout. Everything else is in pyproject.toml."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

#: What the dashboard needs besides the Python packages, relative to the project root.
BUNDLED = ("app.py", "app_pages", ".streamlit", "sample_data")


class BuildWithDashboard(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install runs from the checkout
            return
        root = Path(__file__).resolve().parent
        bundle = Path(self.build_lib) / "kieval_app" / "_bundle"
        for name in BUNDLED:
            source, target = root / name, bundle / name
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


setup(cmdclass={"build_py": BuildWithDashboard})
