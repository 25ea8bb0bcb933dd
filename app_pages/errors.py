"""Errors: what kind of corrections, in which entity types, which confusions; the full
error list to filter and download."""

import re

import streamlit as st

from kieval_app import error_analysis, workspace
from kieval_app.style import KIND_LABELS, KINDS
from kieval_app.text import md

ws = workspace.current()
workspace.require_models(ws)
name = workspace.selected_model(ws)
model = ws.result.models[name]

st.title("Errors")
c = model.corrections
st.caption(
    f"Model **{md(name)}**: {c.total:,} corrections ({c.substitution:,} substitutions, "
    f"{c.addition:,} additions, {c.deletion:,} deletions) against "
    f"{model.entity.fp + model.entity.fn:,} FP + FN."
)

left, right = st.columns(2)
with left:
    st.subheader("Corrections per entity type")
    st.plotly_chart(error_analysis.corrections_by_type_figure(model), key="errors_by_type")
    st.caption(
        "Substitution: a wrong value to retype. Addition: a missed value to add. "
        "Deletion: a spurious value to delete."
    )
with right:
    st.subheader("Flat F1 vs KIEval F1 per entity type")
    st.plotly_chart(error_analysis.f1_by_type_figure(model), key="errors_f1")
    st.caption(
        "Flat F1 ignores which line item a value is in; KIEval F1 counts a value only in "
        "its own group. A wide gap means right values in the wrong line (grouping errors)."
    )

st.subheader("Most frequent confusions")
confusions = error_analysis.top_confusions(model, n=25)
if confusions.empty:
    st.info("No substitutions: every wrong value is a missing or a spurious one.")
else:
    st.dataframe(
        confusions,
        hide_index=True,
        column_config={
            "gt_value": st.column_config.TextColumn("ground-truth value"),
            "pred_value": st.column_config.TextColumn("predicted value"),
            "count": st.column_config.NumberColumn("times"),
            "documents": st.column_config.NumberColumn("in documents"),
        },
    )

st.subheader("All errors")
f1, f2, f3 = st.columns([2, 3, 3])
kinds = f1.multiselect(
    "Kind",
    KINDS,
    format_func=KIND_LABELS.get,
    key="errors_kinds",
    placeholder="every kind",
    persist_state="session",
)
type_options = sorted(model.errors["entity_type"].unique())
workspace.keep_valid("errors_types", type_options)
entity_types = f2.multiselect(
    "Entity type",
    type_options,
    key="errors_types",
    placeholder="every entity type",
    persist_state="session",
)
search = f3.text_input(
    "Search document id or value",
    key="errors_search",
    placeholder="plain text",
    persist_state="session",
)
errors = error_analysis.filter_errors(model.errors, kinds, entity_types, search)
st.dataframe(
    errors,
    hide_index=True,
    height=420,
    column_config={
        "gt_group": st.column_config.NumberColumn("GT group"),
        "pred_group": st.column_config.NumberColumn("pred group"),
        "gt_value": st.column_config.TextColumn("ground-truth value"),
        "pred_value": st.column_config.TextColumn("predicted value"),
        "confidence": st.column_config.NumberColumn(format="%.3f"),
    },
)
st.caption(
    f"{len(errors):,} of {len(model.errors):,} errors. Group numbers are the group's index "
    "in its document (from 0); empty = no group on that side."
)
stem = re.sub(r"[^\w.-]+", "_", name).strip("_") or "model"
d1, d2, _ = st.columns([1, 1, 2])
d1.download_button(
    "Download errors CSV",
    lambda: error_analysis.errors_csv(errors),
    file_name=f"errors_{stem}.csv",
    mime="text/csv",
    key="errors_csv",
    icon=":material/download:",
    on_click="ignore",
    width="stretch",
)
d2.download_button(
    "Download errors JSON",
    lambda: error_analysis.errors_json(errors),
    file_name=f"errors_{stem}.json",
    mime="application/json",
    key="errors_json",
    icon=":material/download:",
    on_click="ignore",
    width="stretch",
)
