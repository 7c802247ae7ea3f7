"""The kernel stays small: core/bashgym/ holds at most 3,000 lines of Python (shared/design.md).

Physical lines, as the design counts them: docstrings are part of the kernel's size, because
hookspecs.py and contracts.py are the plugin author's manual and must stay readable in one
sitting. What a third party could have written belongs in a plugin, not here.
"""

from __future__ import annotations

from pathlib import Path

import bashgym

KERNEL = Path(bashgym.__file__).parent
BUDGET = 3000


def test_the_kernel_is_at_most_3000_lines():
    files = sorted(KERNEL.rglob("*.py"))
    assert files, f"no kernel sources under {KERNEL}"
    sizes = {str(f.relative_to(KERNEL)): len(f.read_text().splitlines()) for f in files}
    total = sum(sizes.values())
    biggest = ", ".join(f"{n} {c}" for n, c in sorted(sizes.items(), key=lambda i: -i[1])[:5])
    assert total <= BUDGET, (
        f"core/bashgym/ has {total} lines, over the {BUDGET} budget; the largest: {biggest}. "
        "Move what a third party could have written into a plugin."
    )
