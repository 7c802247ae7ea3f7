"""A CSV's profile: its schema, a sample and per-column statistics, read once on the host.

The same profile serves three readers: the model that proposes questions (as text), the
template generator (which columns are numeric or categorical, and their values), and the system
prompt of every episode (so a teacher knows the columns before its first cell). pandas does
the profiling; this module only decides what is worth showing and keeps it short.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.contracts import InputError
from bashgym.text import plain

if TYPE_CHECKING:
    import pandas as pd

MAX_CATEGORIES = 20  # a column with at most this many distinct values is categorical
TOP_VALUES = 5


@dataclass
class Column:
    name: str
    dtype: str
    kind: str  # numeric, categorical, boolean, datetime, text, id
    non_null: int
    unique: int
    examples: list[Any] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)  # numeric: min, max, mean, median
    top: list[tuple[Any, int]] = field(default_factory=list)  # categorical: value, count

    def line(self) -> str:
        text = f"- {self.name} ({self.dtype}, {self.kind}): {self.non_null} non-null, "
        text += f"{self.unique} distinct"
        if self.stats:
            text += "; " + ", ".join(f"{k} {v:g}" for k, v in self.stats.items())
        if self.top:
            text += "; most frequent: " + ", ".join(f"{v!r} ({n})" for v, n in self.top)
        elif self.examples:
            text += "; e.g. " + ", ".join(repr(v) for v in self.examples)
        return text


@dataclass
class Profile:
    name: str
    rows: int
    columns: list[Column]
    sample: str  # the first rows, as pandas prints them
    sha256: str

    def of_kind(self, *kinds: str) -> list[Column]:
        return [c for c in self.columns if c.kind in kinds]

    def text(self) -> str:
        """The profile as the model reads it."""
        lines = [f"File {self.name}: {self.rows} rows, {len(self.columns)} columns.", "Columns:"]
        lines += [c.line() for c in self.columns]
        if self.sample:
            lines += ["First rows:", self.sample]
        return "\n".join(lines)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_csv(path: Path) -> pd.DataFrame:
    """The CSV as the sandbox worker reads it (`pd.read_csv` with defaults), or an InputError."""
    # ~0.5 s (measured): pandas only when a CSV is read, not whenever the registry loads
    import pandas as pd

    if not path.is_file():
        raise InputError(f"csv-triangulation: no CSV file at {str(path)!r} (set pipeline.csv)")
    try:
        frame = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise InputError(f"csv-triangulation: cannot read {path} as CSV: {exc}") from None
    if frame.empty or frame.shape[1] == 0:
        raise InputError(f"csv-triangulation: {path} has no rows or no columns")
    return frame


def _kind(series: pd.Series, rows: int) -> str:
    import pandas as pd  # (see read_csv)

    unique = series.nunique(dropna=True)
    if pd.api.types.is_bool_dtype(series):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "datetime"
    if pd.api.types.is_numeric_dtype(series):
        if pd.api.types.is_integer_dtype(series) and unique == rows and rows > MAX_CATEGORIES:
            return "id"
        if unique <= min(MAX_CATEGORIES, max(rows // 5, 2)) and pd.api.types.is_integer_dtype(
            series
        ):
            return "categorical"
        return "numeric"
    if unique <= MAX_CATEGORIES and unique < rows:
        return "categorical"
    if unique == rows:
        return "id"
    return "text"


def _scalar(value: Any) -> Any:
    """A plain Python value (numpy's float64 is a float, but prints as np.float64(...))."""
    value = plain(value)
    return value.item() if hasattr(value, "item") else value


def profile(path: Path, frame: pd.DataFrame, sample_rows: int = 5) -> Profile:
    """Profile `frame` (read from `path`)."""
    import pandas as pd  # (see read_csv)

    rows = len(frame)
    columns = []
    for name in frame.columns:
        series = frame[name]
        kind = _kind(series, rows)
        col = Column(
            name=str(name),
            dtype=str(series.dtype),
            kind=kind,
            non_null=int(series.notna().sum()),
            unique=int(series.nunique(dropna=True)),
            examples=[_scalar(v) for v in series.dropna().unique()[:3]],
        )
        if kind == "numeric":
            numbers = pd.to_numeric(series, errors="coerce").dropna()
            if len(numbers):
                col.stats = {
                    "min": round(float(numbers.min()), 4),
                    "max": round(float(numbers.max()), 4),
                    "mean": round(float(numbers.mean()), 4),
                    "median": round(float(numbers.median()), 4),
                }
        if kind in ("categorical", "boolean"):
            counts = series.value_counts(dropna=True).head(TOP_VALUES)
            col.top = [(_scalar(v), int(n)) for v, n in counts.items()]
        columns.append(col)
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        sample = frame.head(sample_rows).to_string(max_colwidth=40) if sample_rows else ""
    return Profile(path.name, rows, columns, sample, sha256_of(path))
