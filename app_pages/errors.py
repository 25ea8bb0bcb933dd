"""Errors: what kind of corrections, in which fields, which confusions; the full error
list to filter and download."""

import re

import streamlit as st

from kieval_app import session, sidebar
from kieval_app.columns import shown
from kieval_core.count.causes import CAUSES
from kieval_core.figures import error_analysis
from kieval_core.figures.diff import table_html
from kieval_core.figures.style import KIND_LABELS, KINDS
from kieval_core.figures.text import md, number
from kieval_core.result.results import top_confusions
from kieval_core.result.suggest import suggested_comparators
from kieval_core.result.tables import causes_table

ws = session.current()
session.require_models(ws)
name = session.selected_model(ws)
model = ws.result.models[name]

st.title("Errors")
c = model.corrections
st.caption(
    f"Model **{md(name)}**: {number(c.total)} corrections ({number(c.substitution)} substitutions, "
    f"{number(c.addition)} additions, {number(c.deletion)} deletions) against "
    f"{number(model.entity.fp + model.entity.fn)} FP + FN."
)

if model.causes is not None and c.total:
    st.subheader("Why: corrections per field by cause")
    if len(ws.result.models) > 1 and st.toggle("Every model's causes side by side", key="errors_all_causes"):
        frame, columns = shown(session.view("all_causes", lambda: causes_table(ws.result)),
                               counts=set(ws.result.models))
        st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
    st.plotly_chart(
        session.view("errors_causes", lambda: error_analysis.causes_by_type_figure(model), name),
        key="errors_causes",
        config={"displayModeBar": False},
    )
    shares = session.view("format_shares", lambda: error_analysis.format_shares(model), name)
    top = shares[shares["format"] > 0].head(1)
    if len(top):
        row = top.iloc[0]
        st.markdown(
            # no code span around the field: the escapes showed inside one (total\.total\_price)
            f"**{row['share']:.0%} of {md(row['entity_type'])} substitutions differ only in format** "
            f"({number(row['format'])} of {number(row['substitution'])}); in all, "
            f"{number(model.causes['substitution']['format'])} format-only substitutions. "
            f"KIEval_Aligned would be {model.aligned_if_format_right:.1%} instead of {model.aligned:.1%} "
            "if they were right."
        )
        suggestions = session.view(
            "suggestions", lambda: suggested_comparators(model, ws.result.normalizer), name
        )
        for s in suggestions[suggestions["fixes"] > 0].head(3).itertuples():
            st.button(
                f"Compare {md(s.entity_type)} as {s.comparator} "
                f"(fixes {number(s.fixes)} of {number(s.format)})",
                key=f"errors_compare_{s.entity_type}",
                on_click=sidebar.add_comparator,
                args=(s.entity_type, s.comparator),
                icon=":material/rule:",
                help="Re-scores every model with this comparator; undo it in the sidebar (Scoring)",
            )
    st.caption(
        "Format only: equal once case, spaces, punctuation, number or date format are ignored. Near "
        f"miss: similarity at least {ws.result.normalizer.near_miss:g}. Misplaced: the value is there, "
        "under another field or in another line. Hallucinated: nowhere in the ground truth. Missed: "
        "nowhere in the prediction."
    )
    if ws.result.comparators:
        compared = ", ".join(f"{md(t)} as {n}" for t, n in ws.result.comparators.items())
        st.caption(f"Compared: {compared}.")

left, right = st.columns(2)
with left:
    st.subheader("Corrections per field")
    st.plotly_chart(
        session.view("errors_by_type", lambda: error_analysis.corrections_by_type_figure(model), name),
        key="errors_by_type",
        config={"displayModeBar": False},
    )
    st.caption(
        "Substitution: a wrong value to retype. Addition: a missed value to add. Deletion: a "
        "spurious value to delete."
    )
