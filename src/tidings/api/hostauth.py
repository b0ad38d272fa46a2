"""The host application's sign-in as tidings' users, for tidings mounted inside another ASGI
application (``create_app(..., user_resolver=current_user)``, docs/mount.md).

The resolver is a FastAPI dependency of the host's — a function of the request, its cookies
or headers, or of the host's own dependencies — that returns the signed-in user's id, or None
for a caller it does not know. It stands in for :func:`tidings.api.deps.principal`:

- a server key (``Authorization: Bearer <TIDINGS_API_KEY>``) is the server, whatever the
  resolver says: publishing, types and acting on any user stay with the application's
  backend, never with a browser's session;
- otherwise the user the resolver names is the caller, with a user token's rights (its own
  ``/v1/me/…`` and ``/v1/users/{its id}/…``) and its request rate;
- a caller the resolver does not know (None) is authenticated as without one: tidings' own
  user tokens still work when ``TIDINGS_TOKEN_SECRET`` is set, and anything else is 401.
"""

# No ``from __future__ import annotations``: FastAPI reads the dependency's annotations at
# run time, and one of them names the resolver, a local of :func:`principal_with`.
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request

from tidings.api.auth import Principal
from tidings.api.deps import State, principal, refuse_url_token
from tidings.api.errors import ApiError
from tidings.api.ratelimit import admit
from tidings.api.schemas import ids

UserResolver = Callable[..., Any]  # a FastAPI dependency: (…) -> str | None, or async


def principal_with(resolver: UserResolver) -> Callable[..., Awaitable[Principal]]:
    """The ``principal`` dependency that asks ``resolver`` first (see the module's text)."""

    async def host_principal(
            request: Request, state: State,
            user: Annotated[Any, Depends(resolver)],
            authorization: Annotated[str | None, Header()] = None,
            access_token: Annotated[str | None, Query(max_length=4096,
                                                      include_in_schema=False)] = None,
    ) -> Principal:
        if user is None or state.auth.server_of(authorization) is not None:
            return await principal(request, state, authorization, access_token)
        refuse_url_token(request, access_token)
        user_id = str(user)
        if not ids.matches(ids.USER_ID_BARE, user_id):
            raise ApiError(401, "the host application's user id is not a valid tidings user "
                                "id (1-255 characters of A-Z a-z 0-9 _ . : @ -)",
                           headers={"WWW-Authenticate": "Bearer"})
        admit(state.user_limiter, user_id, 1, what="requests for this user",
              setting="TIDINGS_USER_RATE_LIMIT")
        return Principal("user", user=user_id)

    return host_principal
