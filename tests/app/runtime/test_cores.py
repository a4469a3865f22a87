"""The model thread's share of the cores: all of them when nothing waits for the CPU, one when
other programs do, every core when the pressure cannot be read."""

from __future__ import annotations

from app.runtime.cores import BUSY, WINDOW_S, CoreShare, cpu_stall_us


class Machine:
    """A fake clock and CPU-pressure counter (microseconds some task waited for a core)."""

    def __init__(self):
        self.now, self.stalled = 100.0, 5_000_000

    def run(self, seconds: float, waiting_share: float) -> None:
        self.now += seconds
        self.stalled += int(seconds * 1e6 * waiting_share)


def share(machine: Machine, cores: int = 2) -> CoreShare:
    return CoreShare(cores, stall=lambda: machine.stalled, clock=lambda: machine.now)


def test_a_quiet_machine_lends_every_core():
    machine = Machine()
    cores = share(machine)
    machine.run(1.0, waiting_share=0.02)
    assert cores.threads() == 2


def test_a_busy_machine_gets_one_core_and_every_core_back_when_it_calms_down():
    machine = Machine()
    cores = share(machine)
    machine.run(0.5, waiting_share=BUSY + 0.2)  # e.g. a browser drawing on the same cores
    assert cores.threads() == 1
    machine.run(0.5, waiting_share=0.0)
    assert cores.threads() == 2


def test_pressure_is_judged_over_a_window_not_a_single_instant():
    machine = Machine()
    cores = share(machine)
    machine.run(1.0, waiting_share=0.9)
    assert cores.threads() == 1
    machine.run(WINDOW_S / 10, waiting_share=0.0)  # too short to tell: the last verdict holds
    assert cores.threads() == 1


def test_without_pressure_information_every_core_is_used(tmp_path):
    assert cpu_stall_us(tmp_path / "missing") is None
    (tmp_path / "pressure").write_text("nonsense\n")
    assert cpu_stall_us(tmp_path / "pressure") is None
    assert CoreShare(2, stall=lambda: None).threads() == 2
    assert CoreShare(1, stall=lambda: 0).threads() == 1  # one core: nothing to share


def test_reads_the_kernel_format(tmp_path):
    (tmp_path / "cpu").write_text("some avg10=1.00 avg60=2.00 avg300=3.00 total=123456\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    assert cpu_stall_us(tmp_path / "cpu") == 123456
