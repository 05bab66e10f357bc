"""SIMULATION: what the simulated LLM answers to each role's prompt.

Pure functions of the prompt text and a :class:`SimWorld` (the task family
and how far the simulated agent trusts new skills); no randomness, no state.
Failures and malformed output are :class:`~ace_workers.sim.llm.SimulatedLLM`'s
business, not this module's.

- The agent answers a question right only if the prompt's skillbook holds a
  skill stating the topic's rule with at least ``trust_threshold`` net
  helpful votes (or the Reflection section states the rule); it cites that
  skill. A trusted skill stating the topic's WRONG rule
  (:attr:`~ace_workers.sim.tasks.Topic.wrong_rule`) is applied the same way,
  whichever of the two comes first, and gives a wrong answer. With neither it
  echoes the input, which is always wrong.
- The reflector compares the answer with the ground truth (else the feedback,
  else the rule itself); when wrong, it checks the ground truth against the
  topic's rule and states the rule as the learning. Cited skills are tagged
  helpful when right, harmful when wrong. Feedback that states a rule of the
  topic is believed, the wrong one too: misleading feedback
  (:func:`~ace_workers.sim.tasks.misleading_traces`) teaches the wrong rule,
  as a real Reflector told a falsehood by its environment would learn it.
  With :attr:`SimWorld.paraphrase` the rule is stated in words chosen per
  sample (:meth:`~ace_workers.sim.tasks.Topic.phrase_rule`), as different
  reflections of one lesson read differently.
- The skill manager ADDs a learning no skill states yet (section = topic),
  and otherwise TAGs the skill that already states it helpful: a restated
  lesson is more evidence for it. It knows the skills of its prompt's
  Skillbook table and of the lookup's Similar skills; a lesson a Pending
  proposals row states is that row's operation again, verbatim (which merges
  into the proposal), and so is one a Being added row states (the writer adds it
  once). With tools it first searches each learning, then
  decides on what the searches found. A lesson that contradicts the topic's skill
  (the wrong rule where a skill states the right one, or the reverse)
  is a harmful vote for that skill while its harmful votes do not exceed its
  helpful ones; once they do, the skill is REMOVEd and the lesson ADDed in its
  place, as the prompt asks. The reflection's own tags are TagStep's job.
- Asked to consolidate similar pairs, it MERGEs a pair into its first (older)
  skill when both state the same topic rule or the same text, and KEEPs it
  otherwise; pairs naming a skill it already merged away are left alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from ..core.consolidation import ConsolidationOp, KeepOp, MergeOp
from ..core.outputs import AgentOutput, ExtractedLearning, ReflectorOutput, SkillManagerOutput, SkillTag
from ..core.updates import UpdateBatch, UpdateOperation
from ..counts import counted
from ..dedup.prompts import ConsolidationResponse
from ..roles.skill_manager_tools import SkillManagerTurn, ToolCall
from .parsing import SkillRow, parse_sections, parse_skill_table, parse_tables, section_value, skill_row
from .tasks import TOPICS, Topic, find_task, find_topic

__all__ = [
    "SimWorld",
    "simulate_agent",
    "simulate_consolidation",
    "simulate_reflector",
    "simulate_skill_manager",
    "simulate_skill_manager_turn",
]

GENERAL_SECTION = "general"
_EXCERPT_ID = re.compile(r"^\[([^\]\s]+)\]", re.MULTILINE)
_PAIR = re.compile(
    r"^### Pair \d+: similarity (?P<similarity>[\d.]+)\n"
    r"- \[(?P<id_a>[^\]]+)\] \([^)]*\) (?P<content_a>.*)\n"
    r"- \[(?P<id_b>[^\]]+)\] \([^)]*\) (?P<content_b>.*)$",
    re.MULTILINE,
)
UNKNOWN_ANSWER = "unknown"


@dataclass(frozen=True)
class SimWorld:
    """What the simulator knows: the task family, the votes a skill needs before the agent uses it,
    and whether a learned rule is worded per sample (``paraphrase``, chosen with ``paraphrase_seed``)."""

    topics: Sequence[Topic] = field(default=TOPICS)
    trust_threshold: int = 0
    paraphrase: bool = False
    paraphrase_seed: int = 0

    def state_rule(self, topic: Topic, value: str, *, wrong: bool = False) -> str:
        """The rule (or the wrong rule) a reflection on input ``value`` states: canonical, or paraphrased."""
        if not self.paraphrase:
            return topic.wrong_rule if wrong else topic.rule
        return topic.phrase_rule(value, seed=self.paraphrase_seed, wrong=wrong)


def _normalise(text: str) -> str:
    return " ".join(text.strip().lower().split())


# -- agent ----------------------------------------------------------------------------
def _states_a_rule(text: str, topic: Topic) -> bool:
    return topic.is_stated_by(text) or topic.is_wrongly_stated_by(text)


def _trusted_rule_skill(rows: list[SkillRow], topic: Topic, world: SimWorld) -> SkillRow | None:
    # The first trusted skill stating a rule of the topic, right or wrong: the agent cannot tell.
    for row in rows:
        if _states_a_rule(row.content, topic) and row.net_votes >= world.trust_threshold:
            return row
    return None


def simulate_agent(prompt: str, world: SimWorld) -> AgentOutput:
    """Answer the Agent prompt's question, applying a trusted rule skill if there is one."""
    sections = parse_sections(prompt)
    question = section_value(sections, "Question")
    task = find_task(question, world.topics)
    if task is None:
        return AgentOutput(reasoning="I do not recognise this kind of task.", final_answer=UNKNOWN_ANSWER)
    topic, value = task
    skill = _trusted_rule_skill(parse_skill_table(section_value(sections, "Skillbook")), topic, world)
    if skill is not None:
        wrong = not topic.is_stated_by(skill.content)
        return AgentOutput(
            reasoning=f"This is a {topic.name} task; per [{skill.id}] I apply: {skill.content}",
            final_answer=topic.solve_wrong(value) if wrong else topic.solve(value),
        )
    if topic.is_stated_by(section_value(sections, "Reflection")):
        return AgentOutput(
            reasoning=f"The reflection on my last attempt says: {topic.rule}",
            final_answer=topic.solve(value),
        )
    return AgentOutput(
        reasoning=f"No skill I trust covers {topic.name} tasks, so I guess the input is the answer.",
        final_answer=value,
    )


