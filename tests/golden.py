"""Golden files: an output compared with a committed copy, never with itself.

Rules:
- `tests/golden/NAME` holds the expected output, committed; a test compares
  what the product prints now with it, parsed (JSON) where it is JSON.
- The files change only on purpose: `TFOLAB_UPDATE_GOLDEN=1 python -m pytest
  TEST` rewrites the ones that test uses (and the test then fails once, so an
  update can never pass silently); review the diff before committing it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

GOLDEN = Path(__file__).with_name("golden")
UPDATE_ENV = "TFOLAB_UPDATE_GOLDEN"


def check_json(name: str, printed: str) -> None:
    """The printed JSON equals tests/golden/NAME, or fail naming how to update it."""
    path = GOLDEN / name
    if os.environ.get(UPDATE_ENV) == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(json.loads(printed), indent=1, sort_keys=True) + "\n")
        pytest.fail(f"{path.name} rewritten ({UPDATE_ENV}=1): review and commit it")
    assert path.exists(), f"no golden file {path}; make it with {UPDATE_ENV}=1"
    assert json.loads(printed) == json.loads(path.read_text()), (
        f"the output differs from {path.name}; if the change is intended, "
        f"rerun with {UPDATE_ENV}=1 and commit the diff"
    )
