"""A real OpenStack on 127.0.0.1 for the tests and for trying the program without a cloud.

One file per concern: layout (where things live), venv (the services' virtualenv), configuration
(the services' settings), processes (start/stop by PID file), services (the start order and
one-time set-up), operator (what an operator prepares; runs in the services' venv), cloud (up,
down, status, env). drivers/ is the small package installed into the services' venv.
"""
