"""A small wiki world for `tidings demo`: users, pages, watchers, follows and realistic events."""

from __future__ import annotations

import random
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

from tidings.domain.events import Event
from tidings.domain.types import EventType, load_types_file
from tidings.engine import Tidings

USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
PAGES = ["San_Francisco", "Golden_Gate_Bridge", "Alcatraz_Island", "Cable_car", "Fog",
         "Mission_District", "Sourdough"]
VIEWERS = ["bob", "carol", "dave"]
SUMMARIES = ["typo", "copyedit", "+ref", "rv vandalism"]


def wiki_types() -> list[EventType]:
    with resources.as_file(resources.files("tidings.demo") / "wiki.toml") as path:
        return load_types_file(Path(path))


def build_world(tidings: Tidings, rng: random.Random) -> None:
    """Watchers and follows; idempotent, so a second run resumes the same world."""
    for user in USERS:
        tidings.add_user(user)
    for user in USERS:
        for page in rng.sample(PAGES, 3):
            tidings.subscribe(user, "*", f"page:{page}")
        tidings.subscribe(user, "*", f"page:User_talk:{user}")
        for other in rng.sample([u for u in USERS if u != user], 3):
            tidings.follow(user, other)
    for user in VIEWERS:
        tidings.subscribe(user, "page-linked", "page:San_Francisco")
        for other in VIEWERS:  # the signed-in viewers follow one another, so each one's
            if other != user:  # Following page fills as the others edit
                tidings.follow(user, other)


VIEWER_SHARE = 0.4  # of the events with recipients: aimed at a signed-in viewer


def events(rng: random.Random) -> Iterator[Event]:
    """An endless stream of wiki events in a realistic mix; a share of them is aimed at the
    viewers whose sign-in links the demo prints, so their bells move within seconds. Each
    carries its actor's picture (``avatar_url``), which the inbox shows."""
    while True:
        actor = rng.choice(USERS)
        others = [u for u in USERS if u != actor]
        viewers = [u for u in VIEWERS if u != actor]
        if rng.random() < VIEWER_SHARE:
            others = viewers
        page = rng.choice(PAGES)
        kind = rng.choices(["link", "mention", "talk", "revert", "thanks", "edit"],
                           [30, 15, 15, 10, 10, 20])[0]
        face = {"avatar_url": f"/demo/avatars/{actor}.svg"}  # served by the demo (wiki.py)
        if kind == "link":
            source = rng.choice([p for p in PAGES if p != page]).replace("_", " ")
            yield Event("page-linked", actor=actor, object=f"page:{page}",
                        payload={"from": source, **face})
        elif kind == "mention":
            yield Event("mention", actor=actor, object=f"page:{page}",
                        recipients=rng.sample(others, min(2, len(others))), payload=face)
        elif kind == "talk":
            target = rng.choice(others)
            yield Event("edit-user-talk", actor=actor, object=f"page:User_talk:{target}",
                        recipients=[target], payload={"summary": "Re: your last edit", **face})
        elif kind == "revert":
            yield Event("reverted", actor=actor, object=f"page:{page}",
                        recipients=[rng.choice(others)], payload=face)
        elif kind == "thanks":
            yield Event("thank-you-edit", actor=actor, object=f"page:{page}",
                        recipients=[rng.choice(others)], payload=face)
        else:
            yield Event("page-edited", actor=actor, object=f"page:{page}",
                        payload={"summary": rng.choice(SUMMARIES), **face})
