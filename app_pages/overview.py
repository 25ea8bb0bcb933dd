"""Overview: what is loaded, and every model's headline figures on one screen; the
details are one click away."""

import streamlit as st

from kieval_app import rules_panel, saved_runs, session, sidebar, uploads
from kieval_app.columns import metric_styler, metric_table, shown
from kieval_app.live_chart import live_chart
from kieval_app.sources import SAMPLES
from kieval_core.count.causes import largest_cause
from kieval_core.figures import overview
from kieval_core.figures.text import md, number
from kieval_core.result.inputs import load_report
from kieval_core.result.tables import corrections_table

ws = session.current()

st.title("KIEval Workbench")
st.caption(
    "Error analysis for document Key Information Extraction: which values are wrong, in which "
    "line item, how many corrections a person must make, and how much of the flow can run "
    "without review."
)

# --- inputs ------------------------------------------------------------------------------
with st.container(border=True):
    uploads.render_uploaders()
    if ws.saved is not None:
        inputs = ws.saved.manifest["inputs"]
        names = ", ".join(md(n) for n in inputs["models"])
        st.info(
            f"**Saved run** {md(ws.saved.directory)}: ground truth {md(inputs['gt']['source'])}, models "
            f"{names}. Its figures are read as saved (the reading and scoring options of the sidebar do "
            "not apply); upload files to start a new evaluation.",
            icon=":material/inventory_2:",
        )
    elif ws.sources.sample:
        sample = SAMPLES[ws.sources.sample]
        st.info(f"**Sample data: {md(sample.title)}.** {md(sample.attribution)}", icon=":material/info:")
        other = [k for k in SAMPLES if k != sample.key]
        for key in other:
            st.button(
                f"Open the other sample: {md(SAMPLES[key].title)}",
                key=f"sample_{key}",
                on_click=uploads.use_sample,
                args=(key,),
                icon=":material/swap_horiz:",
            )
    else:
        uploads.render_loaded(ws.sources)
    if not ws.sources.sample:
        left, right = st.columns(2)
        left.button(
            "Back to the sample data",
            on_click=uploads.use_sample,
            args=("simulated",),
            key="overview_sample",
            icon=":material/restart_alt:",
        )
        if ws.saved is None and ws.has_models:
            right.button(
                "Save this run",
                on_click=session.save_run,
                key="overview_save",
                icon=":material/save:",
                help="Writes the figures, errors and matchings to the server's saved runs; the page's "
                "address then reopens them after a refresh or a restart.",
            )
    saved_runs.render()
session.render_messages(ws)
arrived, offer = session.arrival()
if offer is not None:
    left, right = st.columns([4, 1], vertical_alignment="center")
    left.warning(
        "This page opened in a new session (a refresh, a restart of the server or a shared link), "
        "so the built-in sample is shown. The address names a saved run:",
        icon=":material/history:",
    )
    right.button(
        "Reopen the saved run",
        key="overview_reopen",
        on_click=session.open_saved,
        args=(offer,),
        icon=":material/inventory_2:",
        width="stretch",
    )
elif arrived:
    st.warning(
        "This page opened in a new session (a refresh, a restart of the server or a shared link): "
        "uploaded files are not kept across sessions and no saved run is named, so the built-in sample is "
        "shown. Upload the files again, or save a run next time (Save this run).",
        icon=":material/history:",
    )
if ws.result is None:
    st.stop()
result = ws.result

for key in ws.one_sided:
    left, right = st.columns([5, 1], vertical_alignment="center")
    if key.set_aside:
        left.caption(md(overview.set_aside_caption(key)))
        right.button(f"Score {md(key.key)}", key=f"score_{key.key}", on_click=sidebar.score_key,
                     args=(key.key,), width="stretch")
        continue
    left.warning(md(key.message.replace("--meta", "the metadata option:")), icon=":material/label:")
    right.button(
        f"Treat {md(key.key)} as metadata",
        key=f"meta_{key.key}",
        on_click=sidebar.add_meta_key,
        args=(key.key,),
        width="stretch",
    )

if not ws.has_models:
    st.info("Ground truth loaded. Upload one or more prediction files to score them.")
    st.stop()

