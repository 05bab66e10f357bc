"""The generated reference pages cover the code: every setting, every command, every public name."""

from __future__ import annotations

import dataclasses
import importlib
import re
from pathlib import Path

import pytest
import typer
from mkdocs.config import load_config
from mkdocs.structure.files import Files
from typer.core import TyperGroup

from ace_workers.cli import app
from ace_workers.distributed.settings import WorkerSettings, env_name
from ace_workers.mcp.config import MCPServerConfig
from docs_hooks.reference_pages import (
    API_PACKAGES,
    API_PAGE,
    CLI_PAGE,
    CONFIGURATION_PAGE,
    api_page,
    cli_page,
    configuration_page,
    public_groups,
)
from tests.support.cli import command_paths

REPO = Path(__file__).resolve().parents[2]
CONFIGURATION = configuration_page()
CLI = cli_page()
API = api_page()
ROOT = typer.main.get_command(app)
assert isinstance(ROOT, TyperGroup)
SETTINGS = dataclasses.fields(WorkerSettings)
MCP_SETTINGS = dataclasses.fields(MCPServerConfig)
PUBLIC_NAMES = [
    (package, name) for package in API_PACKAGES for name in importlib.import_module(package).__all__
]


def section(page: str, heading: str) -> str:
    """The text under the Markdown heading whose text is ``heading`` (any level), up to the next heading."""
    found = re.search(rf"^#{{1,6}} {re.escape(heading)}\n(.*?)(?=^#|\Z)", page, re.M | re.S)
    assert found is not None, f"no heading {heading!r}"
    return found.group(1)


@pytest.mark.parametrize("spec", SETTINGS, ids=lambda spec: env_name(spec.name))
def test_every_setting_has_help_text_on_the_configuration_page(spec: dataclasses.Field[object]) -> None:
    help_text = spec.metadata.get("help")
    assert help_text, f"{env_name(spec.name)} has no help text"
    assert help_text in section(CONFIGURATION, f"`{env_name(spec.name)}`")


def test_a_setting_shows_its_type_and_default() -> None:
    assert "**Type:** `str` · **Default:** `ace`" in section(CONFIGURATION, "`ACE_QUEUE_PREFIX`")


def test_a_setting_shows_its_bound() -> None:
    assert "**Type:** `int`, at least 1, at most 1e+09 · **Default:** `1`" in section(
        CONFIGURATION, "`ACE_WRITE_PARTITIONS`"
    )


def test_an_unset_default_says_what_unset_means() -> None:
    assert "**Default:** unset: embedded Redis" in section(CONFIGURATION, "`ACE_REDIS_URL`")


def test_a_float_default_shows_as_written() -> None:
    assert "**Default:** `0.85`" in section(CONFIGURATION, "`ACE_DEDUP_THRESHOLD`")


def test_the_configuration_page_lists_only_the_settings() -> None:
    listed = re.findall(r"^## `(ACE_\w+)`$", CONFIGURATION, re.M)
    assert listed == [env_name(spec.name) for spec in SETTINGS]


@pytest.mark.parametrize("spec", MCP_SETTINGS, ids=lambda spec: f"ACE_MCP_{spec.name.upper()}")
def test_every_mcp_setting_has_help_text_under_the_mcp_server(spec: dataclasses.Field[object]) -> None:
    help_text = spec.metadata.get("help")
    assert help_text, f"ACE_MCP_{spec.name.upper()} has no help text"
    assert help_text in section(CONFIGURATION, f"`ACE_MCP_{spec.name.upper()}`")


def test_the_mcp_settings_are_listed_under_their_own_heading() -> None:
    mcp_part = CONFIGURATION[CONFIGURATION.index("\n## MCP server\n") :]
    listed = re.findall(r"^### `(ACE_MCP_\w+)`$", mcp_part, re.M)
    assert listed == [f"ACE_MCP_{spec.name.upper()}" for spec in MCP_SETTINGS]


@pytest.mark.parametrize("path", list(command_paths(ROOT)), ids=lambda path: " ".join(path) or "ace-workers")
def test_every_command_has_its_usage_and_options_on_the_cli_page(path: tuple[str, ...]) -> None:
    command_line = " ".join(["ace-workers", *path])
    text = section(CLI, f"`{command_line}`")
    assert f"Usage: {command_line} [OPTIONS]" in text
    command = ROOT
    for name in path:
        assert isinstance(command, TyperGroup)
        command = command.commands[name]
    options = [
        opt
        for param in command.params
        if not getattr(param, "hidden", False)
        for opt in param.opts
        if opt.startswith("-")
    ]
    rows = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| `")]
    names = {name for row in rows for name in re.split(r"[\s,/]+", row.split("`")[1])}
    missing = [option for option in options if option not in names]
    assert missing == []


def test_a_group_links_each_of_its_commands() -> None:
    text = section(CLI, "`ace-workers skillbook`")
    assert "| [`export`](#ace-workers-skillbook-export) |" in text


def test_an_option_shows_its_default_and_environment_variable() -> None:
    text = section(CLI, "`ace-workers skillbook pin`")
    assert "[env var: ACE\\_ACTOR\\]" in text
    assert "[default: 1; x&gt;=1\\]" in section(CLI, "`ace-workers learn`")


def test_help_text_markup_is_escaped() -> None:
    # "ace.learn.*" would otherwise open an emphasis that runs on into the next line.
    assert "ace.learn.\\*" in CLI


@pytest.mark.parametrize("package_name", PUBLIC_NAMES, ids=lambda pair: ".".join(pair))
def test_every_public_name_is_on_the_api_page(package_name: tuple[str, str]) -> None:
    package, name = package_name
    assert f"\n::: {package}.{name}\n" in API or f"\n#### `{package}.{name}`\n" in API


def test_a_name_reexported_from_pipeline_points_to_its_entry_there() -> None:
    assert "The same as [`pipeline.Pipeline`][pipeline.Pipeline]." in section(API, "`ace_workers.Pipeline`")
    assert "\n::: pipeline.Pipeline\n" in API


def test_the_api_page_groups_names_as_the_init_comments_do() -> None:
    groups = dict(public_groups("pipeline"))
    assert groups["composing"] == ["Pipeline", "Branch", "MergeStrategy"]
    assert section(API, "Composing").split() == [
        *(":::", "pipeline.Pipeline"),
        *(":::", "pipeline.Branch"),
        *(":::", "pipeline.MergeStrategy"),
    ]


def test_the_hook_adds_the_three_pages_the_nav_names() -> None:
    config = load_config(str(REPO / "mkdocs.yml"))
    files = config.plugins.on_files(Files([]), config=config)  # as a build runs it: mkdocs.yml's hooks
    generated = {file.src_uri: file.content_string for file in files}
    assert generated == {CONFIGURATION_PAGE: CONFIGURATION, CLI_PAGE: CLI, API_PAGE: API}
    nav = config.nav or []
    reference = next(section for section in nav if "Reference" in section)["Reference"]
    assert [page for entry in reference for page in entry.values()] == [
        CONFIGURATION_PAGE,
        CLI_PAGE,
        API_PAGE,
    ]
