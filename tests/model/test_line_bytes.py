"""The model applications' recognisable lines (apps.line_bytes): built by whole
alphabets (a 1 MB answer in every simulation), the same bytes as letter by letter."""

from __future__ import annotations

import pytest

from tfolab.model.apps import line_bytes


def _letter_by_letter(length: int, tag: int) -> bytes:
    return bytes(65 + (tag + k) % 26 for k in range(length - 1)) + b"\n"


@pytest.mark.parametrize("length", [1, 2, 26, 27, 53, 1448, 100_001])
@pytest.mark.parametrize("tag", [0, 1, 25, 26, 77])
def test_a_line_is_the_alphabet_from_its_tag_on(length: int, tag: int) -> None:
    assert line_bytes(length, tag) == _letter_by_letter(length, tag)
