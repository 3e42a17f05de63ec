"""One client shared by many threads, a session that keeps state, and the asyncio twin."""
import asyncio
from concurrent.futures import ThreadPoolExecutor

import agentjail

SQUARE = "print(int(input()) ** 2)"

with agentjail.Client() as client:
    with ThreadPoolExecutor(8) as pool:
        records = pool.map(lambda n: client.run(SQUARE, stdin=f"{n}\n", output_mode="text"), range(16))
        print([r.stdout.strip() for r in records])

    with client.session() as s:
        s.exec("import statistics\ndata = [3, 1, 4, 1, 5]")
        print(s.exec("statistics.median(data)").value)  # 3
        r = s.exec("while True: pass", timeout=0.5)
        print(r.stop.kind, r.session.get("ended"))  # StopKind.CODE_TIMEOUT True


async def main():
    async with agentjail.AsyncClient() as client:
        records = await asyncio.gather(*(client.run(SQUARE, stdin=f"{n}\n", output_mode="text") for n in range(4)))
        print([r.stdout.strip() for r in records])

asyncio.run(main())
