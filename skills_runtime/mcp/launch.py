"""Runs first inside an MCP server's sandbox (system python3, standard library only): lowers the
hard rlimits, which nothing in the sandbox can raise again, then becomes the server's command.

argv: launch.py '<json rlimits>' /absolute/command args...
"""

import json
import os
import resource
import sys

_LIMITS = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU, "fsize": resource.RLIMIT_FSIZE,
           "nproc": resource.RLIMIT_NPROC, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}


def main() -> None:
    for name, value in json.loads(sys.argv[1]).items():
        soft = value - 1 if name == "cpu" and value > 1 else value  # SIGXCPU first, SIGKILL at the hard limit
        resource.setrlimit(_LIMITS[name], (soft, value))
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
