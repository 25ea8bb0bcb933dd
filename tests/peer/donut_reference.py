"""Test oracle: Donut's ``JSONParseEvaluator`` (donut-python 1.0.9, ``donut/util.py``).

donut-python needs torch, so the evaluator is rebuilt here, line for line, on ``zss``
(the tree-edit-distance package Donut itself calls). NLTK's ``edit_distance`` is
replaced by a plain dynamic-programming Levenshtein distance, which is what NLTK
computes with its default arguments. Used only by the tests and the benchmark.
"""

from __future__ import annotations

from typing import Any

import zss
from zss import Node


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (NLTK's default: unit costs, no transpositions)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def flatten(data: dict) -> list[tuple[str, Any]]:
    flatten_data = []

    def _flatten(value, key=""):
        if type(value) is dict:
            for child_key, child_value in value.items():
                _flatten(child_value, f"{key}.{child_key}" if key else child_key)
        elif type(value) is list:
            for value_item in value:
                _flatten(value_item, key)
        else:
            flatten_data.append((key, value))

    _flatten(data)
    return flatten_data


def update_cost(node1: Node, node2: Node) -> int:
    label1 = node1.label
    label2 = node2.label
    label1_leaf = "<leaf>" in label1
    label2_leaf = "<leaf>" in label2
    if label1_leaf and label2_leaf:
        return edit_distance(label1.replace("<leaf>", ""), label2.replace("<leaf>", ""))
    if not label1_leaf and label2_leaf:
        return 1 + len(label2.replace("<leaf>", ""))
    if label1_leaf and not label2_leaf:
        return 1 + len(label1.replace("<leaf>", ""))
    return int(label1 != label2)


def insert_and_remove_cost(node: Node) -> int:
    label = node.label
    if "<leaf>" in label:
        return len(label.replace("<leaf>", ""))
    return 1


def normalize_dict(data):
    if not data:
        return {}

    if isinstance(data, dict):
        new_data = {}
        for key in sorted(data.keys(), key=lambda k: (len(k), k)):
            value = normalize_dict(data[key])
            if value:
                if not isinstance(value, list):
                    value = [value]
                new_data[key] = value

    elif isinstance(data, list):
        if all(isinstance(item, dict) for item in data):
            new_data = []
            for item in data:
                item = normalize_dict(item)
                if item:
                    new_data.append(item)
        else:
            new_data = [
                str(item).strip()
                for item in data
                if type(item) in {str, int, float} and str(item).strip()
            ]
    else:
        new_data = [str(data).strip()]

    return new_data


def cal_f1(preds: list[dict], answers: list[dict]) -> float:
    total_tp, total_fn_or_fp = 0, 0
    for pred, answer in zip(preds, answers, strict=False):  # Donut truncates
        pred, answer = flatten(normalize_dict(pred)), flatten(normalize_dict(answer))
        for field in pred:
            if field in answer:
                total_tp += 1
                answer.remove(field)
            else:
                total_fn_or_fp += 1
        total_fn_or_fp += len(answer)
    return total_tp / (total_tp + total_fn_or_fp / 2)


def construct_tree_from_dict(data, node_name: str | None = None) -> Node:
    if node_name is None:
        node_name = "<root>"

    node = Node(node_name)

    if isinstance(data, dict):
        for key, value in data.items():
            kid_node = construct_tree_from_dict(value, key)
            node.addkid(kid_node)
    elif isinstance(data, list):
        if all(isinstance(item, dict) for item in data):
            for item in data:
                kid_node = construct_tree_from_dict(item, "<subtree>")
                node.addkid(kid_node)
        else:
            for item in data:
                node.addkid(Node(f"<leaf>{item}"))
    else:
        raise Exception(data, node_name)
    return node


def tree_distance(a: Node, b: Node) -> float:
    return zss.distance(
        a,
        b,
        get_children=zss.Node.get_children,
        insert_cost=insert_and_remove_cost,
        remove_cost=insert_and_remove_cost,
        update_cost=update_cost,
        return_operations=False,
    )


def cal_acc(pred: dict, answer: dict) -> float:
    pred = construct_tree_from_dict(normalize_dict(pred))
    answer = construct_tree_from_dict(normalize_dict(answer))
    return max(
        0,
        1
        - (
            tree_distance(pred, answer)
            / tree_distance(construct_tree_from_dict(normalize_dict({})), answer)
        ),
    )
