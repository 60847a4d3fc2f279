"""The backstop timer itself (pytest_vibeeval.backstop): it fires in the main thread, disarms
cleanly, and gives back the timer and handler it found. Its use by eval items is in
test_timeouts.py."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from pytest_vibeeval.backstop import Backstop


class Expired(Exception):
    pass


def expire() -> None:
    raise Expired


@pytest.fixture
def quiet_alarm() -> Iterator[None]:
    """No timer and the default handler while the test runs; whatever was there (the suite's own
    pytest-timeout timer) comes back afterwards."""
    handler = signal.signal(signal.SIGALRM, signal.SIG_DFL)
    delay, _ = signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, delay)


def test_it_raises_in_the_main_thread_when_the_time_is_up(quiet_alarm: None) -> None:
    backstop = Backstop()
    assert backstop.arm("item", 0.01, expire)
    assert backstop.owner == "item"
    with pytest.raises(Expired):
        signal.pause()  # returns when the alarm's handler has run
    backstop.disarm()
    assert backstop.owner is None
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_disarming_stops_the_timer_and_puts_the_handler_back(quiet_alarm: None) -> None:
    def previous(signum: int, frame: object) -> None:
        raise AssertionError("not expected to fire")

    signal.signal(signal.SIGALRM, previous)
    backstop = Backstop()
    assert backstop.arm("item", 100.0, expire)
    assert 99 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100
    assert signal.getsignal(signal.SIGALRM) is not previous
    backstop.disarm()
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    assert signal.getsignal(signal.SIGALRM) is previous
    backstop.disarm()  # a second time changes nothing
    assert signal.getsignal(signal.SIGALRM) is previous


def test_a_timer_that_was_running_resumes_with_the_time_it_had_left(quiet_alarm: None) -> None:
    signal.setitimer(signal.ITIMER_REAL, 500.0)  # an outer test's timeout, say
    backstop = Backstop()
    assert backstop.arm("item", 1.0, expire)
    assert signal.getitimer(signal.ITIMER_REAL)[0] <= 1.0  # the item's deadline runs now
    backstop.disarm()
    assert 490 < signal.getitimer(signal.ITIMER_REAL)[0] <= 500.0


def test_an_outer_timer_that_ran_out_meanwhile_fires_once_disarmed(quiet_alarm: None) -> None:
    now = [0.0]
    signal.signal(signal.SIGALRM, lambda signum, frame: expire())
    signal.setitimer(signal.ITIMER_REAL, 500.0)
    backstop = Backstop(clock=lambda: now[0])
    assert backstop.arm("item", 100.0, lambda: None)
    now[0] = 600.0  # the item took longer than the outer timer had left
    with pytest.raises(Expired):  # the outer handler, as soon as the item's timer is gone
        backstop.disarm()
        signal.pause()


def test_arming_a_second_item_disarms_the_first(quiet_alarm: None) -> None:
    backstop = Backstop()
    assert backstop.arm("first", 100.0, expire)
    assert backstop.arm("second", 50.0, expire)
    assert backstop.owner == "second"
    assert signal.getitimer(signal.ITIMER_REAL)[0] <= 50.0
    backstop.disarm()
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # not the first item's timer back
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


def test_it_cannot_be_armed_outside_the_main_thread(quiet_alarm: None) -> None:
    armed: list[bool] = []
    thread = threading.Thread(target=lambda: armed.append(Backstop().arm("item", 1.0, expire)))
    thread.start()
    thread.join()
    assert armed == [False]
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
