"""Accuracy per version from the recorded ``skillbook evaluate`` reports: a table, and curves to plot.

A report (ops/evaluation.py ``EvaluationReport.to_dict``) scores some versions on
one task set. Each (report, version) is a row of the table. For the plot, the rows
are grouped into series: by task set (the same tasks answered by each version: a
learning curve) or by the label a version was evaluated as; a series has one point
per version, the newest report's accuracy. Reports come from Redis: a field that is
missing or of the wrong type leaves that row out rather than failing the page.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

__all__ = ["GROUPINGS", "accuracy_of"]

GROUPINGS = ("tasks", "label")
_BY_NUMBER = "(by version number)"  # the series of versions evaluated without a label


def accuracy_of(reports: list[dict[str, Any]], by: str) -> dict[str, Any]:
    """The rows of ``reports`` (newest first) and their series grouped ``by`` tasks or label."""
    rows = [row for report in reports for row in _rows(report)]
    series: dict[str, dict[float, float]] = {}
    for row in rows:  # newest first: the first score of a version in a series is the one shown
        key = row["task_set"] if by == "tasks" else row["label"] or _BY_NUMBER
        series.setdefault(key, {}).setdefault(row["version"], row["accuracy"])
    return {
        "by": by,
        "reports": len(reports),
        "series": [
            {"name": name, "points": [[version, points[version]] for version in sorted(points)]}
            for name, points in series.items()
        ],
        "rows": rows,
    }


def _rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    tasks = _object(report.get("tasks"))
    file, digest = str(tasks.get("file") or "?"), str(tasks.get("digest") or "")
    task_set = PurePath(file).name + (f" {digest.removeprefix('sha256:')[:8]}" if digest else "")
    rows = []
    for result in report.get("results") or []:
        if not isinstance(result, dict):
            continue
        version, accuracy = result.get("version"), result.get("accuracy")
        if not _is_number(version) or not _is_number(accuracy):
            continue
        tokens = _object(result.get("tokens"))
        rows.append(
            {
                "report": str(report.get("id") or ""),
                "time": str(report.get("time") or ""),
                "actor": str(report.get("actor") or ""),
                "model": str(report.get("model") or ""),
                "task_set": task_set,
                "tasks_file": file,
                "tasks_digest": digest,
                "version": version,
                "name": str(result.get("name") or f"v{version}"),
                "label": str(result["label"]) if result.get("label") else None,
                "accuracy": accuracy,
                "correct": result.get("correct"),
                "tasks": result.get("tasks"),
                "errors": result.get("errors"),
                "tokens_per_task": tokens.get("per_task"),
                "promotion": bool(report.get("promotion")),
            }
        )
    return rows


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
