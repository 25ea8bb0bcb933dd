"""Automation: decide which predictions a person reviews (the paper's Appendix C).

Decide by a target accuracy, an automation rate, a review budget, or a threshold; one
operating point then drives every card, chart and table of the page. Every figure comes
from the core's review model (kieval_core.review.automation): this page gathers the choice and draws.
"""

import numpy as np
import pandas as pd
import streamlit as st

from kieval_app import session
from kieval_app.columns import shown
from kieval_core.figures import automation
from kieval_core.figures.text import md, number, pct
from kieval_core.result.consensus import MIN_MODELS, with_confidence_sources
from kieval_core.result.tables import threshold_text
from kieval_core.review.automation import (
    Costs,
    confidence_by_field,
    minimum_cost,
    recommend,
    review_by_entity_type,
    review_documents_by_entity_type,
    review_with,
)
from kieval_core.review.calibration import calibration, reliability_of
from kieval_core.review.decisions import operating_point, review_curve, slice_thresholds, starting_threshold
from kieval_core.review.field_thresholds import per_field_thresholds
from kieval_core.review.uncertainty import bootstrap, holdout, random_half

ws = session.current()
session.require_models(ws)
name = session.selected_model(ws)

st.title("Automation threshold")

# --- where the confidences come from (the whole page follows) -------------------------------
MISSING = {"review": "reviewed (never automated)", "automate": "automated (count as 1.0)"}
st.session_state.setdefault("auto_missing", "review")
st.session_state.setdefault("auto_consensus", False)
# side by side when they fit, one under the other when not (two columns cut both labels at 1,024 px)
confidence_row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
missing = confidence_row.segmented_control(
    "Predictions without confidence",
    list(MISSING),
    format_func=MISSING.get,
    key="auto_missing",
    required=True,
    help="Reviewed (the default): a person looks at them at every threshold, 0 included, and in "
    "every per-field plan. Automated: they count as confidence 1.0 and are reviewed only when "
    "everything is.",
)
consensus = confidence_row.toggle(
    "Derive confidences from agreement between the loaded models",
    key="auto_consensus",
    help=f"With {MIN_MODELS} or more models: a model without confidences gets, per prediction, the share "
    "of the other models that predict the same value in the same document. Models with their own "
    "confidences keep them; the calibration below compares both.",
)
source = "consensus" if consensus else "model"
result = session.view(
    "confidences", lambda: with_confidence_sources(ws.result, missing, source), missing, source
)
for note in result.warnings[len(ws.result.warnings) :]:
    st.info(md(note), icon=":material/info:")
model = result.models[name]
review = model.review
n_docs = model.n_documents
tag = (name, missing, source)  # what the model's review depends on, for cached views

st.caption(
    f"Model **{md(name)}**, confidences: {md(model.confidence_source)}. A prediction whose confidence is "
    "below the threshold τ goes to a person: who corrects that prediction (retypes or deletes it, never "
    "adds a missing value), or opens the whole document and fixes everything in it, missing values "
    f"included; the rest is automated. Values are compared after: {md(ws.result.comparison)}."
)

# --- costs (shared by every mode) ----------------------------------------------------------
COSTS = {
    "auto_cost_review": 1.0,
    "auto_cost_document": 0.0,
    "auto_cost_substitution": 10.0,
    "auto_cost_addition": 10.0,
    "auto_cost_deletion": 10.0,
}
for key, value in COSTS.items():
    st.session_state.setdefault(key, value)


def costs() -> Costs:
    s = st.session_state
    return Costs(
        s["auto_cost_review"],
        s["auto_cost_document"],
        s["auto_cost_substitution"],
        s["auto_cost_addition"],
        s["auto_cost_deletion"],
    )


