"""Automation: decide which predictions a person reviews (the paper's Appendix C; SPEC 4 to 4d).

The page gathers the choice (review mode, how to decide, one τ or one per field or per
slice, target, floors, assurance, costs), makes one core call,
:func:`~kieval_core.review.operating_point.operating_point`, and draws what it returns:
cards, charts, the per-field table with floors and automation blockers, what to say, and
the decision file of exactly that point. What τ does not change is kept per model and
costs (:class:`~kieval_core.review.operating_point.DecisionContext` on the store), so a
change that only moves τ recomputes no curve.
"""

import numpy as np
import pandas as pd
import streamlit as st

from kieval_app import session
from kieval_app.columns import shown
from kieval_app.live_chart import live_chart
from kieval_core.figures import automation
from kieval_core.figures.text import md, number, pct
from kieval_core.result.consensus import MIN_MODELS, with_confidence_sources
from kieval_core.review.automation import Costs, confidence_by_field, review_with, threshold_text
from kieval_core.review.calibration import calibration, reliability_of
from kieval_core.review.decisions import slice_thresholds
from kieval_core.review.operating_point import DecisionContext, operating_point, starting_threshold
from kieval_core.review.uncertainty import holdout, random_half

MISSING = {"review": "reviewed (never automated)", "automate": "automated (count as 1.0)"}
MODES = ["accuracy", "automation", "budget", "threshold"]
REVIEWS = {"predictions": "single predictions", "documents": "whole documents"}
ASSURANCE = {0.95: "95% lower bound", 0.9: "90% lower bound", 0.99: "99% lower bound", 0.0: "point estimate"}
#: Costs in seconds of a person's time (SPEC 4b's defaults until the team enters its own).
COSTS = {
    "auto_cost_review": ("seconds per reviewed prediction", 1.0, 1.0),
    "auto_cost_document": ("seconds per opened document", 0.0, 5.0),
    "auto_cost_substitution": ("seconds per wrong value left", 10.0, 10.0),
    "auto_cost_addition": ("seconds per missing value left", 10.0, 10.0),
    "auto_cost_deletion": ("seconds per extra value left", 10.0, 10.0),
}
DEFAULTS = {
    "auto_missing": "review",
    "auto_consensus": False,
    "auto_mode": "accuracy",
    "auto_review": "predictions",
    "auto_target": 0.95,
    "auto_goal": 0.80,
    "auto_budget": 1000.0,
    "auto_assurance": 0.95,
    "auto_costs_set": False,
    "auto_floors": {},
    **{key: default for key, (_, default, _) in COSTS.items()},
}


