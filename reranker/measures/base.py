"""A named measure and the registry the measure modules add to (apart from the package, which imports them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NamedMeasure:
    name: str
    expression: str  # ir_measures syntax
    label: str  # a table column's header
    description: str
    collections: tuple[str, ...] = ()  # where its gains mean what they say; empty: any


MEASURES: dict[str, NamedMeasure] = {}


def register(measure: NamedMeasure) -> NamedMeasure:
    MEASURES[measure.name] = measure
    return measure
