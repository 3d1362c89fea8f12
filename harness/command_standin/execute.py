"""Running one command as pulumi-command 1.2.1's `run` does
(provider/pkg/provider/local/commandOutputs.go:39-146 at v1.2.1).

- argv: `interpreter` when it has elements, else `/bin/sh -c`; the command is the last argument
  (:41-51); the program is looked up on the provider's own PATH, as Go's exec.Command does.
- working directory: `dir`, else the provider's (the engine starts it in the project directory) (:73-80).
- environment: the provider's own, then `environment`, then PULUMI_COMMAND_STDOUT / _STDERR with
  the previous outputs when they are not empty, unless addPreviousOutputInEnv is false (:81-95;
  names in util/util.go:29-30); a later entry wins, as Go's exec dedups.
- stdin: `stdin` when not empty, else nothing (:97-99).
- logging: each line of the logged streams goes to the engine as an ephemeral info message
  (util.LogOutput, util/util.go:32-53); `logging` unset logs both (logging.go:27-32).
- failure: `<exit error>: running <Go-quoted command>:\\n<stdout and stderr interleaved>` (:112-114).
- outputs: stdout and stderr with one trailing newline removed (:142-143).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

STDOUT_VARIABLE = "PULUMI_COMMAND_STDOUT"
STDERR_VARIABLE = "PULUMI_COMMAND_STDERR"


class CommandFailed(Exception):
    """The message the provider returns, as upstream words it."""


@dataclass
class Outcome:
    stdout: str
    stderr: str


class Running:
    """The processes in flight, so that Cancel and timeouts can kill them (middleware/cancel in
    pulumi-go-provider v1.3.0 cancels their contexts; exec.CommandContext then kills the process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processes: set[subprocess.Popen] = set()

    def add(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.add(process)

    def discard(self, process: subprocess.Popen) -> None:
        with self._lock:
            self._processes.discard(process)

    def kill_all(self) -> None:
        with self._lock:
            for process in self._processes:
                _kill(process)


def _kill(process: subprocess.Popen) -> None:
    try:
        process.kill()
    except ProcessLookupError:
        pass


def run(
    command: str,
    *,
    interpreter: Sequence[str] | None,
    dir: str | None,
    environment: Mapping[str, str] | None,
    stdin: str | None,
    previous_stdout: str,
    previous_stderr: str,
    add_previous_output: bool,
    log_stdout: bool,
    log_stderr: bool,
    log: Callable[[str], None],
    running: Running,
    timeout: float = 0,
) -> Outcome:
    argv = [*(interpreter if interpreter else ["/bin/sh", "-c"]), command]
    env = dict(os.environ)
    env.update(environment or {})
    if add_previous_output:
        if previous_stdout:
            env[STDOUT_VARIABLE] = previous_stdout
        if previous_stderr:
            env[STDERR_VARIABLE] = previous_stderr
    cwd = dir if dir is not None else os.getcwd()

    program = argv[0]
    if "/" not in program:
        found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
        if found is None:
            raise CommandFailed(f"exec: {go_quote(program)}: executable file not found in $PATH: running {go_quote(command)}:\n")
        program = found
    try:
        process = subprocess.Popen(
            argv,  # argv[0] as given, the program found as Go finds it
            executable=program,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except FileNotFoundError as error:
        where = f"chdir {cwd}" if not os.path.isdir(cwd) else f"fork/exec {program}"
        raise CommandFailed(f"{where}: {_errno_text(error)}: running {go_quote(command)}:\n") from None
    except PermissionError as error:
        raise CommandFailed(f"fork/exec {program}: {_errno_text(error)}: running {go_quote(command)}:\n") from None

    running.add(process)
    collected = _Collector(log_stdout, log_stderr, log)
    readers = [
        threading.Thread(target=collected.read, args=(process.stdout, "stdout"), daemon=True),
        threading.Thread(target=collected.read, args=(process.stderr, "stderr"), daemon=True),
    ]
    if stdin:
        readers.append(threading.Thread(target=_feed, args=(process.stdin, stdin.encode()), daemon=True))
    for reader in readers:
        reader.start()
    timer = None
    if timeout and timeout > 0:
        timer = threading.Timer(timeout, _kill, args=(process,))
        timer.start()
    try:
        status = process.wait()
        for reader in readers:
            reader.join()
    finally:
        if timer is not None:
            timer.cancel()
        running.discard(process)
    collected.flush()

    if status != 0:
        raise CommandFailed(f"{_exit_text(status)}: running {go_quote(command)}:\n{collected.combined()}")
    return Outcome(_trim(collected.text("stdout")), _trim(collected.text("stderr")))


class _Collector:
    """stdout, stderr, both interleaved in the order they were read, and the logged lines."""

    def __init__(self, log_stdout: bool, log_stderr: bool, log: Callable[[str], None]):
        self._lock = threading.Lock()
        self._chunks: dict[str, list[bytes]] = {"stdout": [], "stderr": []}
        self._both: list[bytes] = []
        self._logged = {"stdout": log_stdout, "stderr": log_stderr}
        self._pending = b""
        self._log = log

    def read(self, stream, name: str) -> None:
        while chunk := stream.read1(65536):
            with self._lock:
                self._chunks[name].append(chunk)
                self._both.append(chunk)
                if self._logged[name]:
                    self._pending += chunk
                    *lines, self._pending = self._pending.split(b"\n")
                    for line in lines:
                        self._emit(line)
        stream.close()

    def _emit(self, line: bytes) -> None:
        if line.endswith(b"\r"):  # bufio.ScanLines drops a trailing \r
            line = line[:-1]
        try:
            self._log(line.decode(errors="replace"))
        except Exception:  # noqa: BLE001 - logging never fails a command
            pass

    def flush(self) -> None:
        if self._pending:
            self._emit(self._pending)
            self._pending = b""

    def text(self, name: str) -> str:
        return b"".join(self._chunks[name]).decode(errors="replace")

    def combined(self) -> str:
        return b"".join(self._both).decode(errors="replace")


def _feed(pipe, data: bytes) -> None:
    try:
        pipe.write(data)
    except BrokenPipeError:
        pass
    finally:
        try:
            pipe.close()
        except BrokenPipeError:
            pass


def _trim(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


# Go's syscall.Signal names (zsignal_linux_amd64.go) for the signals a command commonly dies of.
_SIGNAL_NAMES = {
    signal.SIGHUP: "hangup",
    signal.SIGINT: "interrupt",
    signal.SIGQUIT: "quit",
    signal.SIGILL: "illegal instruction",
    signal.SIGTRAP: "trace/breakpoint trap",
    signal.SIGABRT: "aborted",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating point exception",
    signal.SIGKILL: "killed",
    signal.SIGUSR1: "user defined signal 1",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGUSR2: "user defined signal 2",
    signal.SIGPIPE: "broken pipe",
    signal.SIGALRM: "alarm clock",
    signal.SIGTERM: "terminated",
}


def _exit_text(status: int) -> str:
    """os/exec ExitError.Error(): `exit status N` or `signal: <name>`."""
    if status < 0:
        number = -status
        try:
            name = _SIGNAL_NAMES.get(signal.Signals(number), f"signal {number}")
        except ValueError:
            name = f"signal {number}"
        return f"signal: {name}"
    return f"exit status {status}"


def _errno_text(error: OSError) -> str:
    return (error.strerror or str(error)).lower()


def go_quote(text: str) -> str:
    """strconv.Quote, as Go's %q writes a string."""
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v", "\\": "\\\\", '"': '\\"'}
    out = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'
