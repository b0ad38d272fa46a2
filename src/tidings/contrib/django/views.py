"""A view that hands the signed-in user a token for the tidings API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from tidings.contrib.django.runtime import mint_token, user_id


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token(request: HttpRequest) -> JsonResponse:
    """``{"token": ..., "user": ..., "expires_at": unix seconds}`` for ``request.user``."""
    value, expires = mint_token(request.user)
    return JsonResponse({"token": value, "user": user_id(request.user), "expires_at": expires})
