"""``ace-workers tenant usage``: what each tenant spent against its budgets, and what waits for budget.

root.py lists it in the ``tenant`` group.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer

from ..counts import counted
from ..distributed.tenancy.tenant_names import ALL_MODELS, validate_tenant_name
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .options import JsonOption
from .output import console, new_table, print_json, print_table, printable

if TYPE_CHECKING:
    from ..distributed.tenancy.usage import UsageReport, WindowRow

__all__ = ["usage_command"]

COLUMNS = ("model", "window", "tokens", "of", "used", "cost (USD)", "of", "used", "requests", "resets")


def usage_command(
    tenant: Annotated[
        str | None, typer.Argument(help="One tenant; every tenant (and 'default') when left out.")
    ] = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Spend per tenant and model (tokens, cost, requests) against its budgets per day and month."""
    from ..operations.tenants import tenant_usage  # the registry loads when the command runs

    if tenant is not None:
        try:
            validate_tenant_name(tenant)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="TENANT") from None
    with open_command_fleet("tenant usage", "spend and tenants live in the fleet's shared Redis") as fleet:
        report = tenant_usage(fleet, principal_of(fleet, api_key), tenant)
    if as_json:
        print_json(report.to_dict())
        return
    _print(report)


def _print(report: UsageReport) -> None:
    for tenant in report.tenants:
        waiting = (
            f"{counted(tenant.deferred, 'sample')} waiting for budget"
            if tenant.deferred
            else "no sample waiting"
        )
        console.print(
            f"tenant {printable(tenant.tenant)} (when a budget is spent: {tenant.on_budget}): {waiting}",
            markup=False,
        )
        if not tenant.rows:
            console.print("  no budget set and nothing spent", markup=False)
            continue
        table = new_table(*COLUMNS)
        for row in tenant.rows:
            table.add_row(*_cells(row))
        print_table(table)


def _cells(row: WindowRow) -> list[str]:
    model = "all models" if row.model == ALL_MODELS else printable(row.model)
    return [
        model,
        row.window,
        f"{row.tokens:,}",
        "-" if row.token_budget is None else f"{row.token_budget:,}",
        _percent(row.token_share),
        f"{row.cost:.4f}",
        "-" if row.cost_budget is None else f"{row.cost_budget:g}",
        _percent(row.cost_share),
        f"{row.requests:,}",
        datetime.fromtimestamp(row.resets_at, UTC).strftime("%Y-%m-%d %H:%M UTC"),
    ]


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"
