"""The Skillbook API: single writes, copies on read, counts, and its prompt and markdown forms."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ace_workers.core import PromptBudget, Skillbook, UpdateBatch, UpdateOperation
from ace_workers.errors import UnknownSkillError

PROMPT_HEADER = "skills[{n}\t]{{id\tsection\tcontent\thelpful\tharmful\tneutral}}:"


def test_add_skill_allocates_the_next_id_and_strips_text(book: Skillbook) -> None:
    skill = book.add_skill("  Edge Cases ", "  Mind empty input.\n")
    assert (skill.id, skill.section, skill.content) == ("edge-00003", "Edge Cases", "Mind empty input.")
    assert book.get_skill("edge-00003") == skill


def test_update_skill_replaces_the_content(book: Skillbook) -> None:
    book.update_skill("general-00001", "Check units twice", justification="once was not enough")
    skill = book.get_skill("general-00001")
    assert (skill.content, skill.justification) == ("Check units twice", "once was not enough")


def _book_with_embedding() -> Skillbook:
    data = Skillbook().to_dict()
    data["skills"]["general-00001"] = {
        "id": "general-00001",
        "section": "general",
        "content": "Check units",
        "embedding": [0.25, 0.5],
    }
    book = Skillbook.from_dict(data)
    assert book.get_skill("general-00001").embedding == [0.25, 0.5]
    return book


def test_update_skill_clears_the_embedding() -> None:
    book = _book_with_embedding()
    book.update_skill("general-00001", "Check units twice")
    assert book.get_skill("general-00001").embedding is None


def test_update_operation_clears_the_embedding() -> None:
    book = _book_with_embedding()
    op = UpdateOperation(type="UPDATE", skill_id="general-00001", content="Check units twice")
    book.apply_update(UpdateBatch(operations=[op]))
    assert book.get_skill("general-00001").embedding is None


def test_tag_skill_adds_to_one_counter(book: Skillbook) -> None:
    book.tag_skill("general-00001", "helpful")
    book.tag_skill("general-00001", "harmful", increment=3)
    skill = book.get_skill("general-00001")
    assert (skill.helpful, skill.harmful, skill.neutral) == (1, 3, 0)


def test_tag_skill_rejects_an_unknown_tag(book: Skillbook) -> None:
    with pytest.raises(ValueError, match="bogus"):
        book.tag_skill("general-00001", "bogus")


@pytest.mark.parametrize(
    "write",
    [
        lambda b: b.update_skill("ghost-00009", "x"),
        lambda b: b.tag_skill("ghost-00009", "helpful"),
        lambda b: b.remove_skill("ghost-00009"),
    ],
    ids=["update", "tag", "remove"],
)
def test_single_writes_to_an_unknown_id_raise_unknown_skill_error(
    book: Skillbook, write: Callable[[Skillbook], object]
) -> None:
    with pytest.raises(UnknownSkillError) as info:
        write(book)
    assert info.value.skill_id == "ghost-00009"


def test_hard_remove_deletes_the_skill_everywhere(book: Skillbook) -> None:
    book.remove_skill("general-00001")
    assert book.get_skill("general-00001") is None
    assert "general-00001" not in book.to_dict()["skills"]
    assert [s.id for s in book.skills(include_invalid=True)] == ["math-00002"]


def test_soft_removed_skill_is_hidden_from_skills_and_prompt(book: Skillbook) -> None:
    book.remove_skill("general-00001", soft=True)
    assert [s.id for s in book.skills()] == ["math-00002"]
    assert "general-00001" not in book.as_prompt()
    assert "general-00001" not in str(book)
    assert len(book) == 1


def test_soft_removed_skill_is_kept_for_the_record(book: Skillbook) -> None:
    book.remove_skill("general-00001", soft=True)
    assert [s.id for s in book.skills(include_invalid=True)] == ["general-00001", "math-00002"]
    assert book.to_dict()["skills"]["general-00001"]["status"] == "invalid"
    assert book.get_skill("general-00001").content == "Check units"


def test_get_skill_returns_a_copy(book: Skillbook) -> None:
    skill = book.get_skill("general-00001")
    skill.content = "Tampered"
    skill.helpful = 99
    skill.occurrences.append({"epoch": 9})
    skill.occurrence_totals["TAG"] = 7
    original = book.get_skill("general-00001")
    assert (original.content, original.helpful) == ("Check units", 0)
    assert [o["operation_type"] for o in original.occurrences] == ["ADD"]
    assert original.occurrence_totals == {"ADD": 1}


def test_skills_returns_copies(book: Skillbook) -> None:
    book.skills()[0].content = "Tampered"
    assert book.get_skill("general-00001").content == "Check units"


def test_skill_columns_read_fields_of_every_skill_in_insertion_order(book: Skillbook) -> None:
    book.add_skill("general", "Check signs")
    book.remove_skill("math-00002", soft=True)
    columns = book.skill_columns(("id", "status", "helpful"))
    assert columns == {
        "id": ["general-00001", "math-00002", "general-00003"],
        "status": ["active", "invalid", "active"],
        "helpful": [0, 0, 0],
    }


def test_skill_columns_refuse_fields_a_caller_could_change_in_place(book: Skillbook) -> None:
    with pytest.raises(ValueError, match="occurrences"):
        book.skill_columns(("id", "occurrences"))


def test_sections_lists_sections_with_active_skills_in_first_seen_order(book: Skillbook) -> None:
    book.add_skill("general", "Check signs")
    book.add_skill("edge", "Mind empty input")
    book.remove_skill("math-00002", soft=True)
    assert book.sections() == ["general", "edge"]


def test_stats_counts_sections_skills_invalid_and_tags(book: Skillbook) -> None:
    book.add_skill("general", "Check signs")
    book.tag_skill("general-00001", "helpful", 2)
    book.tag_skill("math-00002", "harmful")
    book.tag_skill("general-00003", "neutral", 4)
    book.remove_skill("general-00003", soft=True)
    assert book.stats() == {
        "sections": 2,
        "skills": 2,
        "invalid": 1,
        "archived": 0,
        "tags": {"helpful": 2, "harmful": 1, "neutral": 0},
    }


def test_len_counts_only_active_skills(book: Skillbook) -> None:
    book.add_skill("general", "Check signs")
    book.remove_skill("math-00002", soft=True)
    assert len(book) == 2


def test_as_prompt_is_a_tab_delimited_toon_table(book: Skillbook) -> None:
    book.add_skill("Edge Cases", "Mind empty input")
    book.tag_skill("general-00001", "helpful", 2)
    assert book.as_prompt() == "\n".join(
        [
            PROMPT_HEADER.format(n=3),
            "  general-00001\tgeneral\tCheck units\t2\t0\t0",
            "  math-00002\tmath\tEstimate first\t0\t0\t0",
            "  edge-00003\tEdge Cases\tMind empty input\t0\t0\t0",
        ]
    )


def _prompt_cell(book: Skillbook, row: int, column: int) -> str:
    return book.as_prompt().split("\n")[1 + row].removeprefix("  ").split("\t")[column]


@pytest.mark.parametrize(
    "content",
    ["Split on\ttabs", "First line\nsecond line", 'Say "please"', 'All\tof\nthem "at once"'],
    ids=["tab", "newline", "quote", "all"],
)
def test_as_prompt_quotes_awkward_content_as_a_json_string(content: str) -> None:
    book = Skillbook()
    book.add_skill("general", content)
    cell = _prompt_cell(book, 0, 2)
    assert cell.startswith('"')
    assert json.loads(cell) == content
    assert len(book.as_prompt().split("\n")) == 2


def test_as_prompt_leaves_plain_content_unquoted() -> None:
    book = Skillbook()
    book.add_skill("general", "Prefer exact arithmetic, then round.")
    assert _prompt_cell(book, 0, 2) == "Prefer exact arithmetic, then round."


@settings(database=None)
@given(content=st.text().filter(lambda text: text.strip() != ""))
def test_as_prompt_cells_decode_back_to_the_content(content: str) -> None:
    book = Skillbook()
    stored = book.add_skill("general", content).content
    cell = _prompt_cell(book, 0, 2)
    assert (json.loads(cell) if cell.startswith('"') else cell) == stored


def test_as_prompt_of_an_empty_skillbook_says_so() -> None:
    assert Skillbook().as_prompt() == "(no skills yet)"


def test_str_is_markdown_grouped_by_section(book: Skillbook) -> None:
    book.add_skill("general", "Check signs")
    lines = str(book).splitlines()
    assert lines[0].startswith("# ")
    assert [line for line in lines if line.startswith("## ")] == ["## general", "## math"]
    general, math = lines.index("## general"), lines.index("## math")
    assert lines[general + 1].startswith("- [general-00001] Check units")
    assert lines[general + 2].startswith("- [general-00003] Check signs")
    assert lines[math + 1].startswith("- [math-00002] Estimate first")


def test_markdown_counts_its_skills_in_the_singular_and_the_plural() -> None:
    book = Skillbook()
    book.add_skill("general", "Check units")
    assert book.as_markdown().splitlines()[0] == "# Skillbook (1 skill)"
    book.add_skill("general", "Check signs")
    assert book.as_markdown().splitlines()[0] == "# Skillbook (2 skills)"


def test_skill_copies_share_the_embedding_but_not_what_can_change_in_place() -> None:
    book = Skillbook()
    skill = book.add_skill("s", "Check the units.", sources=[{"trace": "t1"}])
    book.set_embeddings({skill.id: ("hash", [0.5, 0.25])})
    first, second = book.skills(), book.skills()
    # The embedding is only ever replaced, so copies share it (copying it cost seconds per 10k skills).
    assert first[0].embedding is second[0].embedding
    assert first[0].embedding == [0.5, 0.25]
    first[0].occurrences[0]["trace"] = "changed"
    assert book.skills()[0].occurrences[0]["trace"] == "t1"
    book.set_embeddings({skill.id: ("hash2", [1.0, 0.0])})
    assert first[0].embedding == [0.5, 0.25]
    assert book.skills()[0].embedding == [1.0, 0.0]


def test_replace_with_takes_the_other_skillbooks_skills_ids_and_decisions_in_place(book: Skillbook) -> None:
    budget = PromptBudget(max_skills=5, max_chars=None)
    assert "Check units" in book.as_prompt(budget)  # builds the prompt index the replace must drop
    loaded = Skillbook.loads(
        json.dumps(
            {
                "skills": {
                    "zorb-00007": {"id": "zorb-00007", "section": "zorb", "content": "Reverse the digits"},
                    "zorb-00008": {"id": "zorb-00008", "section": "zorb", "content": "Reverse all digits"},
                },
                "next_id": 8,
                "similarity_decisions": {
                    "zorb-00007,zorb-00008": {"decision": "KEEP", "reasoning": "", "similarity_score": 0.9}
                },
            }
        )
    )
    holder = book  # what a runner's steps hold: the same object before and after
    book.replace_with(loaded)
    assert holder is book
    assert [s.id for s in book.skills()] == ["zorb-00007", "zorb-00008"]
    prompt = book.as_prompt(budget)
    assert "Reverse the digits" in prompt
    assert "Check units" not in prompt
    assert book.add_skill("zorb", "Mind leading zeros").id == "zorb-00009"
    assert book.has_keep_decision("zorb-00007", "zorb-00008")
