"""The generated reference pages: configuration from WorkerSettings, the CLI from the Typer app,
the Python API from the packages' ``__all__``.

An MkDocs hook (mkdocs.yml's ``hooks``): on every build, :func:`on_files` adds
``reference/configuration.md``, ``reference/cli.md`` and ``reference/api.md`` as pages made
from the code, so they cannot drift from it. None is a file in docs/. The API page is a list
of mkdocstrings directives (``::: ace_workers.Skill``), one per public name, grouped as the
package's ``__all__`` groups them with comments; mkdocstrings renders each from its docstring.
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from typer.core import TyperArgument, TyperGroup

from ace_workers.cli.root import app
from ace_workers.distributed.settings import WorkerSettings, env_name
from ace_workers.mcp.config import MCP_ENV_PREFIX, MCPServerConfig

__all__ = [
    "API_PACKAGES",
    "API_PAGE",
    "CLI_PAGE",
    "CONFIGURATION_PAGE",
    "api_page",
    "cli_page",
    "configuration_page",
    "on_files",
    "public_groups",
]

CONFIGURATION_PAGE = "reference/configuration.md"
CLI_PAGE = "reference/cli.md"
API_PAGE = "reference/api.md"
# The packages whose __all__ is the public Python API, each a section of the API page.
API_PACKAGES = ("ace_workers", "pipeline")
PROGRAM = "ace-workers"

_CONFIGURATION_INTRO = """# Configuration

Producers and workers (every `ace-workers` command, and your code through `WorkerSettings.from_env()`)
read their options from `ACE_*` environment variables: each setting below is a field of
`ace_workers.distributed.settings.WorkerSettings`, read from `ACE_<FIELD NAME IN UPPER CASE>`.
The environment is read when the settings are built, never at import time. A misspelled `ACE_*`
variable fails loudly, naming the closest known one, instead of being silently ignored. A true or
false setting takes `1`, `true`, `yes` or `on` (and `0`, `false`, `no`, `off`).