if not model.has_confidence:
    st.info(
        "This model's predictions carry no confidence, so there is no threshold to choose: every "
        "prediction is either automated or reviewed. Both cases below. With three or more models loaded, "
        "*derive confidences from agreement* above gives it some.",
        icon=":material/info:",
    )
    everything = review_with(review, np.full(review.n_predictions, np.inf), costs())
    nothing = review_with(review, np.zeros(review.n_predictions), costs())
    rows = pd.DataFrame(
        [
            {
                "case": "no review",
                "accuracy": nothing.kieval_aligned,
                "reviews per 1,000 documents": 0.0,
                "cost per 1,000 documents": nothing.cost_per_1000_documents,
            },
            {
                "case": "review every prediction",
                "accuracy": everything.kieval_aligned,
                "reviews per 1,000 documents": everything.reviews_per_1000_documents,
                "cost per 1,000 documents": everything.cost_per_1000_documents,
            },
        ]
    )
    frame, columns = shown(
        rows,
        counts={"reviews per 1,000 documents", "cost per 1,000 documents"},
        labels={"accuracy": "accuracy (KIEval_Aligned)"},
    )
    st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
    st.caption("Costs: 1 per reviewed prediction, 10 per error left (change them in the costs below).")
    st.stop()

coverage = model.confidence_coverage
if coverage < 1:
    effect = (
        "count as 1.0: automated at every threshold up to 1, reviewed only when everything is"
        if missing == "automate"
        else "are never automated: a person reviews them at every threshold, 0 included"
    )
    without = confidence_by_field(review)
    shares = ", ".join(
        f"{md(r.entity_type)} {pct(r.share_without_confidence, 0)} ({number(r.without_confidence)} of "
        f"{number(r.predictions)})"
        for r in without.itertuples()
        if r.without_confidence
    )
    st.info(
        f"{coverage:.0%} of this model's predictions carry a confidence; the others {effect} "
        f"(*Predictions without confidence* above). Without a confidence, per field: {shares}.",
        icon=":material/info:",
    )


def curve_of(mode: str) -> pd.DataFrame:
    """The curve of a review mode at the current costs (cached)."""
    return session.view("review_curve", lambda: review_curve(model, mode, costs()), *tag, mode, costs())


curve = curve_of("predictions")
meta_keys = [k for k in (model.meta.columns if model.meta is not None else [])]

MODES = ["accuracy", "automation", "budget", "threshold"]
REVIEWS = {"predictions": "single predictions", "documents": "whole documents"}
SCOPES = {"one": "one τ for every field", "field": "one τ per field"}
SCOPES.update({f"slice:{k}": f"one τ per {k}" for k in meta_keys})  # options are plain text
st.session_state.setdefault("auto_mode", MODES[0])
st.session_state.setdefault("auto_review", "predictions")
st.session_state.setdefault("auto_target", 0.95)
st.session_state.setdefault("auto_goal", 0.80)
st.session_state.setdefault("auto_budget", 1000.0)
if st.session_state.get("auto_scope") not in SCOPES:
    st.session_state["auto_scope"] = "one"


