"""The Overview's list of saved runs: each with its size and date, opened or deleted (a
deletion asks for a confirmation first). The runs are those of
:func:`kieval_app.session.runs_dir`, as ``kieval runs list`` shows them."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from kieval_core.exceptions import KievalInputError, KievalOptionError
from kieval_core.figures.text import md
from kieval_core.output.retention import RunInfo, describe_size, list_runs, remove_run, saved_at

from . import session

PICK = "runs_pick"


def _runs() -> dict[str, RunInfo]:
    return {run.id: run for run in list_runs(session.runs_dir())}


def _ask_to_delete() -> None:
    st.session_state[session.DELETE_RUN] = st.session_state.get(PICK)


def _open() -> None:
    session.open_saved(st.session_state.get(PICK))


def _cancel_delete() -> None:
    st.session_state.pop(session.DELETE_RUN, None)


def _delete(run_id: str) -> None:
    st.session_state.pop(session.DELETE_RUN, None)
    if not session.may_delete(run_id):
        st.session_state[session.MESSAGES] = [("error", f"The run {run_id} was not deleted: this session "
                                                         "did not save it.")]
        return
    try:
        removed = remove_run(run_id, session.runs_dir())
    except (KievalInputError, KievalOptionError, OSError) as exc:
        st.session_state[session.MESSAGES] = [("error", f"The run {run_id} was not deleted: {_problem(exc)}")]
        return
    st.session_state[session.MESSAGES] = [
        ("success", f"Deleted the saved run {removed.id} ({describe_size(removed.bytes)}).")]


def _problem(exc: Exception) -> str:
    """What went wrong, without the server's paths."""
    if isinstance(exc, KievalInputError):
        return exc.problem
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)


def render() -> None:
    """The saved runs in an expander that costs nothing while it is closed."""
    box = st.expander("Saved runs", icon=":material/inventory_2:", key="overview_saved_runs_open",
                      on_change="rerun")
    if not box.open:
        return
    with box:
        runs = _runs()
        if not runs:
            st.caption("No saved run on this server yet (Save this run, or `kieval evaluate --save-run DIR` "
                       "into its runs directory).")
            return
        table = pd.DataFrame({
            "id": list(runs),
            "saved": [saved_at(r) for r in runs.values()],
            "size": [describe_size(r.bytes) for r in runs.values()],
            "models": [", ".join(r.models) for r in runs.values()],
            "ground truth": [r.ground_truth for r in runs.values()],
        })
        st.dataframe(table, hide_index=True, placeholder="")
        st.caption(f"{len(runs)} run(s), {describe_size(sum(r.bytes for r in runs.values()))}; this session "
                   "deletes the runs it saved; `kieval runs prune` on the server removes old ones in bulk.")
        if st.session_state.get(PICK) not in runs:  # deleted meanwhile
            st.session_state.pop(PICK, None)
        pending = st.session_state.get(session.DELETE_RUN)
        confirming = pending in runs
        st.selectbox("Saved run", list(runs), key=PICK,  # the same widget while confirming: its choice stays
                     format_func=lambda i: f"{i} · {saved_at(runs[i])} · {describe_size(runs[i].bytes)}")
        if confirming:
            run = runs[pending]
            st.warning(f"Delete the saved run **{md(run.id)}** ({describe_size(run.bytes)}, saved "
                       f"{saved_at(run)})? Its address stops working for everyone; this cannot be undone.",
                       icon=":material/delete:")
            yes, no = st.columns(2)
            yes.button("Delete it", key="runs_delete_yes", on_click=_delete, args=(run.id,), type="primary")
            no.button("Cancel", key="runs_delete_no", on_click=_cancel_delete)
            return
        left, right = st.columns(2)  # the callbacks read the choice as it is when clicked
        left.button("Open", key="runs_open", on_click=_open, icon=":material/folder_open:")
        if session.may_delete(st.session_state.get(PICK) or next(iter(runs))):
            right.button("Delete…", key="runs_delete", on_click=_ask_to_delete, icon=":material/delete:")
