"""Automation: choose the confidence threshold below which a person reviews predictions
(the paper's Appendix C). Move the slider or click a point on either curve."""

import streamlit as st

from kieval_app import automation, workspace
from kieval_app.text import md, number, pct

ws = workspace.current()
workspace.require_models(ws)
name = workspace.selected_model(ws)
model = ws.result.models[name]
curve = model.curve

st.title("Automation threshold")
st.caption(
    f"Model **{md(name)}**. A prediction with confidence below τ goes to a person, who "
    "fixes it by retyping or deleting; the rest is automated. Missing values are never "
    "added by this review, so some accuracy stays out of reach."
)
confidences = model.counted.pred_entities["confidence"]
missing_confidence = float(confidences.isna().mean()) if len(confidences) else 0.0
if model.has_confidence and missing_confidence > 0:
    st.info(
        f"{missing_confidence:.0%} of this model's predictions carry no confidence. They count "
        "as 1.0: automated at every τ up to 1, reviewed only above 1.",
        icon=":material/info:",
    )
if not model.has_confidence:
    st.warning(
        "This model's predictions carry no confidence. Every prediction counts as 1.0, "
        "so a threshold can only review everything or nothing.",
        icon=":material/warning:",
    )

# --- inputs ------------------------------------------------------------------------------
TAU = "auto_tau"
tau_max = float(max(1.0, round(float(curve["threshold"].max()) + 5e-5, 4)))
target = None
left, right = st.columns([1, 2], vertical_alignment="top")
with left:
    target = workspace.target_input("auto_target")
    recommendation = model.recommend(target)
    if TAU not in st.session_state:
        st.session_state[TAU] = recommendation.threshold if recommendation.reachable else 0.5
    st.session_state[TAU] = min(max(float(st.session_state[TAU]), 0.0), tau_max)


def _use(threshold):
    st.session_state[TAU] = min(max(float(threshold), 0.0), tau_max)


def _from_chart(key):
    threshold = automation.threshold_from_selection(st.session_state[key].selection)
    if threshold is not None:
        _use(threshold)


with left:
    st.slider(
        "Confidence threshold τ",
        min_value=0.0,
        max_value=tau_max,
        step=0.0001,
        format="%.4f",
        key=TAU,
        help="Predictions with confidence < τ are reviewed",
        persist_state="session",
    )
    st.button(
        "Use the recommended τ",
        key="auto_use_recommended",
        icon=":material/recommend:",
        disabled=not recommendation.reachable,
        on_click=_use,
        args=(recommendation.threshold,),
    )
tau = float(st.session_state[TAU])
now = automation.review_summary(model, tau)

with right:
    if recommendation.reachable:
        st.success(
            f"**Recommended for {target:.1%} accuracy: τ = "
            f"{automation.tau_text(recommendation.threshold)}**, "
            f"automating {recommendation.auto_rate:.1%} of the predictions (accuracy "
            f"{recommendation.kieval_aligned:.2%}) with "
            f"{recommendation.reviews_per_1000_documents:,.0f} reviews per 1,000 documents.",
            icon=":material/recommend:",
        )
    else:
        st.warning(
            f"A target of {target:.1%} cannot be reached by review: the best is "
            f"{recommendation.best_reachable:.2%}, because missing values stay missing.",
            icon=":material/block:",
        )
    st.markdown(f"**At τ = {automation.tau_text(tau)}**")
    m1, m2, m3 = st.columns(3)
    m1.metric(
        "Automation rate",
        pct(now["auto_rate"], 1),
        border=True,
        help="Share of predictions with confidence ≥ τ: not reviewed",
    )
    m2.metric(
        "Accuracy after review",
        pct(now["kieval_aligned"], 2),
        border=True,
        help="KIEval_Aligned^τ: correct values over correct values plus corrections left",
    )
    m3.metric(
        "Reviews / 1,000 docs",
        number(round(now["reviews_per_1000_documents"])),
        border=True,
        help=f"{now['reviewed']:,} of {now['predictions']:,} predictions reviewed, "
        f"{model.n_documents:,} documents",
    )
    st.markdown("**Errors that still escape, by kind**")
    e1, e2, e3 = st.columns(3)
    e1.metric(
        "Substitutions",
        number(now["substitution"]),
        border=True,
        help="Wrong values automated where a value is expected: still to retype",
    )
    e2.metric(
        "Additions",
        number(now["addition"]),
        border=True,
        help="Missing values: review of predictions never adds them",
    )
    e3.metric(
        "Deletions",
        number(now["deletion"]),
        border=True,
        help="Spurious values automated: still to delete",
    )

