"""One orchestrator: every way of evaluating (``evaluate()``, the partitions of a distributed
run, the app, the Accumulator) scores a prediction set with ``score_model`` and makes the
evaluation with ``finish``, which is also the one place where the core applies where
confidences come from."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest
from builders import dataset, long_table

from kieval_core import Accumulator, KievalOptionError, NoCommonDocuments, evaluate, load, load_bytes
from kieval_core.count.normalize import Normalizer
from kieval_core.keys import one_sided_keys
from kieval_core.output.render import report_json
from kieval_core.read.shards import read_shard
from kieval_core.result.consensus import with_confidence_sources
from kieval_core.result.scoring import KeyCounts, finish, score_model, score_models
from kieval_core.rules import FieldRules
from kieval_core.scale.partitions import Input, Job, score_partition

ROOT = Path(__file__).resolve().parents[1]

GT = {"d1": [("", 0, "total", "5.00"), ("menu", 0, "nm", "Tea"), ("menu", 0, "price", "5.00")],
      "d2": [("", 0, "total", "7.00"), ("", 0, "date", "2024-01-02")]}
#: one model per kind of row: right, a substitution, an addition, a deletion, an unknown document
MODELS = {
    "a": {"d1": [("", 0, "total", "5.00", 0.9), ("menu", 0, "nm", "Tea", 0.8),
                 ("menu", 0, "price", "4.00", 0.3)],
          "d2": [("", 0, "total", "7.00", 0.7)]},
    "b": {"d1": [("", 0, "total", "5.00"), ("menu", 0, "nm", "Tee")],
          "d9": [("", 0, "total", "1.00")]},
    "c": {"d1": [("", 0, "total", "6.00"), ("", 0, "tip", "1.00")],
          "d2": [("", 0, "total", "7.00"), ("", 0, "date", "2024-01-02")]},
}


def _by_hand():
    gt = dataset(GT, "gt")
    preds = {n: dataset(p, n) for n, p in MODELS.items()}
    models = {n: score_model(gt, p, name=n, normalizer=Normalizer()) for n, p in preds.items()}
    keys = {n: KeyCounts.of(p) for n, p in preds.items()}
    return finish(gt, models, keys, Normalizer(), ("kieval",))


def _report(result) -> str:
    return report_json(result)


def test_evaluate_is_score_model_then_finish():
    result = evaluate(dataset(GT, "gt"), {n: dataset(p, n) for n, p in MODELS.items()})
    assert _report(result) == _report(_by_hand())
    assert result.models["b"].unknown_documents == ("d9",)
    assert result.models["b"].missing_documents == ("d2",)
    # the one-sided key ("tip", in predictions only) is said by finish
    assert any("'tip'" in w for w in result.warnings)


@pytest.mark.parametrize(("missing", "source"), [("review", "model"), ("automate", "consensus"),
                                                  ("review", "consensus")])
def test_the_confidence_sources_are_applied_once_after_finish(missing, source):
    """evaluate()'s review options give what applying them to the scored result gives, and
    the models say the policy they follow."""
    applied = evaluate(dataset(GT, "gt"), {n: dataset(p, n) for n, p in MODELS.items()},
                       missing_confidence=missing, confidence_from=source)
    assert _report(applied) == _report(with_confidence_sources(_by_hand(), missing, source))
    assert {m.missing_confidence for m in applied.models.values()} == {missing}
    if source == "consensus":
        assert applied.models["b"].consensus_of == 2  # b and c carry no confidence of their own
        assert applied.models["a"].consensus_of == 0
    with pytest.raises(KievalOptionError, match="missing-confidence policy"):
        evaluate(dataset(GT, "gt"), dataset(MODELS["a"], "a"), missing_confidence="skip")


def test_finish_counts_the_ground_truths_keys_unless_given():
    gt = dataset(GT, "gt")
    pred = dataset(MODELS["c"], "c")
    model = score_model(gt, pred, name="c", normalizer=Normalizer())
    keys = {"c": KeyCounts.of(pred)}
    counted = finish(gt, {"c": model}, keys, Normalizer(), ("kieval",))
    assert counted.models["c"] is model
    given = finish(gt, {"c": model}, keys, Normalizer(), ("kieval",),
                   one_sided=one_sided_keys(KeyCounts.of(gt), keys))
    assert counted.warnings == given.warnings and any("'tip'" in w for w in given.warnings)
    # a ground truth said to have the key "tip" too: no warning about it
    with_tip = KeyCounts({**KeyCounts.of(gt).top_level, "tip": 1}, KeyCounts.of(gt).types | {"tip"})
    told = finish(gt, {"c": model}, keys, Normalizer(), ("kieval",), one_sided=one_sided_keys(with_tip, keys))
    assert not any("'tip'" in w for w in told.warnings)
    # rules that ignore "tip": it is not scored, so not named either
    ignore_tip = FieldRules.of({"tip": "ignore"})
    ignoring = finish(gt, {"c": model}, keys, Normalizer(), ("kieval",), rules=ignore_tip)
    assert not any("'tip'" in w for w in ignoring.warnings)


def test_score_model_refuses_a_stranger_except_on_a_partition():
    gt = dataset(GT, "gt")
    stranger = dataset({"x1": [("", 0, "total", "5.00")]}, "s")
    with pytest.raises(NoCommonDocuments):
        score_model(gt, stranger, name="s", normalizer=Normalizer())
    model = score_model(gt, stranger, name="s", normalizer=Normalizer(), partition=True)
    assert model.missing_documents == ("d1", "d2")
    assert model.unknown_documents == ("x1",)
    # every GT value is missed: five FNs, five additions to make
    assert (model.entity.tp, model.entity.fn, model.corrections.addition) == (0, 5, 5)


def test_a_partition_scores_as_score_model(tmp_path):
    gt = dataset(GT, "gt")
    pred = dataset(MODELS["b"], "a")  # a missing and an unknown document
    shards = {}
    for name, ds in (("gt", gt), ("a", pred)):
        path = tmp_path / f"{name}.parquet"
        long_table(ds).to_parquet(path, index=False)
        shards[name] = read_shard(path, 0)
    job = Job(Input("gt", str(tmp_path / "gt.parquet"), "table"),
              (Input("a", str(tmp_path / "a.parquet"), "table"),))
    part = score_partition(0, [shards["gt"]], {"a": [shards["a"]]}, job).models["a"]
    gt_read = load(tmp_path / "gt.parquet")
    local = score_model(gt_read, load(tmp_path / "a.parquet"), name="a", normalizer=Normalizer())
    assert part.tally.documents.equals(local.tally.documents)
    assert part.tally.entity_types.equals(local.tally.entity_types)
    expected = (("d2",), ("d9",))
    assert (part.missing, part.unknown) == (local.missing_documents, local.unknown_documents) == expected
    assert part.tally.totals["substitution"] == 1  # Tee for Tea


def test_the_accumulator_scores_through_the_same_steps():
    acc = Accumulator("a")
    docs_gt = {"d1": {"total": "5.00", "menu": [{"nm": "Tea", "price": "5.00"}]}, "d2": {"total": "7.00"}}
    docs_pred = {"d1": {"total": {"value": "5.00", "confidence": 0.9}, "menu": [{"nm": "Tea", "price": "4"}]},
                 "d2": {"total": "8.00"}}
    for d in docs_gt:
        acc.update(docs_gt[d], docs_pred[d], d)
    gt = load_bytes(json.dumps(docs_gt).encode(), "ground truth (accumulated)", acc.load_options,
                    name="ground truth")
    pred = load_bytes(json.dumps(docs_pred).encode(), "a (accumulated)", acc.load_options, name="a")
    assert _report(acc.compute()) == _report(evaluate(gt, {"a": pred}))


def _calls(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)]
    named = [f for f in calls if isinstance(f, (ast.Name, ast.Attribute))]
    return {f.id if isinstance(f, ast.Name) else f.attr for f in named}


@pytest.mark.parametrize("path", ["kieval_core/evaluate.py", "kieval_core/scale/partitions.py",
                                  "kieval_core/accumulator.py", "kieval_app/compute.py"])
def test_every_way_of_evaluating_goes_through_the_orchestrator(path):
    calls = _calls(ROOT / path)
    assert calls & {"finish", "score_model", "score_models"}, path
    assert "ModelResult" not in calls and "EvaluationResult" not in calls, path
    assert not calls & {"count", "from_counted"}, path


def test_the_core_applies_the_confidence_sources_in_one_place():
    """Where confidences come from (SPEC 4c) is applied by evaluate() (both engines), never
    by a step it calls; the CLI and the Accumulator go through evaluate() or take its default."""
    callers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kieval_core").rglob("*.py")
                     if "with_confidence_sources" in _calls(p))
    assert callers == ["kieval_core/evaluate.py"]


def test_a_model_result_is_built_from_counts_in_one_place():
    """``ModelResult(...)`` appears in the core where a result is made from counts
    (``scoring.model_result``) and where a saved run is read back, nowhere else."""
    builders = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kieval_core").rglob("*.py")
                      if "ModelResult" in _calls(p))
    assert builders == ["kieval_core/output/runs.py", "kieval_core/result/scoring.py"]


def test_the_rules_are_applied_in_one_step():
    """``FieldRules.applied``: the ignored field left out of every dataset and counted per
    type (ground truth first), dates declared without an order read in the ground truth's
    order, and the normaliser comparing under the bound rules; ``under`` swaps the rules
    and keeps the datasets."""
    gt = dataset({"d1": [("", 0, "total", "5.00"), ("", 0, "date", "31/01/2024"), ("", 0, "tip", "1")],
                  "d2": [("", 0, "tip", "2"), ("", 0, "date", "02/03/2024")]}, "gt")
    pred = dataset({"d1": [("", 0, "total", "5"), ("", 0, "tip", "1")]}, "a")
    rules = FieldRules.of({"tip": "ignore", "date": "date:gt", "total": "number"})
    applied = rules.applied(gt, {"a": pred}, Normalizer())
    assert dict(applied.ignored) == {"tip": 3}  # 2 in the ground truth, 1 predicted
    assert "tip" not in set(applied.gt.entities["entity_type"])
    assert "tip" not in set(applied.predictions["a"].entities["entity_type"])
    assert applied.rules.comparator_for("date") == "date:dmy"  # 31/01 decides: day first
    assert dict(applied.normalizer.comparators) == {"date": "date:dmy", "total": "number"}
    exact = applied.under(FieldRules())
    assert exact.normalizer.comparators == () and exact.gt is applied.gt and exact.ignored == applied.ignored
    result = evaluate(gt, {"a": pred}, rules=rules)
    assert _report(score_models(applied, {"a": KeyCounts.of(pred)}, ("kieval",))) == _report(result)


def test_following_gt_from_evaluate_returns_at_most_five_times():
    """Issue 30's bar, measured by ``bench/trace_house.py``: the path from the gt file to the
    result leaves a layer and comes back to it at most five times."""
    spec = importlib.util.spec_from_file_location("trace_house", ROOT / "bench" / "trace_house.py")
    trace_house = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(trace_house)
    runs = trace_house.returns(["a.x", "a.y.z", "a.y.w", "a.x", "a.q", "a.x"])
    assert runs == (["x", "y", "x", "q", "x"], 2)
    assert trace_house.trace_evaluate(show=False) <= 5