# -- reflector --------------------------------------------------------------------------
def _cited_ids(excerpt: str) -> list[str]:
    # The excerpt holds one "[id] content" line per cited skill that exists.
    return _EXCERPT_ID.findall(excerpt)


def _is_correct(answer: str, ground_truth: str, feedback: str, expected: str | None) -> bool | None:
    if ground_truth:
        return _normalise(answer) == _normalise(ground_truth)
    verdict = _normalise(feedback)
    if verdict.startswith(("incorrect", "wrong")):
        return False
    if verdict.startswith("correct"):
        return True
    return None if expected is None else _normalise(answer) == _normalise(expected)


def simulate_reflector(prompt: str, world: SimWorld) -> ReflectorOutput:
    """Judge the attempt in a Reflector prompt and, when it failed, state the topic's rule."""
    sections = parse_sections(prompt)
    question = section_value(sections, "Question")
    trace = section_value(sections, "Trace")
    answer = section_value(sections, "Agent answer")
    ground_truth = section_value(sections, "Ground truth")
    task = find_task(question, world.topics) or find_task(trace, world.topics)
    cited = _cited_ids(section_value(sections, "Cited skills"))
    if task is None:
        return ReflectorOutput(
            reasoning="The task type is not one I recognise; nothing to learn.",
            skill_tags=[SkillTag(id=skill_id, tag="neutral") for skill_id in cited],
        )
    topic, value = task
    feedback = section_value(sections, "Feedback")
    # Feedback stating the wrong rule is believed: the lesson is what the feedback says.
    misled = topic.is_wrongly_stated_by(feedback)
    rule = world.state_rule(topic, value, wrong=misled)
    expected = topic.solve_wrong(value) if misled else topic.solve(value)
    if not answer and not ground_truth and trace:
        # A bare trace (TraceAnalyser) with no attempt to judge: learn the rule it shows.
        return _lesson(topic, rule, value, expected, answer="(none)", cited=[])
    correct = _is_correct(answer, ground_truth, feedback, expected)
    if correct:
        # Right without a cited skill (e.g. from a reflection in the prompt): keep the rule.
        learnings = [] if cited else [ExtractedLearning(learning=rule, evidence=f"input {value}")]
        return ReflectorOutput(
            reasoning=f"The answer {answer!r} is right.",
            error_identification="none",
            key_insight=f"Applying {', '.join(f'[{c}]' for c in cited)} worked." if cited else rule,
            extracted_learnings=learnings,
            skill_tags=[SkillTag(id=skill_id, tag="helpful") for skill_id in cited],
        )
    if correct is None or (ground_truth and _normalise(ground_truth) != _normalise(expected)):
        # Not judgeable, or the ground truth does not follow the rule: no lesson to draw.
        return ReflectorOutput(
            reasoning="The outcome does not reveal the rule.",
            skill_tags=[SkillTag(id=skill_id, tag="neutral") for skill_id in cited],
        )
    return _lesson(topic, rule, value, expected, answer, cited)


