"""``ace-workers key create|list|revoke``: API keys scoped to a tenant and a role.

A key names a tenant (or ``*``: the whole fleet, for operators) and a role: read < learn <
review < admin, each including the ones before. The MCP HTTP server, the console and
producers (ACE_API_KEY) accept it; Redis keeps only its hash, so its secret is printed
once, by ``key create``.
"""

from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ..distributed.tenancy.errors import TenancyError, UnknownTenantError
from ..distributed.tenancy.roles import ALL_TENANTS, ROLES, validate_role
from .access import ApiKeyOption, principal_of
from .fleet import open_command_fleet
from .help import HelpCommand, HelpGroup
from .options import ActorOption, JsonOption, actor_or_fail
from .output import new_table, print_json, print_table, printable

if TYPE_CHECKING:
    from ..distributed.tenancy.api_keys import ApiKey

__all__ = ["key_app"]

key_app = typer.Typer(
    cls=HelpGroup,
    help="API keys scoped to a tenant's skillbooks and a role (read, learn, review, admin).",
    no_args_is_help=True,
)

WHY = "API keys live in the fleet's shared Redis, where the MCP server and the console check them"
RoleOption = Annotated[
    str,
    typer.Option("--role", help=f"What the key may do: {', '.join(ROLES)} (each includes the ones before)."),
]


@key_app.command("create", cls=HelpCommand)
def key_create(
    tenant: Annotated[
        str, typer.Argument(help="The tenant whose skillbooks the key reaches, or '*' for the whole fleet.")
    ],
    role: RoleOption,
    note: Annotated[str, typer.Option("--note", help="What the key is for (shown by key list).")] = "",
    actor: ActorOption = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """Make a key for TENANT with ROLE; its secret is printed once and cannot be shown again."""
    from ..distributed.tenancy.tenants import validate_tenant_name
    from ..operations.keys import create_key

    try:
        validate_role(role)
        if tenant != ALL_TENANTS:
            validate_tenant_name(tenant)
    except (TenancyError, ValueError) as exc:  # InvalidTenantError is a ValueError
        raise typer.BadParameter(str(exc)) from None
    actor_or_fail(actor)  # checked before anything connects
    with open_command_fleet("key create", WHY) as fleet:
        try:
            record, secret = create_key(fleet, principal_of(fleet, api_key, actor), tenant, role, note=note)
        except UnknownTenantError as exc:
            raise typer.BadParameter(str(exc), param_hint="TENANT") from None
    if as_json:
        print_json({**record.to_dict(), "secret": secret})
        return
    scope = "every tenant (fleet-wide)" if tenant == ALL_TENANTS else f"tenant {tenant!r}"
    typer.echo(f"key {record.id} made: role {role!r} on {scope}")
    typer.echo(secret)
    typer.echo("Keep this secret now: it cannot be shown again (Redis keeps only its hash).")


@key_app.command("list", cls=HelpCommand)
def key_list(
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant's keys.")] = None,
    as_json: JsonOption = False,
    api_key: ApiKeyOption = None,
) -> None:
    """The keys (never their secrets): id, tenant, role, note, when and by whom made."""
    from ..operations.keys import list_keys

    with open_command_fleet("key list", WHY) as fleet:
        keys = list_keys(fleet, principal_of(fleet, api_key), tenant)
    if as_json:
        print_json({"keys": [key.to_dict() for key in keys]})
        return
    if not keys:
        typer.echo(
            "no API keys"
            + (f" for tenant {tenant!r}" if tenant else "")
            + f" (create one: ace-workers key create {shlex.quote(tenant or '*')} --role read)"
        )
        return
    print_table(_table(keys))


@key_app.command("revoke", cls=HelpCommand)
def key_revoke(
    key_id: Annotated[str, typer.Argument(metavar="ID", help="The key's id (key list).")],
    api_key: ApiKeyOption = None,
) -> None:
    """Revoke key ID: it authenticates nobody from now on."""
    from ..operations.keys import revoke_key

    with open_command_fleet("key revoke", WHY) as fleet:
        revoked = revoke_key(fleet, principal_of(fleet, api_key), key_id)
    if not revoked:
        raise typer.BadParameter(
            f"no API key {key_id!r} (ace-workers key list shows the keys there are)", param_hint="ID"
        )
    typer.echo(f"key {key_id} revoked")


def _table(keys: list[ApiKey]) -> Table:
    table = new_table("id", "tenant", "role", "note", "created", "by", wrap=("note",))
    for key in keys:
        made = time.strftime("%Y-%m-%d %H:%M", time.gmtime(key.created_at))
        table.add_row(
            key.id, key.tenant, key.role, printable(key.note), f"{made} UTC", printable(key.created_by)
        )
    return table
