"""Who a command acts as: the operator (who holds the Redis URL), or an API key (``--api-key``).

With a key (the flag, else ``ACE_API_KEY``) a command gets exactly what the console and MCP
give that key: its tenant's skillbooks, up to its role. Without one, the operator acts, as
``--actor`` (or ``ACE_ACTOR``) names them, ``user:<login name>`` by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..distributed.store.actors import actor_from_option

if TYPE_CHECKING:
    from ..operations import FleetClient, Principal

__all__ = ["ApiKeyOption", "principal_of"]

ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="Act as this API key (its tenant and role), as the console and MCP would [ACE_API_KEY].",
        show_default=False,
    ),
]


def principal_of(fleet: FleetClient, api_key: str | None, actor: str | None = None) -> Principal:
    """The key's principal for ``api_key`` (else ACE_API_KEY); else the operator as ``actor``.

    Raises:
        InvalidApiKeyError: the key is unknown or revoked; it names ``--api-key`` or ACE_API_KEY.
        typer.BadParameter: ``actor`` is not an actor's name.
    """
    from ..distributed.tenancy.errors import InvalidApiKeyError
    from ..operations import operator, principal_for_key

    secret, source = (api_key, "--api-key") if api_key else (fleet.settings.api_key, "ACE_API_KEY")
    if secret:
        try:
            return principal_for_key(fleet.api_keys, secret)
        except InvalidApiKeyError as exc:  # which of the two the user must fix
            raise exc.given_by(source) from None
    try:
        return operator(actor_from_option(actor))
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--actor") from None
