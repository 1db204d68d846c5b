"""`make run`'s server, started as `make run` starts it, with everything it prints kept.

The command is `.venv/bin/runnel serve` from the checkout's root, with no `RUNNEL_*`
variable but the data directory (no database, no secret: the embedded default) and
`--port 0`, so parallel runs never race for a port. Its stdout and stderr are one
stream, as on a terminal; `printed()` is all of it so far, the banner included.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).parents[2]
RUNNEL = REPO / ".venv" / "bin" / "runnel"
BANNER_START = "Runnel listening on "
BANNER_END = "  curl "
START_SECONDS = 120.0
STOP_SECONDS = 20.0


def without_runnel_variables(**variables: str) -> dict[str, str]:
    """This process's environment without any `RUNNEL_*` variable, plus `variables`."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("RUNNEL_")}
    return {**kept, **variables}


class MakeRun:
    def __init__(self, process: subprocess.Popen[str], data_dir: Path) -> None:
        self.process = process
        self.data_dir = data_dir
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, data_dir: Path, *args: str) -> MakeRun:
        """`runnel serve --port 0 ARGS` on `data_dir`; returns at once (see `banner`)."""
        process = subprocess.Popen(
            [str(RUNNEL), "serve", "--port", "0", *args], cwd=REPO, text=True,
            env=without_runnel_variables(RUNNEL_DATA_DIR=str(data_dir)),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        return cls(process, data_dir)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def printed(self) -> str:
        return "\n".join(self.lines)

    def banner(self) -> list[str] | None:
        """The banner's lines once it is printed; None if the process ended without it."""
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            lines = list(self.lines)
            starts = [at for at, line in enumerate(lines) if line.startswith(BANNER_START)]
            if starts:
                ends = [at for at in range(starts[0], len(lines))
                        if lines[at].startswith(BANNER_END)]
                if ends:
                    return lines[starts[0]:ends[0] + 1]
            if self.process.poll() is not None:
                self._reader.join(STOP_SECONDS)
                return None
            time.sleep(0.1)
        return None

    def before_banner(self) -> list[str]:
        lines = list(self.lines)
        return lines[:next((at for at, line in enumerate(lines)
                            if line.startswith(BANNER_START)), len(lines))]

    @property
    def url(self) -> str:
        banner = self.banner()
        assert banner is not None, self.printed()
        return banner[0].removeprefix(BANNER_START).strip()

    def stop(self) -> int:
        """SIGTERM, as Ctrl+C in `make run`'s terminal would end it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._reader.join(STOP_SECONDS)
        return self.process.returncode
