"""The Spark processor's micro-batch frames, built and read without Spark.

:class:`pipeline.runtime.instance.JoinInstance` takes pandas frames of input rows (with a
``stream_idx`` column) and returns frames of output rows (``kind`` = result / metric /
deadletter). pandas is imported when a helper runs, not with this module.

>>> from pipeline.testing.streams import sensor_rows
>>> f = batch_frame(sensor_rows(0, n=6))
>>> list(f.columns)
['stream_idx', 'stream', 'seq', 'event_time', 'arrival_time', 'value', 'a1', 'x', 'y']
>>> f["stream_idx"].tolist() == [int(s[1:]) - 1 for s in f["stream"]]
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.testing.streams import SENSOR_ATTRS, SENSOR_STREAMS

if TYPE_CHECKING:
    import pandas as pd


def batch_frame(rows: Sequence[Mapping[str, Any]],
                streams: Sequence[str] = SENSOR_STREAMS,
                attrs: Sequence[str] = SENSOR_ATTRS) -> pd.DataFrame:
    """One input batch: the rows' header columns and ``attrs``, with ``stream_idx`` first
    (the stream's position in ``streams``)."""
    import pandas as pd

    f = pd.DataFrame(list(rows), columns=["stream", "seq", "event_time", "arrival_time",
                                          *attrs])
    f.insert(0, "stream_idx", [list(streams).index(s) for s in f["stream"]])
    return f


def result_ids(frames: Iterable[pd.DataFrame]) -> list[str]:
    """The ids of the ``kind == "result"`` rows of output frames, in output order; frames
    without a ``kind`` column (not output frames) are skipped.

    >>> import pandas as pd
    >>> result_ids([pd.DataFrame({"kind": ["result", "metric"], "id": ["r1", None]}),
    ...             pd.DataFrame({"x": [1]})])
    ['r1']
    """
    return [i for f in frames if "kind" in f.columns
            for i in f.loc[f["kind"] == "result", "id"].tolist()]
