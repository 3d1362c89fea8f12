"""The local cloud's drivers and WSGI entries (harness/localcloud): see each module."""
