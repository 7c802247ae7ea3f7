"""Seed rows shipped with the plugin, so `bashgym preview -p from-external` runs with no source.

Alpaca-shaped on purpose (instruction / input / output): the preview then shows the mapping
auto-detection at work, `input` becoming the context and `output` the reference answer.
"""

from __future__ import annotations

from typing import Any


def example_rows() -> list[dict[str, Any]]:
    return [
        {
            "instruction": "Explain the difference between a Python list and a tuple, and say "
            "when to use each.",
            "input": "",
            "output": "Lists are mutable and tuples are immutable. Use a tuple for fixed "
            "records and as dict keys, a list for collections that change.",
        },
        {
            "instruction": "Write a SQL query that returns the five customers with the highest "
            "total order value.",
            "input": "Tables: customers(id, name), orders(id, customer_id, total, created_at)",
            "output": "SELECT c.name, SUM(o.total) AS spent FROM customers c JOIN orders o ON "
            "o.customer_id = c.id GROUP BY c.name ORDER BY spent DESC LIMIT 5;",
        },
        {
            "instruction": "Summarize this commit message in one line for a changelog.",
            "input": "Fix race in cache eviction: the LRU list was updated outside the lock, so "
            "two threads evicting at once could free the same entry twice. Take the lock "
            "before unlinking and add a regression test with 16 threads.",
            "output": "Fixed a double free when two threads evicted cache entries at once.",
        },
        {
            "instruction": "What does `git rebase -i HEAD~3` do?",
            "input": "",
            "output": "",
        },
    ]
