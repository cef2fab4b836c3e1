"""Stop signals become a KeyboardInterrupt that names them, once, and are undone after."""

from __future__ import annotations

import os
import signal

import pytest

from ppo.run.signals import Stopped, exit_code_of, stop_on_signals


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_stop_signal_raises_stopped_with_its_exit_code(sig: int, code: int) -> None:
    def receive() -> None:
        with stop_on_signals():
            os.kill(os.getpid(), sig)
            signal.sigtimedwait([], 0.0)  # let the handler run here, in the main thread

    with pytest.raises(Stopped) as stopped:
        receive()
    assert str(stopped.value) == signal.Signals(sig).name
    assert exit_code_of(stopped.value) == code
    assert isinstance(stopped.value, KeyboardInterrupt)  # every Ctrl-C path handles it


def test_ctrl_c_exits_130_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    assert exit_code_of(KeyboardInterrupt()) == 130


def test_an_inherited_ignored_sigint_is_made_to_work_again() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
