"""The backstop timer itself (pytest_vibeeval.backstop): it fires in the main thread, disarms
cleanly, and gives back the timer and handler it found. Its use by eval items is in
test_timeouts.py."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest

from pytest_vibeeval.backstop import OWN_THREAD_PREFIX, RETRY_FOR_S, Backstop, other_threads_stacks


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
    assert 50 < signal.getitimer(signal.ITIMER_REAL)[0] <= 100  # roomy: a loaded machine may stall
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


def test_a_repeating_timer_keeps_its_interval(quiet_alarm: None) -> None:
    signal.setitimer(signal.ITIMER_REAL, 500.0, 250.0)
    backstop = Backstop()
    assert backstop.arm("item", 1.0, expire)
    assert signal.getitimer(signal.ITIMER_REAL)[1] == 0  # the item's timer does not repeat
    backstop.disarm()
    delay, interval = signal.getitimer(signal.ITIMER_REAL)
    assert 490 < delay <= 500.0 and interval == 250.0


def test_the_outer_timer_is_paused_before_the_handler_changes(quiet_alarm: None) -> None:
    """Otherwise an alarm of the outer timer due while arming would reach the item's handler and
    fail the item (or, before its protocol began, end the session)."""

    def outer(signum: int, frame: object) -> None:
        raise AssertionError("the outer timer's alarm is not expected while the item runs")

    seen: list[tuple[float, object]] = []

    def clock() -> float:  # read while arming, after the handler changed
        seen.append((signal.getitimer(signal.ITIMER_REAL)[0], signal.getsignal(signal.SIGALRM)))
        return 0.0

    signal.signal(signal.SIGALRM, outer)
    signal.setitimer(signal.ITIMER_REAL, 500.0)
    backstop = Backstop(clock=clock)
    assert backstop.arm("item", 100.0, expire)
    assert seen[0][0] == 0  # the outer timer was paused already
    assert seen[0][1] is not outer
    backstop.disarm()
    assert signal.getsignal(signal.SIGALRM) is outer


def test_an_alarm_where_it_may_not_fire_comes_back_until_it_may(quiet_alarm: None) -> None:
    asked: list[bool] = []

    def may_fire(frame: object) -> bool:
        asked.append(len(asked) >= 2)  # not the first two times
        return asked[-1]

    backstop = Backstop()
    assert backstop.arm("item", 0.01, expire, may_fire)
    with pytest.raises(Expired):
        while True:
            signal.pause()  # returns after each alarm that did not fire
    assert asked == [False, False, True]
    backstop.disarm()


def stacks_while_waiting(name: str) -> str:
    """:func:`other_threads_stacks` while a thread called ``name`` waits."""
    release = threading.Event()
    helper = threading.Thread(target=release.wait, name=name)
    helper.start()
    try:
        return other_threads_stacks()
    finally:
        release.set()
        helper.join()


def test_the_other_threads_stacks_name_them_and_leave_this_one_out() -> None:
    stacks = stacks_while_waiting("waiting-helper")
    assert "Thread waiting-helper:\n" in stacks
    assert "in wait" in stacks
    assert "test_the_other_threads_stacks_name_them" not in stacks  # this thread's own stack


def test_an_alarm_that_never_may_fire_raises_where_it_is_after_a_while(quiet_alarm: None) -> None:
    now = [0.0]

    def may_fire(frame: object) -> bool:
        now[0] += RETRY_FOR_S / 2  # each refusal comes half the patience later
        return False

    backstop = Backstop(clock=lambda: now[0])
    assert backstop.arm("item", 0.01, expire, may_fire)
    with pytest.raises(Expired):
        while True:
            signal.pause()
    assert now[0] > RETRY_FOR_S  # refused until the patience ran out
    backstop.disarm()


def test_the_plugins_own_threads_are_left_out_of_the_stacks() -> None:
    assert OWN_THREAD_PREFIX not in stacks_while_waiting(OWN_THREAD_PREFIX + "progress")


def test_arming_swaps_the_handler_without_the_enum_wrapper(
    quiet_alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each item arms and disarms the backstop: the standard ``signal.signal``'s conversion of the
    handler it returns into a ``Handlers`` member (at an exception's cost for a function) is not
    done, and the handler it found still comes back."""
    calls: list[object] = []
    convert = signal._int_to_enum  # type: ignore[attr-defined]

    def counted(value: object, enum_klass: object) -> object:
        calls.append(value)
        return convert(value, enum_klass)

    def previous(signum: int, frame: object) -> None:
        raise AssertionError("not expected to fire")

    signal.signal(signal.SIGALRM, previous)
    monkeypatch.setattr(signal, "_int_to_enum", counted)
    signal.getsignal(signal.SIGALRM)  # the counter sees the wrapper's conversions
    assert calls == [previous]
    backstop = Backstop()
    for _ in range(3):
        assert backstop.arm("item", 100.0, expire)
        backstop.disarm()
    assert calls == [previous]
    assert signal.getsignal(signal.SIGALRM) is previous


def test_a_replaced_signal_function_is_still_called(
    quiet_alarm: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Going around ``signal.signal`` is for the standard one only: one that was replaced after
    the plugin was imported (gevent's, a test double) installs and puts back the handler."""
    calls: list[object] = []
    wrapper = signal.signal

    def replaced(signalnum: int, handler: object) -> object:
        calls.append(handler)
        return wrapper(signalnum, handler)  # type: ignore[arg-type]

    monkeypatch.setattr(signal, "signal", replaced)
    backstop = Backstop()
    assert backstop.arm("item", 100.0, expire)
    backstop.disarm()
    assert calls == [backstop._on_alarm, signal.SIG_DFL]
