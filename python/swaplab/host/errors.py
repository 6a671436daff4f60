"""Errors of the host runner."""


class HostError(RuntimeError):
    """The host run failed (after restoring the machine)."""


class PreconditionError(HostError):
    """The host cannot run this workload as asked; nothing was changed."""


class OOMKilled(HostError):
    """A worker was killed by the OOM killer: its counters are not a measurement."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP) arrived: unwind and restore, like Ctrl-C."""
