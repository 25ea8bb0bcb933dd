"""Overview: upload ground truth and predictions, check the load report, compare every
model on every metric of the registry."""

import pandas as pd
import streamlit as st

from kieval_app import overview, workspace
from kieval_app.sources import SAMPLE_ATTRIBUTION
from kieval_app.text import md, metric_value

ws = workspace.current()

st.title("KIEval Workbench")
st.caption(
    "Error analysis for document Key Information Extraction: which values are wrong, "
    "in which line item, how many corrections a person must make, and how much of the "
    "flow can run without review."
)

# --- inputs ------------------------------------------------------------------------------
with st.container(border=True):
    left, right = st.columns(2)
    workspace.forget_uploader_if_reset()
    left.file_uploader(
        "Ground truth",
        type=workspace.UPLOAD_TYPES,
        key=workspace.UPLOAD_GT,
        on_change=workspace.on_gt_upload,
        help="One file with every document (JSON, JSONL, CSV/TSV/Parquet long table, CORD), "
        "or a .zip of one file per document (KIEval CSV, JSON).",
    )
    right.file_uploader(
        "Predictions",
        type=workspace.UPLOAD_TYPES,
        key=workspace.UPLOAD_PRED,
        accept_multiple_files=True,
        on_change=workspace.on_prediction_upload,
        help="One file per model; the model is named after the file. Add more files at any "
        "time to compare models.",
    )
    st.caption(
        f"Up to {workspace.upload_limit_mb()} MB per file. Formats are detected "
        "automatically; reading and scoring options are in the sidebar. A directory of "
        "per-document files is uploaded as one .zip."
    )
    if ws.sources.sample:
        st.info(f"**Sample data.** {SAMPLE_ATTRIBUTION}", icon=":material/info:")
    else:
        st.button(
            "Back to the sample data",
            on_click=workspace.use_sample,
            key="overview_sample",
            icon=":material/restart_alt:",
        )

workspace.render_problems(ws)
if ws.result is None:
    st.stop()
result = ws.result

# --- load report -------------------------------------------------------------------------
st.subheader("Load report")
st.dataframe(
    overview.load_report(result, ws.files),
    hide_index=True,
    column_config={
        "size (bytes)": st.column_config.NumberColumn("size", format="bytes", width="small"),
        "documents read": st.column_config.NumberColumn("docs read", width="small"),
        "documents scored": st.column_config.NumberColumn("docs scored", width="small"),
        "missing": st.column_config.NumberColumn(
            width="small",
            help="GT documents absent from the predictions: scored as fully missed (all additions)",
        ),
        "unknown": st.column_config.NumberColumn(
            width="small", help="Predicted documents absent from the GT: left out of the scores"
        ),
        "entities": st.column_config.NumberColumn(width="small"),
        "groups": st.column_config.NumberColumn(width="small"),
    },
)
st.caption(f"Values compared after: {md(result.normalizer.description)}.")
if result.warnings:
    with st.expander(
        f"{len(result.warnings)} warning(s) from reading and scoring",
        expanded=len(result.warnings) <= 3,
        icon=":material/warning:",
    ):
        st.dataframe(pd.DataFrame({"warning": result.warnings}), hide_index=True)
for name, model in result.models.items():
    if model.missing_documents or model.unknown_documents:
        with st.expander(f"Missing and unknown documents of {md(name)}"):
            st.dataframe(overview.document_lists(model), hide_index=True)
if not ws.sources.sample and ws.sources.predictions:
    with st.popover("Remove a prediction file", icon=":material/delete:"):
        for source in ws.sources.predictions:
            st.button(
                md(source.name),
                key=f"overview_remove_{source.digest}_{source.name}",
                on_click=workspace.remove_prediction,
                args=(source.name,),
            )

if not ws.has_models:
    st.info("Ground truth loaded. Upload one or more prediction files to score them.")
    st.stop()

# --- overview ----------------------------------------------------------------------------
st.subheader("Headline figures")
name = workspace.selected_model(ws)
model = result.models[name]
cards = overview.headline(result, model)
per_row = -(-len(cards) // -(-len(cards) // 4))  # at most 4 per row, rows balanced
for start in range(0, len(cards), per_row):
    row = cards[start : start + per_row]
    for column, (metric, value) in zip(st.columns(per_row), row, strict=False):
        column.metric(
            md(metric.label),
            metric_value(value),
            border=True,
            help=f"{metric.how_to_read} ({metric.direction})",
        )
st.caption(f"Cards show the model **{md(name)}**; choose another in the sidebar.")

st.subheader("Every metric, every model")
rows = overview.metric_rows(result)
definitions = {
    m.label: f"{m.definition} {m.how_to_read}" for m in overview.reported_metrics(result)
}
st.dataframe(
    rows,
    hide_index=True,
    height=38 + 35 * len(rows),
    column_config={
        "metric": st.column_config.TextColumn("metric", width="medium"),
        "family": st.column_config.TextColumn("family", width="small"),
        "better": st.column_config.TextColumn("better", width="small"),
    },
)
st.caption(
    "Scores are micro averages over all documents (percentages); counts are totals. "
    f"Automation at target uses the target accuracy {result.target_accuracy:.1%} (sidebar). "
    "The numbers, one row per model, are in the expander below."
)
with st.expander("The same table, one row per model (the paper's Table 1 layout)"):
    table = overview.overview_table(result)
    kinds = overview.metric_kinds(table)
    st.dataframe(
        table,
        column_config={
            label: st.column_config.NumberColumn(
                label,
                format="percent" if kinds[label] == "score" else "localized",
                help=definitions.get(label),
            )
            for label in table.columns
        },
    )

st.subheader("Corrections a person must make, beside FP + FN")
left, right = st.columns([1, 1])
left.plotly_chart(
    overview.corrections_figure(result),
    key="overview_corrections",
    config={"displayModeBar": False},
)
corrections = overview.corrections_table(result)
right.dataframe(
    corrections[["corrections", "FP + FN", "FP + FN overstates work by"]],
    column_config={
        "FP + FN overstates work by": st.column_config.NumberColumn(
            "FP + FN overstates by", format="percent"
        )
    },
)
right.caption(
    "A wrong value counts once as a correction (a substitution) but twice in FP + FN "
    "(one FP and one FN), so FP + FN overstates the manual work (the paper's Table 3)."
)

st.subheader("How to read these metrics")
how = overview.how_to_read(result)
st.dataframe(
    how,
    hide_index=True,
    height=38 + 35 * len(how),
    column_config={
        "metric": st.column_config.TextColumn(width="medium"),
        "family": st.column_config.TextColumn(width="small"),
        "direction": st.column_config.TextColumn(width="small"),
    },
)
st.page_link(
    "app_pages/guide.py",
    label="Definitions, sources and a worked example: Metrics guide",
    icon=":material/menu_book:",
)
