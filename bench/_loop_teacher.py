"""bench/loop.py's teacher: the student's own tool loop on the `teacher` model alias (which the
bench points at its scripted, priced, always-right server). Loaded with `--plugin`."""

from __future__ import annotations

from bashgym_executors_student import Student, StudentOptions

from bashgym import hookimpl
from bashgym.contracts import Executor


class TeacherOptions(StudentOptions):
    model_alias: str = "teacher"


class Teacher(Executor[TeacherOptions]):
    """The student executor's loop, calling the `teacher` alias."""

    name = "teacher"

    def __init__(self) -> None:
        self.inner = Student()

    def preflight(self, options, run):  # type: ignore[no-untyped-def]
        return self.inner.preflight(options, run)

    async def run(self, task, options, ctx):  # type: ignore[no-untyped-def]
        return await self.inner.run(task, options, ctx)


@hookimpl
def register_executors(register):  # type: ignore[no-untyped-def]
    register("teacher", Teacher())
