"""A plain JSON-RPC editor for `gitsessions acp` (every line it receives kept and checked
against ACP's official schema.json), for tests/test_real_clients.py and the real-model
tests: `RawEditor` starts the agent as a process, `StreamEditor` speaks to one served in
this process."""

import asyncio
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from tests.conftest import REPO
from tests.real_tools import acp_schema

WAIT = 60  # seconds any one step may take (never reached when well)

# -- ACP ---------------------------------------------------------------------------------

RESPONSES = {
    "initialize": "InitializeResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/prompt": "PromptResponse",
}
PARAMS = {"session/update": "SessionNotification",
          "session/request_permission": "RequestPermissionRequest"}  # fmt: skip


class Schema:
    """ACP's schema.json: a message checked against the whole protocol (the `Agent`
    side), and its result or params against the definition of its method."""

    def __init__(self) -> None:
        self.doc = acp_schema()
        Draft202012Validator.check_schema(self.doc)

    def check(self, definition: str, value: Any) -> None:
        schema = {"$ref": f"#/$defs/{definition}", "$defs": self.doc["$defs"]}
        errors = sorted(Draft202012Validator(schema).iter_errors(value), key=str)
        assert not errors, (definition, value, [e.message for e in errors[:3]])

    def side(self, index: int, message: dict[str, Any]) -> None:
        schema = {**self.doc["anyOf"][index], "$defs": self.doc["$defs"]}
        errors = list(Draft202012Validator(schema).iter_errors(message))
        assert not errors, (self.doc["anyOf"][index]["title"], message, errors[0].message)


class RawEditor:
    """An editor speaking plain JSON-RPC lines to `gitsessions acp`: every line the agent
    writes is kept; requests the agent sends (permission) are answered `answer`."""

    def __init__(
        self,
        base_url: str,
        model: str,
        schema: Schema,
        stderr: Path,
        answer: str = "allow_once",
        wait: float = WAIT,
    ) -> None:
        self.schema = schema
        self.wait = wait
        self.answer_kind = answer
        self.received: list[dict[str, Any]] = []
        self.sent: dict[int, str] = {}  # request id -> method
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.updates: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        self.lock = threading.Lock()
        with stderr.open("ab") as errors:  # the child holds its own copy
            self.child = subprocess.Popen(
                [sys.executable, "-m", "gitsessions", "acp", "--base-url", base_url,
                 "--model", model],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                text=True, cwd=REPO,
            )  # fmt: skip
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def write(self, message: dict[str, Any]) -> None:
        self.schema.side(1, message)  # this test speaks the protocol too
        assert self.child.stdin is not None
        with self.lock:
            self.child.stdin.write(json.dumps(message) + "\n")
            self.child.stdin.flush()

    def read(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            message = json.loads(line)
            self.received.append(message)
            if "method" in message and "id" in message:  # the agent asks
                self.write(answer_to(message, self.answer_kind))
            elif "method" in message:
                self.updates.put(message)
            else:
                self.answers.put(message)

    def start(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self.sent[self.next_id] = method
        self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def answer(self, n: int) -> dict[str, Any]:
        message = self.answers.get(timeout=self.wait)
        assert message["id"] == n, message
        return message

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer(self.start(method, params))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> int:
        assert self.child.stdin is not None
        self.child.stdin.close()
        code = self.child.wait(timeout=self.wait)
        self.reader.join(self.wait)
        if self.child.stdout is not None:
            self.child.stdout.close()
        return code

    def validate_all(self) -> dict[str, int]:
        """Every message received, against the schema; how many of each kind."""
        return validate(self.schema, self.received, self.sent)


def validate(
    schema: Schema, received: list[dict[str, Any]], sent: dict[int, str]
) -> dict[str, int]:
    """Every message `received`, against the schema (a response against the answer to
    the method `sent` with its id); how many of each kind."""
    kinds: dict[str, int] = {}
    for message in received:
        schema.side(0, message)
        if "method" in message:
            kind = message["method"]
            schema.check(PARAMS[kind], message["params"])
        elif "error" in message:
            kind = "error"
            schema.check("Error", message["error"])
        else:
            kind = sent[message["id"]]
            schema.check(RESPONSES[kind], message["result"])
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def answer_to(message: dict[str, Any], kind: str) -> dict[str, Any]:
    """The answer to the agent's permission request `message`: its option of `kind`."""
    chosen = next(o for o in message["params"]["options"] if o["kind"] == kind)
    outcome = {"outcome": "selected", "optionId": chosen["optionId"]}
    return {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}}


class StreamEditor:
    """RawEditor's plain JSON-RPC lines over the streams of an agent served in this
    process (tests/acp_helpers.py `serve_in_process`), on the client's event loop."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        schema: Schema,
        answer: str = "allow_once",
        wait: float = WAIT,
    ) -> None:
        self.reader, self.writer, self.schema = reader, writer, schema
        self.answer_kind = answer
        self.wait = wait
        self.received: list[dict[str, Any]] = []
        self.sent: dict[int, str] = {}  # request id -> method
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.reading = asyncio.get_running_loop().create_task(self.read())

    def write(self, message: dict[str, Any]) -> None:
        self.schema.side(1, message)  # this test speaks the protocol too
        self.writer.write(json.dumps(message).encode() + b"\n")

    async def read(self) -> None:
        while line := await self.reader.readline():
            message = json.loads(line)
            self.received.append(message)
            if "method" in message and "id" in message:  # the agent asks
                self.write(answer_to(message, self.answer_kind))
            elif "method" not in message:
                self.answers[message["id"]].set_result(message)

    async def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        n = len(self.sent) + 1
        self.sent[n] = method
        self.answers[n] = asyncio.get_running_loop().create_future()
        self.write({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        await self.writer.drain()
        return await asyncio.wait_for(self.answers[n], self.wait)

    async def close(self) -> None:
        """Close the agent's input; wait for the end of its output."""
        self.writer.close()
        await asyncio.wait_for(self.reading, self.wait)

    def validate_all(self) -> dict[str, int]:
        return validate(self.schema, self.received, self.sent)