The MCP server's own options (`ace-workers mcp`, fields of
`ace_workers.mcp.config.MCPServerConfig`, read from `ACE_MCP_<FIELD NAME IN UPPER CASE>`) follow
under [MCP server](#mcp-server). `ACE_ACTOR` is the default of the `--actor` option of the commands
that record who acted (see the [CLI reference](cli.md)).

This page is generated from the settings' fields on every build of the documentation.
"""

_API_INTRO = """# Python API

The public names of `ace_workers` and of `pipeline`, the generic step-pipeline engine it builds
on: what each package's `__all__` lists, grouped as it groups them. Import them from the package
(`from ace_workers import Skillbook`); the modules they are defined in may change. This page is
generated from the packages' `__all__` and docstrings on every build of the documentation.
"""

_CLI_INTRO = """# CLI reference

Every command of `ace-workers`, with its usage line, what it does, its arguments and its options,
as `ace-workers COMMAND --help` shows them (every command also takes `--help`). This page is
generated from the command line's own definition on every build of the documentation.
"""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages to the site's files."""
    files.append(File.generated(config, CONFIGURATION_PAGE, content=configuration_page()))
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    files.append(File.generated(config, API_PAGE, content=api_page()))
    return files


# -- configuration ----------------------------------------------------------------------


_MCP_INTRO = """## MCP server

The options of `ace-workers mcp` alone (see [MCP server](../integrations/mcp.md)); it reads the
settings above too.
"""


def configuration_page() -> str:
    """The configuration reference: every WorkerSettings field, then every MCPServerConfig field,
    as its ``ACE_*`` variable."""
    fleet = [_setting_section(spec, env_name(spec.name)) for spec in dataclasses.fields(WorkerSettings)]
    mcp = [
        _setting_section(spec, f"{MCP_ENV_PREFIX}{spec.name.upper()}", level=3)
        for spec in dataclasses.fields(MCPServerConfig)
    ]
    return "\n".join([_CONFIGURATION_INTRO, *fleet, _MCP_INTRO, *mcp])


def _setting_section(spec: dataclasses.Field[Any], variable: str, *, level: int = 2) -> str:
    if not spec.metadata.get("help"):
        raise ValueError(f"{variable} has no help text: declare it with its help metadata")
    kind = f"`{str(spec.type).removesuffix(' | None')}`"  # unset is said by the default
    if spec.metadata.get("positive"):
        kind += ", greater than 0"
    elif spec.metadata.get("minimum") is not None:
        kind += f", at least {spec.metadata['minimum']}"
    if spec.metadata.get("maximum") is not None:
        kind += f", at most {spec.metadata['maximum']:.0e}"
    default = spec.metadata.get("default_text") or _default_text(spec.default)
    heading = f"{'#' * level} `{variable}`"
    return f"{heading}\n\n{spec.metadata['help']}.\n\n**Type:** {kind} · **Default:** {default}\n"


def _default_text(value: object) -> str:
    """A default as the reference shows it: unset, true/false, or the value as code."""
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        shown = str(value).lower()
    elif isinstance(value, float):
        shown = f"{value:g}"
    else:
        shown = str(value)
    return f"`{shown}`"


# -- command line -----------------------------------------------------------------------


def cli_page() -> str:
    """The CLI reference: every command and group of the app, the root first."""
    root = typer.main.get_command(app)
    context = root.context_class(root, info_name=PROGRAM)
    return "\n".join([_CLI_INTRO, *(_command_section(command, ctx) for command, ctx in _walk(root, context))])


def _walk(command: Any, context: Any) -> Iterator[tuple[Any, Any]]:
    """``(command, its context)`` for ``command`` and every command below it, depth first."""
    yield command, context
    if isinstance(command, TyperGroup):
        for name in command.list_commands(context):
            sub = command.commands[name]
            if not sub.hidden:
                yield from _walk(sub, sub.context_class(sub, info_name=name, parent=context))


def _command_section(command: Any, context: Any) -> str:
    path = context.command_path
    depth = min(max(path.count(" ") + 1, 2), 6)  # the root and its commands h2, subcommands below
    usage = " ".join([path, *command.collect_usage_pieces(context)])
    parts = [f"{'#' * depth} `{path}`", f"```text\nUsage: {usage}\n```"]
    parts += [_paragraphs(text) for text in (command.help, command.epilog) if text]
    # --help is on every command, and the page's introduction says so once.
    params = [
        param
        for param in command.get_params(context)
        if param.name != "help" and param.get_help_record(context) is not None
    ]
    arguments = [param for param in params if isinstance(param, TyperArgument)]
    options = [param for param in params if not isinstance(param, TyperArgument)]
    for title, group in (("Arguments", arguments), ("Options", options)):
        if group:
            parts.append(_param_table(title, group, context))
    if isinstance(command, TyperGroup):
        parts.append(_subcommand_table(command, context))
    return "\n\n".join(parts) + "\n"


def _param_table(title: str, params: list[Any], context: Any) -> str:
    rows = [f"**{title}**\n\n| {title[:-1]} | Description |\n| --- | --- |"]
    for param in params:
        names, description = param.get_help_record(context)
        rows.append(f"| `{names}` | {_cell(description)} |")
    return "\n".join(rows)


def _subcommand_table(group: TyperGroup, context: Any) -> str:
    rows = ["**Commands**\n\n| Command | Description |\n| --- | --- |"]
    for name in group.list_commands(context):
        sub = group.commands[name]
        if not sub.hidden:
            path = f"{context.command_path} {name}"
            rows.append(f"| [`{name}`](#{_anchor(path)}) | {_cell(sub.get_short_help_str(limit=120))} |")
    return "\n".join(rows)


def _anchor(heading: str) -> str:
    """The id MkDocs' toc gives a heading of ``heading`` in code: lower case, words joined by -."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading.lower())).strip("-")


def _paragraphs(text: str) -> str:
    """Click help text as Markdown: its paragraphs kept, what Markdown would read as markup escaped."""
    lines = [line for line in text.splitlines() if line.strip() != "\b"]  # click's no-rewrap marker
    return _escape("\n".join(lines).strip())


def _cell(text: str) -> str:
    """Text for one cell of a Markdown table: one line, markup and pipes escaped."""
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _escape(text: str) -> str:
    """Plain text that Markdown shows as written (``*``, ``_``, ``#``, backticks, brackets, < and &)."""
    return re.sub(r"([\\`*_#\[\]])", r"\\\1", html.escape(text, quote=False))


# -- Python API -------------------------------------------------------------------------


def api_page() -> str:
    """The API reference: a section per package, a directive per public name."""
    parts = [_API_INTRO]
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        parts.append(f"## `{package}`\n\n{(module.__doc__ or '').strip().splitlines()[0]}\n")
        for group, names in public_groups(package):
            parts.append(f"### {group[:1].upper()}{group[1:]}\n")
            parts += [_api_entry(package, getattr(module, name), name) for name in names]
    return "\n".join(parts)


def _api_entry(package: str, value: object, name: str) -> str:
    """A name's directive; a name another API package exports first only points to it there."""
    home = getattr(value, "__module__", "").partition(".")[0]
    if home != package and home in API_PACKAGES:
        return f"#### `{package}.{name}`\n\nThe same as [`{home}.{name}`][{home}.{name}].\n"
    return f"::: {package}.{name}\n"


def public_groups(package: str) -> list[tuple[str, list[str]]]:
    """The package's ``__all__`` as ``(comment, names)`` groups, read from its ``__init__`` source.

    Raises:
        ValueError: the groups do not hold exactly ``__all__``'s names (a name outside a group).
    """
    module = importlib.import_module(package)
    source = Path(module.__file__ or "").read_text()
    listing = source[source.index("__all__ = [") : source.index("\n]\n", source.index("__all__ = ["))]
    groups: list[tuple[str, list[str]]] = []
    for line in listing.splitlines()[1:]:
        text = line.strip()
        if text.startswith("#"):
            groups.append((text.lstrip("# "), []))
        elif text and groups:
            groups[-1][1].extend(re.findall(r"\"([^\"]+)\"", text))
    if [name for _, names in groups for name in names] != list(module.__all__):
        raise ValueError(f"{package}.__all__ has names outside its commented groups")
    return groups
