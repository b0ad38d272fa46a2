"""tidings in Django's admin: its event types, one user's inbox and preferences, and the jobs
that failed for good (with retry). Pages of their own over the library API, each behind the
Django permission of its unmanaged model (``tidings.view_eventtype`` and so on)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from tidings.contrib.django.models import EventType, FailedJob, Inbox
from tidings.contrib.django.runtime import get_tidings
from tidings.exceptions import TidingsError


class _Page(admin.ModelAdmin):
    """A read-only admin entry whose list is a page of its own."""

    template = ""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def page(self, request: HttpRequest) -> Any:
        """The template's context, or a response (a redirect after a POST)."""
        raise NotImplementedError

    def changelist_view(self, request: HttpRequest,
                        extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_or_change_permission(request):
            from django.core.exceptions import PermissionDenied
            raise PermissionDenied
        answer = self.page(request)
        if isinstance(answer, HttpResponse):
            return answer
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "title": self.model._meta.verbose_name_plural.capitalize(), **answer,
                   **(extra_context or {})}
        return TemplateResponse(request, self.template, context)


@admin.register(EventType)
class EventTypeAdmin(_Page):
    template = "admin/tidings/event_types.html"

    def page(self, request: HttpRequest) -> dict[str, Any]:
        types = sorted(get_tidings().types, key=lambda t: t.name)
        return {"types": [{
            "name": t.name, "label": t.label or "", "category": t.category,
            "section": t.section, "priority": t.priority, "bundle": t.bundle,
            "channels": ", ".join(t.channels), "audience": ", ".join(t.audience),
            "mandatory": t.mandatory} for t in types]}


@admin.register(Inbox)
class InboxAdmin(_Page):
    template = "admin/tidings/inbox.html"

    def page(self, request: HttpRequest) -> dict[str, Any]:
        user = request.GET.get("user", "").strip()
        found: dict[str, Any] = {"user": user}
        if not user:
            return found
        tidings = get_tidings()
        try:
            page = tidings.notifications(user, limit=50)
            found["unread"] = tidings.unread_count(user).display
            found["preferences"] = json.dumps(tidings.get_preferences(user), indent=2,
                                              sort_keys=True)
        except TidingsError as exc:
            found["error"] = str(exc)
            return found
        found["items"] = [{
            "id": n.id, "title": n.title, "type": n.type, "count": n.count, "read": n.read,
            "created_at": n.created_at, "link": n.link or ""} for n in page.items]
        return found


@admin.register(FailedJob)
class FailedJobAdmin(_Page):
    template = "admin/tidings/failed_jobs.html"

    def page(self, request: HttpRequest) -> Any:
        queue = get_tidings().queue
        if request.method == "POST":
            if not self.has_change_permission(request):
                from django.core.exceptions import PermissionDenied
                raise PermissionDenied
            job = request.POST.get("job", "")
            if job.isdigit() and queue.retry(int(job)):
                messages.success(request, f"Job {job} is queued again.")
            else:
                messages.error(request, f"Job {job!r} has no final failure to retry.")
            return HttpResponseRedirect(request.path)
        return {"can_retry": self.has_change_permission(request), "failures": [{
            "job": f.job_id, "func": f.func, "attempt": f.attempt, "error": f.error,
            "args": json.dumps(f.args, sort_keys=True)[:300],
            "failed_at": datetime.fromtimestamp(f.failed_at / 1e6, UTC).isoformat(
                timespec="seconds")} for f in queue.failures(100, final_only=True)]}
