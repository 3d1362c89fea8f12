"""WSGI entries for gunicorn: `localcloud_drivers.wsgi:<service>`.

These releases ship the APIs as WSGI applications only. Their modules parse the process's
arguments with oslo.config when imported, and under gunicorn those are gunicorn's own (neutron
and cinder refuse them): the entry puts in the service's own arguments (LOCALCLOUD_ARGS,
e.g. `--config-file ...`) before importing the application.
"""

import importlib
import os
import shlex
import sys

MODULES = {
    "keystone": "keystone.wsgi.api",
    "placement": "placement.wsgi.api",
    "glance": "glance.wsgi.api",
    "nova": "nova.wsgi.osapi_compute",
    "neutron": "neutron.wsgi.api",
    "cinder": "cinder.wsgi.api",
    "octavia": "octavia.wsgi.api",
    "manila": "manila.wsgi.api",
}


def __getattr__(name):
    if name not in MODULES:
        raise AttributeError(name)
    sys.argv = [name, *shlex.split(os.environ.get("LOCALCLOUD_ARGS", ""))]
    return importlib.import_module(MODULES[name]).application
