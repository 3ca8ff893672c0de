"""Builds pitwatch's one C extension, `pitwatch.events._native` (the Avro reader of files
and messages, wrapped by pitwatch/events/native.py; and the store's `events` rows, record
clock and id window, wrapped by pitwatch/store/native.py), with the C compiler Python was
built with.

An editable install puts the module beside its source; a wheel carries it. Where there
is no compiler, the install goes on without it and fastavro and orjson do its work
(slower, the same output), as the warning says.
"""

from __future__ import annotations

import shlex
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "pitwatch/events/_native.c"


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        src = Path(self.root, SOURCE)
        name = "_native" + str(sysconfig.get_config_var("EXT_SUFFIX"))
        if version == "editable":
            out = src.with_name(name)
        else:
            out = Path(tempfile.mkdtemp(prefix="pitwatch-build-")) / name
        cc = shlex.split(str(sysconfig.get_config_var("CC") or "cc"))
        cmd = [*cc, "-O2", "-shared", "-fPIC", "-I", sysconfig.get_paths()["include"],
               str(src), "-o", str(out)]
        try:
            subprocess.run(cmd, check=True, capture_output=True, text=True)
        except (OSError, subprocess.CalledProcessError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            self.app.display_warning(
                f"pitwatch: the C reader was not built ({detail.strip()}); fastavro and "
                "orjson will do its work: the same output, slower")
            return
        if version != "editable":
            build_data["force_include"][str(out)] = f"pitwatch/events/{name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
