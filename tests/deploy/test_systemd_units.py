"""The systemd units of the deployment kit (`deploy/systemd/`, ADR 0033).

Checked three ways: `systemd-analyze verify` (the units load, with no unknown key),
`systemd-analyze security --offline` (the exposure score stays low), and a parse of
the files for the promises the runbook makes: a non-root user, the hardening keys,
the data dir as the only writable path, a stop timeout above the shutdown settings,
and command lines the `runnel` CLI accepts. The units are not started here (no
systemd runs as PID 1 on the test machine).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from entrypoints.commands.cli import build_parser
from entrypoints.composition.settings import Settings
from entrypoints.composition.startup import unknown_variables

KIT = Path(__file__).parents[2] / "deploy" / "systemd"
UNITS = ("runnel-serve.service", "runnel-worker.service")
ENV_EXAMPLE = KIT / "runnel.env.example"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
RUNNEL = Path(__file__).parents[2] / ".venv" / "bin" / "runnel"
MAX_EXPOSURE = 2.0
"""systemd's exposure score, 0 (locked down) to 10; the units score 1.5."""
Unit = dict[str, list[tuple[str, str]]]


def parse_unit(text: str) -> Unit:
    """Sections of a unit file, each a list of (key, value) in order (keys repeat)."""
    sections: Unit = {}
    current: list[tuple[str, str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"a key outside any section: {line!r}"
        key, _, value = line.partition("=")
        current.append((key.strip(), value.strip()))
    return sections


def values(unit: Unit, key: str, section: str = "Service") -> list[str]:
    return [value for name, value in unit.get(section, []) if name == key]


def one(unit: Unit, key: str) -> str:
    found = values(unit, key)
    assert len(found) == 1, f"{key}: {found}"
    return found[0]


def env_example() -> dict[str, str]:
    pairs = (line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
             if line and not line.startswith("#"))
    return {key: value for key, value in pairs}


def seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+)(s|min)?", value)
    assert match is not None, value
    return float(match.group(1)) * (60 if match.group(2) == "min" else 1)


@pytest.mark.parametrize("name", UNITS)
def test_each_unit_runs_unprivileged_and_hardened(name: str) -> None:
    unit = parse_unit((KIT / name).read_text())
    assert one(unit, "User") not in ("", "root", "0")
    for key, expected in {"NoNewPrivileges": "yes", "ProtectSystem": "strict",
                          "ProtectHome": "yes", "PrivateTmp": "yes", "PrivateDevices": "yes",
                          "CapabilityBoundingSet": "", "AmbientCapabilities": "",
                          "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
                          "RestrictSUIDSGID": "yes", "RestrictNamespaces": "yes",
                          "KillSignal": "SIGTERM", "RestartPreventExitStatus": "2"}.items():
        assert one(unit, key) == expected, key
    assert "@system-service" in values(unit, "SystemCallFilter")
    # The only writable path is the data dir the process is given.
    data_dir = one(unit, "Environment").removeprefix("RUNNEL_DATA_DIR=")
    assert values(unit, "ReadWritePaths") == [data_dir] == ["/var/lib/runnel"]
    assert one(unit, "EnvironmentFile") == "/etc/runnel/runnel.env"


@pytest.mark.parametrize("name", UNITS)
def test_systemd_stops_a_unit_only_after_its_shutdown_settings_ran_out(name: str) -> None:
    """SIGKILL comes after TimeoutStopSec: above the pre-stop delay plus the grace for
    subscriptions plus the grace for open requests (ADR 0029)."""
    unit = parse_unit((KIT / name).read_text())
    settings = env_example()
    budget = (float(settings["RUNNEL_PRESTOP_SECONDS"])
              + 2 * float(settings["RUNNEL_SHUTDOWN_GRACE_SECONDS"]))
    assert seconds(one(unit, "TimeoutStopSec")) > budget


def test_the_units_run_commands_the_cli_accepts() -> None:
    commands = {}
    for name in UNITS:
        argv = shlex.split(one(parse_unit((KIT / name).read_text()), "ExecStart"))
        assert argv[0] == "/opt/runnel/.venv/bin/runnel"
        commands[name] = build_parser().parse_args(argv[1:])
    serve = commands["runnel-serve.service"]
    assert (serve.command, serve.no_workers, serve.host, serve.port) == (
        "serve", True, "0.0.0.0", 8080)
    assert commands["runnel-worker.service"].command == "worker"


def test_the_env_example_names_only_settings_and_is_production() -> None:
    settings = env_example()
    assert unknown_variables(settings) == []
    assert settings["RUNNEL_ENV"] == "production"
    assert settings["RUNNEL_AUTO_MIGRATE"] == "false"
    fields = Settings.model_fields
    assert all(key.removeprefix("RUNNEL_").lower() in fields for key in settings)


def _installed_copies(tmp_path: Path) -> list[Path]:
    """The units with ExecStart pointing at this checkout's `runnel` (verify checks that the
    program exists)."""
    copies = []
    for name in UNITS:
        copy = tmp_path / name
        copy.write_text((KIT / name).read_text().replace("/opt/runnel/.venv/bin/runnel",
                                                         str(RUNNEL)))
        copies.append(copy)
    return copies


def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None, "systemd-analyze is missing: `make deploy-tools`"
    checked = subprocess.run([SYSTEMD_ANALYZE, "verify", *map(str, _installed_copies(tmp_path))],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
    assert checked.stderr.strip() == "", checked.stderr  # an unknown key is only a warning


def test_systemd_rates_the_units_exposure_low(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None, "systemd-analyze is missing: `make deploy-tools`"
    for copy in _installed_copies(tmp_path):
        rated = subprocess.run([SYSTEMD_ANALYZE, "security", "--offline=yes", str(copy)],
                               capture_output=True, text=True, timeout=60)
        match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", rated.stdout)
        assert match is not None, rated.stdout + rated.stderr
        assert float(match.group(1)) <= MAX_EXPOSURE, rated.stdout
