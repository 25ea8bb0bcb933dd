"""Compare two models on the same documents: are the differences real, and where do the
models disagree?"""

import streamlit as st

from kieval_app import compare, workspace
from kieval_app.text import md

ws = workspace.current()
workspace.require_models(ws)
names = ws.model_names

st.title("Compare models")
if len(names) < 2:
    st.info("Load at least two prediction files to compare models.")
    st.page_link(
        "app_pages/overview.py", label="Upload on the Overview page", icon=":material/upload:"
    )
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
st.subheader("Metric differences with 95% confidence intervals")
table = workspace.paired_bootstrap(
    ws.key, name_a, name_b, resamples, 0, _model_a=model_a, _model_b=model_b
)
left, right = st.columns([2, 3])
left.plotly_chart(
    compare.deltas_figure(table, name_a, name_b), key="cmp_deltas", config={"displayModeBar": False}
)
right.dataframe(compare.deltas_display(table), hide_index=True)
right.caption(
    f"A = {md(name_a)}, B = {md(name_b)}. Paired bootstrap over the "
    f"{model_a.n_documents:,} documents: {resamples:,} resamples of documents (the same "
    "for both models), micro metrics recomputed on each. An interval that excludes 0 "
    "marks a difference unlikely to be chance."
)

# --- where do they disagree? ---------------------------------------------------------------
st.subheader("Per document")
figures = compare.document_metrics(model_a)
figures = {k: v for k, v in figures.items() if k in compare.document_metrics(model_b)}
if st.session_state.get("cmp_metric") not in figures:
    st.session_state["cmp_metric"] = "KIEval_Aligned"
label = st.segmented_control(
    "Figure", list(figures), key="cmp_metric", required=True, persist_state="session"
)
column = figures[label or "KIEval_Aligned"]
left, right = st.columns([3, 2])
with left:
    event = st.plotly_chart(
        compare.scatter_figure(model_a, model_b, column, label, name_a, name_b),
        key="cmp_scatter",
        on_select="rerun",
        selection_mode="points",
        config={"displayModeBar": False},
    )
    clicked = compare.doc_from_selection(event.selection if event else None)
    if clicked is not None:
        st.switch_page("app_pages/documents.py", query_params={"doc": clicked, "model": name_b})
    st.caption(
        f"One point per document (slightly jittered). Click a point to open the document "
        f"of {md(name_b)}."
    )
with right:
    st.markdown("**Where they disagree most**")
    worst = compare.disagreements(model_a, model_b, column, n=12)
    if worst.empty:
        st.info("The two models score every document the same.")
    fmt = "{:g}" if column == "errors" else "{:.2f}"
    for row in worst.itertuples(index=False):
        text, link_a, link_b = st.columns([4, 1, 1], vertical_alignment="center")
        text.markdown(f"{md(row.doc_id)}: {fmt.format(row.A)} → {fmt.format(row.B)}")
        with link_a:
            st.page_link(
                "app_pages/documents.py",
                label="A",
                icon=":material/description:",
                query_params={"doc": row.doc_id, "model": name_a},
                help=f"Open this document as seen by {md(name_a)}",
            )
        with link_b:
            st.page_link(
                "app_pages/documents.py",
                label="B",
                icon=":material/description:",
                query_params={"doc": row.doc_id, "model": name_b},
                help=f"Open this document as seen by {md(name_b)}",
            )
    st.caption(
        f"{md(label)} of A → B per document; A and B open the document in the "
        "Documents view as seen by that model."
    )
