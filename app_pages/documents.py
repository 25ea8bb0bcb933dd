"""Documents: find the documents with errors, then see one document's group matching.

Deep link: ``?doc=<doc_id>&model=<model>`` opens a document directly. The part of one
document (previous / next, its figures, its page, its matching, its values) is a fragment:
moving to another document reruns that part only, not the frame, the sidebar or the
document table.
"""

import streamlit as st

from kieval_app import session
from kieval_app.columns import PERCENT_FORMAT, shown
from kieval_app.live_chart import live_chart, live_html
from kieval_core.figures import document_view, documents
from kieval_core.figures.diff import table_html
from kieval_core.figures.style import KIND_LABELS, KINDS, STATUS_LABELS, STATUS_MARKDOWN_COLORS
from kieval_core.figures.text import md, number, pct

VALUES, PAGE = "docs_values", "docs_page"  # the pairs table beside the page view; the page shown

ws = session.current()
session.require_models(ws)
name = session.selected_model(ws)
model = ws.result.models[name]
all_docs = model.documents["doc_id"].tolist()

st.title("Documents")
st.caption(
    f"Model **{md(name)}**. Pick a document in the table (click a row), by id, or with previous / next."
)

# --- which documents ---------------------------------------------------------------------
# one wrapping row: side by side when they fit, the toggle on a line of its own when not
# (four columns cut its label to "Only ..." at 1,024 px)
filters = st.container(horizontal=True, vertical_alignment="bottom")
type_options = sorted(model.by_entity_type["entity_type"])
session.keep_valid("docs_types", type_options)
entity_types = filters.multiselect(
    "With errors in fields", type_options, key="docs_types", placeholder="any field", persist_state="session"
)
kinds = filters.multiselect(
    "With errors of kind",
    KINDS,
    format_func=KIND_LABELS.get,
    key="docs_kinds",
    placeholder="any kind",
    persist_state="session",
)
sort = filters.selectbox("Order", list(documents.SORTS), key="docs_sort", persist_state="session")
only_errors = filters.toggle("Only with errors", key="docs_only_errors", persist_state="session")
table = session.view(
    "documents",
    lambda: documents.document_table(model, entity_types, kinds, only_errors, sort),
    name,
    tuple(entity_types),
    tuple(kinds),
    only_errors,
    sort,
)
order = table["doc_id"].tolist()

# --- the current document: deep link, else what was shown before, else the first ---------
linked = st.query_params.get("doc")
if linked in all_docs and linked != st.session_state[session.URL].get("doc"):
    st.session_state[session.DOC] = linked
if st.session_state.get(session.DOC) not in all_docs:
    st.session_state[session.DOC] = order[0] if order else all_docs[0]


def _show(doc_id):
    st.session_state[session.DOC] = doc_id
    st.session_state.pop(VALUES, None)  # a new document: no value selected, its first page
    st.session_state.pop(PAGE, None)


def _from_table():
    rows = st.session_state["docs_table"].selection.rows
    if rows:
        _show(order[rows[0]])


def _from_picker():
    _show(st.session_state["docs_pick"])


frame, columns = shown(
    table,
    aligned=st.column_config.ProgressColumn(
        "KIEval_Aligned", format=PERCENT_FORMAT, min_value=0, max_value=100
    ),
)
st.dataframe(
    frame,
    hide_index=True,
    height=300,
    key="docs_table",
    on_select=_from_table,
    selection_mode="single-row",
    column_config=columns,
    placeholder="",
)
st.caption(f"{number(len(table))} of {number(len(all_docs))} documents. Click a column name to sort.")

# --- one document: a fragment, so that moving to another document (previous / next / the
# picker), choosing a page, or selecting a box or a row reruns only this part and not the
# whole page (the frame, the sidebar, the document table)
@st.fragment
def _document(order: list[str]) -> None:
    ws = session.current()
    name = session.selected_model(ws)
    model = ws.result.models[name]
    doc = st.session_state[session.DOC]
    following = _navigation(order, doc, name)
    _cards(model, doc)
    pairs, boxes, aligned = documents.document_tables(session.view, model, name, doc)
    images_digest = ws.sources.images.digest if ws.sources.images is not None else None
    image_pages = ws.images.n_pages(doc) if ws.images is not None else 0
    if len(boxes) or image_pages:
        _on_the_page(ws, name, doc, boxes, aligned, image_pages, images_digest)
    _matching(model, name, doc, pairs)
    _pair_by_pair(model, name, doc, aligned)
    if following is not None:  # built while the user looks at this one
        session.ahead(lambda view: documents.build_document(view, model, name, following, ws.images,
                                                            images_digest))


def _navigation(order: list[str], doc: str, name: str) -> str | None:
    """Previous, the picker and next; the address names the document. Returns the next one."""
    choices = order if doc in order else [doc, *order]
    previous, following = documents.neighbours(choices, doc)
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.button(
            "Previous",
            icon=":material/arrow_back:",
            key="docs_prev",
            disabled=previous is None,
            on_click=_show,
            args=(previous,),
        )
        st.session_state["docs_pick"] = doc
        st.selectbox("Document", choices, key="docs_pick", on_change=_from_picker)
        st.button(
            "Next",
            icon=":material/arrow_forward:",
            key="docs_next",
            disabled=following is None,
            on_click=_show,
            args=(following,),
        )
    st.query_params["doc"] = doc
    st.query_params["model"] = name
    st.session_state[session.URL] = {"doc": doc, "model": name}
    return following


