"""Where the command modules used to find their shared helpers, now each in the module of its purpose.

:mod:`.options` (options, arguments and their checks), :mod:`.inputs` (JSONL inputs),
:mod:`.output` (printing), :mod:`.service` (the Celery service, for commands that send work)
and :mod:`.fleet` (the fleet's state, for the rest). Names are re-exported here lazily for the
modules not moved yet; import them from their own module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..distributed.store.fill import skillbook_fill
    from .inputs import read_input_lines, scan_inputs, skipped_lines_reported, stream_inputs
    from .options import (
        ActorOption,
        CanaryOption,
        JsonOption,
        NoteOption,
        SkillbookNameArgument,
        actor_or_fail,
        check_label,
        check_output_path,
        check_recipe,
        check_skillbook_name,
        check_skillbook_ref,
        redis_settings,
        require_shared_redis,
        settings_for_model,
    )
    from .output import (
        console,
        describe_fill,
        err_console,
        print_json,
        print_warning,
        printable,
        write_skillbook_files,
    )
    from .service import enqueue_file, enqueue_inputs, open_service, require_workers, store_or_fail

__all__ = [
    "ActorOption",
    "actor_or_fail",
    "check_label",
    "NoteOption",
    "SkillbookNameArgument",
    "CanaryOption",
    "check_skillbook_ref",
    "check_output_path",
    "check_recipe",
    "check_skillbook_name",
    "console",
    "describe_fill",
    "enqueue_file",
    "enqueue_inputs",
    "err_console",
    "JsonOption",
    "open_service",
    "print_json",
    "print_warning",
    "printable",
    "read_input_lines",
    "redis_settings",
    "require_shared_redis",
    "require_workers",
    "scan_inputs",
    "settings_for_model",
    "skillbook_fill",
    "skipped_lines_reported",
    "store_or_fail",
    "stream_inputs",
    "write_skillbook_files",
]

_SOURCES = (
    "ace_workers.cli.output",
    "ace_workers.cli.options",
    "ace_workers.cli.inputs",
    "ace_workers.cli.service",
    "ace_workers.distributed.store.fill",
)
__getattr__ = lazy_exports(__name__, __all__, _SOURCES)
