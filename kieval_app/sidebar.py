"""The sidebar every page shares: the model, what is loaded, and the options."""

from __future__ import annotations

import streamlit as st

from kieval_core import FORMATS
from kieval_core.count.peer_families import STRUCTURES
from kieval_core.figures.text import md
from kieval_core.result import registry as metric_registry
from kieval_core.rules import FieldRules

from .compute import Workspace
from .session import MODEL, URL, describe
from .sources import SAMPLES, AppOptions, parse_aliases, parse_keys

OPTION_DEFAULTS = {
    "opt_gt_format": "auto",
    "opt_pred_format": "auto",
    "opt_key": "",
    "opt_aliases": "",
    "opt_meta": "",
    "opt_score_keys": (),
    "opt_related": "",
    "opt_casefold": False,
    "opt_numbers": False,
    "opt_comparators": (),
    "opt_rules_file": None,
    "opt_apply_suggested": False,
    "opt_cer": 0.30,
    "opt_structure": "uploaded",
}


def init_options() -> None:
    for key, value in OPTION_DEFAULTS.items():
        st.session_state.setdefault(key, value)
    st.session_state.setdefault("opt_families", list(metric_registry.FAMILIES))


def add_comparator(entity_type: str, comparator: str) -> None:
    """Compare a field with a comparator (the Errors page's one-click choice); re-scores."""
    rules = [r for r in st.session_state["opt_comparators"] if r[0] != entity_type]
    st.session_state["opt_comparators"] = (*rules, (entity_type, comparator))


def set_rules(comparators: dict[str, str]) -> None:
    """The rules panel's edit: ``{field: comparator or "ignore"}`` replaces the user's rule of
    each of those fields; re-scores."""
    kept = [r for r in st.session_state["opt_comparators"] if r[0] not in comparators]
    st.session_state["opt_comparators"] = (*kept, *comparators.items())


def apply_suggested(apply: bool) -> None:
    """Apply the suggested rules to every model (or stop applying them); re-scores."""
    st.session_state["opt_apply_suggested"] = apply


def use_rules_file(rules: FieldRules | None) -> None:
    """The rules of an uploaded rules file (None: none); re-scores."""
    st.session_state["opt_rules_file"] = rules


def remove_comparator(entity_type: str) -> None:
    """Compare a field exactly again (the sidebar's undo)."""
    st.session_state["opt_comparators"] = tuple(r for r in st.session_state["opt_comparators"]
                                                if r[0] != entity_type)


def add_meta_key(key: str) -> None:
    """Declare a top-level key as metadata (the button of a one-sided-key notice)."""
    keys = parse_keys(st.session_state["opt_meta"])
    if key not in keys:
        st.session_state["opt_meta"] = ", ".join([*keys, key])


def score_key(key: str) -> None:
    """Score a ground-truth key no prediction file has (set aside by default; SPEC 6.1)."""
    st.session_state["opt_score_keys"] = (*st.session_state["opt_score_keys"], key)


