"""``ace-workers tenant ...``: the teams sharing the fleet, what they own, their share and budgets.

A tenant owns skillbooks by name (``--skillbook``) or by name prefix (``--prefix``); a
skillbook no tenant owns belongs to ``default``. Its weight is its share of the fleet against
other tenants with work, ``--max-in-flight`` caps its samples in flight, and budgets cap what
its LLM calls may spend per UTC day and month.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..counts import counted
from ..distributed.store.keys import DEFAULT_TENANT
from ..distributed.tenancy.errors import InvalidTenantError
from ..distributed.tenancy.tenant_names import ALL_MODELS, BUDGET_ACTIONS, BUDGET_LIMITS
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .help import HelpCommand, HelpGroup
from .options import JsonOption, redis_settings
from .output import console, new_table, print_json, print_table, printable
from .service import open_service

# Types only: the Celery service is loaded when --fail-waiting has samples to fail; the
# registry (and redis) and the operations when a command runs.
if TYPE_CHECKING:
    from ..distributed.service import Service
    from ..distributed.tenancy.tenants import Budget, Tenant
    from ..operations import FleetClient
    from ..operations.tenants import TenantWork

__all__ = ["parse_budget", "tenant_app"]

tenant_app = typer.Typer(
    cls=HelpGroup,
    help="Tenants: the teams sharing the fleet, the skillbooks they own, their share and budgets.",
    no_args_is_help=True,
)

WHY = "tenants live in the fleet's shared Redis"
TenantArgument = Annotated[str, typer.Argument(help="The tenant's name: lowercase letters, digits, - and _.")]
SkillbookOption = Annotated[
    list[str] | None, typer.Option("--skillbook", help="A skillbook it owns by name (repeat for more).")
]
PrefixOption = Annotated[
    list[str] | None,
    typer.Option("--prefix", help="A skillbook name prefix it owns, e.g. 'acme-' (repeat for more)."),
]
WeightOption = Annotated[
    int | None, typer.Option("--weight", help="Its share against other tenants with work (1 to 1000).")
]
MaxInFlightOption = Annotated[
    int | None,
    typer.Option("--max-in-flight", help="Most of its samples in flight at once; 0 for no cap."),
]
RedactOption = Annotated[
    str | None,
    typer.Option(
        "--redact",
        help="What is redacted from its traces, as ACE_REDACT writes it: e.g. 'default,ipv4' or "
        "'off' or 'default,EMPLOYEE=EMP-[0-9]{6}'; 'fleet' goes back to ACE_REDACT (docs/redaction.md).",
    ),
]
# The --redact value that drops a tenant's own setting: its traces are redacted as ACE_REDACT says.
FLEET_REDACTION = "fleet"
OnBudgetOption = Annotated[
    str | None,
    typer.Option("--on-budget", help="When a budget is spent, samples 'wait' (deferred) or 'fail'."),
]
BudgetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--budget",
        help="MODEL:LIMIT=VALUE, e.g. '*:cost_per_day=5' or 'openai/gpt-4o:tokens_per_month=2000000'; "
        f"LIMIT is one of {', '.join(BUDGET_LIMITS)}; VALUE 'none' lifts it. '*' is every model together.",
    ),
]


def parse_budget(text: str, current: tuple[Budget, ...]) -> Budget:
    """The budget ``--budget MODEL:LIMIT=VALUE`` makes of the tenant's ``current`` budget for MODEL."""
    # The registry (and redis) and the operations load when a command runs, not for --help.
    from ..distributed.tenancy.tenants import Budget

    model, colon, setting = text.rpartition(":")
    limit, equals, value = setting.partition("=")
    if not colon or not equals or not model:
        raise typer.BadParameter(f"{text!r}: expected MODEL:LIMIT=VALUE, e.g. '*:cost_per_day=5'")
    if limit not in BUDGET_LIMITS:
        raise typer.BadParameter(f"{text!r}: LIMIT must be one of {', '.join(BUDGET_LIMITS)}")
    number: float | int | None
    if value == "none":
        number = None
    else:
        try:
            number = int(value) if limit.startswith("tokens") else float(value)
        except ValueError:
            kind = "a whole number of tokens" if limit.startswith("tokens") else "a number of USD"
            raise typer.BadParameter(f"{text!r}: VALUE must be {kind}, or 'none'") from None
    base = next((budget for budget in current if budget.model == model), Budget(model))
    try:
        changes: dict[str, Any] = {limit: number}
        return replace(base, **changes)
    except InvalidTenantError as exc:
        raise typer.BadParameter(f"{text!r}: {exc}") from None


