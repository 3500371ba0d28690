"""Flushing a librdkafka producer in steps short enough that a fatal error surfaces as itself.

confluent-kafka (2.13 and later) runs ``Producer.flush(t)`` with ``t`` of 200 ms or more as
a loop of 200 ms librdkafka flushes (so Ctrl+C is answered) and does not stop that loop when
a callback failed. A fatal producer error (say the ACLs refuse an idempotent producer its
producer id: CLUSTER_AUTHORIZATION_FAILED) is raised into Python by the client's error
callback; when the failed records' delivery reports come in a later 200 ms step, the
``on_delivery`` callback runs with that exception still pending, its first call into the
client raises ``SystemError`` and that, not the ``KafkaException``, leaves ``flush``. A
flush shorter than 200 ms is a single librdkafka flush that ends by raising the pending
exception, so :func:`flush_in_steps` calls ``flush`` with :data:`STEP_S` at most.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: The longest single ``flush`` (seconds): below the client's 200 ms chunk.
STEP_S = 0.1


def flush_in_steps(producer: Any, timeout_s: float, *,
                   clock: Callable[[], float] = time.monotonic) -> int:
    """``producer.flush`` for up to ``timeout_s`` seconds in steps of at most
    :data:`STEP_S`; the number of messages still queued (0: all delivered or failed).

    A fatal error raises the client's ``KafkaException`` from the step that served it.

    >>> class Queue:
    ...     def __init__(self): self.left, self.steps = 3, []
    ...     def flush(self, t): self.steps.append(t); self.left -= 1; return self.left
    >>> q = Queue()
    >>> flush_in_steps(q, 5.0), all(t <= STEP_S for t in q.steps)
    (0, True)
    """
    deadline = clock() + max(0.0, timeout_s)
    while True:
        remaining = int(producer.flush(min(STEP_S, max(0.0, deadline - clock()))))
        if remaining == 0 or clock() >= deadline:
            return remaining