with right:
    st.subheader("Flat F1 and KIEval F1 per field")
    if model.group is None:
        st.info(
            "The ground truth has no groups (no line items), so KIEval F1 equals flat F1 for every "
            "field: there are no grouping errors to show."
        )
    else:
        st.plotly_chart(
            session.view("errors_f1", lambda: error_analysis.f1_by_type_figure(model), name),
            key="errors_f1",
            config={"displayModeBar": False},
        )
        st.caption(
            "Flat F1 ignores which line a value is in; KIEval F1 counts a value only in its own "
            "line. A wide gap means right values in the wrong line (grouping errors)."
        )

st.subheader("Most frequent substitutions")
confusions = session.view("confusions", lambda: top_confusions(model.error_list, n=15), name)
if confusions.empty:
    st.info("No substitutions: every wrong value is a missing or a spurious one.")
else:
    st.html(
        table_html(
            ["field", "ground truth", "prediction", "times", "documents"],
            error_analysis.confusion_rows(confusions),
        )
    )

st.subheader("All corrections")
# one wrapping row (four columns cut "every kind" and "every cause" at 1,024 px)
filters = st.container(horizontal=True, vertical_alignment="bottom")
kinds = filters.multiselect(
    "Kind",
    KINDS,
    format_func=KIND_LABELS.get,
    key="errors_kinds",
    placeholder="every kind",
    persist_state="session",
)
type_options = sorted(model.by_entity_type["entity_type"])
session.keep_valid("errors_types", type_options)
entity_types = filters.multiselect(
    "Field", type_options, key="errors_types", placeholder="every field", persist_state="session"
)
causes = filters.multiselect(
    "Cause", list(CAUSES), key="errors_causes_filter", placeholder="every cause", persist_state="session"
)
search = filters.text_input(
    "Search document id or value", key="errors_search", placeholder="plain text", persist_state="session"
)
error_list = session.view(
    "errors_filtered",
    lambda: error_analysis.filter_error_list(model.error_list, kinds, entity_types, search, causes),
    name,
    tuple(kinds),
    tuple(entity_types),
    search,
    tuple(causes),
)
frame, columns = shown(
    error_list if model.group is not None
    else error_list.drop(columns=["group_type", "gt_group", "pred_group"])
)
st.dataframe(frame, hide_index=True, height=420, column_config=columns, placeholder="")
st.caption(
    f"{number(len(error_list))} of {number(len(model.error_list))} corrections. Lines are counted from 1 "
    "within their document (the downloads give the group index, from 0); an empty cell means no "
    "line or no value on that side."
)
substitutions = error_list[error_list["kind"] == "substitution"]
if len(substitutions):
    # An expander's content is built only while it is open (on_change="rerun"): a closed
    # one costs neither the server nor the browser anything.
    box = st.expander(
        f"The {number(len(substitutions))} substitutions, character by character",
        key="errors_diff_open",
        on_change="rerun",
    )
    if box.open:
        with box:
            shown = substitutions.head(200)
            st.html(
                table_html(
                    ["document", "field", "ground truth", "prediction"],
                    error_analysis.substitution_rows(shown),
                )
            )
            if len(substitutions) > len(shown):
                st.caption(f"The first {number(len(shown))}; narrow the filters above to see others.")
stem = re.sub(r"[^\w.-]+", "_", name).strip("_") or "model"
downloads = st.container(horizontal=True)
downloads.download_button(
    "Download CSV",
    lambda: error_analysis.error_list_csv(error_list),
    file_name=f"errors_{stem}.csv",
    mime="text/csv",
    key="errors_csv",
    icon=":material/download:",
    help="A cell that begins with = + - @, a tab or a carriage return gets a leading ' so a spreadsheet "
    "shows it as text instead of running it; the JSON keeps every value as it is.",
    on_click="ignore",
)
downloads.download_button(
    "Download JSON",
    lambda: error_analysis.error_list_json(error_list),
    file_name=f"errors_{stem}.json",
    mime="application/json",
    key="errors_json",
    icon=":material/download:",
    on_click="ignore",
)
