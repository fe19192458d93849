"""Runs first inside an MCP server's sandbox (system python3, standard library only): lowers the
hard rlimits, which nothing in the sandbox can raise again, then becomes the server's command.

argv: launch.py '<json rlimits>' /absolute/command args...

When the bot bound its egress proxy at /owlia/egress.sock (the user allowed hosts for this server),
a relay listening on 127.0.0.1:3128 inside the sandbox's own network namespace is forked first: each
connection to it is piped to that socket, where the bot checks every CONNECT (declared host, SSRF
rules on the resolved address, ports 80/443). The server finds it through HTTPS_PROXY/HTTP_PROXY.
"""

import json
import os
import resource
import socket
import sys
import threading

_LIMITS = {
    "as": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "nproc": resource.RLIMIT_NPROC,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}
EGRESS = "/owlia/egress.sock"
RELAY_PORT = 3128


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve(client: socket.socket) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(EGRESS)
    except OSError:
        client.close()
        return
    threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
    _pipe(client, upstream)


def _relay(listener: socket.socket) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve, args=(client,), daemon=True).start()


def main() -> None:
    for name, value in json.loads(sys.argv[1]).items():
        soft = value - 1 if name == "cpu" and value > 1 else value  # SIGXCPU first, SIGKILL at the hard limit
        resource.setrlimit(_LIMITS[name], (soft, value))
    if os.path.exists(EGRESS):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", RELAY_PORT))
        listener.listen(16)
        if os.fork() == 0:
            os.dup2(os.open("/dev/null", os.O_RDWR), 0)  # the relay never touches the RPC pipe
            os.dup2(0, 1)
            _relay(listener)
            os._exit(0)
        listener.close()
    os.execv(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    main()
