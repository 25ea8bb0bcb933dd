"""Generate predictions of three *simulated* KIE models on the CORD v2 sample.

These files are synthetic: no real model produced them. Each simulated model starts
from the ground truth (``cord_v2_gt.jsonl``) and applies realistic Key Information
Extraction failure modes at its own rates, then attaches a confidence to every value.
The simulation is seeded (``numpy.random.default_rng``, one stream per model) and fully
deterministic: every run writes byte-identical files next to this script (NumPy does not
promise identical random streams across its major versions; the committed files were
made with NumPy 2.2). Run it as ``python sample_data/generate_simulated_models.py``.

Output: ``sim_<name>.jsonl``, one line per document, ``{"doc_id": ..., "prediction": ...}``.
The prediction mirrors the ``gt_parse`` nesting (root groups ``menu``, ``sub_total``,
``total``; ``menu`` is always a list of line objects and ``menu.sub`` always a list),
and every leaf becomes a scored leaf ``{"value": "...", "confidence": 0.87, "bbox": [...]}``.

Failure modes, in the order applied (each is a function below; rates are per model):

- ``shift_prices``  (per document): menu prices shifted by one line, as in KIEval's
  Fig. 2 -- each line gets the next line's price, the last line loses its price.
- ``split_line``    (per menu line): a line becomes two groups, the name in one and
  count/price in the other.
- ``merge_lines``   (per menu line): a line is merged with the next one, either as one
  group with list values or as one group with a concatenated name keeping the second
  line's count and price.
- ``miss``          (per value): the value is dropped (entity missed).
- ``typo``          (per value): OCR-like error: confusable character (0/O, 1/l, 5/S,
  8/B, comma/dot inside numbers) or a dropped character.
- ``reformat``      (per value, numbers only): thousands separator removed ("16,500" ->
  "16500"); wrong under exact match, right when numbers are normalised.
- ``hallucinate``   (per document): an extra ``total.tax_price`` or
  ``sub_total.discount_price`` whose value is copied from another number on the receipt.
- ``drop_docs``     (count): whole documents absent from the output.

Confidence: a value left untouched is drawn from Beta(*conf_ok*), a changed, moved or
invented one from Beta(*conf_err*).

Boxes: a predicted value carries the GT box of the value it came from (``bbox`` of the
ground truth, see ``add_cord_locations.py``): a perturbed value keeps its box, a shifted
price the box of the price it took, a hallucinated number the box of the number it
copied, two names merged into one the union of their boxes. No random draw depends on
the boxes, so the values are those of the files without boxes.

Simulated model profiles:

- ``sim_strong``: a careful layout model. Few errors of every kind; well calibrated
  (errors get clearly lower confidence).
- ``sim_llm``: a generative model. Almost no OCR typos, but hallucinated fields,
  reformatted numbers, shifted prices and merged lines; poorly calibrated: confident
  on its errors too, and its confidences are verbalised in steps of 0.05 (many ties).
- ``sim_weak``: a small pipeline model. Many typos and missed values, frequent
  split/merged lines; moderately calibrated; 2 documents missing from its output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20190
FIELDS = "shift split merge miss typo reformat hallucinate drop_docs conf_ok conf_err conf_step"
# Rates: shift and hallucinate per document; split and merge per menu line; miss, typo and
# reformat per value; drop = number of documents left out. conf_*: Beta(a, b) parameters for
# correct and for wrong values; step: confidences rounded to this step (verbalised), or None.
# fmt: off
MODELS = {
    #              shift split merge miss  typo  refmt halluc drop conf_ok    conf_err    step
    "sim_strong": (0.08, 0.02, 0.03, 0.02, 0.06, 0.00, 0.20,  0,   (16, 1.5), (2.5, 3.0), None),
    "sim_llm":    (0.30, 0.01, 0.08, 0.07, 0.02, 0.15, 0.80,  0,   (12, 1.4), (9, 1.6),   0.05),
    "sim_weak":   (0.15, 0.10, 0.08, 0.10, 0.26, 0.00, 0.40,  2,   (5, 2.5),  (2.5, 3.5), None),
}
# fmt: on
CONFUSABLE = dict(zip("0O1lI5S8B,.", "O0l11S5B8.,", strict=True))  # 0/O 1/l/I 5/S 8/B ,/.
NUMBER = re.compile(r"^[^\d]*\d{1,3}([.,]\d{3})+[^\d]*$")  # "16,500", "Rp. 11.000"


class Leaf:
    """One predicted value and the GT box it came from; ``ok`` turns False once the
    simulation changes or moves it."""

    def __init__(self, value: str, ok: bool = True, box: list | None = None):
        self.value, self.ok, self.box = value, ok, box

    def set(self, value: str, box: list | None = None) -> None:
        self.ok = self.ok and value == self.value
        self.value = value
        self.box = box if box is not None else self.box


def union(a: list | None, b: list | None) -> list | None:
    if a is None or b is None:
        return a or b
    return [min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])]


def to_tree(node):
    """GT structure -> Leaf tree; ``menu`` and ``sub`` become lists of objects."""
    if isinstance(node, dict) and "value" in node:  # a GT value with its box
        return Leaf(node["value"], box=node.get("bbox"))
    if isinstance(node, dict):
        out = {k: to_tree(v) for k, v in node.items()}
        for key in ("menu", "sub"):
            if isinstance(out.get(key), dict):
                out[key] = [out[key]]
        return out
    if isinstance(node, list):
        return [to_tree(v) for v in node]
    return Leaf(node)


def leaves(node):
    """All Leaf objects of a tree, in document order."""
    if isinstance(node, Leaf):
        yield node
    else:
        for child in node.values() if isinstance(node, dict) else node:
            yield from leaves(child)


def moved(node):
    """Mark every value of a (re-segmented) menu line as not ok; return the node."""
    for leaf in leaves(node):
        leaf.ok = False
    return node


def prune(node, drop):
    """Remove leaves for which drop(leaf) is true, then any emptied list or object."""
    if isinstance(node, Leaf):
        return None if drop(node) else node
    if isinstance(node, list):
        return [p for p in (prune(v, drop) for v in node) if p is not None] or None
    return {k: p for k, v in node.items() if (p := prune(v, drop)) is not None} or None


def shift_prices(menu):
    """Each priced line takes the next priced line's price; the last one loses it."""
    priced = [line for line in menu if isinstance(line.get("price"), Leaf)]
    if len(priced) < 2:
        return
    for line, nxt in zip(priced, priced[1:], strict=False):
        line["price"].set(nxt["price"].value, nxt["price"].box)
    del priced[-1]["price"]


