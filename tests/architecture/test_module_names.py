"""Module names say what a module holds: no two modules of the package share a file name.

A name used twice (five ``provenance.py``, two ``gate.py``) makes a traceback, a grep or an
import line ambiguous until the reader checks the folder. Allowed twice: ``__init__.py`` and
``errors.py`` (one per package, by the errors rule), and one module per subpackage when sibling
subpackages play the same role for different frameworks (``traces/*/to_trace.py``). The application
layer and its front ends (``operations``, ``cli``, ``console``, ``mcp``) name a module by the topic
it serves (``operations/review.py``, ``cli/review.py``): there the package says which layer it is,
and the same topic has one module in each.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ace_workers"

ONE_PER_PACKAGE = {"__init__.py", "errors.py"}
# The application layer and its front ends: a module per topic, named by it.
BY_TOPIC_DIRS = ("operations", "cli", "console", "mcp")
# worker/admission.py and worker/deferrals.py are the workers' side of tenancy's admission_scheduler
# and deferred_samples, which took names of their own.
REWRITTEN_ELSEWHERE_FILES = {"distributed/worker/admission.py", "distributed/worker/deferrals.py"}
# Names still shared, each left for a later change. Remove a name once it is unique.
STILL_SHARED = {
    "agent.py": {"roles/agent.py", "steps/agent.py"},
    "base.py": {"runners/base.py", "roles/base.py", "distributed/store/migrations/base.py"},
    "deduplication.py": {"deduplication.py", "protocols/deduplication.py"},
    "llm.py": {"sim/llm.py", "protocols/llm.py"},
    "opik.py": {"observability/opik.py", "steps/opik.py", "rr/opik.py"},
    "outputs.py": {"core/outputs.py", "integrations/langchain/outputs.py"},
    "prompts.py": {"dedup/prompts.py", "roles/prompts.py", "rr/prompts.py"},
    "replies.py": {"distributed/store/replies.py", "rr/replies.py"},
    "tasks.py": {"sim/tasks.py", "integrations/tasks.py", "distributed/worker/tasks.py"},
}


def checked_modules(package: Path) -> list[Path]:
    """The package's modules, relative to it, without those named by topic (BY_TOPIC_DIRS)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] in BY_TOPIC_DIRS or relative.as_posix() in REWRITTEN_ELSEWHERE_FILES:
            continue
        found.append(relative)
    return found


def is_framework_family(paths: list[Path]) -> bool:
    """True when every module of the name sits one level down in sibling subpackages of one parent."""
    return len({path.parent.parent for path in paths}) == 1 and all(len(path.parts) >= 3 for path in paths)


def shared_names(modules: list[Path]) -> dict[str, set[str]]:
    """Each file name more than one module has (beyond those allowed), with the modules that have it."""
    by_name: dict[str, list[Path]] = defaultdict(list)
    for module in modules:
        by_name[module.name].append(module)
    return {
        name: {path.as_posix() for path in paths}
        for name, paths in by_name.items()
        if len(paths) > 1 and name not in ONE_PER_PACKAGE and not is_framework_family(paths)
    }


def test_no_new_module_shares_a_name() -> None:
    shared = shared_names(checked_modules(PACKAGE))
    new = {name: paths for name, paths in shared.items() if STILL_SHARED.get(name) != paths}
    assert not new, f"modules sharing a file name; give each a name that says what it holds: {new}"


def test_the_still_shared_list_is_not_stale() -> None:
    shared = shared_names(checked_modules(PACKAGE))
    resolved = sorted(set(STILL_SHARED) - set(shared))
    assert not resolved, f"now unique, remove from STILL_SHARED: {resolved}"


def test_a_planted_duplicate_is_found() -> None:
    names = (
        "core/skill.py",
        "roles/skill.py",
        "traces/a/result.py",
        "traces/b/result.py",
        "errors.py",
        "a/errors.py",
    )
    modules = [Path(name) for name in names]
    assert shared_names(modules) == {"skill.py": {"core/skill.py", "roles/skill.py"}}