@st.fragment
def decision() -> None:
    """The choice and everything it drives; a change reruns only this part of the page."""
    review_mode = st.segmented_control(
        "Review",
        list(REVIEWS),
        format_func=REVIEWS.get,
        key="auto_review",
        required=True,
        help="Single predictions: a person corrects each prediction below τ and never adds what is "
        "missing. Whole documents: every document with a prediction below τ is opened and corrected "
        "entirely, missing values included (how most operations teams work).",
    )
    mode = st.segmented_control(
        "Decide by",
        MODES,
        key="auto_mode",
        required=True,
        persist_state="session",
        help="accuracy: a target accuracy after review; automation: a share of predictions that skip "
        "review (of documents that go straight through, reviewing whole documents); budget: reviews per "
        "1,000 documents; threshold: τ itself, step by step",
    )
    c2, c3 = st.columns(2, vertical_alignment="bottom")
    scope = c3.selectbox(
        "Thresholds",
        list(SCOPES),
        format_func=SCOPES.get,
        key="auto_scope",
        help="Per field: each field gets the threshold that reaches the target overall with "
        "the fewest reviews. Per slice: each value of a metadata key gets its own.",
    )
    value = target = None
    if mode == "accuracy" or scope != "one":
        target = c2.number_input(
            "Target accuracy after review",
            0.0,
            1.0,
            step=0.01,
            format="%.3f",
            key="auto_target",
            persist_state="session",
        )
        value = target
    if scope != "one":
        st.caption(
            "Per-field and per-slice thresholds are chosen for the target accuracy, whatever *Decide by* "
            "says"
            + (
                ", for review of single predictions; here they decide which documents are opened."
                if review_mode == "documents"
                else "."
            )
        )
    elif mode == "automation":
        value = c2.number_input(
            "Automate at least",
            0.0,
            1.0,
            step=0.05,
            format="%.2f",
            key="auto_goal",
            persist_state="session",
            help="Share of predictions that skip review; reviewing whole documents, share of documents "
            "that go straight through",
        )
    elif mode == "budget":
        value = c2.number_input(
            "Reviews / 1,000 docs",
            0.0,
            step=100.0,
            format="%.0f",
            key="auto_budget",
            persist_state="session",
        )
    chart_curve = curve_of(review_mode)
    if scope == "one" and mode == "threshold":
        points = automation.operating_points(chart_curve, 400, keep=(st.session_state.get("auto_tau"),))
        options = points["threshold"].tolist()
        if st.session_state.get("auto_tau") not in options:  # start where deciding by accuracy is
            start = starting_threshold(chart_curve, st.session_state["auto_target"], n_docs, review_mode)
            at = min(int(np.searchsorted(options, start)), len(options) - 1)
            st.session_state["auto_tau"] = options[at]
        formatted = {
            t: f"τ {threshold_text(t)}: {a:.1%} automated, {acc:.1%} accurate"
            for t, a, acc in zip(
                points["threshold"], points["auto_rate"], points["kieval_aligned"], strict=True
            )
        }
        value = c2.select_slider(
            "Operating point",
            options,
            format_func=lambda t: f"τ {threshold_text(t, short=True)}",
            key="auto_tau",
            help="Arrow keys step from one operating point to the next",
        )
        st.caption(
            formatted[value] + ". The slider's steps are the real operating points (evenly spaced "
            "whatever the confidences), and a click on a chart point picks it too."
        )

    # --- the operating point (the core's) --------------------------------------------------
    fields = plan = None
    if scope == "field" or (mode == "accuracy" and review_mode == "predictions"):
        fields = session.view("fields", lambda: per_field_thresholds(review, target), *tag, target)
    if scope.startswith("slice:"):
        key = scope.split(":", 1)[1]
        plan = session.view("slices", lambda: slice_thresholds(model, key, target), *tag, key, target)
    op = operating_point(
        model,
        review=review_mode,
        decide_by=mode,
        value=value,
        scope=scope,
        target=target if target is not None else float(st.session_state["auto_target"]),
        costs=costs(),
        curve=chart_curve,
        fields=fields,
        plan=plan,
    )
    point, tau = op.point, op.threshold
    note = None
    if scope == "field" and not op.reachable:
        note = (
            f"No combination of per-field thresholds reaches {target:.1%} with automation; "
            "showing every field's threshold at full review."
        )
    elif scope.startswith("slice:") and op.unreachable_slices:
        unreachable = op.unreachable_slices
        note = (
            f"{len(unreachable)} value(s) of {md(scope.split(':', 1)[1])} cannot reach {target:.1%} with "
            f"automation and are fully reviewed: {', '.join(map(md, unreachable[:5]))}."
        )
    elif scope == "one" and not op.reachable:
        best = "n/a" if op.best_reachable is None else pct(op.best_reachable)
        whole = (
            "reviewing single predictions" if review_mode == "predictions" else "reviewing whole documents"
        )
        note = (
            f"A target of {target:.1%} is **not reachable with automation** by one τ for every field, "
            f"{whole}: only reviewing everything gets there. The best accuracy with some automation is "
            f"{best} (τ = {threshold_text(tau)}, shown below)."
        )
        if op.fields_reach is not None:
            note += (
                f" **One τ per field reaches it** with {number(op.fields_reach)} reviews of "
                f"{number(review.n_predictions)} predictions: choose it under Thresholds."
            )
    if note:
        st.warning(note, icon=":material/block:")
    elif mode == "accuracy" and scope == "one":
        st.success(
            f"**τ = {threshold_text(tau)}** reaches {target:.1%}: the smallest threshold that "
            "does, so the most automation.",
            icon=":material/recommend:",
        )

    # --- the cards ---------------------------------------------------------------------------
    # rows of cards that wrap on narrow screens instead of cutting their labels
    documents_mode = review_mode == "documents"
    predictions, work, documents = (st.container(horizontal=True) for _ in range(3))
    predictions.metric(
        "Automated",
        pct(point.auto_rate),
        border=True,
        help="Share of predictions in documents nobody opens"
        if documents_mode
        else "Share of predictions with confidence ≥ τ: not reviewed",
    )
    predictions.metric(
        "Accuracy after review",
        pct(point.kieval_aligned),
        border=True,
        help="KIEval_Aligned^τ: right values over right values plus corrections left"
        + (" (an opened document is right)" if documents_mode else ""),
    )
    predictions.metric(
        "Errors left",
        number(point.errors_left),
        border=True,
        help=f"{number(point.substitution)} substitutions, {number(point.addition)} additions"
        + ("" if documents_mode else " (never fixed by review)")
        + f", {number(point.deletion)} deletions",
    )
    work.metric(
        "Reviews / 1,000 docs",
        number(round(point.reviews_per_1000_documents)),
        border=True,
        help=f"{number(point.reviewed)} of {number(point.predictions)} predictions "
        + ("in opened documents" if documents_mode else "reviewed")
        + f", {number(n_docs)} documents",
    )
    work.metric(
        "Opened / 1,000 docs",
        number(round(op.opened_per_1000_documents)),
        border=True,
        help="Documents with at least one prediction below τ",
    )
    work.metric(
        "Cost / 1,000 docs",
        number(round(point.cost_per_1000_documents)),
        border=True,
        help="Reviews, opened documents and errors left, at the costs below",
    )
    documents.metric(
        "Straight through",
        pct(point.straight_through_rate),
        border=True,
        help="Documents with no prediction below τ",
    )
    documents.metric(
        "Right after review",
        pct(point.document_accuracy),
        border=True,
        help="Documents with no error left (missing values included)",
    )

    # --- the charts ----------------------------------------------------------------------------
    def pick(key: str) -> None:
        chosen = automation.threshold_from_selection(st.session_state[key].selection)
        if chosen is not None:
            st.session_state["auto_mode"] = "threshold"
            st.session_state["auto_scope"] = "one"
            st.session_state["auto_tau"] = chosen

    band = None
    if mode == "accuracy" and scope == "one" and not documents_mode:
        boot = session.view("bootstrap", lambda: bootstrap(review, target, 1000, 0), *tag, target)
        band = boot.band
    shown_target = target if mode == "accuracy" else None
    left, right = st.columns(2)
    with left:
        st.markdown("**Accuracy and automation at every threshold**")
        st.plotly_chart(
            automation.threshold_figure(chart_curve, tau, shown_target, band),
            key="auto_fig7",
            on_select=lambda: pick("auto_fig7"),
            selection_mode="points",
            config={"displayModeBar": False},
        )
        st.caption(
            "The paper's Fig. 7 as steps through the real operating points"
            + ("; the shaded band is the 95% bootstrap interval of the accuracy" if band is not None else "")
            + ". Click a point to choose it."
        )
    with right:
        st.markdown("**Trade-off**")
        fig = automation.tradeoff_figure(chart_curve, tau, shown_target)
        if tau is None:
            fig.add_scatter(
                x=[point.auto_rate],
                y=[point.kieval_aligned],
                mode="markers",
                name="chosen point",
                marker={"size": 16, "color": "#333", "symbol": "circle-open", "line": {"width": 3}},
            )
        st.plotly_chart(
            fig,
            key="auto_tradeoff",
            on_select=lambda: pick("auto_tradeoff"),
            selection_mode="points",
            config={"displayModeBar": False},
        )
        st.caption(
            "Each marker is a real threshold; the steps show the best accuracy that keeps at least "
            "that much automation (no threshold lies between two markers)."
        )
    left, right = st.columns(2)
    with left:
        st.markdown("**Documents: straight through, and right after review**")
        st.plotly_chart(
            automation.tradeoff_figure(
                chart_curve,
                tau,
                None,
                x="straight_through_rate",
                y="document_accuracy",
                labels=(
                    "straight through (none below τ)",
                    "documents right after review",
                ),
            ),
            key="auto_documents",
            on_select=lambda: pick("auto_documents"),
            selection_mode="points",
            config={"displayModeBar": False},
        )
    with right:
        cheapest = minimum_cost(chart_curve)
        st.markdown(
            f"**Cost per 1,000 documents**: the cheapest τ is {threshold_text(cheapest.threshold)}, "
            f"at {number(round(cheapest.cost_per_1000_documents))} per 1,000 documents"
        )
        st.plotly_chart(
            automation.cost_figure(chart_curve, tau, cheapest.threshold),
            key="auto_cost",
            on_select=lambda: pick("auto_cost"),
            selection_mode="points",
            config={"displayModeBar": False},
        )
    left, right = st.columns(2)
    with left:
        st.markdown("**Single predictions or whole documents: accuracy against automation**")
        st.plotly_chart(
            automation.policies_figure(
                curve, curve_of("documents"), (point.auto_rate, point.kieval_aligned), shown_target
            ),
            key="auto_policies",
            config={"displayModeBar": False},
        )
    with right:
        st.markdown("**What each policy buys**")
        st.caption(
            "Reviewing whole documents fixes what the model missed, so it reaches accuracies that reviewing "
            "single predictions never does, but every prediction of an opened document is looked at. At the "
            "same automation the higher curve is the better policy; the ring marks the point above."
        )

    st.markdown(f"**Per field at this operating point** ({REVIEWS[review_mode]})")
    per_type = (review_documents_by_entity_type if documents_mode else review_by_entity_type)(
        review, op.limits
    )
    if op.fields is not None and scope == "field":
        per_type.insert(
            1,
            "threshold",
            [
                "all" if t in op.fields.whole else threshold_text(op.fields.thresholds.get(t))
                for t in per_type["entity_type"]
            ],
        )
    frame, columns = shown(  # short headers: all ten columns fit a 1,400 px screen
        per_type, labels={"fixed": "fixed", "tp_after": "right after", "kieval_aligned": "accuracy after"}
    )
    st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")


