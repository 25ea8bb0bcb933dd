"""Showing values that come from uploaded files as text, and formatting numbers.

File content (values, document ids, entity types, file and model names) is data. Streamlit
renders markdown in headings, captions, alerts, metric labels and button labels, and
plotly renders a subset of HTML (``<a href>``, ``<b>``, ``<br>``) in labels and hover text.
So every file-derived string that reaches one of those places goes through
:func:`md` or :func:`plain` first; tables (``st.dataframe``) show raw text and need neither.
"""

from __future__ import annotations

import html
import math
import re

# CommonMark lets every ASCII punctuation character be backslash-escaped; escaping all of
# them defuses links, images, emphasis, HTML, LaTeX ($) and Streamlit's :color[...]
# directives, whatever the character's context.
_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# GFM's literal autolinks (http://..., www...., a@b.c) are found in the text *after* the
# escapes are resolved (Streamlit's remark-gfm does so: an escaped URL still became a
# link), so they are broken with an invisible WORD JOINER (U+2060): after "scheme:" before
# "//", between "www" and ".", after "@".
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?i:(?<=www)(?=\.))|(?<=@)")
WORD_JOINER = "\u2060"


def md(text: object) -> str:
    """Escape a file-derived string for any Streamlit element that renders markdown; no
    part of it becomes a link, an image, HTML, LaTeX or formatting.

    >>> md("[click](x.y) *now*")
    '\\\\[click\\\\]\\\\(x\\\\.y\\\\) \\\\*now\\\\*'
    >>> md("menu.nm")
    'menu\\\\.nm'
    >>> md("http://x.y www.x.y a@x.y").replace(WORD_JOINER, "|")
    'http\\\\:|\\\\/\\\\/x\\\\.y www|\\\\.x\\\\.y a\\\\@|x\\\\.y'
    """
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, str(text)))
    # a newline would start a new markdown block (heading, list, quote): keep one line
    return escaped.replace("\r", " ").replace("\n", " ")


def plain(text: object, limit: int | None = None) -> str:
    """Escape a file-derived string for plotly text, labels and hover (HTML subset).

    >>> plain("<a href='x'>1</a>")
    "&lt;a href='x'&gt;1&lt;/a&gt;"
    >>> plain("a very long value", limit=8)
    'a very…'
    """
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return html.escape(text, quote=False).replace("\n", " ")


def field_html(name: object) -> str:
    """A field name for an HTML table cell: escaped, and a narrow column breaks it after a
    dot ("menu." / "discountprice") rather than inside a word ("menu.discou" / "ntprice").

    >>> field_html("menu.<b>price")
    'menu.<wbr>&lt;b&gt;price'
    """
    return plain(name).replace(".", ".<wbr>")


def is_missing(value: object) -> bool:
    if value is None:
        return True
    try:
        return bool(math.isnan(value))  # type: ignore[arg-type]
    except TypeError:
        return False


def pct(value: object, digits: int = 2) -> str:
    """A fraction as a percentage; ``n/a`` for None or NaN.

    >>> pct(0.76923)
    '76.92%'
    >>> pct(None)
    'n/a'
    """
    if is_missing(value):
        return "n/a"
    return f"{100 * float(value):.{digits}f}%"  # type: ignore[arg-type]


def number(value: object) -> str:
    """A count with thousands separators; ``n/a`` for None or NaN.

    >>> number(12345)
    '12,345'
    """
    if is_missing(value):
        return "n/a"
    if float(value) == int(value):  # type: ignore[arg-type]
        return f"{int(value):,}"  # type: ignore[arg-type]
    return f"{float(value):,.1f}"  # type: ignore[arg-type]


def file_size(n_bytes: int) -> str:
    """A byte count for people.

    >>> file_size(2_500_000)
    '2.5 MB'
    """
    if n_bytes >= 1_000_000:
        return f"{n_bytes / 1_000_000:.1f} MB"
    if n_bytes >= 1_000:
        return f"{n_bytes / 1_000:.1f} kB"
    return f"{n_bytes} B"