def confidences(ws, name: str):
    """The controls of where confidences come from, and the model they give."""
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    missing = row.segmented_control(
        "Predictions without confidence",
        list(MISSING),
        format_func=MISSING.get,
        key="auto_missing",
        required=True,
        help="Reviewed (the default): a person looks at them at every threshold, 0 included, and in every "
        "per-field plan. Automated: they count as confidence 1.0 and are reviewed only when everything is.",
    )
    consensus = row.toggle(
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
    return result, result.models[name], (name, missing, source)


def costs() -> Costs:
    s = st.session_state
    return Costs(*(float(s[key]) for key in COSTS))


def no_confidence(model) -> None:
    """A model without confidences: both ends (nothing or everything reviewed)."""
    st.info(
        "This model's predictions carry no confidence, so there is no threshold to choose: every prediction "
        "is either automated or reviewed. Both cases below. With three or more models loaded, *derive "
        "confidences "
        "from agreement* above gives it some.",
        icon=":material/info:",
    )
    review = model.review
    ends = {
        "no review": np.zeros(review.n_predictions),
        "review every prediction": np.full(review.n_predictions, np.inf),
    }
    rows = []
    for case, limits in ends.items():
        p = review_with(review, limits, costs())
        rows.append(
            {
                "case": case,
                "accuracy": p.kieval_aligned,
                "predictions reviewed per 1,000 documents": p.reviews_per_1000_documents,
                "cost per 1,000 documents": p.cost_per_1000_documents,
            }
        )
    frame, columns = shown(
        pd.DataFrame(rows),
        counts={"predictions reviewed per 1,000 documents", "cost per 1,000 documents"},
        labels={"accuracy": "accuracy (KIEval_Aligned)"},
    )
    st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
    st.caption("Costs: seconds of a person's time, as set under *Costs* below.")


def missing_note(model, missing: str) -> None:
    """How many predictions carry no confidence, per field, and what happens to them."""
    if model.confidence_coverage >= 1:
        return
    effect = (
        "count as 1.0: automated at every threshold up to 1, reviewed only when everything is"
        if missing == "automate"
        else "are never automated: a person reviews them at every threshold, 0 included"
    )
    shares = ", ".join(
        f"{md(r.entity_type)} {pct(r.share_without_confidence, 0)} ({number(r.without_confidence)} of "
        f"{number(r.predictions)})"
        for r in confidence_by_field(model.review).itertuples()
        if r.without_confidence
    )
    st.info(
        f"{model.confidence_coverage:.0%} of this model's predictions carry a confidence; the others "
        f"{effect} "
        f"(*Predictions without confidence* above). Without a confidence, per field: {shares}.",
        icon=":material/info:",
    )


def controls(scopes: dict) -> dict:
    """The choice: review mode, how to decide, the scope, the target and the assurance."""
    c = st.session_state
    review = st.segmented_control(
        "Review",
        list(REVIEWS),
        format_func=REVIEWS.get,
        key="auto_review",
        required=True,
        help="Single predictions: a person corrects each prediction below τ and never adds what is missing. "
        "Whole documents: every document with a prediction below τ is opened and corrected entirely, missing "
        "values included (how most operations teams work).",
    )
    mode = st.segmented_control(
        "Decide by",
        MODES,
        key="auto_mode",
        required=True,
        persist_state="session",
        help="accuracy: a target accuracy after review; automation: a share of predictions that skip review "
        "(of documents that go straight through, reviewing whole documents); budget: predictions reviewed "
        "per "
        "1,000 documents; threshold: τ itself, step by step",
    )
    left, middle, right = st.columns(3, vertical_alignment="bottom")
    scope = right.selectbox(
        "Thresholds",
        list(scopes),
        format_func=scopes.get,
        key="auto_scope",
        help="Per field: each field gets its own τ, every field at or above its floor (editable in the "
        "per-field table below), the target reached overall with the fewest reviews. Per slice: each value "
        "of a metadata key gets its own.",
    )
    chosen = {"review": review, "decide_by": mode, "scope": scope, "target": float(c["auto_target"])}
    if mode == "accuracy" or scope != "one":
        chosen["target"] = float(
            left.number_input(
                "Target accuracy after review",
                0.0,
                1.0,
                step=0.01,
                format="%.3f",
                key="auto_target",
                persist_state="session",
            )
        )
    if mode == "accuracy" and scope == "one" and review == "predictions":
        chosen["assurance"] = (
            middle.selectbox(
                "Choose τ on",
                list(ASSURANCE),
                format_func=ASSURANCE.get,
                key="auto_assurance",
                help="The lower bound: the smallest τ whose one-sided lower bound of accuracy after review "
                "(a bootstrap over documents) reaches the target, so the target holds on documents like "
                "these, "
                "not "
                "only on these. The point estimate: the smallest τ that reaches it on these documents.",
            )
            or None
        )
    chosen["value"] = _value(mode, scope, left, chosen["target"])
    return chosen


def _value(mode: str, scope: str, column, target: float) -> float:
    if scope != "one" or mode in ("accuracy", "threshold"):
        return target
    if mode == "automation":
        return float(
            column.number_input(
                "Automate at least",
                0.0,
                1.0,
                step=0.05,
                format="%.2f",
                key="auto_goal",
                persist_state="session",
                help="Share of predictions that skip review; reviewing whole documents, share of documents "
                "that go "
                "straight through",
            )
        )
    return float(
        column.number_input(
            "Predictions reviewed / 1,000 docs (budget)",
            0.0,
            step=100.0,
            format="%.0f",
            key="auto_budget",
            persist_state="session",
        )
    )


def threshold_slider(context: DecisionContext, review: str, target: float) -> float:
    """The operating point chosen step by step (its steps are the real operating points)."""
    curve = context.curve(review)
    points = automation.operating_points(curve, 400, keep=(st.session_state.get("auto_tau"),))
    options = points["threshold"].tolist()
    if st.session_state.get("auto_tau") not in options:  # start where deciding by accuracy is
        start = starting_threshold(curve, target, context.model.n_documents, review)
        st.session_state["auto_tau"] = options[min(int(np.searchsorted(options, start)), len(options) - 1)]
    said = {
        t: f"τ {threshold_text(t)}: {a:.1%} automated, {acc:.1%} accurate"
        for t, a, acc in zip(points["threshold"], points["auto_rate"], points["kieval_aligned"], strict=True)
    }
    value = st.select_slider(
        "Operating point",
        options,
        format_func=lambda t: f"τ {threshold_text(t, short=True)}",
        key="auto_tau",
        help="Arrow keys step from one operating point to the next",
    )
    st.caption(
        said[value] + ". The slider's steps are the real operating points (evenly spaced whatever the "
        "confidences), and a click on a chart point picks it too."
    )
    return float(value)


def cards(op) -> None:
    """The figures at the operating point, in rows that wrap on narrow screens."""
    p, whole = op.point, op.review == "documents"
    predictions, work, documents = (st.container(horizontal=True) for _ in range(3))
    predictions.metric(
        "Automated",
        pct(p.auto_rate),
        border=True,
        help="Share of predictions in documents nobody opens"
        if whole
        else "Share of predictions with confidence ≥ τ: not reviewed",
    )
    predictions.metric(
        "Accuracy after review",
        pct(p.kieval_aligned),
        border=True,
        help="KIEval_Aligned^τ: right values over right values plus corrections left"
        + (" (an opened document is right)" if whole else ""),
    )
    predictions.metric(
        "Errors left",
        number(p.errors_left),
        border=True,
        help=f"{number(p.substitution)} substitutions, {number(p.addition)} additions"
        + ("" if whole else " (never fixed by review)")
        + f", {number(p.deletion)} deletions",
    )
    work.metric(
        "Predictions reviewed / 1,000 docs",
        number(round(p.reviews_per_1000_documents)),
        border=True,
        help=f"How many single predictions a person looks at: {number(p.reviewed)} of "
        f"{number(p.predictions)} "
        + ("(every prediction of an opened document)" if whole else "")
        + f" over {number(p.documents)} documents",
    )
    work.metric(
        "Documents opened / 1,000 docs",
        number(round(op.opened_per_1000_documents)),
        border=True,
        help="How many documents a person opens: those with at least one prediction below τ",
    )
    work.metric(
        "Cost / 1,000 docs",
        number(round(p.cost_per_1000_documents)),
        border=True,
        help="Seconds of a person's time: reviews, opened documents and errors left, at the costs below",
    )
    documents.metric(
        "Straight through",
        pct(p.straight_through_rate),
        border=True,
        help="Documents with no prediction below τ: nobody opens them",
    )
    documents.metric(
        "Right after review",
        pct(p.document_accuracy),
        border=True,
        help="Documents with no error left (missing values included)",
    )


def pick(customdata) -> None:
    """A click on a chart point chooses its τ (its ``customdata[0]``)."""
    chosen = automation.first_custom_value(customdata)
    if chosen is not None:
        st.session_state.update(auto_mode="threshold", auto_scope="one", auto_tau=float(chosen))


def chart(figure, key: str, clickable: bool = True) -> None:
    """A chart redrawn in place (:mod:`kieval_app.live_chart`): a τ step updates the charts
    already drawn instead of building five new ones in the browser."""
    live_chart(figure, key=key, config={"displayModeBar": False}, on_click=pick if clickable else None)


def charts(op) -> None:
    """Accuracy and automation along τ, the trade-off, documents, cost and both policies."""
    tau, target = op.threshold, op.target if op.decide_by == "accuracy" else None
    left, right = st.columns(2)
    with left:
        st.markdown("**Accuracy and automation at every threshold τ**")
        chart(automation.threshold_figure(op.curve, tau, target, op.band), "auto_fig7")
        st.caption(
            "The paper's Fig. 7: along the bottom, the thresholds in order, one step per real operating "
            "point"
            + (
                "; the shaded band is the 95% bootstrap interval of the accuracy"
                if op.band is not None
                else ""
            )
            + ". Click a point to choose it."
        )
    with right:
        st.markdown("**Trade-off**")
        fig = automation.tradeoff_figure(op.curve, tau, target)
        if tau is None:
            automation.mark_point(fig, op.point.auto_rate, op.point.kieval_aligned)
        chart(fig, "auto_tradeoff")
        st.caption(
            "Each marker is a real threshold; the steps show the best accuracy that keeps at least that "
            "much automation (no threshold lies between two markers)."
        )
    left, right = st.columns(2)
    with left:
        st.markdown("**Documents: straight through, and right after review**")
        chart(
            automation.tradeoff_figure(
                op.curve,
                tau,
                None,
                x="straight_through_rate",
                y="document_accuracy",
                labels=("straight through (none below τ)", "documents right after review"),
            ),
            "auto_documents",
        )
    with right:
        cost_chart(op)
    left, right = st.columns(2)
    with left:
        st.markdown("**Single predictions or whole documents: accuracy against automation**")
        chart(
            automation.policies_figure(
                op.curves["predictions"],
                op.curves["documents"],
                (op.point.auto_rate, op.point.kieval_aligned),
                target,
            ),
            "auto_policies",
            clickable=False,
        )
    with right:
        st.markdown("**What each policy buys**")
        st.caption(
            "Reviewing whole documents fixes what the model missed, so it reaches accuracies that reviewing "
            "single predictions never does, but every prediction of an opened document is looked at. At the "
            "same automation the higher curve is the better policy; the ring marks the point above."
        )


def cost_chart(op) -> None:
    """Cost along τ; the cheapest τ only once the team has entered its own costs."""
    known = st.session_state["auto_costs_set"]
    cheapest = op.cheapest
    if known:
        st.markdown(
            f"**Seconds per 1,000 documents**: the cheapest τ is {threshold_text(cheapest.threshold)}, at "
            f"{number(round(cheapest.cost_per_1000_documents))} s per 1,000 documents"
        )
    else:
        st.markdown("**Seconds per 1,000 documents**, at placeholder costs")
    chart(automation.cost_figure(op.curve, op.threshold, cheapest.threshold if known else None), "auto_cost")
    if not known:
        st.caption(
            "Enter your team's seconds per review, per opened document and per error left under *Costs* "
            "below: until then no τ is called the cheapest (at placeholder costs reviewing everything "
            "often looks cheapest)."
        )


def field_table(op) -> None:
    """Per field at the operating point; in a per-field plan its floor is editable."""
    st.markdown(
        f"**Per field at this operating point** ({REVIEWS[op.review]}); *straight-through gain*: the share "
        "of documents that would skip review if that field alone were always automated (automation blockers)"
    )
    table = op.by_field.copy()
    table["threshold"] = [("reviewed whole" if t is None else threshold_text(t)) for t in table["threshold"]]
    table["floor"] = table["floor"] * 100
    frame, columns = shown(
        table,
        percent={"share_without_confidence", "straight_through_gain"},
        labels={
            "threshold": "τ",
            "share_without_confidence": "without confidence",
            "kieval_aligned": "accuracy after",
            "meets_floor": "at floor",
            "opened_documents": "docs opened",
            "straight_through_gain": "straight-through gain",
        },
    )
    columns["floor"] = st.column_config.NumberColumn("floor %", format="%.1f", min_value=0.0, max_value=100.0)
    columns["threshold"] = st.column_config.TextColumn("τ")
    if op.scope != "field":
        st.dataframe(
            frame.drop(columns=["floor", "meets_floor"]),
            hide_index=True,
            column_config=columns,
            placeholder="",
        )
        return
    st.session_state["auto_field_order"] = list(table["entity_type"])
    st.data_editor(
        frame,
        hide_index=True,
        column_config=columns,
        disabled=[c for c in frame if c != "floor"],
        key="auto_field_table",
        on_change=_floors_edited,
    )
    st.caption(
        "Edit a field's floor (its accuracy after review must reach it; default: the target). A field that "
        "cannot reach its floor with any automation is reviewed whole. τ 0.0000 automates every value of the "
        "field that carries a confidence; a value without one follows *Predictions without confidence* above."
    )


def _floors_edited() -> None:
    order = st.session_state["auto_field_order"]
    floors = dict(st.session_state["auto_floors"])
    for row, edit in st.session_state["auto_field_table"]["edited_rows"].items():
        if "floor" in edit and edit["floor"] is not None:
            floors[order[int(row)]] = min(max(float(edit["floor"]) / 100, 0.0), 1.0)
    st.session_state["auto_floors"] = floors


def notices_and_file(op, model) -> None:
    """What the core says about the point, and its decision file."""
    for notice in op.notices:
        show = {"success": st.success, "warning": st.warning}.get(notice.kind, st.info)
        show(
            notice.render(md), icon=":material/recommend:" if notice.kind == "success" else ":material/block:"
        )
    if op.decision is None:
        st.caption(f"No decision file: {md(op.decision_refused)}")
        return
    st.download_button(
        "Download this decision (JSON)",
        op.decision.to_json(),
        file_name=f"decision-{model.name}.json",
        mime="application/json",
        key="auto_download",
        icon=":material/download:",
        help="Exactly the thresholds shown here, with what they were chosen for and on. Apply them to new "
        "predictions with: kieval route --decision FILE --pred NEW",
    )


@st.fragment
def decision(model, tag: tuple, scopes: dict, chosen_on: dict) -> None:
    """The choice and everything it drives; a change reruns only this part of the page."""
    choice = controls(scopes)
    context = context_of(model, tag)
    value = choice.pop("value")
    if choice["scope"] == "one" and choice["decide_by"] == "threshold":
        value = threshold_slider(context, choice["review"], choice["target"])
    # floors edited for another model's fields stay in the session for it
    floors = {k: v for k, v in st.session_state["auto_floors"].items() if k in model.review.entity_types}
    op = operating_point(context, value=value, floors=floors, chosen_on=chosen_on, **choice)
    notices_and_file(op, model)
    cards(op)
    charts(op)
    field_table(op)


def costs_box() -> None:
    with st.expander(
        "Costs: seconds of a person's time",
        icon=":material/payments:",
        expanded=not st.session_state["auto_costs_set"],
    ):
        columns = st.columns(len(COSTS))
        for column, (key, (label, _, step)) in zip(columns, COSTS.items(), strict=True):
            column.number_input(
                label, 0.0, step=step, key=key, on_change=lambda: st.session_state.update(auto_costs_set=True)
            )
        st.caption(
            "How long a person spends per reviewed prediction and per opened document, and what an error "
            "left costs downstream, in seconds. Placeholders until you change one: 1 s per review, 0 per "
            "opened document, 10 s per error left."
        )


#: The checks below review single predictions (the core has no bootstrap of whole-document
#: review): said, or "not reachable" there would contradict a whole-document τ above.
SINGLE_ONLY = (
    "These figures review **single predictions**, whatever *Review* says above: whole-document review "
    "reaches targets that single predictions cannot, so its τ is not checked here."
)


def single_only_note() -> None:
    if st.session_state.get("auto_review") == "documents":
        st.info(SINGLE_ONLY, icon=":material/info:")


def context_of(model, tag: tuple) -> DecisionContext:
    """The model's decision context at the page's costs, each piece kept on the store."""
    at = costs()
    return DecisionContext(
        model, at, memo=lambda key, compute: session.view("automation", compute, *tag, at, *key)
    )


def interval_line(model, tag: tuple, target: float) -> None:
    """The recommended τ and its automation with their bootstrap intervals (SPEC 4b)."""
    context = context_of(model, tag)
    boot = context.bootstrap(target)
    op = operating_point(context, value=target, target=target)
    if op.reachable and boot.threshold is not None:
        st.markdown(
            f"Recommended τ on the point estimate {threshold_text(op.threshold)} (95% interval "
            f"{threshold_text(boot.threshold[0])} to {threshold_text(boot.threshold[1])}), automating "
            f"{pct(op.point.auto_rate)} (interval {pct(boot.auto_rate[0])} to {pct(boot.auto_rate[1])}); the "
            f"target is reachable in {pct(boot.reachable_share, 0)} of {boot.resamples:,} resamples of the "
            "documents."
        )
    else:
        st.markdown(
            f"The target is reachable with automation in {pct(boot.reachable_share, 0)} of "
            f"{boot.resamples:,} resamples of the documents."
        )


def uncertainty_box(model, tag: tuple, meta_keys: list, target: float) -> None:
    """Does the threshold carry over: a holdout check on a random half or a slice."""
    box = st.expander(
        f"Does the threshold for {target:.0%} carry over? A holdout check (single predictions)",
        icon=":material/science:",
        key="auto_uncertainty_open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        single_only_note()
        interval_line(model, tag, target)
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
            random_half(model.n_documents, 0)
            if chosen is None
            else (model.slice_labels(chosen[0]) == chosen[1]).to_numpy()
        )
        names = (choice, "the other half" if chosen is None else "the other documents")
        check = session.view(
            "holdout", lambda: holdout(model.review, target, mask, names=names), *tag, target, choice
        )
        if check.threshold is None:
            st.info(f"On {md(choice)} the target cannot be reached with automation.")
        elif check.accuracy_checked is None:
            st.info("No documents are left to check on.")
        else:
            low, high = check.interval_checked
            verdict = (
                "carries over"
                if check.carries_over
                else "**does not carry over**: its interval crosses the target"
            )
            (st.success if check.carries_over else st.error)(
                f"τ = {threshold_text(check.threshold)} chosen on {md(choice)} gives "
                f"{pct(check.accuracy_chosen)} "
                f"there and {pct(check.accuracy_checked)} on {md(names[1])} (95% interval {pct(low)} to "
                f"{pct(high)}): the threshold {verdict}."
            )


def slices_box(model, tag: tuple, meta_keys: list, target: float) -> None:
    box = st.expander(
        "Per slice of documents", icon=":material/splitscreen:", key="auto_slices_open", on_change="rerun"
    )
    if not box.open:
        return
    with box:
        single_only_note()
        key = st.selectbox("Metadata key", meta_keys, key="auto_slice_key")
        rows = session.view("slices", lambda: slice_thresholds(model, key, target), *tag, key, target).rows
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


def calibration_box(result, model, tag: tuple) -> None:
    box = st.expander(
        "Can the confidences be trusted? Calibration",
        icon=":material/verified:",
        key="auto_calibration_open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        review = model.review
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
        field = c1.selectbox("Reliability of", ["(all fields)", *review.entity_types], key="auto_field")
        which = c2.selectbox("Confidences", list(compared), key="auto_calibration_source")
        chart(
            automation.reliability_figure(
                reliability_of(compared[which], None if field == "(all fields)" else field)
            ),
            "auto_reliability",
            clickable=False,
        )
        st.caption(
            "ECE: mean gap between confidence and share right. Brier: mean squared gap. AUROC: how well the "
            "confidence separates right from wrong predictions (0.5 = not at all)."
        )


def chosen_on(ws, name: str) -> dict:
    """The digests of the files the decision is chosen on (None for a saved run's)."""
    sources = getattr(ws, "sources", None)
    try:
        pred = dict(zip(sources.model_names(), sources.predictions, strict=True))[name]
        return {"gt_sha256": sources.gt.digest, "pred_sha256": pred.digest}
    except (AttributeError, KeyError, TypeError):
        return {}


def main() -> None:
    ws = session.current()
    session.require_models(ws)
    name = session.selected_model(ws)
    st.title("Automation threshold")
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    result, model, tag = confidences(ws, name)
    st.caption(
        f"Model **{md(name)}**, confidences: {md(model.confidence_source)}. A prediction whose confidence is "
        "below the threshold τ goes to a person: who corrects that prediction (retypes or deletes it, never "
        "adds a missing value), or opens the whole document and fixes everything in it, missing values "
        f"included; the rest is automated. Values are compared after: {md(ws.result.comparison)}."
    )
    if not model.has_confidence:
        no_confidence(model)
        costs_box()
        return
    missing_note(model, tag[1])
    meta_keys = list(model.meta.columns) if model.meta is not None else []
    scopes = {
        "one": "one τ for every field",
        "field": "one τ per field",
        **{f"slice:{k}": f"one τ per {k}" for k in meta_keys},
    }  # options are plain text
    if st.session_state.get("auto_scope") not in scopes:
        st.session_state["auto_scope"] = "one"
    decision(model, tag, scopes, chosen_on(ws, name))
    costs_box()
    target = float(st.session_state["auto_target"])
    uncertainty_box(model, tag, meta_keys, target)
    if meta_keys:
        slices_box(model, tag, meta_keys, target)
    calibration_box(result, model, tag)


main()