decision()

# --- what stays the same whatever the operating point --------------------------------------
with st.expander("Costs", icon=":material/payments:"):
    c = st.columns(5)
    c[0].number_input("per reviewed prediction", 0.0, step=0.5, key="auto_cost_review")
    c[1].number_input("per opened document", 0.0, step=0.5, key="auto_cost_document")
    c[2].number_input("per substitution left", 0.0, step=1.0, key="auto_cost_substitution")
    c[3].number_input("per addition left", 0.0, step=1.0, key="auto_cost_addition")
    c[4].number_input("per deletion left", 0.0, step=1.0, key="auto_cost_deletion")
    st.caption(
        "In any unit (minutes, money). Defaults: 1 per review, 0 per opened document, 10 per error "
        "left of any kind."
    )

target = float(st.session_state["auto_target"])
# The checks below review single predictions (the core has no bootstrap of whole-document
# review): say so, or "not reachable" there contradicts the whole-document τ above.
SINGLE_ONLY = (
    "These figures review **single predictions**, whatever *Review* says above: whole-document review "
    "reaches targets that single predictions cannot, so its τ is not checked here."
)
whole_documents = st.session_state.get("auto_review") == "documents"
# An expander's content is built only while it is open (on_change="rerun"): a closed
# one costs neither the server nor the browser anything.
box = st.expander(
    f"Does the threshold for {target:.0%} carry over? Uncertainty and a holdout check (single predictions)",
    icon=":material/science:",
    key="auto_uncertainty_open",
    on_change="rerun",
)
if box.open:
    with box:
        if whole_documents:
            st.info(SINGLE_ONLY, icon=":material/info:")
        boot = session.view("bootstrap", lambda: bootstrap(review, target, 1000, 0), *tag, target)
        rec = recommend(curve, target, n_docs)
        if rec.reachable and boot.threshold is not None:
            st.markdown(
                f"Recommended τ {threshold_text(rec.threshold)} (95% interval "
                f"{threshold_text(boot.threshold[0])} to {threshold_text(boot.threshold[1])}), "
                f"automating {pct(rec.auto_rate)} (interval {pct(boot.auto_rate[0])} to "
                f"{pct(boot.auto_rate[1])}); the target is reachable in {pct(boot.reachable_share, 0)} of "
                "1,000 resamples of the documents."
            )
        else:
            st.markdown(
                f"The target is reachable with automation in {pct(boot.reachable_share, 0)} of 1,000 "
                "resamples of the documents."
            )
        splits = {"a random half of the documents": None}
        for key in meta_keys:
            for value in sorted(model.slice_labels(key).unique(), key=str):
                splits[f"{key} = {value}"] = (key, value)
        choice = st.selectbox(
            "Choose τ on",
            list(splits),
            key="auto_holdout",
            help="The threshold is chosen on these documents and checked on all the others",
        )
        chosen = splits[choice]
        mask = (
            random_half(n_docs, 0)
            if chosen is None
            else (model.slice_labels(chosen[0]) == chosen[1]).to_numpy()
        )
        names = (choice, "the other half" if chosen is None else "the other documents")
        check = session.view(
            "holdout", lambda: holdout(review, target, mask, names=names), *tag, target, choice
        )
        if check.threshold is None:
            st.info(f"On {md(choice)} the target cannot be reached with automation.")
        elif check.accuracy_checked is None:
            st.info("No documents are left to check on.")
        else:
            low, high = check.interval_checked
            verdict = "carries over" if check.carries_over else "**does not carry over**"
            text = (
                f"τ = {threshold_text(check.threshold)} chosen on {md(choice)} gives "
                f"{pct(check.accuracy_chosen)} there and {pct(check.accuracy_checked)} on {md(names[1])} "
                f"(95% interval {pct(low)} to {pct(high)}): the threshold {verdict}."
            )
            (st.success if check.carries_over else st.error)(text)

