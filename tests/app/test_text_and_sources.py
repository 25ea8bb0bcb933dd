"""Text safety, sources and options of the app package (no Streamlit)."""

from __future__ import annotations

import doctest
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kieval_app.serving.store
import kieval_app.sources
import kieval_core.figures.automation
import kieval_core.figures.compare
import kieval_core.figures.diff
import kieval_core.figures.documents
import kieval_core.figures.text
from kieval_app.sources import (
    AppOptions,
    Source,
    Sources,
    model_names,
    parse_aliases,
    parse_keys,
    sample_sources,
)
from kieval_core.figures.text import WORD_JOINER, md, pct, plain


@pytest.mark.parametrize(
    "module",
    [
        kieval_core.figures.text,
        kieval_app.sources,
        kieval_core.figures.automation,
        kieval_core.figures.documents,
        kieval_core.figures.compare,
        kieval_core.figures.diff,
        kieval_app.serving.store,
    ],
)
def test_docstring_examples_run(module):
    failures, _ = doctest.testmod(module)
    assert failures == 0


def _unescape_markdown(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


@given(st.text())
def test_markdown_escape_keeps_the_text_and_leaves_no_markup(text):
    escaped = md(text)
    assert "\n" not in escaped and "\r" not in escaped
    shown = _unescape_markdown(escaped).replace(WORD_JOINER, "")  # the joiners are invisible
    assert shown == text.replace("\r", " ").replace("\n", " ").replace(WORD_JOINER, "")
    # every ASCII punctuation character is escaped, so no markdown construct can start
    assert not re.search(r"(?<!\\)[\[\]()*_`<>#!|~$:]", escaped.replace("\\\\", ""))


def test_markdown_escape_defuses_links_images_html_and_directives():
    for attack in (
        "[x](http://evil)",
        "![i](http://evil/p.png)",
        "<img src=x onerror=1>",
        ":red[alert]",
        "$x^2$",
        "www.evil.com",
        "# heading",
    ):
        escaped = md(attack)
        assert re.search(r"(?<!\\)[\[\]()<>:$#!.]", escaped) is None, escaped


# GFM's literal autolinks as remark-gfm finds them in text whose escapes are resolved
# (JavaScript's \w is ASCII): a URL after a scheme or www., an e-mail address.
_GFM_URL = re.compile(r"(https?://|www(?=\.))[-.\w]+", re.IGNORECASE | re.ASCII)
_GFM_EMAIL = re.compile(r"[-.\w+]+@[-\w]+(\.[-\w]+)+", re.ASCII)


@given(st.text(alphabet=st.sampled_from(list("hwtps:/.@ab-_W") + [" ", "\u2060"])) | st.text())
def test_markdown_escape_leaves_no_autolink(text):
    shown = _unescape_markdown(md(text))
    assert not _GFM_URL.search(shown) and not _GFM_EMAIL.search(shown), shown


def test_autolinks_are_broken_where_streamlit_would_make_them():
    for attack in ("http://evil.example", "HTTPS://x.y/z", "www.evil.example", "WWW.X.Y", "a@b.example",
                   "[m2](http://evil.example).jsonl", "mailto:a@b.c"):
        shown = _unescape_markdown(md(attack))
        assert not _GFM_URL.search(shown) and not _GFM_EMAIL.search(shown), shown
        assert shown.replace(WORD_JOINER, "") == attack


def test_plotly_text_is_html_escaped():
    assert plain("<a href='javascript:x'>y</a>") == "&lt;a href='javascript:x'&gt;y&lt;/a&gt;"
    assert plain("a & b") == "a &amp; b"
    assert plain("x" * 50, limit=10) == "x" * 9 + "…"


def test_number_formats():
    assert pct(0.5) == "50.00%" and pct(float("nan")) == "n/a"


def test_aliases_and_keys_parse():
    assert parse_aliases("a=b\n c -> d ,") == (("a", "b"), ("c", "d"))
    assert parse_aliases("") == ()
    with pytest.raises(ValueError, match="old=new"):
        parse_aliases("a=")
    assert parse_keys(" split,page  x ") == ("split", "page", "x")


def test_sources_are_keyed_by_content_and_named_uniquely():
    a, b = Source.of("x/p.jsonl", b"1"), Source.of("y/p.jsonl", b"1")
    assert a.digest == b.digest and a.stem == "p"
    assert model_names([a, b]) == ["p", "p (2)"]


def test_sample_is_replaced_by_uploads():
    sample = sample_sources()
    assert sample.sample == "simulated" and sample.gt.name == "cord_v2_gt.jsonl"
    assert sample.model_names() == ["simulated-strong", "simulated-llm", "simulated-weak"]
    official = sample_sources("official")
    assert official.gt.name == "gt_csv.zip" and official.model_names() == ["qwen-vl-72b (real)"]
    gt = Source.of("mine.jsonl", b"{}")
    # a new ground truth drops the sample's simulated predictions
    assert sample.with_gt(gt) == Sources(gt, ())
    # new predictions replace the sample's, keep the sample ground truth
    mine = Source.of("model.jsonl", b"[]")
    replaced = sample.with_predictions((mine,))
    assert replaced.gt == sample.gt and replaced.predictions == (mine,) and not replaced.sample
    # a file of the same name replaces the older one; others stay
    newer = Source.of("model.jsonl", b"[1]")
    other = Source.of("other.jsonl", b"[2]")
    both = replaced.with_predictions((other,)).with_predictions((newer,))
    assert [p.data for p in both.predictions] == [b"[2]", b"[1]"]
    assert both.without_prediction("other.jsonl").predictions == (newer,)


def test_options_build_core_objects():
    options = AppOptions(gt_format="jsonl", key="fields", aliases=(("a", "b"),), meta=("split",),
                         casefold=True, families=("kieval", "oi"))
    gt = options.load_options("gt")
    assert (gt.format, gt.key, gt.aliases, gt.meta) == ("jsonl", "fields", (("a", "b"),), ("split",))
    assert options.load_options("pred").format == "auto"
    assert options.normalizer.casefold and not options.normalizer.number_punctuation
    assert options.peer_families == ("oi",) and options.peer_options.structure == "uploaded"
