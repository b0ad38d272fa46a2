"""Request and response bodies of the HTTP API, one module per resource; they are what
``/openapi.json`` publishes. Id patterns live in :mod:`.ids`, parameters in :mod:`.params`."""