# --- curves ------------------------------------------------------------------------------
best = recommendation.threshold if recommendation.reachable else None
c1, c2 = st.columns(2)
with c1:
    st.subheader("Accuracy and automation against τ")
    st.plotly_chart(
        automation.threshold_figure(curve, tau, best, target),
        key="auto_fig7",
        on_select=lambda: _from_chart("auto_fig7"),
        selection_mode="points",
        config={"displayModeBar": False},
    )
    st.caption("The paper's Fig. 7. Click a point to set τ.")
with c2:
    st.subheader("Trade-off")
    st.plotly_chart(
        automation.tradeoff_figure(curve, tau, best, target),
        key="auto_tradeoff",
        on_select=lambda: _from_chart("auto_tradeoff"),
        selection_mode="points",
        config={"displayModeBar": False},
    )
    st.caption(
        "Each point is one threshold: how much is automated, and how accurate the result is "
        "after review. Click a point to set τ."
    )

with st.expander("Errors left at this τ, per entity type"):
    left_over = automation.escaping_errors(model, tau)
    st.dataframe(
        left_over[left_over["errors"] > 0].sort_values("errors", ascending=False), hide_index=True
    )

# --- per-field thresholds ----------------------------------------------------------------
st.subheader("One threshold per entity type")
if st.toggle(
    "Use per-field thresholds",
    key="auto_per_field",
    persist_state="session",
    help="Review more where a review pays off most; each entity type gets its own τ",
):
    fields = automation.per_field_thresholds(model, target)
    edited = st.data_editor(
        fields,
        hide_index=True,
        key="auto_fields",
        disabled=[c for c in fields.columns if c != "threshold"],
        column_config={
            "threshold": st.column_config.NumberColumn(
                "τ (editable)", min_value=0.0, max_value=tau_max, step=0.0001, format="%.4f"
            ),
            "auto_rate": st.column_config.NumberColumn("automation", format="percent"),
            "kieval_aligned": st.column_config.NumberColumn(
                "accuracy of the type", format="percent"
            ),
        },
    )
    per_field = automation.review_summary(
        model, dict(zip(edited["entity_type"], edited["threshold"], strict=True))
    )
    single = recommendation
    p1, p2, p3 = st.columns(3)
    p1.metric(
        "Automation rate",
        pct(per_field["auto_rate"], 1),
        border=True,
        delta=None
        if not single.reachable
        else f"{100 * (per_field['auto_rate'] - single.auto_rate):+.1f} pts vs one τ",
    )
    p2.metric("Accuracy after review", pct(per_field["kieval_aligned"], 2), border=True)
    p3.metric(
        "Reviews per 1,000 documents",
        number(round(per_field["reviews_per_1000_documents"])),
        border=True,
    )
    st.caption(
        "Suggested thresholds reach the target overall with the fewest reviews found by a "
        "greedy search; edit any τ to see the effect."
    )
else:
    st.caption("Off: one τ for every entity type.")

# --- calibration -------------------------------------------------------------------------
st.subheader("Can the confidences be trusted?")
table = automation.reliability(model)
ece = automation.expected_calibration_error(table)
if ece is None:
    st.info("No confidences in this model's predictions.")
else:
    left, right = st.columns([2, 1])
    left.plotly_chart(
        automation.reliability_figure(table),
        key="auto_reliability",
        config={"displayModeBar": False},
    )
    right.metric(
        "Expected calibration error",
        pct(ece, 1),
        border=True,
        help="Mean gap between confidence and share correct, weighted by bin size",
    )
    right.caption(
        "Well calibrated confidences put the bars on the diagonal: of the predictions "
        "with confidence 0.8, about 80% are right. Bars far below the diagonal at high "
        "confidence mean confident errors, which no threshold catches."
    )
