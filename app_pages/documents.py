"""Documents: find the documents with errors, then see one document's group matching.

Deep link: ``?doc=<doc_id>&model=<model>`` opens a document directly.
"""

import streamlit as st

from kieval_app import documents, workspace
from kieval_app.style import (
    KIND_LABELS,
    KINDS,
    STATUS_BACKGROUNDS,
    STATUS_LABELS,
    STATUS_MARKDOWN_COLORS,
)
from kieval_app.text import md, pct

ws = workspace.current()
workspace.require_models(ws)
name = workspace.selected_model(ws)
model = ws.result.models[name]
all_docs = model.documents["doc_id"].tolist()

st.title("Documents")
st.caption(
    f"Model **{md(name)}**. Pick a document in the table (click a row), by id, or "
    "with previous / next."
)

# --- which documents ---------------------------------------------------------------------
f1, f2, f3, f4 = st.columns([3, 3, 3, 2], vertical_alignment="bottom")
type_options = sorted(model.by_entity_type["entity_type"])
workspace.keep_valid("docs_types", type_options)
entity_types = f1.multiselect(
    "With errors in entity types",
    type_options,
    key="docs_types",
    placeholder="any entity type",
    persist_state="session",
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
table = documents.document_table(model, entity_types, kinds, only_errors, sort)
order = table["doc_id"].tolist()

# --- the current document: deep link, else what was shown before, else the first ---------
linked = st.query_params.get("doc")
if linked in all_docs and linked != st.session_state[workspace.URL].get("doc"):
    st.session_state[workspace.DOC] = linked
if st.session_state.get(workspace.DOC) not in all_docs:
    st.session_state[workspace.DOC] = order[0] if order else all_docs[0]


def _show(doc_id):
    st.session_state[workspace.DOC] = doc_id


def _from_table():
    rows = st.session_state[table_key].selection.rows
    if rows:
        _show(order[rows[0]])


def _from_picker():
    _show(st.session_state["docs_pick"])


table_key = f"docs_table_{hash((tuple(entity_types), tuple(kinds), sort, only_errors, name))}"
st.dataframe(
    table,
    hide_index=True,
    height=300,
    key=table_key,
    on_select=_from_table,
    selection_mode="single-row",
    column_config={
        "aligned": st.column_config.ProgressColumn(
            "KIEval_Aligned", format="percent", min_value=0, max_value=1
        ),
        "f1": st.column_config.NumberColumn("KIEval F1", format="percent"),
        "group_f1": st.column_config.NumberColumn("group F1", format="percent"),
        "flat_f1": st.column_config.NumberColumn("flat F1", format="percent"),
        "n_gt": st.column_config.NumberColumn("GT entities"),
        "n_pred": st.column_config.NumberColumn("predicted"),
        "missing": st.column_config.CheckboxColumn("missing", help="Absent from the predictions"),
    },
)
st.caption(f"{len(table):,} of {len(all_docs):,} documents. Click a column name to sort the table.")

doc = st.session_state[workspace.DOC]
choices = order if doc in order else [doc, *order]
previous, following = documents.neighbours(choices, doc)
n1, n2, n3 = st.columns([1, 6, 1], vertical_alignment="bottom")
n1.button(
    "Previous",
    icon=":material/arrow_back:",
    key="docs_prev",
    disabled=previous is None,
    on_click=_show,
    args=(previous,),
    width="stretch",
)
st.session_state["docs_pick"] = doc
n2.selectbox("Document", choices, key="docs_pick", on_change=_from_picker)
n3.button(
    "Next",
    icon=":material/arrow_forward:",
    key="docs_next",
    disabled=following is None,
    on_click=_show,
    args=(following,),
    width="stretch",
)

st.query_params["doc"] = doc
st.query_params["model"] = name
st.session_state[workspace.URL] = {"doc": doc, "model": name}

# --- the document ------------------------------------------------------------------------
figures = documents.document_figures(model, doc)
st.subheader(f"Document {md(doc)}")
if figures["missing"]:
    st.warning(
        "This document is missing from the predictions: every ground-truth value "
        "counts as an addition.",
        icon=":material/warning:",
    )
counts = st.columns(4)
counts[0].metric("Corrections", int(figures["errors"]), border=True)
counts[1].metric("Substitutions", int(figures["substitution"]), border=True)
counts[2].metric("Additions", int(figures["addition"]), border=True)
counts[3].metric("Deletions", int(figures["deletion"]), border=True)
scores = st.columns(4)
scores[0].metric("KIEval_Aligned", pct(figures["aligned"], 1), border=True)
scores[1].metric("KIEval entity F1", pct(figures["f1"], 1), border=True)
scores[2].metric(
    "KIEval group F1",
    pct(figures["group_f1"], 1) if model.group is not None else "n/a",
    border=True,
    help=None if model.group is not None else "The ground truth has no groups",
)
scores[3].metric("Flat entity F1", pct(figures["flat_f1"], 1), border=True)

pairs = documents.group_pairs(model, doc)
if (pairs["status"] != "non-group").any():
    st.markdown(
        "**Group matching**: ground-truth groups on the left, predicted groups on the "
        "right; a line joins each matched pair (S = identical entities they share)."
    )
    st.plotly_chart(
        documents.matching_figure(model, doc), key="docs_matching", config={"displayModeBar": False}
    )
else:
    st.caption(
        "No groups in this document on either side: every entity is in the non-group "
        "pair, so there is no group matching to show."
    )

st.markdown("**Entities, pair by pair**: the ground-truth value beside the predicted value.")
st.markdown(
    "  ".join(
        f":{STATUS_MARKDOWN_COLORS[s]}-background[{label}]" for s, label in STATUS_LABELS.items()
    )
)
aligned = documents.aligned_entities(model, doc, ws.result.normalizer)
shown = aligned[["pair", "entity_type", "gt_value", "pred_value", "confidence", "status"]]
styled = shown.style.apply(
    lambda row: [f"background-color: {STATUS_BACKGROUNDS.get(row['status'], '')}"] * len(row),
    axis=1,
)
st.dataframe(
    styled,
    hide_index=True,
    height=min(40 + 35 * len(shown), 700),
    column_config={
        "pair": st.column_config.TextColumn("pair", width="medium"),
        "gt_value": st.column_config.TextColumn("ground-truth value"),
        "pred_value": st.column_config.TextColumn("predicted value"),
        "confidence": st.column_config.NumberColumn("confidence", format="%.3f"),
    },
)
with st.expander("Pairs of this document"):
    st.dataframe(pairs, hide_index=True)
