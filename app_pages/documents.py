"""Documents: find the documents with errors, then see one document's group matching.

Deep link: ``?doc=<doc_id>&model=<model>`` opens a document directly.
"""

import streamlit as st

from kieval_app import documents, session
from kieval_app.columns import PERCENT_FORMAT, shown
from kieval_app.diff import table_html
from kieval_app.style import KIND_LABELS, KINDS, STATUS_LABELS, STATUS_MARKDOWN_COLORS
from kieval_app.text import md, number, pct

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
f1, f2, f3, f4 = st.columns([3, 3, 3, 2], vertical_alignment="bottom")
type_options = sorted(model.by_entity_type["entity_type"])
session.keep_valid("docs_types", type_options)
entity_types = f1.multiselect(
    "With errors in fields", type_options, key="docs_types", placeholder="any field", persist_state="session"
)
kinds = f2.multiselect(
    "With errors of kind",
    KINDS,
    format_func=KIND_LABELS.get,
    key="docs_kinds",
    placeholder="any kind",
    persist_state="session",
)
sort = f3.selectbox("Order", list(documents.SORTS), key="docs_sort", persist_state="session")
only_errors = f4.toggle("Only with errors", key="docs_only_errors", persist_state="session")
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

doc = st.session_state[session.DOC]
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

# --- the document ------------------------------------------------------------------------
figures = model.documents.set_index("doc_id").loc[doc]
st.subheader(f"Document {md(doc)}")
if figures["missing"]:
    st.warning(
        "This document is missing from the predictions: every ground-truth value counts as an addition.",
        icon=":material/warning:",
    )
with st.container(horizontal=True):  # the cards wrap on narrow screens instead of cutting labels
    st.metric("Corrections", number(figures["errors"]), border=True)
    st.metric("Substitutions", number(figures["substitution"]), border=True)
    st.metric("Additions", number(figures["addition"]), border=True)
    st.metric("Deletions", number(figures["deletion"]), border=True)
    st.metric("KIEval_Aligned", pct(figures["aligned"]), border=True)
    if model.group is not None:
        st.metric("KIEval group F1", pct(figures["group_f1"]), border=True)
    else:
        st.metric("Flat entity F1", pct(figures["flat_f1"]), border=True)

pairs = session.view("pairs", lambda: documents.group_pairs(model.detail(), doc), name, doc)
if (pairs["status"] != "non-group").any():
    st.markdown(
        "**Group matching**: ground-truth lines on the left, predicted lines on the right; a line "
        "joins each matched pair (S = identical values they share)."
    )
    st.plotly_chart(
        session.view("matching", lambda: documents.matching_figure(model, doc), name, doc),
        key="docs_matching",
        config={"displayModeBar": False},
    )
else:
    st.caption(
        "No groups in this document on either side: every value is in the non-group pair, so "
        "there is no group matching to show."
    )

st.markdown(
    "**Values, pair by pair**: the ground truth beside the prediction; in a substitution the "
    "characters that differ are marked on both sides."
)
st.markdown(
    "  ".join(f":{STATUS_MARKDOWN_COLORS[s]}-background[{label}]" for s, label in STATUS_LABELS.items())
)
rows = session.view("alignment", lambda: documents.alignment_rows(model, doc), name, doc)
st.html(table_html(documents.VALUE_COLUMNS, rows))
