"""The local cloud's drivers and WSGI entries (tools/localcloud): see each module."""
