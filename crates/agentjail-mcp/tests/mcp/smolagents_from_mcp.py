"""docs/REFERENCE.md's smolagents snippet, run as written: smolagents' own
ToolCollection.from_mcp (through mcpadapt) starts `agentjail mcp` (found on PATH) and a
ToolCallingAgent calls its tools. `model` is a scripted stand-in (no network): its first
step calls run_python with `code` alone, the second with the optional arguments sent as
null (some models do), the third answers. smolagents validates each call against the
tools' input schemas (an optional argument must be marked nullable), and the server must
read a null argument as an absent one.

usage: python smolagents_from_mcp.py REFERENCE.md
Prints "ok ..." and exits 0, or prints "FAIL ..." and exits 1."""

import re
import sys

from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model


def fail(msg):
    print("FAIL smolagents_from_mcp: " + msg, flush=True)
    sys.exit(1)


class Scripted(Model):
    def __init__(self):
        super().__init__(model_id="scripted")
        self.calls = [
            ("run_python", {"code": "print(sorted([12, 40, 9, 31])[-1])", "output_mode": "text"}),
            ("run_python", {"code": "print('nulls-ok')", "output_mode": "text", "files": None,
                            "input": None, "stdin": None, "output_schema": None, "timeout_s": None}),
            ("final_answer", {"answer": "40"}),
        ]
        self.seen = []

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kw):
        self.seen.append(messages)
        name, args = self.calls.pop(0)
        call = ChatMessageToolCall(id="call_%d" % len(self.seen), type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=args))
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def snippet(reference):
    """The one ```python block of the file that calls ToolCollection.from_mcp."""
    blocks = [b for b in re.findall(r"\n```python\n(.*?)```", open(reference).read(), re.S)
              if "ToolCollection.from_mcp" in b]
    if len(blocks) != 1:
        fail("%d python blocks with ToolCollection.from_mcp in %s, not one" % (len(blocks), reference))
    return blocks[0]


def main():
    code = snippet(sys.argv[1])
    model = Scripted()
    scope = {"model": model}
    try:
        exec(compile(code, "REFERENCE.md (smolagents)", "exec"), scope)  # the snippet as written
    except Exception as e:  # noqa: BLE001 - the failure is the report
        fail("the snippet raised %s: %s" % (type(e).__name__, e))
    if model.calls:
        fail("the agent stopped before the script's end: %r left" % (model.calls,))
    seen = "\n".join(str(m) for msgs in model.seen for m in msgs)
    for want in ('"stdout":"40', '"stdout":"nulls-ok'):
        if want not in seen.replace(" ", ""):
            fail("the tool results did not reach the model (%s): %s" % (want, seen[-3000:]))
    for bad in ("is required", "should be", "unknown argument", "Error executing tool"):
        if bad in seen:
            fail("a tool call was refused (%r): %s" % (bad, seen[-3000:]))
    print("ok smolagents_from_mcp: run_python with code alone and with null optional arguments", flush=True)


if __name__ == "__main__":
    main()
