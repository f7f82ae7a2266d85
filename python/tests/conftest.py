"""What more than one test module uses."""

import threading
import time

import pytest


@pytest.fixture
def longest_pause():
    """`measure(call)` runs `call` on another thread while this one keeps
    taking Python steps, and returns how long `call` ran and the longest
    this thread was kept from a step while it ran: about as long as the
    call when it holds the GIL, a few milliseconds at most when it lets
    it go."""

    def measure(call):
        span = {}

        def work():
            start = time.perf_counter()
            call()
            span["call"] = (start, time.perf_counter())

        thread = threading.Thread(target=work)
        pauses = []  # (from, to) of each pause between two steps of over 1 ms
        last = time.perf_counter()
        thread.start()
        while thread.is_alive():
            now = time.perf_counter()
            if now - last > 1e-3:
                pauses.append((last, now))
            last = now
        thread.join()
        start, end = span["call"]
        inside = (min(b, end) - max(a, start) for a, b in pauses)
        return end - start, max(inside, default=0.0)

    return measure
