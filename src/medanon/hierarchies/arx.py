"""Read and write hierarchies in the CSV layout of the ARX anonymization tool.

ARX stores a hierarchy with one row per value, ``value;level1;level2;...;*``: no header, one
separator, every row the same length. Branches shorter than the tree are padded by repeating a
label (``Young Adult;Young Adult;Adult;*``). Cells follow CSV quoting rules (Python's :mod:`csv`).

An internal node that is itself a record value has a row of its own (``Adult;Adult;Adult;*``).
On import it gets a *self leaf* (see :class:`~medanon.hierarchies.Taxonomy`): a leaf under the
node labelled ``Adult (exact)``, which is the record value and the published label of an
ungeneralized record, while ``Adult`` stays the generalization only; records may still hold the
plain ``Adult``, which reads as the self leaf. :func:`write_arx` writes the self leaf's row
(``Adult (exact);Adult (exact);Adult;*``), and a leaf so named under its node reads back as the
self leaf, so the round trip keeps the hierarchy.

References:
    ARX Data Anonymization Tool, https://arx.deidentifier.org/ (hierarchy file format).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TextIO

from ..errors import HierarchyError, ValidationError
from .taxonomy import Taxonomy

__all__ = ["read_arx", "write_arx"]


def _check_sep(sep: object, owner: str) -> str:
    if not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n':
        raise ValidationError(
            f"The 'sep' parameter of {owner} must be a single character other than a quote or a "
            f"line break; got {sep!r}.")
    return sep


def _read_source(source: str | Path | TextIO, name: str) -> tuple[str, str]:
    """Return (text, description of where it came from) for read_arx's ``source``."""
    if isinstance(source, str) and ("\n" in source or "\r" in source):
        return source, f"ARX hierarchy {name!r}"
    if isinstance(source, (str, Path)):
        path = Path(source)
        where = f"ARX hierarchy {name!r} ({path})"
        try:
            # newline="" lets the csv module see quoted line breaks; utf-8-sig drops a BOM that
            # spreadsheet programs like to add.
            with path.open(encoding="utf-8-sig", newline="") as fh:
                return fh.read(), where
        except FileNotFoundError:
            raise HierarchyError(f"{where}: file not found.") from None
        except UnicodeDecodeError as exc:
            raise HierarchyError(f"{where}: not UTF-8 text ({exc.reason} at byte "
                                 f"{exc.start}).") from None
        except OSError as exc:
            reason = exc.strerror or exc
            raise HierarchyError(f"{where}: cannot read the file ({reason}).") from None
    if hasattr(source, "read"):
        text = source.read()
        if not isinstance(text, str):
            raise ValidationError(
                "The 'source' parameter of read_arx must be a path, CSV text or a text-mode file "
                "object; got a binary file object.")
        return text, f"ARX hierarchy {name!r}"
    raise ValidationError(
        f"The 'source' parameter of read_arx must be a path, CSV text or a text-mode file object; "
        f"got {type(source).__name__}.")


