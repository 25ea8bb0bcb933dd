"""IOB2 reader: documents, entities, error messages, and agreement with bio-parser."""

import pytest
from bio_parser.parse.document import Document
from hypothesis import given, settings
from hypothesis import strategies as st

from kieval_core.read.formats.iob2 import parse_iob2_document, parse_iob2_documents, read_iob2

TEXT = """Anna B-name
Smith I-name
born O
in O
1890 B-date

Bob\tB-name
Bob\tB-name


Paris B-place
"""


def test_documents_are_separated_by_blank_lines():
    assert parse_iob2_documents(TEXT) == [
        [("name", "Anna Smith"), ("date", "1890")],
        [("name", "Bob"), ("name", "Bob")],
        [("place", "Paris")],
    ]


def test_one_document_per_file(tmp_path):
    assert parse_iob2_document("x O\n") == []
    assert parse_iob2_document("") == []
    with pytest.raises(ValueError, match=r"doc\.bio, line 7: a second document"):
        parse_iob2_document(TEXT, "doc.bio")
    path = tmp_path / "many.bio"
    path.write_text(TEXT, encoding="utf-8")
    assert len(read_iob2(path)) == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a O\nb c B-x\n", r"f\.bio, line 2: expected 'token TAG' \(2 fields\), got 3"),
        ("a O\nb\n", r"line 2: expected 'token TAG' \(2 fields\), got 1"),
        ("a E-per\n", r"line 1: unknown tag 'E-per'"),
        ("a B-\n", r"line 1: unknown tag 'B-'"),
        ("a O-per\n", r"line 1: unknown tag 'O-per'"),
        ("a O\nb I-per\n", r"line 2: tag 'I-per' continues no open entity"),
        ("a B-per\nb I-loc\n", r"line 2: tag 'I-loc' continues an open 'per' entity"),
        ("a B-per\n\nb I-per\n", r"line 3: tag 'I-per' continues no open entity"),
    ],
)
def test_malformed_lines_are_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_iob2_documents(text, "f.bio")


tags = st.lists(
    st.tuples(
        st.text(alphabet="abc.", min_size=1, max_size=3),
        st.sampled_from(["O", "B-per", "B-loc", "I"]),
    ),
    max_size=12,
)


def valid_lines(draw_tags):
    lines, open_label = [], None
    for token, tag in draw_tags:
        if tag == "I":
            tag = "O" if open_label is None else f"I-{open_label}"
        open_label = tag[2:] if tag.startswith(("B-", "I-")) else None
        lines.append(f"{token} {tag}")
    return "\n".join(lines)


@settings(max_examples=150, deadline=None)
@given(tags)
def test_agrees_with_bio_parser(drawn):
    text = valid_lines(drawn)
    assert parse_iob2_document(text) == Document("doc", text).entities