def _cards(model, doc: str) -> None:
    """The document's title and its figures."""
    figures = model.documents.set_index("doc_id").loc[doc]
    st.subheader(f"Document {md(doc)}")
    if figures["missing"]:
        st.warning(
            "This document is missing from the predictions: every ground-truth value counts as an addition.",
            icon=":material/warning:",
        )
    with st.container(horizontal=True):  # the cards wrap on narrow screens instead of cutting labels
        st.metric("Corrections", number(figures["corrections"]), border=True)
        st.metric("Substitutions", number(figures["substitution"]), border=True)
        st.metric("Additions", number(figures["addition"]), border=True)
        st.metric("Deletions", number(figures["deletion"]), border=True)
        st.metric("KIEval_Aligned", pct(figures["aligned"]), border=True)
        if model.group is not None:
            st.metric("KIEval group F1", pct(figures["group_f1"]), border=True)
        else:
            st.metric("Flat entity F1", pct(figures["flat_f1"]), border=True)


def _on_the_page(ws, name: str, doc: str, boxes, aligned, image_pages: int,
                 images_digest: str | None) -> None:
    """The document on its page: boxes coloured by status, matched pairs numbered, beside
    its values (or the page image beside the values when the files carry no boxes)."""
    n_pages = document_view.n_pages(boxes, image_pages)
    page = 1
    if n_pages > 1:
        page = st.segmented_control("Page", list(range(1, n_pages + 1)), key=PAGE, default=1) or 1
    image = ws.images.page(doc, page) if ws.images is not None else None
    values = document_view.values_table(aligned)
    chosen = st.session_state.get(VALUES)
    rows = chosen["selection"]["rows"] if chosen else []
    selected = rows[0] if rows else None

    def _from_box(row) -> None:  # what the browser sent: a row of the values table, or ignored
        if isinstance(row, int) and not isinstance(row, bool) and 0 <= row < len(values):
            st.session_state[VALUES] = {"selection": {"rows": [row], "columns": []}}

    values_table = {
        "key": VALUES, "on_select": "rerun", "selection_mode": "single-row", "hide_index": True,
        "column_config": {"confidence": st.column_config.NumberColumn(format="%.4f")}, "placeholder": "",
    }
    if not len(boxes):
        st.markdown("**On the page**: the page image beside the values (the files carry no boxes).")
        left, right = st.columns(2)
        left.image(image.jpeg, caption=f"page {page} of {n_pages}", width="stretch")
        right.dataframe(values, height=600, **values_table)
        return
    frame = document_view.page_frame(boxes, image)
    _page_caption(ws, page, image)
    if (beyond := document_view.outside(boxes, frame)):
        st.warning(
            f"{beyond} box(es) of this document reach outside the page ({frame.width:,.0f} x "
            f"{frame.height:,.0f}); they are drawn where the file puts them.",
            icon=":material/warning:",
        )
    live_chart(
        documents.page_figure(session.view, name, doc, boxes, page, image, selected, images_digest),
        key="docs_view", revision=f"{name}/{doc}/{page}/{selected}", on_click=_from_box,
        config={"scrollZoom": True, "modeBarButtonsToRemove": ["select2d", "lasso2d"]},
    )
    st.dataframe(values, height=min(36 + 35 * len(values), 320), **values_table)


def _page_caption(ws, page: int, image) -> None:
    """What the page view shows: the page image, a rendering, or a layout from the boxes."""
    if image is None:
        what = "a layout drawn from the boxes (no page image)"
    elif ws.sources.sample:
        what = "a rendering of the receipt's annotation, not a photo"
    else:
        what = f"page {page} of {md(ws.sources.images.name)}"
    st.markdown(
        f"**On the page** ({what}): ground-truth boxes on the left, predicted boxes on the right; "
        "a matched pair of lines has the same number on both sides. Hover a box for its value, click "
        "it to select its row below (and a row to outline its boxes); scroll to zoom, drag to pan."
    )
    if image is None and ws.images is not None:
        st.caption("This document has no page image among the loaded images.")


def _matching(model, name: str, doc: str, pairs) -> None:
    """The group matching, when either side has groups."""
    if documents.has_groups(pairs):
        st.markdown(
            "**Group matching**: ground-truth lines on the left, predicted lines on the right; a line "
            "joins each matched pair (S = identical values they share)."
        )
        live_chart(
            documents.matching(session.view, model, name, doc, pairs),
            key="docs_matching", revision=f"{name}/{doc}", config={"displayModeBar": False},
        )
    else:
        st.caption(
            "No groups in this document on either side: every value is in the non-group pair, so "
            "there is no group matching to show."
        )


def _pair_by_pair(model, name: str, doc: str, aligned) -> None:
    """The values, pair by pair, with the differing characters of a substitution marked."""
    st.markdown(
        "**Values, pair by pair**: the ground truth beside the prediction; in a substitution the "
        "characters that differ are marked on both sides."
    )
    st.markdown(
        "  ".join(f":{STATUS_MARKDOWN_COLORS[s]}-background[{label}]" for s, label in STATUS_LABELS.items())
    )
    rows = documents.pair_rows(session.view, model, name, doc, aligned)
    live_html(table_html(documents.value_columns(model), rows), key="docs_pairs", revision=f"{name}/{doc}")


_document(order)
