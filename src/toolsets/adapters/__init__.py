"""Adapters: toolsets' tools inside other agent frameworks, and their tools as toolsets.

One module per framework, each needing that framework installed through its extra
(``toolsets-ai`` is not on PyPI: in a clone of the repository that is ``pip install
'.[extra]'``, from elsewhere ``... @ file:///path/to/the/clone``; an adapter's
ImportError names the line for the clone it runs from):

=========================================  ==============================================
``toolsets.adapters.pydantic_ai``          ``pip install 'toolsets-ai[pydantic-ai]'``
``toolsets.adapters.langchain``            ``pip install 'toolsets-ai[langchain]'`` (and
                                           ``[langgraph]`` for interrupts in graphs)
``toolsets.adapters.openai_agents``        ``pip install 'toolsets-ai[openai-agents]'``
``toolsets.adapters.adk``                  ``pip install 'toolsets-ai[adk]'``
``toolsets.adapters.smolagents``           ``pip install 'toolsets-ai[smolagents]'``
=========================================  ==============================================

Every adapter calls tools through the same path as toolsets' own agent loop: arguments
checked, confirmation asked through the framework's own approval mechanism, credentials,
deadlines, and errors given back to the model as the framework expects.
"""

__all__: list[str] = []
