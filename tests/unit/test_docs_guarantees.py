"""Each algorithm page quotes its model's guarantee text exactly as the model object generates it."""

from __future__ import annotations

import pytest

from tests.doc_models import DOCS, EXAMPLES, block_text, blocks


@pytest.mark.parametrize("model_id", sorted(EXAMPLES))
def test_page_quotes_the_generated_text(model_id):
    page, model = EXAMPLES[model_id]
    found = blocks((DOCS / page).read_text(encoding="utf-8"))
    assert model_id in found, f"{page} lacks the block {model_id!r}"
    assert found[model_id] == block_text(model_id), (
        f"{page}: the quoted text of {model_id!r} differs from {type(model).__name__}'s; run "
        f"'python -m tests.doc_models' and review the change")
    assert model.guarantee in found[model_id]