def split_line(line):
    """One line -> [name part, count/price part] (None if the line cannot be split)."""
    head = {k: v for k, v in line.items() if k in ("nm", "num", "sub")}
    rest = {k: v for k, v in line.items() if k not in head}
    return [moved(head), moved(rest)] if head and rest else None


def merge_lines(a, b, as_list):
    """Two lines -> one group: list values, or concatenated names + b's other fields."""
    if not as_list and isinstance(a.get("nm"), Leaf) and isinstance(b.get("nm"), Leaf):
        name = Leaf(a["nm"].value + " " + b["nm"].value, ok=False, box=union(a["nm"].box, b["nm"].box))
        return moved({"nm": name, **{k: v for k, v in b.items() if k != "nm"}})
    out = {}
    for key in list(a) + [k for k in b if k not in a]:
        vals = [
            x
            for line in (a, b)
            if key in line
            for x in (line[key] if isinstance(line[key], list) else [line[key]])
        ]
        out[key] = vals if len(vals) > 1 or key == "sub" else vals[0]
    return moved(out)


def resegment(menu, rng, p):
    """Apply split_line and merge_lines to menu lines at the model's per-line rates."""
    out, i = [], 0
    while i < len(menu):
        r = rng.random()
        if r < p["merge"] and i + 1 < len(menu):
            out.append(merge_lines(menu[i], menu[i + 1], as_list=rng.random() < 0.5))
            i += 2
            continue
        parts = split_line(menu[i]) if r < p["merge"] + p["split"] else None
        out.extend(parts or [menu[i]])
        i += 1
    return out


