"""Field rules in the app (SPEC 2d): the first screen's strict and by-rules rankings, and the
rules panel (every field: its comparator, where it comes from, what its comparator could
not read; editable; the suggested rules for every model at once; a rules file up and down).

The tables are the core's (:func:`kieval_core.result.tables.rankings_table`,
:func:`~kieval_core.result.tables.rules_panel_table`); this module renders them and turns
the user's edits into the sidebar's options, which re-score.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from kieval_core import EvaluationResult, KievalInputError, KievalOptionError
from kieval_core.count.comparators import COMPARATORS
from kieval_core.figures.text import md
from kieval_core.result.tables import rankings_table, rules_panel_table
from kieval_core.rules import read_rules_file

from . import session, sidebar

#: What the panel offers per field (``phone:CC`` needs a region: typed as a rule elsewhere).
CHOICES = [c for c in COMPARATORS if c not in ("date", "phone:CC")] + ["ignore"]
PANEL_KEY = "rules_panel_editor"


def headline(result: EvaluationResult) -> None:
    """KIEval_Aligned and each model's rank strictly and under the rules (suggested, or in
    force), side by side, and the sentence when the rankings differ; ``result`` is the
    current workspace's (its table is a view, shared by every session showing it)."""
    table = session.view("rankings", lambda: rankings_table(result))
    shown = pd.DataFrame(index=table.index)
    for column in table.columns:
        if column.startswith("KIEval_Aligned, "):
            label = column.removeprefix("KIEval_Aligned, ")
            shown[_HEADINGS.get(label, label)] = [
                f"{a:.1%} (#{r})" for a, r in zip(table[column], table[f"rank, {label}"], strict=True)]
    figures = result.rule_figures
    if figures.sentence:
        st.markdown(f"**{md(figures.sentence)}**")
    # st.table renders its cells as markdown: the model names are escaped
    st.table(shown.reset_index().style.format({"model": md}).hide(axis="index"))
    if figures.suggested is not None:
        named = ", ".join(f"{md(t)} as {c}" for t, c in figures.suggested_comparators.items()
                          if figures.active_comparators.get(t) != c)
        st.caption(f"KIEval_Aligned (rank). Suggested rules, inferred from the files and not applied: "
                   f"{named}. Strict: every field compared exactly (the paper's KIEval).")
        # on its own line: beside the caption its label was cut at 1,024 px
        st.button("Apply the suggested rules", key="headline_apply_suggested",
                  on_click=sidebar.apply_suggested, args=(True,), icon=":material/rule:",
                  help="Every model is scored again under them; the rules panel below undoes it")
    else:
        st.caption("KIEval_Aligned (rank). Strict: every field compared exactly (the paper's KIEval).")


_HEADINGS = {"strict": "strict (every field exact)", "by the rules in force": "under the rules in force",
             "suggested rules": "under the suggested rules"}


def panel(result: EvaluationResult) -> None:
    """The rules panel: one row per field, its comparator editable."""
    table = rules_panel_table(result)
    st.data_editor(
        table,
        key=PANEL_KEY,
        hide_index=True,
        disabled=[c for c in table.columns if c != "comparator"],
        column_config={
            "comparator": st.column_config.SelectboxColumn("comparator", options=CHOICES, required=True,
                                                           help="How the field's values are compared"),
            "why": st.column_config.TextColumn("why", width="large"),
        },
        on_change=_edited,
        args=(list(table["field"]),),
    )
    st.caption("Source: user (this panel), file (a rules file), schema (its plain types), suggested "
               "(inferred from the files), default (exact). Unparsed: values the comparator could not read, "
               "compared as they are. Ignored fields are not scored on either side.")
    applied = bool(st.session_state.get("opt_apply_suggested"))
    left, middle, right = st.columns(3)
    label = "Stop applying the suggested rules" if applied else "Apply the suggested rules to every model"
    left.button(label, key="rules_apply_suggested", on_click=sidebar.apply_suggested, args=(not applied,),
                icon=":material/rule:", width="stretch")
    middle.download_button(
        "Download the rules file", data=json.dumps(result.rules.to_schema(table["field"]), indent=2),
        file_name="kieval_rules.json", mime="application/json", key="rules_download",
        icon=":material/download:", width="stretch",
        help="A JSON Schema with x-kieval-comparator / x-kieval-ignore per field: "
             "kieval evaluate --rules kieval_rules.json")
    right.file_uploader(
        "Rules file", type=["json"], key="rules_upload", on_change=_uploaded, label_visibility="collapsed",
        help="A JSON Schema whose properties carry x-kieval-comparator / x-kieval-ignore, stickler's "
             "x-aws-stickler-comparator or extract-bench's evaluation_config")
    if st.session_state.get("opt_rules_file") is not None:
        st.button("Forget the rules file", key="rules_forget", on_click=sidebar.use_rules_file, args=(None,),
                  icon=":material/delete:")
    problem = st.session_state.get("rules_problem")
    if problem:
        st.error(md(problem), icon=":material/error:")


def _edited(fields: list[str]) -> None:
    edits = st.session_state[PANEL_KEY].get("edited_rows", {})
    chosen = {fields[int(row)]: change["comparator"] for row, change in edits.items()
              if "comparator" in change}
    if chosen:
        sidebar.set_rules(chosen)


def _uploaded() -> None:
    upload = st.session_state.get("rules_upload")
    st.session_state["rules_problem"] = None
    if upload is None:
        return
    try:
        schema = json.loads(upload.getvalue().decode("utf-8"))
        rules = read_rules_file(schema, upload.name)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        st.session_state["rules_problem"] = f"{upload.name}: not a readable JSON rules file ({exc})"
        return
    except (KievalInputError, KievalOptionError) as exc:
        st.session_state["rules_problem"] = str(exc)
        return
    sidebar.use_rules_file(rules)
