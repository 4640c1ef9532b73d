"""The semantic profile from an LLM after a load: validated, under the user's words, saved."""

from __future__ import annotations

import json
from pathlib import Path

from _helpers.data import write
from concerto.data.context import ProfileOverrides
from concerto.data.llm_profile import profile_with_llm
from concerto.data.store import Store
from concerto.llm.base import LLMError
from concerto.testing import ScriptedLLM

SALES = "id,region,amount,day\n1,East,10.5,2024-01-02\n2,West,3,2024-02-03\n"


async def test_the_models_profile_is_checked_put_under_the_users_and_saved(store: Store, tmp_path: Path) -> None:
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    said = {
        "domain": "retail sales",
        "entity_name": "order",
        "entity_key": "id",
        "time_column": "region",  # not a date: ignored
        "field_descriptions": {"amount": "Order value in euros", "region": "Sales region", "ghost": "made up"},
    }
    user = ProfileOverrides(field_descriptions={"region": "Region of the store (user's words)"})
    updated = await profile_with_llm(store, context, ScriptedLLM([json.dumps(said)]), user)
    profile = updated.semantic_profile
    assert (profile.domain, profile.entity_name, profile.entity_key, profile.time_column) == (
        "retail sales", "order", "id", "day"
    )  # fmt: skip
    assert profile.field_descriptions["amount"] == "Order value in euros"
    assert profile.field_descriptions["region"] == "Region of the store (user's words)"
    assert "ghost" not in profile.field_descriptions and profile.source == "user"
    assert store.context("sales").semantic_profile == profile  # saved


async def test_a_model_that_fails_leaves_the_heuristic_profile(store: Store, tmp_path: Path) -> None:
    context = store.load(write(tmp_path, "sales.csv", SALES), "sales")
    updated = await profile_with_llm(store, context, ScriptedLLM([LLMError("down", kind="unavailable")]))
    assert updated.semantic_profile == context.semantic_profile
    assert any("the LLM could not describe the data" in n for n in updated.notes)
