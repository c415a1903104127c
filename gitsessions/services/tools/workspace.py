"""Path confinement: every path a file tool touches resolves inside the workspace root.

A path is checked after `os.path.realpath`, which follows every symlink (intermediate
directories and the final component, dangling or not) and folds `..`; the result must
have the workspace root as its common path. So neither an absolute path, a `..` escape
nor a symlink can reach outside, and an absolute path inside the root is fine. Writes
also check the parent directory's real path, and callers open the resolved real path
(never the name the model gave), so what was checked is what gets touched. Paths the
shell sandbox keeps read-only (`read_only`: the project's `.git` under
`--sandbox workspace-write`) are refused to writes too, so the file tools are no way
around it.
"""

import os

from gitsessions.services.tools.errors import ToolError


class OutsideWorkspace(ToolError):
    """A path resolves outside the workspace root."""


class InvalidPath(ToolError):
    """A path is empty, contains NUL bytes or is otherwise unusable."""


class ReadOnlyPath(ToolError):
    """A write to a path the sandbox keeps read-only (the project's git directory)."""


class Workspace:
    """The directory the tools work in; resolves and displays paths relative to it."""

    def __init__(self, root: str | os.PathLike[str], read_only: tuple[str, ...] = ()) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise InvalidPath(f"workspace root {os.fspath(root)!r} is not a directory")
        self.root: str = real
        self.read_only = tuple(os.path.realpath(p) for p in read_only)

    def contains(self, real_path: str) -> bool:
        """Whether an already-resolved absolute path is the root or below it."""
        try:
            return os.path.commonpath([self.root, real_path]) == self.root
        except ValueError:
            return False

    def resolve(self, path: str) -> str:
        """The real absolute path of `path` (relative to the root), or `OutsideWorkspace`."""
        if not isinstance(path, str) or not path.strip():
            raise InvalidPath("path is empty; give a path relative to the workspace root")
        if "\0" in path:
            raise InvalidPath(f"path {path!r} contains a NUL byte")
        joined = path if os.path.isabs(path) else os.path.join(self.root, path)
        real = os.path.realpath(joined)
        if self.contains(real):
            return real
        if self.contains(os.path.normpath(joined)):
            raise OutsideWorkspace(
                f"path {path!r} goes through a symlink to {real}, outside the workspace "
                f"{self.root}; symlinks may not lead out of the workspace"
            )
        raise OutsideWorkspace(
            f"path {path!r} is outside the workspace {self.root}; "
            "use a path relative to the workspace root"
        )

    def resolve_for_write(self, path: str) -> str:
        """Like `resolve`, also checking the real path of the parent directory."""
        real = self.resolve(path)
        if real == self.root:
            raise InvalidPath(f"path {path!r} is the workspace root, not a file")
        parent = os.path.realpath(os.path.dirname(real))
        if not self.contains(parent):
            raise OutsideWorkspace(
                f"the directory of {path!r} resolves to {parent}, outside the workspace {self.root}"
            )
        target = os.path.join(parent, os.path.basename(real))
        for protected in self.read_only:
            if target == protected or target.startswith(protected.rstrip(os.sep) + os.sep):
                raise ReadOnlyPath(
                    f"path {path!r} is in the project's git directory {protected}, which the "
                    "sandbox keeps read-only (--sandbox-allow-git lets it be written)"
                )
        return target

    def display(self, real_path: str) -> str:
        """`real_path` relative to the root with `/` separators ('.' for the root)."""
        relative = os.path.relpath(real_path, self.root)
        return relative.replace(os.sep, "/")
