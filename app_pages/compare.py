"""Compare two models on the same documents: are the differences real, and where do the
models disagree?"""

import streamlit as st

from kieval_app import session
from kieval_app.columns import shown
from kieval_core.figures import compare
from kieval_core.figures.text import md, number
from kieval_core.result.compare import disagreements, paired_bootstrap, per_document

ws = session.current()
session.require_models(ws)
names = ws.model_names

st.title("Compare models")
if len(names) < 2:
    st.info("Load at least two prediction files to compare models.")
    st.page_link("app_pages/overview.py", label="Upload on the Overview page", icon=":material/upload:")
    st.stop()

c1, c2, c3 = st.columns([2, 2, 1], vertical_alignment="bottom")
for key, default in (("cmp_a", names[0]), ("cmp_b", names[1])):
    if st.session_state.get(key) not in names:
        st.session_state[key] = default
name_a = c1.selectbox("Model A", names, key="cmp_a", persist_state="session")
name_b = c2.selectbox("Model B", names, key="cmp_b", persist_state="session")
st.session_state.setdefault("cmp_resamples", 1000)
resamples = c3.selectbox(
    "Bootstrap resamples", [200, 1000, 5000], key="cmp_resamples", persist_state="session"
)
if name_a == name_b:
    st.warning("Pick two different models.")
    st.stop()
model_a, model_b = ws.result.models[name_a], ws.result.models[name_b]

# --- are the differences real? -------------------------------------------------------------
st.subheader("Differences with 95% intervals")
table = session.view(
    "bootstrap", lambda: paired_bootstrap(model_a, model_b, resamples, 0), name_a, name_b, resamples
)
deltas = compare.deltas_display(table, name_a, name_b)
st.plotly_chart(
    compare.deltas_figure(table, name_a, name_b), key="cmp_deltas", config={"displayModeBar": False}
)
for counts in (False, True):
    part = deltas[deltas["_count"] == counts].drop(columns="_count")
    frame, columns = shown(
        part,
        percent=set() if counts else {"A", "B", "B - A"},
        counts={"A", "B", "B - A"} if counts else set(),
        labels={"95% interval": "95% interval of B - A"},
        metric=st.column_config.TextColumn("metric", width="medium"),
        A=st.column_config.NumberColumn(
            "A", format="localized" if counts else "%.2f%%", help=name_a, width="small"
        ),
        B=st.column_config.NumberColumn(
            "B", format="localized" if counts else "%.2f%%", help=name_b, width="small"
        ),
        # a difference of two percentages is in points, like its interval beside it
        **{"B - A": st.column_config.NumberColumn("B - A", format="localized" if counts else "%+.2f pts")},
    )
    st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
st.caption(
    f"A = {md(name_a)}, B = {md(name_b)}. Paired bootstrap over the {number(model_a.n_documents)} documents: "
    f"{number(resamples)} resamples of documents (the same for both models), every metric recomputed on "
    "each. An interval that excludes 0 marks a difference unlikely to be chance. Counts (corrections) are "
    f"differences of totals. Values are compared after: {md(ws.result.comparison)}."
)

# --- where do they disagree? ---------------------------------------------------------------
st.subheader("Per document")
figures = compare.document_metrics(model_a, model_b)
if st.session_state.get("cmp_metric") not in figures:
    st.session_state["cmp_metric"] = "KIEval_Aligned"
label = st.segmented_control(
    "Figure", list(figures), key="cmp_metric", required=True, persist_state="session"
)
column = figures[label or "KIEval_Aligned"]
frame = session.view("per_document", lambda: per_document(model_a, model_b, column), name_a, name_b, column)
left, right = st.columns([3, 2])
with left:
    event = st.plotly_chart(
        compare.scatter_figure(frame, label, name_a, name_b, column == "corrections"),
        key="cmp_scatter",
        on_select="rerun",
        selection_mode="points",
        config={"displayModeBar": False},
    )
    clicked = compare.doc_from_selection(event.selection if event else None)
    if clicked is not None:
        st.switch_page("app_pages/documents.py", query_params={"doc": clicked, "model": name_b})
    st.caption(
        f"One marker per pair of values, sized by the number of documents that share it. Click a marker "
        f"to open its first document as seen by {md(name_b)}."
    )
with right:
    st.markdown("**Where they disagree most**")
    worst = session.view(
        "disagreements", lambda: disagreements(model_a, model_b, column, n=12), name_a, name_b, column
    )
    if worst.empty:
        st.info("The two models score every document the same.")
    fmt = "{:,.0f}" if column == "corrections" else "{:.2%}"
    for row in worst.itertuples(index=False):
        # the links as wide as their labels (in columns of 1/6 they showed their icons only at
        # 1,024 px): at the right of the figures, or under them on narrow screens
        line = st.container(horizontal=True, vertical_alignment="center", gap="small")
        line.markdown(f"{md(row.doc_id)}: {fmt.format(row.A)} → {fmt.format(row.B)}")
        for side, model_name in (("A", name_a), ("B", name_b)):
            line.page_link(
                "app_pages/documents.py",
                label=side,
                icon=":material/description:",
                query_params={"doc": row.doc_id, "model": model_name},
                help=f"Open this document as seen by {md(model_name)}",
                width="content",
            )
    st.caption(f"{md(label)} of A → B per document.")
