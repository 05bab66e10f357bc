"""The web console (``ace-workers console``, extra ``console``): what the fleet learned, and steering it.

A Starlette application on the fleet's Redis. Each area (skillbooks, history,
review, evaluations, batches, fleet, tenants) serves every page twice, as HTML and as
JSON under ``/api/``, from one view function (views.py); every state change is
a POST behind the CSRF token, refused in ``--read-only`` mode, and written to
the audit log (audit.py). Credentials, the Host check and the security headers
are the gate's (security.py, access.py).
"""

from .access import ConsoleAccess, Principal
from .errors import (
    BadRequestError,
    ConflictError,
    ConsoleRequestError,
    ConsoleSettingError,
    ForbiddenError,
    NotFoundError,
)

__all__ = [
    # construction (build_console_app lives in .app: importing it needs the extra)
    "ConsoleAccess",
    "Principal",
    # errors
    "ConsoleSettingError",
    "ConsoleRequestError",
    "BadRequestError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
]