# --- headline ----------------------------------------------------------------------------
st.subheader("Headline figures")
rules_panel.headline(result)
st.markdown("**Every headline metric, under the rules in force**")
table = overview.metric_table(result, headline=True)
best = overview.best_models(result, table)
st.table(metric_styler(result, table))
if best:
    st.caption(
        "Best model: " + "; ".join(f"{md(label)}: **{md(name)}**" for label, name in best.items()) + "."
    )
st.caption(
    "Scores are micro averages over all documents; KIEval matches line items before counting. "
    "Flat entity F1 ignores which line a value is on. "
    f"Values are compared after: {md(result.comparison)}."
)

st.markdown("**Corrections a person must make, beside FP + FN**")
live_chart(overview.corrections_figure(result), key="overview_corrections", config={"displayModeBar": False})
st.markdown("**Where to look next**")
with st.container(horizontal=True, gap="medium"):  # the links wrap on narrow screens
    st.page_link("app_pages/documents.py", label="Documents: each document's line matching and errors",
                 icon=":material/description:")
    chosen = result.models[session.selected_model(ws)]
    largest = largest_cause(chosen.causes)
    # the model is the sidebar's; naming it here pushed the figures out of a 1,024 px window
    why = ", per field" if largest is None else (
        f" (largest cause: {largest[0]} {largest[1].replace('_', ' ')}, "
        f"{number(largest[2])} of {number(chosen.corrections.total)})")
    st.page_link("app_pages/errors.py", label=f"Errors: why each correction{why}",
                 icon=":material/rule:")
    st.page_link("app_pages/automation.py", label="Automation: choose the review threshold",
                 icon=":material/tune:")
    if len(ws.model_names) > 1:
        st.page_link("app_pages/compare.py", label="Compare: are the differences between models real?",
                     icon=":material/compare_arrows:")
    st.page_link("app_pages/guide.py", label="Metrics guide: definitions and worked examples",
                 icon=":material/menu_book:")

# --- details -----------------------------------------------------------------------------
# a fixed label: an expander whose label changes is a new one, closed (an edit would close it)
box = st.expander(
    "Field rules: how each field is compared (edit, apply the suggested rules, a rules file)",
    icon=":material/rule:",
    key="overview_rules_open",
    on_change="rerun",
)
if box.open:
    with box:
        rules_panel.panel(result)

# An expander's content is built only while it is open (on_change="rerun"): a closed
# one costs neither the server nor the browser anything.
box = st.expander("Every metric, every model", key="overview_all_metrics_open", on_change="rerun")
if box.open:
    with box:
        frame, columns = metric_table(result, overview.metric_table(result))
        st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
        frame, columns = shown(
            corrections_table(result).reset_index(),
            percent={"FP + FN overstates work by"},
            counts={"corrections", "FP + FN"},
        )
        st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
        st.caption(
            "A wrong value counts once as a correction (a substitution) but twice in FP + FN "
            "(one FP and one FN), so FP + FN overstates the manual work (the paper's Table 3)."
        )

warnings = result.all_warnings
box = st.expander(
    f"Load report: {number(len(result.gt.doc_ids))} documents, {len(warnings)} "
    f"warning{'' if len(warnings) == 1 else 's'}",
    icon=":material/fact_check:",
    key="overview_load_report_open",
    on_change="rerun",
)
if box.open:
    with box:
        frame, columns = shown(
            load_report(result).drop(columns=["role"]),
            counts={
                "documents read",
                "documents scored",
                "predicted",
                "missing",
                "unknown",
                "entities",
                "groups",
            },
            labels={"documents scored": "scored", "confidence coverage": "confidences", "source": "file"},
        )
        st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
        st.caption(
            "Every model is scored on every ground-truth document: missing ones count as fully "
            "missed (all additions); unknown ones (not in the ground truth) are left out of the "
            "scores. Confidences: the share of predictions that carry one."
        )
        notes = [f"{md(result.gt.source)}: {md(n)}" for n in result.gt.notes]
        notes += [f"{md(m.source)}: {md(n)}" for m in result.models.values() for n in m.notes]
        for note in notes:
            st.caption(note)
        for warning in warnings:
            st.warning(md(warning), icon=":material/warning:")