def _lesson(
    topic: Topic, rule: str, value: str, expected: str, answer: str, cited: list[str]
) -> ReflectorOutput:
    used = f"The agent followed {', '.join(cited)}" if cited else "The agent guessed"
    return ReflectorOutput(
        reasoning=f"For input {value} the answer should be {expected!r}, not {answer!r}.",
        error_identification=f"{used} instead of applying the {topic.name} rule.",
        root_cause_analysis=f"No trusted skill states the {topic.name} rule.",
        correct_approach=rule,
        key_insight=rule,
        extracted_learnings=[
            ExtractedLearning(learning=rule, evidence=f"input {value}: expected {expected!r}, got {answer!r}")
        ],
        skill_tags=[SkillTag(id=skill_id, tag="harmful") for skill_id in cited],
    )


# -- skill manager ------------------------------------------------------------------------
def _read_reflection(text: str) -> ReflectorOutput:
    try:
        return ReflectorOutput.model_validate_json(text)
    except ValidationError:
        return ReflectorOutput(reasoning="(the reflection could not be read)")


def _states_same(row: SkillRow, learning: str, topic: Topic | None) -> bool:
    # Two statements of a topic's rule (right or wrong) are the same skill however they are worded.
    if topic is not None and topic.is_stated_by(learning):
        return topic.is_stated_by(row.content)
    if topic is not None and topic.is_wrongly_stated_by(learning):
        return topic.is_wrongly_stated_by(row.content)
    return _normalise(row.content) == _normalise(learning)


def _contradicts(row: SkillRow, learning: str, topic: Topic | None) -> bool:
    # The row states the topic's other rule: the right one where the lesson is wrong, or the reverse.
    if topic is None:
        return False
    if topic.is_stated_by(learning):
        return topic.is_wrongly_stated_by(row.content)
    return topic.is_wrongly_stated_by(learning) and topic.is_stated_by(row.content)


def simulate_skill_manager(prompt: str, world: SimWorld) -> SkillManagerOutput:
    """Turn the reflection in a SkillManager prompt into TAG, UPDATE and ADD operations, never duplicating.

    It sees the skills of the Skillbook table and of the lookup's Similar skills, and the
    Pending proposals: a lesson a pending operation states is that operation again, verbatim.
    """
    sections = parse_sections(prompt)
    lookup = "\n".join(
        section_value(sections, name) for name in ("Similar skills", "Pending proposals", "Being added")
    )
    return SkillManagerOutput(update=_decide(sections, lookup, world))


def simulate_skill_manager_turn(prompt: str, world: SimWorld) -> SkillManagerTurn:
    """One turn of the tool-using SkillManager: search each learning first, then decide on what was found."""
    sections = parse_sections(prompt)
    results = section_value(sections, "Tool results")
    learnings = _read_reflection(section_value(sections, "Reflection")).extracted_learnings
    calls_left = re.search(r"^Tool calls left: (\d+)", section_value(sections, "Tools"), re.MULTILINE)
    if not results and learnings and calls_left is not None and int(calls_left.group(1)) > 0:
        calls = [ToolCall(name="search_skills", query=item.learning, k=8) for item in learnings]
        return SkillManagerTurn(tool_calls=calls[: int(calls_left.group(1))])
    return SkillManagerTurn(update=_decide(sections, results, world))


