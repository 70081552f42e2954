"""The OpenAI Agents SDK on goaicore: :class:`GoaicoreSession`, a ``Session`` whose
history is a conversation in the log (the ``agents`` extra)::

    from agents import Agent, Runner
    from goaicore.integrations.openai_agents import GoaicoreSession

    session = GoaicoreSession("player-42")  # instead of SQLiteSession("player-42", "x.db")
    result = await Runner.run(agent, "Where is the key?", session=session)
"""

from goaicore.integrations.openai_agents.session import SOURCE, GoaicoreSession

__all__ = ["SOURCE", "GoaicoreSession"]
