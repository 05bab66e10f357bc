"""Errors of the Redis skillbook store and of producers, under ace-workers' root AceError."""

from __future__ import annotations

from ...counts import counted, noun_for
from ...errors import AceError

__all__ = [
    "BackupError",
    "BackupFormatError",
    "BackupSchemaError",
    "BackupTargetError",
    "RestoreSkillbooksExistError",
    "RestoreTargetNotEmptyError",
    "BatchCancelledError",
    "BatchInputMissingError",
    "BatchNotFoundError",
    "ChangelogTrimmedError",
    "CorruptDataError",
    "HeadMovedError",
    "InvalidKeyPrefixError",
    "InvalidSelectorError",
    "SamplesInFlightError",
    "InvalidLabelError",
    "LabelMovedError",
    "InvalidSkillbookNameError",
    "ProposalConflictError",
    "ProposalDecidedError",
    "MigrationRefusedError",
    "NewerSchemaError",
    "OlderSchemaError",
    "SchemaMismatchError",
    "SkillbookExistsError",
    "SkillbookFullError",
    "StaleHistoryError",
    "StoreError",
    "UnknownProposalError",
    "UnknownLabelError",
    "UnknownSkillbookError",
    "VersionConflict",
    "VersionRangeError",
]


class StoreError(AceError):
    """The Redis skillbook store could not carry out an operation."""


class CorruptDataError(StoreError):
    """A Redis key holds what the store cannot read: not JSON, not a number, a key of the wrong type."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"corrupt data in Redis: key {key!r} {problem}")


class VersionConflict(StoreError):
    """Every compare-and-set attempt lost to another writer; nothing of this write was applied."""

    def __init__(self, name: str, attempts: int, operation: str = "write") -> None:
        self.name = name
        self.attempts = attempts
        self.operation = operation
        super().__init__(
            f"skillbook {name!r}: {operation} gave up after {counted(attempts, 'attempt')}; "
            "each time another writer changed the skillbook between the read and the commit. "
            "Nothing was applied; "
            "retry later, or route writers through one queue."
        )


class UnknownSkillbookError(StoreError, LookupError):
    """No skillbook of this name exists in Redis."""

    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        self.known = known
        listed = "" if known is None else f" (known: {', '.join(known) or 'none'})"
        super().__init__(f"no skillbook named {name!r} in Redis{listed}")


class SkillbookExistsError(StoreError):
    """An import would overwrite an existing skillbook and replace=True was not given."""

    def __init__(self, name: str, version: int) -> None:
        self.name = name
        self.version = version
        super().__init__(
            f"skillbook {name!r} already exists (version {version}); pass replace=True to replace it"
        )


class SkillbookFullError(StoreError):
    """A single skill could not be added: the skillbook is at its size limit.

    Batches never raise it: their ADDs beyond the limit are left out and
    counted (``ApplyReport.full``) while the rest applies.
    """

    def __init__(self, name: str, limit: int) -> None:
        self.name = name
        self.limit = limit
        super().__init__(
            f"skillbook {name!r} is full: it holds its limit of {limit} active skills "
            "(ACE_MAX_SKILLBOOK_SKILLS), so the skill was not added; consolidate or remove skills "
            f"(ace-workers skillbook dedup {name}), or raise the limit"
        )


class InvalidSkillbookNameError(StoreError, ValueError):
    """A skillbook name could break out of its key's hash tag (bad characters or length)."""

    def __init__(self, name: object) -> None:
        self.name = name
        super().__init__(
            f"invalid skillbook name {name!r}: use 1 to 128 characters of letters, digits, "
            "'_', '.' and '-', starting with a letter or digit"
        )


class InvalidKeyPrefixError(StoreError, ValueError):
    """A key prefix cannot start Redis key names (bad characters or length)."""

    def __init__(self, prefix: object) -> None:
        self.prefix = prefix
        super().__init__(
            f"invalid key prefix {prefix!r}: use 1 to 64 characters of letters, digits, "
            "'_', '.', ':' and '-', starting with a letter or digit"
        )


class VersionRangeError(StoreError, ValueError):
    """Versions were asked for that the skillbook does not have (beyond its current one, or reversed)."""

    def __init__(self, message: str, *, name: str, current: int, requested: tuple[int, ...]) -> None:
        self.name = name
        self.current = current
        self.requested = requested
        super().__init__(message)


