"""Reader for IOB2 (``.bio``) files as used by ``ie-eval`` / ``bio-parser``.

One token per line, ``token<space or tab>tag``, with tags ``O``, ``B-<category>`` and
``I-<category>``. A blank line ends a document, so a file holds one or more
documents; consecutive blank lines count as one separator. An entity is a ``B-`` token
followed by the ``I-`` tokens of the same category; its text is its tokens joined by
one space, exactly as ``bio-parser`` builds it.
"""

from __future__ import annotations

from pathlib import Path

from ...exceptions import KievalInputError

__all__ = ["parse_iob2_document", "parse_iob2_documents", "read_iob2"]

Entity = tuple[str, str]


def parse_iob2_documents(text: str, source_name: str = "<string>") -> list[list[Entity]]:
    """Parse IOB2 text holding one or more blank-line-separated documents.

    Parameters
    ----------
    text : str
        The file's content.
    source_name : str
        Name used in error messages (usually the file path).

    Returns
    -------
    list of list of (category, text)
        Per document, its entities in reading order.

    Raises
    ------
    KievalInputError
        For a malformed line; the message names the source, the line and the problem.

    Examples
    --------
    >>> parse_iob2_documents("Anna B-name\\nSmith I-name\\nborn O\\n1890 B-date\\n\\nBob B-name\\n")
    [[('name', 'Anna Smith'), ('date', '1890')], [('name', 'Bob')]]
    """
    return [doc for _, doc in _parse(text, source_name)]


def parse_iob2_document(text: str, source_name: str = "<string>") -> list[Entity]:
    """Parse IOB2 text holding exactly one document (one file per document).

    Parameters
    ----------
    text : str
        The file's content.
    source_name : str
        Name used in error messages.

    Returns
    -------
    list of (category, text)

    Raises
    ------
    KievalInputError
        For a malformed line, or when a blank line is followed by a second document.

    Examples
    --------
    >>> parse_iob2_document("10.00\\tB-total\\n")
    [('total', '10.00')]
    """
    docs = _parse(text, source_name)
    if len(docs) > 1:
        msg = "a second document starts after a blank line, but one document per file was expected"
        raise KievalInputError(source_name, f"line {docs[1][0]}", msg)
    return docs[0][1] if docs else []


def read_iob2(path: str | Path) -> list[list[Entity]]:
    """Read a ``.bio`` file holding one or more documents (see :func:`parse_iob2_documents`).

    Parameters
    ----------
    path : str or pathlib.Path
        The file, read as UTF-8; its path names it in error messages.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "receipt.bio"
    >>> _ = path.write_text("ACME B-company\\nLtd I-company\\n", encoding="utf-8")
    >>> read_iob2(path)
    [[('company', 'ACME Ltd')]]
    """
    path = Path(path)
    return parse_iob2_documents(path.read_text(encoding="utf-8"), str(path))


def _parse(text: str, source_name: str) -> list[tuple[int, list[Entity]]]:
    """Documents as (line number of their first token, entities)."""
    docs: list[tuple[int, list[Entity]]] = []
    tokens: list[str] = []  # tokens of the open entity
    category = None  # category of the open entity
    entities: list[Entity] | None = None  # entities of the open document

    def close_entity() -> None:
        nonlocal category
        if category is not None:
            entities.append((category, " ".join(tokens)))
            tokens.clear()
            category = None

    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            close_entity()
            entities = None
            continue
        if len(fields) != 2:
            msg = f"expected 'token TAG' (2 fields), got {len(fields)}: {line!r}"
            raise KievalInputError(source_name, f"line {number}", msg)
        token, tag = fields
        if entities is None:
            entities = []
            docs.append((number, entities))
        prefix, _, label = tag.partition("-")
        if tag == "O":
            close_entity()
        elif prefix == "B" and label:
            close_entity()
            category = label
            tokens.append(token)
        elif prefix == "I" and label:
            if category != label:
                found = "no open entity" if category is None else f"an open {category!r} entity"
                msg = f"tag {tag!r} continues {found}; an entity must start with 'B-{label}'"
                raise KievalInputError(source_name, f"line {number}", msg)
            tokens.append(token)
        else:
            msg = f"unknown tag {tag!r}; expected 'O', 'B-<category>' or 'I-<category>'"
            raise KievalInputError(source_name, f"line {number}", msg)
    close_entity()
    return docs