if meta_keys:
    box = st.expander(
        "Per slice of documents", icon=":material/splitscreen:", key="auto_slices_open", on_change="rerun"
    )
    if box.open:
        with box:
            if whole_documents:
                st.info(SINGLE_ONLY, icon=":material/info:")
            key = st.selectbox("Metadata key", meta_keys, key="auto_slice_key")
            rows = session.view(
                "slices", lambda: slice_thresholds(model, key, target), *tag, key, target
            ).rows
            table = pd.DataFrame(
                [
                    {
                        key: r["value"],
                        "documents": r["n_documents"],
                        "accuracy without review": r["kieval_aligned"],
                        "τ": r["recommended"]["threshold"],
                        "automation": r["recommended"]["auto_rate"],
                        "accuracy after review": r["recommended"]["accuracy"],
                    }
                    for r in rows
                ]
            )
            frame, columns = shown(
                table,
                percent={"accuracy without review", "automation", "accuracy after review"},
                τ=st.column_config.NumberColumn("τ", format="%.4f"),
            )
            st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
            st.caption(
                f"Each value's own recommended τ for {target:.1%}, reviewing single predictions; empty: not "
                "reachable with automation."
            )

box = st.expander(
    "Can the confidences be trusted? Calibration",
    icon=":material/verified:",
    key="auto_calibration_open",
    on_change="rerun",
)
if box.open:
    with box:
        table = session.view("calibration", lambda: calibration(review), *tag)
        st.markdown(f"Confidences: {md(model.confidence_source)}.")
        frame, columns = shown(table.assign(entity_type=table["entity_type"].fillna("(all fields)")))
        st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
        compared = {"own": review}
        if model.consensus is not None:  # consensus beside the model's own, on the same predictions
            compared["consensus"] = model.consensus
            both = session.view(
                "calibration_both",
                lambda: pd.concat(
                    [calibration(r).iloc[[0]].assign(entity_type=k) for k, r in compared.items()]
                ).rename(columns={"entity_type": "confidences"}),
                *tag,
            )
            st.markdown(
                f"**Own confidences against the consensus of the {len(result.models) - 1} other models**, "
                "on the predictions that carry their own:"
            )
            frame, columns = shown(both)
            st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
        c1, c2 = st.columns(2)
        fields = ["(all fields)", *review.entity_types]
        field = c1.selectbox("Reliability of", fields, key="auto_field")
        which = c2.selectbox("Confidences", list(compared), key="auto_calibration_source")
        chosen = None if field == "(all fields)" else field
        st.plotly_chart(
            automation.reliability_figure(reliability_of(compared[which], chosen)),
            key="auto_reliability",
            config={"displayModeBar": False},
        )
        st.caption(
            "ECE: mean gap between confidence and share right. Brier: mean squared gap. AUROC: how well "
            "the confidence separates right from wrong predictions (0.5 = not at all)."
        )