class ChangelogTrimmedError(StoreError, ValueError):
    """The change log was trimmed (changelog_maxlen) and no longer reaches back to a version asked for."""

    def __init__(self, name: str, first: int, last: int, oldest: int | None) -> None:
        self.name = name
        self.first = first
        self.last = last
        self.oldest = oldest
        retained = f"the oldest version it still holds is {oldest}" if oldest else "it holds no entry there"
        super().__init__(
            f"skillbook {name!r}: the change log no longer reaches back to version {first} "
            f"({retained}); it was trimmed to its maximum length (changelog_maxlen), so changes "
            f"from version {first - 1} to {last} cannot be reconstructed"
        )


class BatchNotFoundError(StoreError, LookupError):
    """No batch of this id is recorded in Redis (never sent, or its record expired)."""

    def __init__(self, batch_id: str, ttl_seconds: int) -> None:
        self.batch_id = batch_id
        self.ttl_seconds = ttl_seconds
        super().__init__(f"no batch {batch_id!r} (unknown, or expired after {ttl_seconds} s)")


class BatchInputMissingError(StoreError, LookupError):
    """A batch stores no input for a sample (its producer died while storing them, or it expired)."""

    def __init__(self, batch_id: str, index: int) -> None:
        self.batch_id = batch_id
        self.index = index
        super().__init__(f"batch {batch_id!r} stores no input for sample {index}")


class BatchCancelledError(StoreError):
    """The batch was cancelled: none of its samples runs again."""

    def __init__(self, batch_id: str) -> None:
        self.batch_id = batch_id
        super().__init__(f"batch {batch_id!r} was cancelled; none of its samples runs again")


class UnknownProposalError(StoreError, LookupError):
    """No proposal of this id exists for the skillbook."""

    def __init__(self, name: str, proposal_id: str) -> None:
        self.name = name
        self.proposal_id = proposal_id
        super().__init__(f"skillbook {name!r} has no proposal {proposal_id!r}")


class ProposalDecidedError(StoreError):
    """A proposal was approved or rejected already: each is decided exactly once."""

    def __init__(self, name: str, proposal_id: str, status: str, actor: str, time: str) -> None:
        self.name = name
        self.proposal_id = proposal_id
        self.status = status
        self.actor = actor
        super().__init__(
            f"skillbook {name!r}: proposal {proposal_id!r} was {status} already, by {actor} at {time}"
        )


class ProposalConflictError(StoreError):
    """Skills a proposal touches changed since it was proposed; it applies only when approved despite that."""

    def __init__(self, name: str, proposal_id: str, skill_ids: list[str]) -> None:
        self.name = name
        self.proposal_id = proposal_id
        self.skill_ids = skill_ids
        super().__init__(
            f"skillbook {name!r}: proposal {proposal_id!r} conflicts: "
            f"{noun_for(len(skill_ids), 'skill')} {', '.join(skill_ids)} changed since it was proposed; "
            "nothing was applied. Look at them, then approve it "
            "despite the conflicts (--despite-conflicts) or reject it"
        )


class InvalidLabelError(StoreError, ValueError):
    """A label name is not one a skillbook version can carry (bad characters, or reserved)."""

    def __init__(self, label: object, why: str) -> None:
        self.label = label
        super().__init__(f"invalid label {label!r}: {why}")


class UnknownLabelError(StoreError, LookupError):
    """A skillbook has no label of this name."""

    def __init__(self, name: str, label: str, known: list[str]) -> None:
        self.name = name
        self.label = label
        listed = ", ".join(known) if known else "none yet"
        super().__init__(f"skillbook {name!r} has no label {label!r} (its labels: {listed})")


class LabelMovedError(StoreError):
    """A label move expected the label at one version and found it at another: someone moved it."""

    def __init__(self, name: str, label: str, expected: int | None, found: int | None) -> None:
        self.name = name
        self.label = label
        self.expected = expected
        self.found = found
        super().__init__(
            f"skillbook {name!r}: label {label!r} was expected at version {expected} but is at "
            f"{found}; it was moved meanwhile, so this move was not made"
        )


class HeadMovedError(StoreError):
    """A write expected the skillbook at one version (the head a person saw) and found another."""

    def __init__(self, name: str, expected: int, found: int) -> None:
        self.name = name
        self.expected = expected
        self.found = found
        super().__init__(
            f"skillbook {name!r}: expected the head at version {expected} but it is at {found}; "
            "it changed meanwhile, so nothing was written"
        )