@tenant_app.command("add", cls=HelpCommand)
def tenant_add(
    name: TenantArgument,
    skillbook: SkillbookOption = None,
    prefix: PrefixOption = None,
    weight: WeightOption = None,
    max_in_flight: MaxInFlightOption = None,
    on_budget: OnBudgetOption = None,
    budget: BudgetOption = None,
    redact: RedactOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Add a tenant owning the skillbooks and prefixes named, with its weight, cap and budgets."""
    from ..distributed.tenancy.tenants import Tenant
    from ..operations.tenants import add_tenant

    _valid_name(name)
    tenant = _tenant(
        Tenant(name),
        name=name,
        add_skillbooks=skillbook or [],
        add_prefixes=prefix or [],
        weight=weight,
        max_in_flight=max_in_flight,
        on_budget=on_budget,
        budgets=budget or [],
        redact=redact,
    )
    with open_command_fleet("tenant add", WHY) as fleet:
        add_tenant(fleet, principal_of(fleet, api_key), tenant)
        _release_waiting(fleet, tenant.name)
    _print_tenant(tenant, as_json, action="added")


@tenant_app.command("set", cls=HelpCommand)
def tenant_set(
    name: TenantArgument,
    skillbook: SkillbookOption = None,
    prefix: PrefixOption = None,
    remove_skillbook: Annotated[
        list[str] | None, typer.Option("--remove-skillbook", help="A skillbook it no longer owns by name.")
    ] = None,
    remove_prefix: Annotated[
        list[str] | None, typer.Option("--remove-prefix", help="A prefix it no longer owns.")
    ] = None,
    weight: WeightOption = None,
    max_in_flight: MaxInFlightOption = None,
    on_budget: OnBudgetOption = None,
    budget: BudgetOption = None,
    redact: RedactOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Change a tenant ('default' too): what it owns, its weight, cap, budgets, redaction; one atomic write.

    Samples waiting for a budget that this raises are sent again at once.
    """
    from ..operations.tenants import change_tenant

    _valid_name(name)
    with open_command_fleet("tenant set", WHY) as fleet:
        tenant = change_tenant(
            fleet,
            principal_of(fleet, api_key),
            name,
            lambda current: _tenant(
                current,
                name=name,
                add_skillbooks=skillbook or [],
                add_prefixes=prefix or [],
                remove_skillbooks=remove_skillbook or [],
                remove_prefixes=remove_prefix or [],
                weight=weight,
                max_in_flight=max_in_flight,
                on_budget=on_budget,
                budgets=budget or [],
                redact=redact,
            ),
        )
        released = _release_waiting(fleet, name)
    _print_tenant(tenant, as_json, action="changed", released=released)


@tenant_app.command("remove", cls=HelpCommand)
def tenant_remove(
    name: TenantArgument,
    drain: Annotated[
        bool,
        typer.Option(
            "--drain",
            help="Wait until none of its samples waits for budget or runs, then remove it "
            "(progress on stderr; Ctrl-C stops waiting and removes nothing).",
        ),
    ] = False,
    fail_waiting: Annotated[
        bool,
        typer.Option(
            "--fail-waiting",
            help="Fail its samples waiting for budget as dead letters that 'dead-letters retry' sends "
            "as the skillbooks' owner then; wait for its running ones; then remove it.",
        ),
    ] = False,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Remove a tenant: its skillbooks go back to 'default' (nothing in them is deleted).

    Refused (exit 4) while samples of it wait for budget or run: sent as a tenant that is gone,
    they would fail for good. --drain waits for them; --fail-waiting fails the waiting ones.
    """
    from ..operations.tenants import remove_tenant

    _valid_name(name)
    with open_command_fleet("tenant remove", WHY) as fleet, ExitStack() as stack:
        failer = _WaitingFailer(stack)
        removed = remove_tenant(
            fleet,
            principal_of(fleet, api_key),
            name,
            drain=drain,
            fail_waiting=failer if fail_waiting else None,
            progress=_progress_printer(),
        )
    if as_json:
        print_json({"name": name, "removed": removed, "failed_waiting": failer.failed})
        return
    if failer.failed:
        console.print(
            f"{counted(failer.failed, 'sample')} waiting for budget failed as dead letters "
            "(ace-workers dead-letters retry sends them as the skillbooks' owner)",
            markup=False,
        )
    if removed:
        console.print(f"tenant {name} removed; its skillbooks belong to 'default' now", markup=False)
    else:
        console.print(f"no tenant {name} was stored: nothing removed", markup=False)


class _WaitingFailer:
    """Fails a tenant's samples waiting for budget (tenant remove --fail-waiting); counts them.

    Failing a sample may start its batch's next epoch, which sends messages: the Celery service
    is opened on first use, once per command (``stack`` closes it).
    """

    def __init__(self, stack: ExitStack) -> None:
        self.stack = stack
        self.service: Service | None = None
        self.failed = 0

    def __call__(self, name: str) -> int:
        from ..distributed.worker.deferrals import fail_deferred

        if self.service is None:
            settings = redis_settings("tenant", WHY)
            self.service = self.stack.enter_context(
                open_service(settings, run_workers=False, learn_threads=1)
            )
        reason = (
            f"tenant {name!r} was removed while this sample waited for its budget; "
            "ace-workers dead-letters retry sends it again as its skillbook's owner"
        )
        failed = fail_deferred(self.service.dispatcher, name, reason)
        self.failed += failed
        return failed


def _progress_printer() -> Callable[[TenantWork], None]:
    """Tell what the removal waits for on stderr, a line each time it changes."""
    shown: list[TenantWork] = []

    def show(work: TenantWork) -> None:
        if shown and shown[-1] == work:
            return
        shown.append(work)
        typer.echo(
            f"tenant {work.name}: {counted(work.waiting, 'sample')} waiting for budget, "
            f"{work.running} running or queued; waiting until none (Ctrl-C stops, nothing removed)",
            err=True,
        )

    return show


@tenant_app.command("list", cls=HelpCommand)
def tenant_list(as_json: JsonOption = False, api_key: ApiKeyOption = None) -> None:
    """Every tenant with what it owns, its weight, cap and budgets ('default' always)."""
    from ..operations.tenants import list_tenants

    with open_command_fleet("tenant list", WHY) as fleet:
        shown = list_tenants(fleet, principal_of(fleet, api_key))
    if as_json:
        print_json([row.to_dict() for row in shown])
        return
    table = new_table(
        "tenant",
        "owns",
        "weight",
        "max in flight",
        "budgets",
        "on budget",
        "skillbooks now",
        wrap=("owns", "budgets"),
    )
    for row in shown:
        tenant = row.tenant
        table.add_row(
            printable(tenant.name),
            printable(_ownership(tenant)),
            str(tenant.weight),
            str(tenant.max_in_flight or "-"),
            printable(_budgets(tenant)),
            tenant.on_budget,
            str(len(row.owned)),
        )
    print_table(table)


@tenant_app.command("show", cls=HelpCommand)
def tenant_show(name: TenantArgument, as_json: JsonOption = False, api_key: ApiKeyOption = None) -> None:
    """One tenant: what it owns by name and prefix, the skillbooks that are its now, weight, budgets."""
    from ..operations.tenants import show_tenant

    _valid_name(name)
    with open_command_fleet("tenant show", WHY) as fleet:
        shown = show_tenant(fleet, principal_of(fleet, api_key), name)
    if as_json:
        print_json(shown.to_dict())
        return
    tenant, owned = shown.tenant, shown.owned
    console.print(f"tenant {printable(tenant.name)}", markup=False)
    console.print(f"  owns: {printable(_ownership(tenant))}", markup=False)
    console.print(f"  skillbooks now: {printable(', '.join(owned) or 'none')}", markup=False)
    console.print(f"  weight {tenant.weight}, max in flight {tenant.max_in_flight or 'no cap'}", markup=False)
    console.print(f"  budgets: {printable(_budgets(tenant))} (when spent: {tenant.on_budget})", markup=False)
    console.print(f"  redacts: {printable(_redaction(tenant))}", markup=False)


def _valid_name(name: str) -> bool:
    from ..distributed.tenancy.tenants import Tenant

    try:
        Tenant(name)
    except InvalidTenantError as exc:
        raise typer.BadParameter(str(exc), param_hint="NAME") from None
    return True


def _tenant(
    current: Tenant,
    *,
    name: str,
    add_skillbooks: list[str],
    add_prefixes: list[str],
    remove_skillbooks: list[str] | None = None,
    remove_prefixes: list[str] | None = None,
    weight: int | None,
    max_in_flight: int | None,
    on_budget: str | None,
    budgets: list[str],
    redact: str | None = None,
) -> Tenant:
    """``current`` with the command's changes; a usage error naming the option that is wrong."""
    if on_budget is not None and on_budget not in BUDGET_ACTIONS:
        raise typer.BadParameter(f"use {' or '.join(BUDGET_ACTIONS)}", param_hint="--on-budget")
    missing = sorted(set(remove_skillbooks or []) - set(current.skillbooks))
    if missing:
        raise typer.BadParameter(f"tenant {name} does not own {missing}", param_hint="--remove-skillbook")
    skillbooks = [s for s in current.skillbooks if s not in (remove_skillbooks or [])]
    prefixes = [p for p in current.prefixes if p not in (remove_prefixes or [])]
    changes: dict[str, Any] = {
        "skillbooks": tuple(dict.fromkeys([*skillbooks, *add_skillbooks])),
        "prefixes": tuple(dict.fromkeys([*prefixes, *add_prefixes])),
    }
    if weight is not None:
        changes["weight"] = weight
    if max_in_flight is not None:
        changes["max_in_flight"] = max_in_flight or None
    if on_budget is not None:
        changes["on_budget"] = on_budget
    if redact is not None:
        changes["redact"] = None if redact.strip() == FLEET_REDACTION else redact
    try:
        tenant = replace(current, name=name, **changes)
        for text in budgets:
            tenant = tenant.with_budget(parse_budget(text, tenant.budgets))
    except InvalidTenantError as exc:
        hint = "--redact" if exc.field == "redact" else None
        raise typer.BadParameter(str(exc), param_hint=hint) from None
    return tenant


def _release_waiting(fleet: FleetClient, name: str) -> int:
    """Send on the samples of ``name`` that waited for a budget the change raised; how many.

    Only when some wait: sending needs the Celery service (until the dispatcher takes its place).
    """
    from ..operations.tenants import waiting_for_budget

    if not waiting_for_budget(fleet, name):
        return 0
    from ..distributed.worker.deferrals import release_deferred

    settings = redis_settings("tenant", WHY)
    with open_service(settings, run_workers=False, learn_threads=1) as service:
        return release_deferred(service.dispatcher, name)


def _ownership(tenant: Tenant) -> str:
    named = [*tenant.skillbooks, *(f"{prefix}*" for prefix in tenant.prefixes)]
    if named:
        return ", ".join(named)
    return "every skillbook no other tenant owns" if tenant.name == DEFAULT_TENANT else "nothing"


def _budgets(tenant: Tenant) -> str:
    parts = []
    for budget in tenant.budgets:
        limits = ", ".join(f"{key}={value}" for key, value in budget.to_dict().items() if key != "model")
        parts.append(f"{'all models' if budget.model == ALL_MODELS else budget.model}: {limits}")
    return "; ".join(parts) or "none"


def _redaction(tenant: Tenant) -> str:
    return "as ACE_REDACT says" if tenant.redact is None else tenant.redact


def _print_tenant(tenant: Tenant, as_json: bool, *, action: str, released: int = 0) -> None:
    if as_json:
        print_json({**tenant.to_dict(), "released": released})
        return
    console.print(f"tenant {tenant.name} {action}: owns {printable(_ownership(tenant))}", markup=False)
    console.print(
        f"  weight {tenant.weight}, max in flight {tenant.max_in_flight or 'no cap'}, "
        f"budgets: {printable(_budgets(tenant))} (when spent: {tenant.on_budget})",
        markup=False,
    )
    console.print(f"  redacts: {printable(_redaction(tenant))}", markup=False)
    if released:
        console.print(f"{counted(released, 'sample')} waiting for budget sent again", markup=False)
