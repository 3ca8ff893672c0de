"""What `pip install pitwatch` puts on an environment's path: one name, pitwatch. The
stages travel inside it (pitwatch.processors, ...), so no other distribution's
`console` or `replay` is shadowed, and none shadows them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_installs_pitwatch_only(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = tmp_path.glob("pitwatch-*.whl")
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = z.read(f"pitwatch-{version}.dist-info/entry_points.txt").decode()
    assert {n.split("/")[0] for n in names} == {"pitwatch", f"pitwatch-{version}.dist-info"}
    for stage in ("processors", "producers", "replay", "console"):
        assert f"pitwatch/{stage}/__init__.py" in names
    assert "pitwatch/console/static/console.css" in names
    assert "worker = pitwatch.processors.worker:command" in entry_points