class StaleHistoryError(StoreError, ValueError):
    """Stale detection asked for more batches than the (trimmed) change log still holds."""

    def __init__(self, name: str, wanted: int, held: int) -> None:
        self.name = name
        self.wanted = wanted
        self.held = held
        super().__init__(
            f"skillbook {name!r}: the change log holds only the last {held} batch(es) (it was trimmed "
            f"to changelog_maxlen), so it cannot tell which skills the last {wanted} batches touched; "
            f"ask for {held} batch(es) or fewer, or use days"
        )


class SchemaMismatchError(StoreError):
    """Redis holds data of another schema than this ace-workers knows: refused before anything is read."""

    def __init__(self, where: str, found: int, known: int, project_version: str, remedy: str) -> None:
        self.where = where
        self.found = found
        self.known = known
        self.project_version = project_version
        shown = f"{found} (unversioned)" if found == 0 else str(found)
        super().__init__(
            f"Redis at {where} holds data of schema {shown}; this ace-workers {project_version} "
            f"knows schema {known}: {remedy}"
        )


class NewerSchemaError(SchemaMismatchError):
    """The data was written (or migrated) by a newer ace-workers: this one must be upgraded."""

    def __init__(self, where: str, found: int, known: int, project_version: str) -> None:
        super().__init__(where, found, known, project_version, "upgrade ace-workers")


class OlderSchemaError(SchemaMismatchError):
    """The data is of an older schema: ``ace-workers migrate`` upgrades it first."""

    def __init__(self, where: str, found: int, known: int, project_version: str) -> None:
        super().__init__(
            where, found, known, project_version, "run 'ace-workers migrate' first (docs/upgrades.md)"
        )


class MigrationRefusedError(StoreError):
    """A migration cannot run now (the fleet is running, another migrate holds the lock); nothing changed."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class BackupError(StoreError):
    """A backup could not be written or restored; nothing was restored."""


class BackupFormatError(BackupError, ValueError):
    """A backup folder's file is not what a backup writes (corrupt, truncated, hand-edited)."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        self.path = path
        self.line = line
        self.problem = problem
        where = f"{path} line {line}" if line is not None else path
        super().__init__(f"backup {where}: {problem}; nothing was restored")


class BackupSchemaError(BackupError, ValueError):
    """A backup holds data of another schema than this ace-workers reads."""

    def __init__(self, path: str, found: int, known: int) -> None:
        self.found = found
        self.known = known
        if found < known:
            advice = (
                f"restore it with the release that wrote it (schema {found}), then run "
                f"`ace-workers migrate` to bring it to schema {known}"
            )
        else:
            advice = "restore it with a newer ace-workers"
        super().__init__(
            f"backup {path} holds schema {found}, this ace-workers knows schema {known}: {advice}"
        )


class BackupTargetError(BackupError, ValueError):
    """The folder a backup is to be written to exists and is not empty."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"backup folder {path} exists and is not empty: name a new folder")


class RestoreTargetNotEmptyError(BackupError):
    """A restore found data under the target prefix and --merge was not given."""

    def __init__(self, where: str, prefix: str, example: str) -> None:
        self.prefix = prefix
        self.example = example
        super().__init__(
            f"Redis at {where} already holds data under prefix {prefix!r} (e.g. key {example!r}): "
            "restore into an empty Redis or another --prefix, or pass --merge to add the backup's skillbooks"
        )


class RestoreSkillbooksExistError(BackupError):
    """A merging restore found skillbooks of the backup already in the target."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(
            f"the target already has {noun_for(len(names), 'skillbook')} {', '.join(map(repr, names))}: "
            "--merge adds only skillbooks the target lacks (delete or rename them first)"
        )


class InvalidSelectorError(StoreError, ValueError):
    """A ``forget`` selector names nothing it can match (an empty id, a subject without ``PATH=VALUE``)."""

    def __init__(self, selector: str, problem: str) -> None:
        self.selector = selector
        self.problem = problem
        super().__init__(f"selector {selector!r}: {problem}; nothing was erased")


class SamplesInFlightError(StoreError):
    """``forget`` matched samples of batches still running, and they did not finish in the time given."""

    def __init__(self, batch_ids: list[str], samples: int, waited: float) -> None:
        self.batch_ids = batch_ids
        self.samples = samples
        self.waited = waited
        super().__init__(
            f"{counted(samples, 'matched sample')} still in flight in running "
            f"{noun_for(len(batch_ids), 'batch', 'batches')} {', '.join(batch_ids)} "
            f"after waiting {waited:g} s: "
            "nothing was erased; wait longer (--wait SECONDS), or cancel the batch (batch cancel) and "
            "forget again"
        )
