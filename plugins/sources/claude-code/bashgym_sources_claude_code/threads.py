"""Which lines of a Claude Code session make its conversation: the `parentUuid` graph.

Every user, assistant, attachment, system and progress line carries a `uuid` and the `uuid`
of the line before it (`parentUuid`; a compaction boundary has none but names the line it
continues in `logicalParentUuid`). The file is append-only, so it also keeps what the
conversation no longer holds:

- Rewinds. Going back to an earlier prompt and typing a new one starts a second child of the
  line before that prompt; the old branch stays in the file. The conversation is the chain of
  the last line back to the first (the leaf's path, as Claude Code itself resumes it); a
  branch that leaves that path where both sides start with a typed prompt is an abandoned
  rewind (`rewind`), or a replay of the same turn when both prompts have the same timestamp
  (`replay`). Everything else off the path is kept: a tool result recorded beside the next
  parallel tool call, hook lines and other recording artifacts also leave the path (see
  daaain/claude-code-log dev-docs/dag.md for the shapes), and they are conversation.
- Subagents of Claude Code 1.x. Their lines are in the session file itself, marked
  `isSidechain: true` line by line, each subagent a chain of its own that starts at a line
  without a parent (the prompt the Task call gave it). Parallel subagents interleave; the
  chains keep them apart.

This module only computes sets of uuids; the parser decides what to do with the items.
"""

from __future__ import annotations

from collections.abc import Iterable


class Graph:
    """The uuid graph of one file: parent links, sidechain marks, prompts and timestamps."""

    __slots__ = ("children", "conversational", "order", "parent", "prompts", "side", "ts")

    def __init__(self) -> None:
        self.parent: dict[str, str | None] = {}
        self.side: dict[str, bool] = {}
        self.order: dict[str, int] = {}
        self.ts: dict[str, str | None] = {}
        self.prompts: set[str] = set()  # typed user prompts (not tool results, not meta)
        self.conversational: set[str] = set()  # lines that gave a message
        self.children: dict[str | None, list[str]] | None = None

    def add(self, uuid: str, parent: str | None, side: bool, ts: str | None) -> None:
        if uuid in self.order:  # a duplicated line (resumed sessions repeat some): first wins
            return
        self.order[uuid] = len(self.order)
        self.parent[uuid] = parent
        self.side[uuid] = side
        self.ts[uuid] = ts

    # -- sidechains ----------------------------------------------------------------------

    def sidechain_root(self, uuid: str, memo: dict[str, str]) -> str:
        """The first line of the sidechain chain `uuid` is on."""
        path = []
        current = uuid
        while current not in memo:
            path.append(current)
            parent = self.parent.get(current)
            if parent is None or not self.side.get(parent, False) or parent in path:
                memo[current] = current
                break
            current = parent
        root = memo[current]
        for seen in path:
            memo[seen] = root
        return root

    # -- branches ------------------------------------------------------------------------

    def _kids(self) -> dict[str | None, list[str]]:
        if self.children is None:
            kids: dict[str | None, list[str]] = {}
            for uuid, parent in self.parent.items():
                if self.side[uuid]:
                    continue
                key = parent if parent is not None and parent in self.order else None
                if parent is not None and parent not in self.order:
                    continue  # a dangling parent (lost to a crash or a bug): not a fork
                kids.setdefault(key, []).append(uuid)
            self.children = kids
        return self.children

    def path(self, leaf: str) -> list[str]:
        """The leaf's chain back to its first line, first line first."""
        chain: list[str] = []
        seen: set[str] = set()
        current: str | None = leaf
        while current is not None and current in self.order and current not in seen:
            seen.add(current)
            chain.append(current)
            current = self.parent[current]
        chain.reverse()
        return chain

    def _subtree(self, uuid: str) -> list[str]:
        kids = self._kids()
        out, todo = [], [uuid]
        seen: set[str] = set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            out.append(node)
            todo.extend(kids.get(node, ()))
        return out

    def _head(self, nodes: Iterable[str]) -> str | None:
        """The earliest line among `nodes` that gave a message."""
        best: str | None = None
        for node in nodes:
            if node in self.conversational and (
                best is None or self.order[node] < self.order[best]
            ):
                best = node
        return best

    def abandoned(self, leaf: str) -> dict[str, str]:
        """uuid -> `rewind` or `replay` for every line on a branch the conversation left.

        A file whose main lines carry no parent link at all (an exporter that strips them, an
        old format) holds no branches: every line is the conversation, none a rewind."""
        if not any(p is not None for u, p in self.parent.items() if not self.side[u]):
            return {}
        chain = self.path(leaf)
        on_path = set(chain)
        kids = self._kids()
        # the first line that gave a message at or after each point of the path
        next_head: list[str | None] = [None] * (len(chain) + 1)
        for i in range(len(chain) - 1, -1, -1):
            node = chain[i]
            next_head[i] = node if node in self.conversational else next_head[i + 1]
        out: dict[str, str] = {}
        forks: list[tuple[str | None, int]] = [(None, 0)]
        forks += [(node, i + 1) for i, node in enumerate(chain[:-1])]
        for fork, at in forks:
            others = [c for c in kids.get(fork, ()) if c not in on_path]
            if not others or at >= len(chain):
                continue
            path_head = next_head[at]
            if path_head not in self.prompts:
                continue
            for child in others:
                branch = self._subtree(child)
                head = self._head(branch)
                if head is None or head not in self.prompts:
                    continue
                same_time = self.ts.get(head) is not None and self.ts[head] == self.ts[path_head]
                reason = "replay" if same_time else "rewind"
                for node in branch:
                    out.setdefault(node, reason)
        return out
