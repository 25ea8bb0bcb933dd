"""Suspect labels: ground-truth values most models agree against (SPEC 2f), each opened on
its document, marked by a reviewer, and the figures with the fixes beside the figures as
given. The input files are never changed: the fixes are a file of their own."""

import json

import streamlit as st

from kieval_app import session
from kieval_app.columns import shown
from kieval_core.evaluate import with_label_fixes
from kieval_core.exceptions import KievalInputError
from kieval_core.figures import documents
from kieval_core.figures.suspects import (
    VERDICTS,
    automation_with_fixes,
    evidence_table,
    fields_with_fixes,
    fix_rows_of,
    group_label,
    headline_text,
    headline_with_fixes,
    suspect_keys,
    suspect_list,
)
from kieval_core.figures.text import md, number
from kieval_core.review.label_fixes import corrected_gt, fixes_json, parse_fixes
from kieval_core.review.suspects import WEAK_CONFIDENCE, default_agreement

ws = session.current()
session.require_models(ws)
result = ws.result
verdicts = session.verdicts(ws)
n_models = len(result.models)

st.title("Suspect labels")
if not result.has_detail:
    st.info("This run kept no entity tables (a distributed run), so its suspects cannot be listed here.")
    st.stop()
suspects = session.view("suspects", lambda: result.suspects)
if n_models == 1:
    st.caption(
        f"One model: weak evidence only. Listed are its predictions with confidence >= {WEAK_CONFIDENCE} "
        "that disagree with the ground truth. Load more models for agreement between them."
    )
else:
    st.caption(
        f"A ground-truth value is suspect when at least {default_agreement(n_models)} of the {n_models} "
        "models agree on another value for it (a gap: a value they agree on where the GT has none). "
        f"Values are compared after: {md(result.comparison)}. Strongest evidence first: the share of models "
        "that agree, then their mean confidence."
    )


# --- the list ---------------------------------------------------------------------------------
def _pick() -> None:
    rows = st.session_state["sus_table"].selection.rows
    if rows:
        st.session_state[session.SUSPECT] = st.session_state["sus_keys"][rows[0]]


fields = sorted(suspects["entity_type"].unique())
session.keep_valid("sus_fields", fields)
chosen = st.multiselect(
    "Fields", fields, key="sus_fields", placeholder="every field", persist_state="session"
)
table = suspect_list(suspects, verdicts, chosen)
if table.empty:
    st.info("No suspect labels." if suspects.empty else "No suspect labels in these fields.")
    st.stop()
st.session_state["sus_keys"] = table["key"].tolist()
frame, columns = shown(table.drop(columns="key"), percent={"score"})
st.dataframe(
    frame,
    hide_index=True,
    height=300,
    key="sus_table",
    on_select=_pick,
    selection_mode="single-row",
    column_config=columns,
    placeholder="",
)
reviewed = sum(1 for k in table["key"] if k in verdicts)
st.caption(f"{number(len(table))} suspect(s), {number(reviewed)} reviewed. Click a row to open it.")

# --- one suspect: its evidence on its document, and the verdict -----------------------------
if st.session_state.get(session.SUSPECT) not in set(table["key"]):
    st.session_state[session.SUSPECT] = table["key"].iloc[0]
key = st.session_state[session.SUSPECT]
titles = dict(
    zip(
        table["key"],
        table["doc_id"]
        + " · "
        + table["field"]
        + ": "
        + table["ground truth"].fillna("(none)")
        + " → "
        + table["models say"],
        strict=True,
    )
)
st.session_state["sus_pick"] = key
st.selectbox(
    "Suspect",
    list(titles),
    format_func=titles.get,
    key="sus_pick",
    on_change=lambda: st.session_state.update({session.SUSPECT: st.session_state["sus_pick"]}),
)
suspect = suspects.iloc[session.view("sus_keys", lambda: suspect_keys(suspects)).index(key)]
doc = suspect["doc_id"]
st.subheader(
    f"{md(doc)}: {md(suspect['entity_type'])} ({md(group_label(suspect['group_type'], suspect['group']))})"
)
left, right = st.columns(2)
with left:
    gt_text = (
        "(no value)"
        if suspect["gt_value"] is None
        else md(json.dumps(suspect["gt_value"], ensure_ascii=False))
    )
    st.markdown(f"**Ground truth**: {gt_text}")
    st.markdown(f"**Models say**: {md(json.dumps(suspect['proposed_value'], ensure_ascii=False))}")
    evidence = session.view("sus_evidence", lambda: evidence_table(result, suspect), key)
    st.dataframe(evidence, hide_index=True, placeholder="")
    name = suspect["models"][0]
    session.document_link(doc, name, f"Open {doc} in the Documents page ({name})")
