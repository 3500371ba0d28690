"""Moved to :mod:`pipeline.testing.streams`; kept only until every importer uses the kit."""

from pipeline.testing.streams import WORDS, make_dump, make_spec, to_events

__all__ = ["WORDS", "make_dump", "make_spec", "to_events"]
