"""Real git servers on 127.0.0.1 for the sync tests: `git daemon`, smart HTTP through
stock `git http-backend` (CGI, run per request by a small threaded HTTP server; with
`auth`, it asks for HTTP Basic credentials first), and an `ssh` that runs the remote
command on this machine, as git's own test suite does (test-fake-ssh)."""

import base64
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(200):
        if process.poll() is not None:
            raise RuntimeError(f"git daemon exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError("git daemon did not start listening")


@contextmanager
def git_daemon(root: Path) -> Iterator[str]:
    """`git daemon` serving every repository under `root`, pushes allowed; yields the
    base URL (`git://127.0.0.1:PORT`)."""
    port = free_port()
    process = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         f"--base-path={root}", "--listen=127.0.0.1", f"--port={port}", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait_listening(port, process)
        yield f"git://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _dechunk(stream: "socket.SocketIO | object") -> bytes:
    body = b""
    while True:
        size = int(stream.readline().split(b";")[0].strip(), 16)  # type: ignore[attr-defined]
        if size == 0:
            stream.readline()  # type: ignore[attr-defined]
            return body
        body += stream.read(size)  # type: ignore[attr-defined]
        stream.readline()  # type: ignore[attr-defined]


class _Backend(BaseHTTPRequestHandler):
    root: Path
    auth: str | None = None  # the Authorization header every request must carry
    extra: ClassVar[list[tuple[bytes, bytes]]] = []  # (sha, name) ending every ref listing

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def _allowed(self) -> bool:
        if self.auth is None or self.headers.get("Authorization") == self.auth:
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="sessions"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_GET(self) -> None:
        if self._allowed():
            self._cgi(b"")

    def do_POST(self) -> None:
        if not self._allowed():
            return
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = _dechunk(self.rfile)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._cgi(body)

    def _cgi(self, body: bytes) -> None:
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": "tester",  # enables receive-pack
            "REMOTE_ADDR": "127.0.0.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.root),
        }
        if self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        result = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, content = result.stdout.partition(b"\r\n\r\n")
        if not _:
            head, _, content = result.stdout.partition(b"\n\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        if self.extra and b"command=ls-refs" in body and content.endswith(b"0000"):
            lines = b"".join(_pkt(sha + b" " + name + b"\n") for sha, name in self.extra)
            content = content[:-4] + lines + b"0000"
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)


def _pkt(data: bytes) -> bytes:
    return b"%04x" % (len(data) + 4) + data


@contextmanager
def git_http(
    root: Path,
    auth: tuple[str, str] | None = None,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> Iterator[str]:
    """Smart HTTP for every repository under `root` (stock `git http-backend`); yields
    the base URL (`http://127.0.0.1:PORT`). With `auth` (user, password), every request
    without those Basic credentials gets a 401. With `extra` (`(sha, ref name)`, which
    the caller may fill later), every protocol v2 ref listing (`ls-refs`) ends with
    those refs too, whatever their names: a hostile server's advertisement (stock git
    refuses to store such names, so no repository can hold them)."""
    header = None
    if auth is not None:
        header = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    attrs = {"root": root, "auth": header, "extra": extra if extra is not None else []}
    handler = type("Backend", (_Backend,), attrs)
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


FAKE_SSH = """#!/bin/sh
# ssh [options] [user@]host command: log the call, then run the command here.
printf '%s\\n' "$*" >> "$0.log"
for last; do :; done
exec sh -c "$last"
"""


def fake_ssh(bin_dir: Path) -> Path:
    """An executable `ssh` in `bin_dir` (put it first on PATH) that runs the remote
    command on this machine and appends its arguments to `ssh.log` beside it."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    ssh = bin_dir / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    return ssh


GITOLITE_SHELL = Path("/usr/share/gitolite3/gitolite-shell")


class Gitolite:
    """A gitolite host behind a real sshd on 127.0.0.1: `url(repo)`, and for each user
    the `GIT_SSH_COMMAND` that logs in with their key."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port

    def url(self, repo: str) -> str:
        return f"ssh://{_login_user()}@127.0.0.1:{self.port}/{repo}"

    def ssh(self, user: str) -> str:
        return (
            f"ssh -i {self.root / user} -o IdentitiesOnly=yes -o BatchMode=yes "
            f"-o UserKnownHostsFile={self.root / 'known_hosts'} -o StrictHostKeyChecking=no "
            f"-o LogLevel=ERROR -p {self.port}"
        )


def _login_user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def gitolite_missing() -> str | None:
    """Why a gitolite host cannot run here (None when it can): sshd, gitolite3, root."""
    if not Path("/usr/sbin/sshd").exists() or not GITOLITE_SHELL.exists():
        return "needs openssh-server and gitolite3 (.ci/run installs them)"
    if os.getuid() != 0:
        return "sshd on 127.0.0.1 runs as root here (CI does)"
    return None


@contextmanager
def gitolite(root: Path, conf: str, users: tuple[str, ...]) -> Iterator[Gitolite]:
    """gitolite (its home under `root`) with `conf` as its gitolite.conf and a key for
    each of `users`, served by sshd on a free port of 127.0.0.1; gitolite's forced
    commands decide every access, as on a real host."""
    root.mkdir(parents=True, exist_ok=True)
    home = root / "gitolite-home"
    home.mkdir()
    for name in ("host", "admin", *users):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                        "-f", str(root / name)], check=True)  # fmt: skip
    env = dict(os.environ, HOME=str(home))

    def run(*args: str) -> None:
        subprocess.run(args, env=env, check=True, capture_output=True)

    run("gitolite", "setup", "-pk", str(root / "admin.pub"))
    keydir = home / ".gitolite" / "keydir"
    for name in users:
        (keydir / f"{name}.pub").write_bytes((root / f"{name}.pub").read_bytes())
    (home / ".gitolite" / "conf" / "gitolite.conf").write_text(
        "repo gitolite-admin\n    RW+ = admin\n" + conf
    )
    run("gitolite", "compile")
    run("gitolite", "trigger", "POST_COMPILE")
    keys = (home / ".ssh" / "authorized_keys").read_text()
    (root / "authorized_keys").write_text(
        keys.replace(f'command="{GITOLITE_SHELL}', f'command="env HOME={home} {GITOLITE_SHELL}')
    )
    port = free_port()
    (root / "sshd_config").write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {root / 'host'}\n"
        f"AuthorizedKeysFile {root / 'authorized_keys'}\nPidFile {root / 'sshd.pid'}\n"
        "StrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
    process = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(root / "sshd_config")],
        stdout=subprocess.DEVNULL, stderr=open(root / "sshd.log", "wb"),  # noqa: SIM115
    )  # fmt: skip
    try:
        _wait_listening(port, process)
        yield Gitolite(root, port)
    finally:
        process.terminate()
        process.wait(timeout=10)