with right:
    _, boxes, _ = documents.document_tables(session.view, result.models[name], name, doc)
    image = ws.images.page(doc, 1) if ws.images is not None else None
    if len(boxes):
        images_digest = ws.sources.images.digest if ws.sources.images is not None else None
        figure = documents.page_figure(session.view, name, doc, boxes, 1, image, None, images_digest)
        st.plotly_chart(figure, key="sus_page", config={"scrollZoom": True})
        st.caption(f"Page 1: the ground truth's boxes (left) and {md(name)}'s (right).")
    elif image is not None:
        st.image(image.jpeg, caption="page 1", width="stretch")
    else:
        st.caption("No page image or boxes for this document.")

# another suspect, or back from another page (which drops the widgets' values): its verdict
if st.session_state.get("sus_shown") != key or "sus_verdict" not in st.session_state:
    given = verdicts.get(key, {})
    st.session_state["sus_verdict"] = given.get("verdict", "wrong")
    st.session_state["sus_value"] = given.get("fixed_value") or suspect["proposed_value"]
    st.session_state["sus_note"] = given.get("note", "")
    st.session_state["sus_shown"] = key
with st.form("sus_form", border=True):
    verdict = st.radio(
        "Verdict", list(VERDICTS), format_func=VERDICTS.get, key="sus_verdict", horizontal=True
    )
    value = st.text_input("Value to use (when the label is wrong; empty removes the value)", key="sus_value")
    note = st.text_input("Note", key="sus_note")
    if st.form_submit_button("Save verdict", icon=":material/check:"):
        verdicts[key] = {"verdict": verdict, "fixed_value": value or None, "note": note}
        st.rerun()
if key in verdicts:
    st.caption(f"Saved: {md(VERDICTS[verdicts[key]['verdict']])}.")

# --- the figures with the fixes beside the figures as given ----------------------------------
st.subheader("Figures with the fixes")
fixes = fix_rows_of(suspects, verdicts)
if not fixes:
    st.caption('Mark a suspect "label is wrong" to see the figures with the fix beside the original.')
    st.stop()
fix_text = fixes_json(fixes)
try:
    fixed = session.view(
        "sus_fixed", lambda: with_label_fixes(result, parse_fixes(fixes, "your verdicts")), fix_text
    )
except KievalInputError as exc:
    st.error(md(str(exc)), icon=":material/error:")
    st.stop()
st.table(headline_text(headline_with_fixes(fixed)))
st.caption(
    f"{number(len(fixes))} fix(es): every model scored again against the fixed ground truth. Scores are "
    "in percent and their changes in points; corrections and ranks are counts."
)
model_name = session.selected_model(ws)
st.markdown(f"**Per field** ({md(model_name)}; the model picker in the sidebar chooses)")
frame, columns = shown(
    fields_with_fixes(fixed, model_name), percent={"aligned as given", "aligned with fixes", "aligned change"}
)
st.dataframe(frame, hide_index=True, column_config=columns, placeholder="")
st.markdown(
    "**Automation**: the threshold recommended for 95% accuracy (blank: not reachable with automation)"
)
st.dataframe(automation_with_fixes(fixed, 0.95), hide_index=True, placeholder="")
with st.container(horizontal=True):
    st.download_button(
        "Download the fix file",
        fix_text,
        "label_fixes.json",
        mime="application/json",
        key="sus_download_fixes",
        icon=":material/download:",
    )
    if ws.sources.gt is not None:
        gt = ws.sources.gt
        data, filename = session.view(
            "sus_corrected", lambda: corrected_gt(gt.data, gt.name, fixed.label_fixes, fixed.gt), fix_text
        )
        st.download_button(
            "Download the corrected ground truth",
            data,
            filename,
            key="sus_download_gt",
            icon=":material/download:",
        )
