"""The five-line quick start (needs `agentjail` on PATH, or AGENTJAIL_BINARY)."""
import agentjail

with agentjail.Client() as client:
    record = client.run("print(sum(range(10)))")
    print(record.ok, record.stdout, end="")  # True 45
