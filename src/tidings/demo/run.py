"""`tidings demo`: a wiki on SQLite, served with its web inbox, publishing events as you watch."""

from __future__ import annotations

import json
import random
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from tidings.config import Config
from tidings.demo import USERS, VIEWERS, build_world, events, wiki_types
from tidings.domain.events import Event
from tidings.engine import Tidings
from tidings.exceptions import ConfigError

if TYPE_CHECKING:
    from fastapi import FastAPI

TOKEN_TTL = 30 * 86400


def _secrets(data_dir: Path) -> dict[str, str]:
    """The demo's server key and token secret, kept so a second run resumes sign-ins."""
    path = data_dir / "secrets.json"
    data: dict[str, str] = json.loads(path.read_text()) if path.exists() else {
        "api_key": secrets.token_urlsafe(24), "token_secret": secrets.token_urlsafe(32)}
    if "vapid_private_key" in data:
        return data
    from tidings.channels.push.keys import generate

    data["vapid_private_key"] = generate()[0]  # Web Push ("Enable push" in preferences)
    path.write_text(json.dumps(data))
    path.chmod(0o600)
    return data


def open_world(data_dir: Path) -> Tidings:
    data_dir.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{(data_dir / 'tidings.db').resolve()}"
    config = Config.from_env(database_url=url)
    if not config.vapid_private_key:  # the demo's own key, unless TIDINGS_VAPID_PRIVATE_KEY
        config = Config.from_env(database_url=url,
                                 vapid_private_key=_secrets(data_dir)["vapid_private_key"])
    tidings = Tidings(config, types=wiki_types())
    tidings.migrate()
    for event_type in wiki_types():
        tidings.define_type(event_type)
    build_world(tidings, random.Random(7))
    return tidings


def _bind(host: str, port: int) -> socket.socket:
    """The demo's listening socket, bound before anything is printed or published."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another port "
                          f"with --port, e.g. tidings demo --port {port + 1}") from None
    listener.listen(128)
    return listener


def describe(event: Event) -> str:
    """One line for the terminal per published event."""
    to = f" → {', '.join(event.recipients)}" if event.recipients else ""
    where = f" {event.object}" if event.object else ""
    return f"{time.strftime('%H:%M:%S')}  {event.actor} {event.type}{where}{to}"


def print_inboxes(console: Console, tidings: Tidings) -> None:
    for user in VIEWERS:
        count = tidings.unread_count(user)
        table = Table(title=f"{user}'s inbox — {count.display} unread", title_justify="left")
        table.add_column("", width=1)
        table.add_column("notification")
        table.add_column("section")
        table.add_column("n", justify="right")
        for item in tidings.notifications(user, limit=6).items:
            table.add_row("•" if not item.read else "", item.title, item.section, str(item.count))
        console.print(table)


def demo_app(tidings: Tidings, keys: dict[str, str]) -> tuple[list[tuple[str, str]], FastAPI]:
    """The users' sign-in tokens, and the app: the library's, plus the demo wiki's pages."""
    from tidings.api.app import create_app
    from tidings.api.auth import Authenticator
    from tidings.demo.wiki import serve_wiki

    auth = Authenticator((keys["api_key"],), keys["token_secret"])
    tokens = [(user, auth.mint(user, TOKEN_TTL)[0]) for user in USERS]
    app = create_app(tidings, api_keys=(keys["api_key"],), token_secret=keys["token_secret"],
                     run_worker=True, stream_interval=0.5, demo_users=tokens)
    serve_wiki(app)
    return tokens, app


def run(*, data_dir: Path, host: str, port: int, burst: int, interval: float,
        duration: float | None, seed: int | None, console: Console) -> None:
    """Publish a burst, serve the API and web inbox, and keep publishing until Ctrl-C."""
    import uvicorn

    listener = _bind(host, port)  # first: a busy port is said before anything else happens
    tidings = open_world(data_dir)
    keys = _secrets(data_dir)
    rng = random.Random(seed)
    stream = events(rng)
    with console.status("publishing wiki events…"):
        for _ in range(burst):
            tidings.publish(next(stream))
        tidings.run_jobs()
    print_inboxes(console, tidings)

    tokens, app = demo_app(tidings, keys)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                           lifespan="on"))
    stop = threading.Event()

    def publish_forever() -> None:
        while not stop.wait(interval * rng.uniform(0.5, 1.5)):
            event = next(stream)
            try:
                tidings.publish(event)
            except Exception as exc:  # keep the demo going through a hiccup
                console.print(f"[yellow]publish failed: {exc}[/yellow]")
            else:
                console.print(describe(event), highlight=False)

    def stop_after() -> None:
        if duration is not None and not stop.wait(duration):
            server.should_exit = True

    base = f"http://{host}:{port}"
    console.print(f"\n[bold]tidings demo[/bold] at [link={base}/]{base}/[/link] "
                  f"(store {data_dir / 'tidings.db'})")
    for user, token in tokens:
        if user in VIEWERS:
            console.print(f"  sign in as {user}: {base}/#token={token}", soft_wrap=True)
    console.print(f"  API key: {keys['api_key']}   (e.g. curl -H 'Authorization: Bearer "
                  f"{keys['api_key']}' {base}/v1/users/bob/notifications)", soft_wrap=True)
    console.print(f"Publishing a wiki event every ~{interval:g} s. Ctrl-C stops; run it again "
                  "to resume.")
    threads = [threading.Thread(target=publish_forever, daemon=True),
               threading.Thread(target=stop_after, daemon=True)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    try:
        server.run(sockets=[listener])
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)
        tidings.close()
        console.print(f"demo stopped after {time.monotonic() - started:.0f} s")
