"""The memory service: REST and MCP over many users' homes, with the model kept warm.

A face, like the CLI: it translates HTTP and MCP calls into the core's use cases (``process_turns``
and ``remember``, ``search``, ``list_memories`` / ``get_memory``, ``forget`` / ``unforget``,
``home_status``) and their results and errors into JSON, and adds no rule of its own. One
process holds the embedding model once for every user; each user's memory is a complete home
under the root (``core/ops/users.py``), opened on first use and kept in a bounded cache.

* ``config.py``: the server's settings (``ServerConfig``): the root, the address, the token
  file, the limits.
* ``auth.py``: the token file (a token's hash -> one user or admin) and who may reach what.
* ``errors.py``: every error as JSON ``{error, detail, fix}``.
* ``limits.py``: the ASGI guards in front of everything: the token checked before anything is
  held, requests in flight per client and in all, the body's size and time limit, and the
  loopback guard of a server without tokens.
* ``streams.py``: the MCP event streams (``GET /mcp``), a bounded pool per user.
* ``protocol.py``: uvicorn's HTTP protocols, answering a request they cannot parse in JSON.
* ``idempotency.py``: ``Idempotency-Key``, the records of a home's keyed writes.
* ``home_cache.py``: the bounded cache of open homes, each with its reader and its writer.
* ``lane.py``: each user's write lane (writes of one user go one group at a time, through the
  core's locks; different users write in parallel), which keeps the home's table maintained.
* ``service.py``: the operations both faces share, run off the event loop.
* ``schemas.py`` and ``routes.py``: the REST API under ``/v1``; ``mcp_tools.py``: the MCP tools.
* ``app.py``: the ASGI app (FastAPI, MCP mounted at ``/mcp``); ``run.py``: ``memory-assets serve``
  (uvicorn) and ``memory-assets mcp`` (stdio).
"""
