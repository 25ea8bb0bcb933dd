"""``kieval dashboard --images DIR`` (issue 33, N9): a file of the directory that cannot be
read is one warning, never a traceback on every page; links out of it are not followed."""

from __future__ import annotations

import builtins
import dataclasses
import io
import re
from pathlib import Path

import pytest
import streamlit as st
from PIL import Image
from streamlit.testing.v1 import AppTest

from kieval_app.sources import sample_sources

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (40, 60), "white").save(out, "PNG")
    return out.getvalue()


def test_an_unreadable_file_and_a_link_out_are_one_warning_each(tmp_path, monkeypatch):
    outside = tmp_path / "outside.png"
    outside.write_bytes(_png())
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "validation_0000.png").write_bytes(_png())
    (pages / "validation_0001.png").write_bytes(_png())
    (pages / "validation_0002.png").symlink_to(outside)
    real_open = builtins.open

    def refusing(path, *args, **kwargs):  # the tests run as root: a permission error, simulated
        if str(path).endswith("validation_0001.png"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing)
    monkeypatch.setenv("KIEVAL_IMAGES_DIR", str(pages))
    st.cache_resource.clear()  # a fresh server with --images
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        at.session_state["sources"] = dataclasses.replace(sample_sources(), images=None)  # no images
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        warnings = [re.sub(r"\\(.)", r"\1", w.value) for w in at.warning]
        assert "pages/validation_0001.png: not read (Permission denied)" in warnings, warnings
        assert "pages/validation_0002.png: a symbolic link, not followed" in warnings, warnings
    finally:
        st.cache_resource.clear()
