"""Substitutions shown character by character: where the prediction differs from the
ground truth is highlighted on both sides, long values wrap; a very long value shows its
first part (:data:`~kieval_core.count.alignment.DIFF_CHARS` characters) and says how much
follows.

The HTML is built from escaped text only (``html.escape`` on every value), so file
content can never become markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from kieval_core.count.alignment import differences

from .style import STATUS_BACKGROUNDS

#: A highlighted space would be invisible: show it as an open box.
_SPACE = "\u2423"
CSS = """
<style>
.kv-table {border-collapse: collapse; width: 100%; font-size: 0.9rem; table-layout: fixed}
.kv-table th {text-align: left; font-weight: 600; border-bottom: 1px solid #ccc; padding: 4px 6px}
.kv-table td {vertical-align: top; padding: 4px 6px; border-bottom: 1px solid #eee;
              white-space: pre-wrap; overflow-wrap: anywhere}
.kv-table mark.gt {background: #b9d8f0; border-radius: 2px}
.kv-table mark.pred {background: #f7c8a9; border-radius: 2px}
.kv-muted {color: #777}
</style>
"""


def _marked(part: str, side: str) -> str:
    shown = html.escape(part).replace(" ", _SPACE)
    return f'<mark class="{side}">{shown}</mark>'


def _not_compared(rest: str) -> str:
    if not rest:
        return ""
    return f'<span class="kv-muted"> … {len(rest):,} more characters, not compared</span>'


def diff_html(gt: str | None, pred: str | None) -> tuple[str, str]:
    """The two values as HTML, differing parts marked (escaped text only).

    >>> diff_html("AB C", "ABC")
    ('AB<mark class="gt">␣</mark>C', 'ABC')
    >>> diff_html("<b>", None)
    ('&lt;b&gt;', '')
    """
    if not isinstance(gt, str) or not isinstance(pred, str):  # absent on a side (None or NaN)
        return (html.escape(gt) if isinstance(gt, str) else ""), (
            html.escape(pred) if isinstance(pred, str) else ""
        )
    left, right = [], []
    for tag, a, b in differences(gt, pred):
        if tag == "beyond":
            left.append(_not_compared(a))
            right.append(_not_compared(b))
            continue
        if tag == "equal":
            left.append(html.escape(a))
            right.append(html.escape(b))
            continue
        if a:
            left.append(_marked(a, "gt"))
        if b:
            right.append(_marked(b, "pred"))
    return "".join(left), "".join(right)


def table_html(columns: list[str], rows: Iterable[tuple[list[str], str | None]]) -> str:
    """An HTML table: ``columns`` are the (plain) headers; each row is its cells (already
    HTML) and an optional status that colours the row."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for cells, status in rows:
        style = f' style="background:{STATUS_BACKGROUNDS[status]}"' if status in STATUS_BACKGROUNDS else ""
        body.append(f"<tr{style}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (
        f'{CSS}<table class="kv-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )

