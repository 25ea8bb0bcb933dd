"""Metrics guide: every metric of the registry, and worked examples computed live."""

import json

import streamlit as st

from kieval_app import guide
from kieval_app.live_chart import live_chart, live_html
from kieval_core.figures import automation, documents
from kieval_core.figures.text import md
from kieval_core.review.automation import Costs, with_costs

st.title("Metrics guide")
st.caption(
    "Every metric the workbench reports, from the metric registry, and the paper's worked examples "
    "evaluated live by the same engine as your uploads."
)

# --- every metric ------------------------------------------------------------------------
for family, rows in guide.metric_card_groups():
    st.subheader(f"Family: {md(family)}")
    for start in range(0, len(rows), 2):
        for column, row in zip(st.columns(2), rows[start : start + 2], strict=False):
            with column.container(border=True, height="stretch"):
                st.markdown(f"**{md(row.metric)}** · `{row.key}` · {row.direction}")
                st.markdown(md(row.definition))
                st.caption(f"How to read it: {md(row.how_to_read)}  \nSource: {md(row.source)}")

# --- Fig. 2 ------------------------------------------------------------------------------
st.header("Worked example: the paper's Fig. 2")
st.markdown(
    "Six menu lines. The prediction puts the price of line 5 (`3,800`) on a line of its own and loses the "
    "last price. Every predicted value occurs somewhere in the ground truth, so **flat** entity F1 barely "
    "notices, but KIEval matches lines first and sees three lines that need fixing."
)
left, right = st.columns(2)
left.markdown("**Ground truth**")
left.dataframe(guide.menu_lines(guide.FIG2_GT), hide_index=True)
right.markdown("**Prediction**")
right.dataframe(guide.menu_lines(guide.FIG2_PREDICTION), hide_index=True)
example = guide.fig2_result()
model = example.models["prediction"]
st.markdown("**The figures, computed now by the engine, beside the paper's**")
st.dataframe(guide.fig2_table(example), hide_index=True)
st.markdown("**The group matching the engine found**")
# far below the first screen: drawn when scrolled near (live_chart), not on every visit
live_chart(documents.matching_figure(model, "example"), key="guide_matching", revision="fig2",
           config={"displayModeBar": False})
live_html(guide.fig2_pairs_html(), key="guide_pairs", revision="fig2")
with st.expander("The example as input files"):
    st.code(json.dumps({"doc_id": "example", "gt_parse": guide.FIG2_GT}), language="json")
    st.code(json.dumps({"doc_id": "example", "gt_parse": guide.FIG2_PREDICTION}), language="json")

# --- automation --------------------------------------------------------------------------
st.header("Worked example: the automation curve")
st.markdown(
    "One receipt (specification, section 4): the prediction has a wrong date (confidence 0.40), a wrong "
    "price (0.35), a spurious tax (0.30) and misses the address. Reviewing every prediction below τ fixes "
    "the wrong and spurious values but never adds the address. Each review costs 1 and each error left 10."
)
auto = guide.automation_result().models["prediction"]
rec = auto.recommend(guide.AUTOMATION_TARGET)
curve = with_costs(auto.curve, Costs(), auto.n_documents)
left, right = st.columns([2, 3])
left.dataframe(
    curve[["threshold", "auto_rate", "kieval_aligned", "reviewed", "cost"]],
    hide_index=True,
    column_config={
        "threshold": st.column_config.NumberColumn("τ", format="%.2f"),
        "auto_rate": st.column_config.NumberColumn("automation", format="percent"),
        "kieval_aligned": st.column_config.NumberColumn("accuracy after review", format="percent"),
        "reviewed": st.column_config.NumberColumn("reviews"),
        "cost": st.column_config.NumberColumn("cost", format="%.0f"),
    },
)
left.markdown(
    f"Recommended τ for {guide.AUTOMATION_TARGET:.0%} accuracy: **{rec.threshold:.2f}**, automating "
    f"**{rec.auto_rate:.0%}** of the predictions (accuracy {rec.accuracy:.0%}); it is also the cheapest."
)
with right:
    live_chart(automation.threshold_figure(auto.curve, rec.threshold, guide.AUTOMATION_TARGET),
               key="guide_automation", revision="automation", config={"displayModeBar": False})
