"""What ``--help`` shows: flags without a type, and arguments by their NAME in the usage line.

typer's help panel prints a type after every option, flags included (``--json <bool>``,
``--help <bool>``), and its usage line writes a required argument as ``{traces}``. The
command and group classes here show a flag bare and an argument as click always has:
``TRACES``, or ``[TRACES]`` when it may be left out. Every command of the app is made with
one of them (``cls=HelpCommand``, ``typer.Typer(cls=HelpGroup)``); a test walks them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from typer._click import Context  # typer's own click, whose classes typer's commands subclass
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

__all__ = ["HelpCommand", "HelpGroup", "usage_name"]


def usage_name(argument: TyperArgument) -> str:
    """How the usage line names ``argument``: NAME, [NAME] if optional, NAME... if it takes several."""
    name = argument.metavar or (argument.name or "").upper()
    if argument.nargs != 1:
        name += "..."
    return name if argument.required else f"[{name}]"


def _tidy(params: Iterable[Any]) -> None:
    """Flags without a type label (their metavar ""); arguments named in capitals, as click does."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""  # the help panel prints the metavar, if there is one, in place of "<bool>"
        elif isinstance(param, TyperArgument) and param.metavar is None and param.name:
            param.metavar = param.name.upper()


# The flags typer adds to a command, whose callbacks read a flag not given as falsy.
_TYPER_FLAGS = frozenset({"help", "install_completion", "show_completion"})


def _false_when_not_given(params: Iterable[Any]) -> None:
    """typer's own flags default to False, not None: typer checks a None through a pydantic validator
    it builds first, so ``ace-workers GROUP --help`` would load pydantic for the root's flags."""
    for param in params:
        if isinstance(param, TyperOption) and param.name in _TYPER_FLAGS and param.default is None:
            param.default = False


class _BareFlags:
    """Tidies a command's parameters, and its --help option, as :func:`_tidy` says."""

    params: list[Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _tidy(self.params)

    def get_params(self, ctx: Context) -> list[Any]:
        # typer appends --install-completion and --show-completion after the group is made.
        params: list[Any] = super().get_params(ctx)  # type: ignore[misc]
        _tidy(params)
        _false_when_not_given(params)
        return params

    def get_help_option(self, ctx: Context) -> TyperOption | None:
        option: TyperOption | None = super().get_help_option(ctx)  # type: ignore[misc]
        _tidy([option])
        _false_when_not_given([option])
        return option


class HelpCommand(_BareFlags, TyperCommand):
    """A command whose help shows flags bare and names its arguments in capitals."""

    def collect_usage_pieces(self, ctx: Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + [usage_name(p) for p in self.get_params(ctx) if isinstance(p, TyperArgument)]


class HelpGroup(_BareFlags, TyperGroup):
    """A command group whose help shows its flags (``--help``, ``--version``) bare."""
