"""A Faust app whose flow control never drops records fetched for the current assignment.

After a rebalance, faust-streaming (0.15) resumes flow twice: when table
recovery starts, and again once stream partitions have been resumed and
sought to their committed offsets. Every resume clears the agents' queues.
Records fetched between those two steps are already queued for the new
assignment, so the second clear drops them: the first event of a partition
after a restart was never folded, and Faust's commit stalled behind the gap.
A restarted store worker showed it about once in ten starts.

Here a resume clears the queues only when flow was actually suspended. The
revoke path still clears them itself (it suspends, then clears), so records of
a previous assignment are dropped as before, and nothing of the current one is.
"""

from __future__ import annotations

import faust
from mode.utils.objects import cached_property
from mode.utils.queues import FlowControlEvent


class SteadyFlowControl(FlowControlEvent):
    """Clears the queues on a suspended-to-resumed change only, never on a repeated resume."""

    def resume(self) -> None:
        was_suspended = not self.is_active()
        self._suspend.clear()
        self._resume.set()
        if was_suspended:
            self.clear()


class SteadyApp(faust.App):
    """``faust.App`` with :class:`SteadyFlowControl`."""

    @cached_property
    def flow_control(self) -> FlowControlEvent:
        return SteadyFlowControl(loop=self.loop)