def read_arx(source: str | Path | TextIO, *, name: str, sep: str = ";") -> Taxonomy:
    """Read a hierarchy in ARX CSV layout.

    Each row is the path from a record value (its first cell) up to the root (its last cell).
    Consecutive repeats of a label are ARX padding and collapse into one node.

    Args:
        source: A path, an open text file, or the CSV text itself. A ``str`` holding a line
            break is taken as the text (what :func:`write_arx` returns); any other ``str`` is a
            path.
        name: Name of the resulting hierarchy.
        sep: Cell separator (ARX uses ``;``).

    Returns:
        The :class:`Taxonomy`; its values are the first cells of the rows, a first cell that is
        also an internal node standing for its self leaf (``Adult`` -> ``Adult (exact)``).

    Raises:
        HierarchyError: the file is missing or unreadable, is empty, has rows of different
            lengths, empty cells, rows ending in different roots, a label with two different
            parents, a cycle, or a value listed twice with different paths. Messages give the row
            numbers (1-based, counting blank lines).
        ValidationError: bad ``sep`` or ``source`` type.
    """
    sep = _check_sep(sep, "read_arx")
    text, where = _read_source(source, name)

    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, quotechar='"',
                        strict=True)  # strict: an unclosed quote is an error, not a label
    rows: list[tuple[int, list[str]]] = []
    try:
        for number, cells in enumerate(reader, start=1):
            if cells:  # blank lines (e.g. a trailing one) carry nothing
                rows.append((number, cells))
    except csv.Error as exc:
        raise HierarchyError(
            f"{where}: malformed CSV near line {reader.line_num}: {exc}.") from None
    if not rows:
        raise HierarchyError(f"{where} is empty: expected one row per value, "
                             f"'value{sep}level1{sep}...{sep}*'.")

    first_no, first = rows[0]
    for number, cells in rows:
        if len(cells) != len(first):
            raise HierarchyError(
                f"{where}: ARX requires every row to have the same number of columns; row "
                f"{first_no} has {len(first)} but row {number} has {len(cells)} (pad short "
                f"branches by repeating a label).")
        for col, cell in enumerate(cells, start=1):
            if not cell.strip():
                raise HierarchyError(f"{where}: row {number}, column {col} is empty.")

    roots: dict[str, int] = {}
    for number, cells in rows:
        roots.setdefault(cells[-1], number)
    if len(roots) > 1:
        listed = ", ".join(f"{r!r} (row {n})" for r, n in list(roots.items())[:5])
        raise HierarchyError(
            f"{where}: rows end in {len(roots)} different labels, so the hierarchy would have "
            f"several roots: {listed}. Every row must end in the same root (e.g. '*').")
    root = next(iter(roots))

    parents: dict[str, str | None] = {}
    parent_row: dict[str, int] = {}
    value_paths: dict[str, tuple[int, list[str]]] = {}
    for number, cells in rows:
        path = [cells[0]]
        for cell in cells[1:]:
            if cell != path[-1]:
                path.append(cell)
        if len(set(path)) != len(path):
            repeated = next(lab for lab in path if path.count(lab) > 1)
            raise HierarchyError(
                f"{where}: row {number} lists {repeated!r} twice, apart ({sep.join(cells)}); "
                f"that is a cycle.")
        value = path[0]
        if value in value_paths:
            prev_no, prev = value_paths[value]
            if prev != path:
                raise HierarchyError(
                    f"{where}: row {number} lists the value {value!r} again with a different path "
                    f"({' > '.join(path)}) than row {prev_no} ({' > '.join(prev)}).")
            continue
        value_paths[value] = (number, path)
        for child, parent in zip(path, path[1:]):
            known = parents.get(child)
            if child in parents and known != parent:
                raise HierarchyError(
                    f"{where}: row {number} gives {child!r} the parent {parent!r} but row "
                    f"{parent_row[child]} gave it {known!r}.")
            if child not in parents:
                parents[child] = parent
                parent_row[child] = number
    parents.setdefault(root, None)
    if parents[root] is not None:  # pragma: no cover - excluded by the cycle check above
        raise HierarchyError(f"{where}: the root {root!r} has a parent.")
    return Taxonomy(parents, name=name, values=list(value_paths))


def write_arx(tax: Taxonomy, target: str | Path | TextIO | None = None, *,
              sep: str = ";") -> str:
    """Write a hierarchy in ARX CSV layout and return the text.

    One row per record value and per leaf (a leaf that is not a value still needs a row, or the
    layout would lose it), in node order, each the path from the value to the root, padded at the
    front by repeating the value so that all rows have ``height + 1`` cells. Lines end in ``\\n``.
    ``read_arx(write_arx(t), name=t.name) == t`` whenever every leaf is a value (the default).
    Self leaves are ordinary leaves here; the raw alias of a self leaf named otherwise than
    ``"<node> (exact)"`` (the MeSH bands, ``Adult (25-44)``) is not written, since the layout
    has no place for it.

    Args:
        tax: The hierarchy.
        target: Where to write as well: a path (UTF-8, overwritten) or a text file object.
        sep: Cell separator.

    Returns:
        The CSV text.

    Raises:
        HierarchyError: the target cannot be written.
        ValidationError: bad ``sep`` or ``tax``.
    """
    sep = _check_sep(sep, "write_arx")
    if not isinstance(tax, Taxonomy):
        raise ValidationError(
            f"The 'tax' parameter of write_arx must be a Taxonomy; got {type(tax).__name__}.")
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, delimiter=sep, quotechar='"', quoting=csv.QUOTE_MINIMAL,
                        lineterminator="\n")
    height = tax.height
    values = set(tax.values)
    for label in tax.nodes:
        if label in values or not tax.children(label):
            path = tax.ancestors(label)
            writer.writerow([label] * (height + 1 - len(path)) + list(path))
    text = buf.getvalue()
    if target is None:
        return text
    if isinstance(target, (str, Path)):
        try:
            with Path(target).open("w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        except OSError as exc:
            raise HierarchyError(f"Cannot write ARX hierarchy {tax.name!r} to {target}: "
                                 f"{exc.strerror or exc}.") from None
    elif hasattr(target, "write"):
        target.write(text)
    else:
        raise ValidationError(
            f"The 'target' parameter of write_arx must be a path, a text file object or None; "
            f"got {type(target).__name__}.")
    return text
