"""A smolagents CodeAgent whose code runs in agentjail sessions (pip install './python[smolagents]').

A scripted stand-in model keeps this runnable offline; put a real one (InferenceClientModel,
LiteLLMModel, ...) in its place.
"""
from smolagents import CodeAgent, tool
from smolagents.models import ChatMessage, MessageRole, Model

from agentjail.smolagents import AgentjailExecutor


@tool
def multiply(a: int, b: int) -> int:
    """Multiplies two integers.

    Args:
        a: the first factor
        b: the second factor
    """
    return a * b


class Scripted(Model):
    steps = ["x = multiply(6, 7)\nprint(x)", "final_answer(x + 1)"]

    def generate(self, messages, **kwargs):
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Thought: go.\n<code>\n{self.steps.pop(0)}\n</code>")


agent = CodeAgent(tools=[multiply], model=Scripted(model_id="scripted"), executor=AgentjailExecutor(), verbosity_level=0)
try:
    print(agent.run("What is 6 * 7 + 1?"))  # 43
finally:
    agent.cleanup()  # ends the session and the server
