"""Bring CORD's word boxes into the sample, and render each receipt from its annotation.

CORD v2 publishes, beside the Donut ``gt_parse``, the original annotation: every entity
(``valid_line``) with the quads of its words. This script, run once from the repository
root with the full CORD v2 validation file at hand::

    python sample_data/add_cord_locations.py ../shared/data/cord_v2_dev/cord_v2_validation_full.jsonl

1. rewrites ``cord_v2_gt.jsonl`` with every ``gt_parse`` value as a scored leaf
   ``{"value": ..., "bbox": [x0, y0, x1, y1]}``: the union of the quads of the value's
   words (the loader's own rule for ``valid_line``). Values are unchanged: each GT group
   is paired with the ``valid_line`` group of identical content, each value with the
   entity of the same type and value in it;
2. writes ``cord_v2_renderings/<doc_id>.png``: a **rendering of the annotation, not a
   photo** (CORD's receipt photos are not in this repository): every word of the receipt
   drawn in its quad on a white page of the photo's size, the page labelled as a
   rendering.

``generate_simulated_models.py`` then gives each predicted value the GT box of the value
it copied.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from kieval_core.read.load import load  # noqa: E402

RENDERINGS = HERE / "cord_v2_renderings"
LABEL = "RENDERING OF THE CORD ANNOTATION - NOT A PHOTO"


def _boxes(full: Path) -> dict[str, list[tuple]]:
    """Per document, the GT entities of ``gt_parse`` in reading order with their boxes."""
    parse = load(HERE / "cord_v2_gt.jsonl")
    lines = load(full)
    out = {}
    for doc_id in parse.doc_ids:
        p = parse.entities[parse.entities["doc_id"] == doc_id]
        v = lines.entities[lines.entities["doc_id"] == doc_id]
        groups = defaultdict(list)  # content -> valid_line groups, in order
        for key, group in v.groupby(["group_type", "group"], sort=False):
            content = tuple(sorted(zip(group["entity_type"], group["value"], strict=True)))
            groups[(key[0], content)].append(group)
        free = {}  # (group type, group) of gt_parse -> entities of the valid_line group of the same content
        for key, group in p.groupby(["group_type", "group"], sort=False):
            content = tuple(sorted(zip(group["entity_type"], group["value"], strict=True)))
            free[key] = list(groups[(key[0], content)].pop(0).itertuples(index=False))
        boxes = []
        for row in p.itertuples(index=False):
            entities = free[(row.group_type, row.group)]
            twin = next(t for t in entities if (t.entity_type, t.value) == (row.entity_type, row.value))
            entities.remove(twin)
            boxes.append([int(twin.x0), int(twin.y0), int(twin.x1), int(twin.y1)])
        out[doc_id] = boxes
    return out


def _with_boxes(node, boxes: list):
    """The structure with its non-empty string values as scored leaves, boxes in order."""
    if isinstance(node, dict):
        return {k: _with_boxes(v, boxes) for k, v in node.items()}
    if isinstance(node, list):
        return [_with_boxes(v, boxes) for v in node]
    if isinstance(node, str) and node.strip():
        return {"value": node, "bbox": boxes.pop(0)}
    return node


def _render(record: dict, out: Path) -> None:
    size = record["ground_truth"]["meta"]["image_size"]
    page = Image.new("L", (size["width"], size["height"]), 255)
    draw = ImageDraw.Draw(page)
    for line in record["ground_truth"]["valid_line"]:
        for word in line["words"]:
            q = word["quad"]
            x0, y0 = min(q["x1"], q["x4"]), min(q["y1"], q["y2"])
            x1, y1 = max(q["x2"], q["x3"]), max(q["y3"], q["y4"])
            height = max(y1 - y0, 6)
            font = ImageFont.load_default(size=int(height * 0.8))
            text = str(word["text"])
            width = draw.textlength(text, font=font) or 1
            if width > (x1 - x0) * 1.15:  # squeeze long words into their box
                font = ImageFont.load_default(size=max(int(height * 0.8 * (x1 - x0) / width), 6))
            draw.text((x0, y0 + height * 0.05), text, fill=0, font=font)
    label = ImageFont.load_default(size=max(size["width"] // 40, 12))
    draw.rectangle([0, 0, size["width"], size["width"] // 40 + 16], fill=225)
    draw.text((8, 6), LABEL, fill=60, font=label)
    page.convert("1", dither=Image.Dither.NONE).save(out, optimize=True)


def main(full: Path) -> None:
    boxes = _boxes(full)
    records = {json.loads(line)["doc_id"]: json.loads(line) for line in full.read_text("utf-8").splitlines()}
    rows = []
    for line in (HERE / "cord_v2_gt.jsonl").read_text("utf-8").splitlines():
        doc = json.loads(line)
        located = _with_boxes(doc["gt_parse"], list(boxes[doc["doc_id"]]))
        rows.append(json.dumps({"doc_id": doc["doc_id"], "gt_parse": located}, ensure_ascii=False))
    (HERE / "cord_v2_gt.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8", newline="\n")
    RENDERINGS.mkdir(exist_ok=True)
    for doc_id, record in records.items():
        _render(record, RENDERINGS / f"{doc_id}.png")
    print(f"{len(rows)} documents located, {len(records)} renderings")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