def _decide(sections: dict[str, str], found: str, world: SimWorld) -> UpdateBatch:
    """The update for the prompt's reflection, knowing its Skillbook table and the tables in ``found``."""
    reflection = _read_reflection(section_value(sections, "Reflection"))
    tables = parse_tables(found)
    rows = [
        *parse_skill_table(section_value(sections, "Skillbook")),
        *map(skill_row, tables.get("skills", [])),
    ]
    # Pending proposals, then the ADDs other learners are making (oldest first): the first one stating
    # a lesson is repeated verbatim.
    pending = [*tables.get("proposals", []), *tables.get("additions", [])]
    votes: dict[str, dict[str, int]] = {}
    additions: list[UpdateOperation] = []
    for item in reflection.extracted_learnings:
        topic = find_topic(item.learning, world.topics)
        existing = next((row for row in rows if _states_same(row, item.learning, topic)), None)
        rival = next((row for row in rows if _contradicts(row, item.learning, topic)), None)
        proposed = next((op for op in pending if _pending_states(op, item.learning, topic)), None)
        # A lesson against a skill is a vote against it while it has not harmed more than it helped
        # (a single misleading outcome never replaces it), then its removal, as the prompt asks:
        # whether or not another skill states the lesson already.
        replaced = False
        if rival is not None and rival.net_votes >= 0:
            votes.setdefault(rival.id, {"harmful": 1})
        elif rival is not None and not any(op.skill_id == rival.id for op in additions):
            additions.append(
                UpdateOperation(
                    type="REMOVE",
                    skill_id=rival.id,
                    justification=reflection.key_insight or "The feedback contradicts this skill.",
                    evidence=item.evidence,
                )
            )
            replaced = True
        if existing is not None:
            # Restated lesson: one more helpful vote for the skill instead of a duplicate.
            votes.setdefault(existing.id, {"helpful": 1})
        elif rival is not None and not replaced:
            continue  # voted against; the lesson is not added beside a skill that still stands
        elif proposed is not None:
            # A pending proposal states it: the same operation again is more evidence for it.
            additions.append(
                UpdateOperation(
                    type=proposed.get("type", "ADD"),
                    section=proposed.get("section", ""),
                    skill_id=proposed.get("skill_id") or None,
                    content=proposed.get("content", ""),
                    justification=reflection.key_insight or "A pending proposal states this.",
                    evidence=item.evidence,
                )
            )
        elif not any(_normalise(op.content) == _normalise(item.learning) for op in additions):
            # A new lesson, or one taking a removed skill's place (its votes starting afresh).
            additions.append(_addition(item.learning, topic, reflection, item.evidence))
    tags = [UpdateOperation(type="TAG", skill_id=i, metadata=m) for i, m in votes.items()]
    kinds = Counter(op.type for op in additions)
    summary = (
        f"{counted(kinds['ADD'], 'new skill')}, {kinds['UPDATE']} updated, {kinds['REMOVE']} removed, "
        f"{counted(len(tags), 'skill')} tagged."
    )
    return UpdateBatch(reasoning=summary, operations=[*tags, *additions])


def _addition(
    learning: str, topic: Topic | None, reflection: ReflectorOutput, evidence: str
) -> UpdateOperation:
    return UpdateOperation(
        type="ADD",
        section=topic.name if topic is not None else GENERAL_SECTION,
        content=learning,
        justification=reflection.key_insight or "Learned from a failed attempt.",
        evidence=evidence,
    )


def _pending_states(operation: dict[str, str], learning: str, topic: Topic | None) -> bool:
    """True if a pending operation (a row of the Pending proposals table) states ``learning``."""
    content = operation.get("content", "")
    return bool(content) and _states_same(SkillRow(id="", section="", content=content), learning, topic)


# -- consolidation ----------------------------------------------------------------------------
def _say_the_same(content_a: str, content_b: str, world: SimWorld) -> bool:
    topic = find_topic(content_a, world.topics)
    if topic is not None and topic.is_stated_by(content_a):
        return topic.is_stated_by(content_b)
    return _normalise(content_a).rstrip(".") == _normalise(content_b).rstrip(".")


def simulate_consolidation(prompt: str, world: SimWorld) -> ConsolidationResponse:
    """Decide the pairs of a consolidation prompt: MERGE restatements of one rule, KEEP the rest."""
    pairs = section_value(parse_sections(prompt), "Similar pairs")
    merged_away: set[str] = set()
    operations: list[ConsolidationOp] = []
    for match in _PAIR.finditer(pairs):
        id_a, id_b = match.group("id_a"), match.group("id_b")
        if {id_a, id_b} & merged_away:
            continue
        if _say_the_same(match.group("content_a"), match.group("content_b"), world):
            operations.append(
                MergeOp(
                    keep_id=id_a,
                    merge_ids=[id_b],
                    merged_content=match.group("content_a"),
                    reasoning="Both state the same rule.",
                )
            )
            merged_away.add(id_b)
        else:
            operations.append(
                KeepOp(
                    skill_ids=[id_a, id_b],
                    similarity=float(match.group("similarity")),
                    reasoning="They state different rules.",
                )
            )
    merges = sum(isinstance(op, MergeOp) for op in operations)
    return ConsolidationResponse(
        reasoning=f"{counted(merges, 'merge')}, {counted(len(operations) - merges, 'pair')} kept.",
        consolidation_operations=operations,
    )
