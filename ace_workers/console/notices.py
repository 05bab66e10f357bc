"""The notices a page shows after an action: a fixed text per code, never text from the URL.

An action redirects to ``?notice=CODE``; the page shows :data:`NOTICES`'s text for it. Whoever
sends a person a link chooses the code, not the words: an unknown code shows nothing, so a
crafted link cannot make the console say "your key expired, sign in at evil.example".
"""

from __future__ import annotations

__all__ = ["NOTICES", "notice_text"]

NOTICES: dict[str, str] = {
    "rolled-back": "Rolled back: the version chosen is the new head (the history keeps every version).",
    "nothing-to-roll-back": "Nothing rolled back: that version is the head already.",
    "label-set": "Label set: its readers serve the version it points at now.",
    "label-moved": "Label moved: its readers serve the version it points at now.",
    "label-deleted": "Label deleted: its readers fail until it is set again; the label log keeps the move.",
    "proposal-approved": "Proposal approved: its changes are a new version of the skillbook.",
    "proposal-rejected": "Proposal rejected: nothing of it applies; the decision is logged.",
    "proposal-unchanged": "Proposal approved: it restates what the skillbook holds, so nothing changed "
    "(no new version).",
    "proposals-decided": "The proposals picked were decided, each logged on its own.",
    "proposals-partly-refused": "Some proposals picked were refused (decided already, or conflicting); "
    "the rest were decided, each logged on its own.",
    "letters-sent": "The dead letters picked were sent back to their step.",
    "letters-kept": "Some dead letters picked could not be sent back and stay parked "
    "(ace-workers dead-letters retry says why).",
    "skill-pin": "Skill pinned: never removed, merged or archived until unpinned.",
    "skill-unpin": "Skill unpinned: learning, dedup and pruning may act on it again.",
    "skill-archive": "Skill archived: out of the prompt, kept, restorable.",
    "skill-restore": "Skill restored into the prompt.",
    "skill-unchanged": "Nothing to change: the skill was in that state already.",
    "batch-cancelled": "Batch cancelled: a step running now finishes, no other step of the batch runs.",
    "batch-ended": "Nothing to change: the batch had ended already.",
    "batch-resumed": "Batch resumed: the samples never sent, and those lost on the way, are sent.",
    "forgotten": "Erased: the matched traces are gone from every place the fleet keeps them; the erasure "
    "is recorded below.",
    "forget-nothing": "Nothing matched: nothing was erased (the request is recorded below).",
}


def notice_text(code: str) -> str:
    """The text of notice ``code``; empty for a code that is not one of :data:`NOTICES`."""
    return NOTICES.get(code, "")
