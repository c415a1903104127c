"""The JSON schemas of every tool the model can call, in OpenAI function-tool form.

Each definition is `{"type": "function", "function": {name, description, parameters,
strict: true}}`. Strict mode requires every property to be listed in `required` and
`additionalProperties: false`; an optional parameter is therefore typed `[T, "null"]`
and the model passes null for "use the default". The dispatcher also accepts an
optional parameter that is simply left out. These are pure values: the registry pairs
them with handlers.
"""

from typing import Any

ToolDefinition = dict[str, Any]

# The defaults and bounds the descriptions tell the model (files.py and shell.py apply
# them; they live here so a request needs the schemas, not the handlers' modules)
DEFAULT_READ_LINES = 2000
DEFAULT_TIMEOUT = 120
MAX_TIMEOUT = 600


def function_tool(name: str, description: str, properties: dict[str, Any]) -> ToolDefinition:
    """A strict OpenAI function-tool definition taking exactly `properties`."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


_PATH = (
    "Path of the file, relative to the workspace root (an absolute path inside the "
    "workspace also works). Paths outside the workspace, including through symlinks, "
    "are refused."
)

READ_FILE = function_tool(
    "read_file",
    "Read a UTF-8 text file. Each output line is prefixed with its line number and a tab "
    "(the prefix is not part of the file: leave it out when quoting text to edit_file). "
    f"Returns at most {DEFAULT_READ_LINES} lines by default; long files end with a note "
    "giving the offset to continue from. Binary files are refused.",
    {
        "path": {"type": "string", "description": _PATH},
        "offset": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "First line to return, 1-based. null starts at line 1.",
        },
        "limit": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": f"Maximum number of lines to return. null means {DEFAULT_READ_LINES}.",
        },
    },
)

WRITE_FILE = function_tool(
    "write_file",
    "Create a file, or overwrite it entirely, with the given content (UTF-8). Missing "
    "parent directories are created. To change part of an existing file prefer "
    "edit_file. Needs the user's approval.",
    {
        "path": {"type": "string", "description": _PATH},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
)

EDIT_FILE = function_tool(
    "edit_file",
    "Replace one exact occurrence of `old` with `new` in an existing text file. `old` "
    "must match the file exactly (whitespace and indentation included, without "
    "read_file's line-number prefixes) and occur exactly once: if it is not found or "
    "found several times the file is left unchanged and the error says so; add "
    "surrounding lines to make it unique. Needs the user's approval.",
    {
        "path": {"type": "string", "description": _PATH},
        "old": {"type": "string", "description": "The exact text to replace (non-empty)."},
        "new": {"type": "string", "description": "The text to put in its place."},
    },
)

LIST_FILES = function_tool(
    "list_files",
    "List files and directories recursively, one path per line relative to the "
    "workspace root; directories end with '/', symlinks show '@ -> target' and are not "
    "followed. .git, node_modules, virtualenvs and cache directories are shown as "
    "'(skipped)' but not entered. The listing is capped; list a subdirectory for more.",
    {
        "path": {
            "type": ["string", "null"],
            "description": "Directory to list, relative to the workspace root. null lists "
            "the whole workspace.",
        },
    },
)

SEARCH_FILES = function_tool(
    "search_files",
    "Search text files for lines matching a Python regular expression. Output lines "
    "are 'path:line: text'. Skips binary files, very large files and the directories "
    "list_files skips; stops after a capped number of matches.",
    {
        "pattern": {
            "type": "string",
            "description": "A Python `re` regular expression, matched against each line "
            "(re.search). Escape literal special characters, e.g. 'foo\\(' for 'foo('.",
        },
        "path": {
            "type": ["string", "null"],
            "description": "File or directory to search, relative to the workspace root. "
            "null searches the whole workspace.",
        },
    },
)

RUN_SHELL = function_tool(
    "run_shell",
    "Run a command with `bash -c` in the workspace root directory. stdin is closed (no "
    "interactive prompts: pass flags like -y). stdout and stderr are merged. The result's "
    "first line is 'exit code: N' (or 'exit code: timeout after Ns'), followed by the "
    "output; long output keeps its beginning and end. When the command exits or times out, "
    "every process it started is killed, background and detached ones too: nothing "
    "outlives the call. Needs the user's approval.",
    {
        "command": {"type": "string", "description": "The bash command line to run."},
        "timeout": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_TIMEOUT,
            "description": f"Seconds before the command is killed (1-{MAX_TIMEOUT}). "
            f"null means {DEFAULT_TIMEOUT}.",
        },
    },
)

UPDATE_PLAN = function_tool(
    "update_plan",
    "Replace the plan for this session with the given list of steps. Keep it short and "
    "current: mark a step in_progress when starting it and completed when done, at most "
    "one in_progress at a time. The plan is saved with the session and survives context "
    "compaction, so use it to track multi-step work.",
    {
        "items": {
            "type": "array",
            "description": "The whole plan, in order. An empty list clears it.",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "string", "description": "What to do, one sentence."},
                    "status": {
                        "type": "string",
                        "enum": ["pending", "in_progress", "completed"],
                        "description": "Where this step stands.",
                    },
                },
                "required": ["step", "status"],
                "additionalProperties": False,
            },
        },
    },
)

READ_SESSION = function_tool(
    "read_session",
    "Read the full transcript of this session or another one of this workspace. The "
    "transcript keeps every "
    "message ever exchanged, including tool outputs and older turns that were compacted "
    "out of your working context, so use this to recover anything a summary or a "
    "'[cleared]' stub left out. Select messages by index range, by a text query, or both.",
    {
        "session": {
            "type": ["string", "null"],
            "description": "Session id or a unique prefix of at least 4 characters. null "
            "means the current session.",
        },
        "start": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "Index of the first transcript message to return (0-based, "
            "inclusive). null starts at the beginning.",
        },
        "end": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "Index just after the last message to return (exclusive). null "
            "reads to the end (output is capped).",
        },
        "query": {
            "type": ["string", "null"],
            "description": "Only return messages containing this text (case-insensitive). "
            "null returns every message in the range.",
        },
    },
)

SEARCH_SESSIONS = function_tool(
    "search_sessions",
    "Full-text search over the non-archived sessions of this workspace (titles, summaries "
    "and transcripts). "
    "Returns matching session ids with titles and snippets, and the message indexes to "
    "pass to read_session for the full text.",
    {
        "query": {"type": "string", "description": "Words or phrase to search for."},
    },
)

BUILTIN_TOOLS: tuple[ToolDefinition, ...] = (
    READ_FILE, WRITE_FILE, EDIT_FILE, LIST_FILES, SEARCH_FILES, RUN_SHELL,
)  # fmt: skip
SESSION_TOOLS: dict[str, ToolDefinition] = {
    "update_plan": UPDATE_PLAN,
    "read_session": READ_SESSION,
    "search_sessions": SEARCH_SESSIONS,
}
MUTATING_TOOLS = frozenset({"write_file", "edit_file", "run_shell"})