def render_options() -> AppOptions:
    """The sidebar's options; returns them as one value. Bad alias text is reported."""
    with st.sidebar.expander("Reading files", expanded=False):
        st.text_input(
            "Metadata keys",
            key="opt_meta",
            placeholder="split, vendor",
            persist_state="session",
            help="Record-level keys (split, vendor, document type) kept per document and never scored; "
            "the Automation page gives figures per value.",
        )
        st.selectbox(
            "Ground-truth format",
            FORMATS,
            key="opt_gt_format",
            persist_state="session",
            help="auto detects the format from the name and content of each file",
        )
        st.selectbox("Predictions format", FORMATS, key="opt_pred_format", persist_state="session")
        st.text_input(
            "Structure key",
            key="opt_key",
            placeholder="auto",
            persist_state="session",
            help="Key under which each JSONL record holds its fields (auto: fields, gt_parse, parse, "
            "prediction, predictions, output), or the wrapper key of per-document files",
        )
        st.text_area(
            "Key aliases",
            key="opt_aliases",
            placeholder="subtotal=sub_total",
            persist_state="session",
            help="Rename keys while reading nested JSON: one old=new per line",
        )
        st.text_input(
            "Related fields (format lists)",
            key="opt_related",
            placeholder="date, description, amount",
            persist_state="session",
            help="Fields holding |-separated parallel lists; their i-th values form row i",
        )
    with st.sidebar.expander("Scoring", expanded=False):
        st.checkbox("Ignore case", key="opt_casefold", persist_state="session")
        st.checkbox(
            "Ignore separators inside numbers (45,500 = 45500)", key="opt_numbers", persist_state="session"
        )
        for entity_type, comparator in st.session_state["opt_comparators"]:
            st.button(
                f"Compared as {comparator}: {md(entity_type)} (undo)",
                key=f"opt_uncompare_{entity_type}",
                on_click=remove_comparator,
                args=(entity_type,),
                icon=":material/undo:",
                help="Compare this field exactly again (re-scores)",
            )
        families = list(metric_registry.FAMILIES)
        st.multiselect(
            "Metric families",
            families,
            format_func=lambda f: f"{f}: {metric_registry.FAMILIES[f]}",
            key="opt_families",
            persist_state="session",
            help="KIEval is always computed first; peer metrics follow in the background.",
        )
        st.number_input(
            "OINerval CER threshold",
            min_value=0.0,
            max_value=1.0,
            step=0.05,
            format="%.2f",
            key="opt_cer",
            persist_state="session",
            help="An entity counts as found when its character error rate is at most this",
        )
        st.selectbox(
            "ANLS* and nTED score",
            list(STRUCTURES),
            format_func={
                "uploaded": "the files' own nested structures",
                "renested": "the entities re-nested (reported under their own names)",
            }.get,
            key="opt_structure",
            persist_state="session",
        )
    try:
        aliases = parse_aliases(st.session_state["opt_aliases"])
    except ValueError as exc:
        st.sidebar.error(f"Key aliases ignored: {md(exc)}")
        aliases = ()
    wanted = set(st.session_state.get("opt_families", []))
    rules_file = st.session_state["opt_rules_file"]
    return AppOptions(
        gt_format=st.session_state["opt_gt_format"],
        pred_format=st.session_state["opt_pred_format"],
        key=st.session_state["opt_key"].strip() or None,
        aliases=aliases,
        meta=parse_keys(st.session_state["opt_meta"]),
        score_keys=tuple(st.session_state["opt_score_keys"]),
        related_fields=parse_keys(st.session_state["opt_related"]),
        casefold=st.session_state["opt_casefold"],
        number_punctuation=st.session_state["opt_numbers"],
        comparators=tuple(tuple(r) for r in st.session_state["opt_comparators"]),
        rules_file=FieldRules() if rules_file is None else rules_file,  # empty: may carry warnings
        apply_suggested=bool(st.session_state["opt_apply_suggested"]),
        families=tuple(f for f in metric_registry.FAMILIES if f in wanted) or ("kieval",),
        cer_threshold=float(st.session_state["opt_cer"]),
        structure=st.session_state["opt_structure"],
    )


def adopt_model_from_url(ws: Workspace) -> None:
    """A deep link's ``?model=`` selects that model (once; the user's choice wins after)."""
    wanted = st.query_params.get("model")
    if wanted and wanted in ws.model_names and wanted != st.session_state[URL].get("model"):
        st.session_state[MODEL] = wanted
        st.session_state[URL] = {**st.session_state[URL], "model": wanted}


def render_model_picker(ws: Workspace) -> None:
    """The model of the single-model pages (Documents, Errors, Automation)."""
    names = ws.model_names
    if not names:
        return
    if st.session_state.get(MODEL) not in names:
        st.session_state[MODEL] = names[0]
    st.selectbox(
        "Model", names, key=MODEL, help="The model shown on the Documents, Errors and Automation pages"
    )


def render_data_summary(ws: Workspace) -> None:
    """One line saying what is loaded."""
    if ws.sources.sample:
        sample = SAMPLES[ws.sources.sample]
        st.caption(f"Data: built-in sample, {md(sample.title)}.")
    else:
        st.caption(f"Data: {describe(ws)}")
