"""The web inbox at ``/`` and the embeddable ``/tidings-bell.js``: static files, no build step."""

from importlib import resources

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

WEB = resources.files("tidings.api") / "web"


def mount(app: FastAPI) -> None:
    folder = str(WEB)

    @app.get("/", include_in_schema=False)
    async def inbox() -> FileResponse:
        return FileResponse(f"{folder}/index.html", media_type="text/html",
                            headers={"Cache-Control": "no-cache"})

    @app.get("/tidings-bell.js", include_in_schema=False)
    async def bell() -> FileResponse:
        return FileResponse(f"{folder}/tidings-bell.js", media_type="text/javascript",
                            headers={"Access-Control-Allow-Origin": "*",
                                     "Cache-Control": "no-cache"})

    app.mount("/static", StaticFiles(directory=folder), name="static")