def typo(value, rng):
    """OCR-like error: swap a confusable character, or drop one character."""
    numeric = NUMBER.match(value)
    spots = [i for i, c in enumerate(value) if c in CONFUSABLE and (c not in ",." or numeric)]
    if spots and rng.random() < 0.7:
        i = spots[rng.integers(len(spots))]
        return value[:i] + CONFUSABLE[value[i]] + value[i + 1 :]
    if len(value) > 1:
        i = int(rng.integers(len(value)))
        return value[:i] + value[i + 1 :]
    return value


def reformat(value):
    """LLM-style normalisation: drop the thousands separators of a number."""
    return re.sub(r"(?<=\d)[.,](?=\d{3}\b)", "", value) if NUMBER.match(value) else value


def hallucinate(pred, rng):
    """Add total.tax_price or sub_total.discount_price copied from another number."""
    numbers = [leaf for leaf in leaves(pred) if NUMBER.match(leaf.value)]
    group, key = [("total", "tax_price"), ("sub_total", "discount_price")][rng.integers(2)]
    if not numbers or key in pred.get(group, {}):
        return pred
    if group not in pred:  # keep root order menu, sub_total, total
        pred = {
            **{k: v for k, v in pred.items() if k != "total"},
            group: {},
            **({"total": pred["total"]} if "total" in pred else {}),
        }
    copied = numbers[rng.integers(len(numbers))]
    pred[group][key] = Leaf(copied.value, ok=False, box=copied.box)
    return pred


def simulate(gt_parse, rng, p):
    """One document's prediction (Leaf tree) under the model parameters p."""
    pred = to_tree(gt_parse)
    if "menu" in pred:
        if rng.random() < p["shift"]:
            shift_prices(pred["menu"])
        pred["menu"] = resegment(pred["menu"], rng, p)
    pred = prune(pred, lambda leaf: rng.random() < p["miss"]) or {}
    for leaf in leaves(pred):
        if rng.random() < p["typo"]:
            leaf.set(typo(leaf.value, rng))
        if rng.random() < p["reformat"]:
            leaf.set(reformat(leaf.value))
    return hallucinate(pred, rng) if rng.random() < p["hallucinate"] else pred


def scored(node, rng, p):
    """Leaf tree -> JSON structure with {"value", "confidence"} leaves."""
    if isinstance(node, Leaf):
        c = float(rng.beta(*(p["conf_ok"] if node.ok else p["conf_err"])))
        if p["conf_step"]:
            c = round(c / p["conf_step"]) * p["conf_step"]
        leaf = {"value": node.value, "confidence": round(min(max(c, 0.0), 1.0), 4)}
        return {**leaf, "bbox": node.box} if node.box is not None else leaf
    if isinstance(node, list):
        return [scored(v, rng, p) for v in node]
    return {k: scored(v, rng, p) for k, v in node.items()}


def main() -> None:
    gt_lines = (HERE / "cord_v2_gt.jsonl").read_text(encoding="utf-8").splitlines()
    docs = [json.loads(line) for line in gt_lines if line.strip()]
    for index, (name, row) in enumerate(MODELS.items()):
        p = dict(zip(FIELDS.split(), row, strict=True))
        rng = np.random.default_rng([SEED, index])
        dropped = set(rng.choice(len(docs), size=p["drop_docs"], replace=False).tolist())
        rows = []
        for i, doc in enumerate(docs):
            pred = scored(simulate(doc["gt_parse"], rng, p), rng, p)
            if i not in dropped:
                record = {"doc_id": doc["doc_id"], "prediction": pred}
                rows.append(json.dumps(record, ensure_ascii=False, separators=(", ", ": ")))
        text = "\n".join(rows) + "\n"
        (HERE / f"{name}.jsonl").write_text(text, encoding="utf-8", newline="\n")
        print(f"{name}: {len(rows)} documents ({len(dropped)} dropped)")


if __name__ == "__main__":
    main()
