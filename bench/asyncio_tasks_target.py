"""The target of bench/asyncio_tasks.py: N asyncio tasks, each suspended in
asyncio.sleep under two coroutines of its own (a chain of three), and the
loop idle. Prints "ready" once they all wait."""
import asyncio
import sys


async def leaf():
    await asyncio.sleep(3600)


async def middle():
    await leaf()


async def main(n):
    tasks = [asyncio.create_task(middle(), name=f"t{i}") for i in range(n)]
    await asyncio.sleep(0.5)
    print("ready", flush=True)
    await asyncio.sleep(3600)


asyncio.run(main(int(sys.argv[1])))
