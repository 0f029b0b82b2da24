"""Named asyncio tasks, each held at one await for --seconds: a sleeper, a
reader of a socket whose server never answers (a listening socket nobody
accepts on), a task awaiting a gather of two children, a Queue.get and a
CPU-bound coroutine that never yields. The CPU-bound one writes the truth
file once they are all in place, just before it starts burning."""
import asyncio
import socket
import time

from common import parse, write_truth

args = parse()


async def sleeper():
    await asyncio.sleep(3600)


async def reader(port):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    await r.read(100)


async def child_sleep():
    await asyncio.sleep(3600)


async def child_event(event):
    await event.wait()


async def gatherer(event):
    await asyncio.gather(asyncio.create_task(child_sleep(), name="child-1"),
                         asyncio.create_task(child_event(event), name="child-2"))


async def consumer(queue):
    await queue.get()


def burn_until(deadline):
    n = 0
    while time.monotonic() < deadline:
        n += 1
    return n


async def cpu(seconds, names):
    write_truth(args, {"tasks": names + ["cpu"]})  # everyone else is in place
    return burn_until(time.monotonic() + seconds)


async def main():
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections complete in the kernel; nobody accepts or answers
    event, queue = asyncio.Event(), asyncio.Queue()
    tasks = [asyncio.create_task(sleeper(), name="sleeper"),
             asyncio.create_task(reader(silent.getsockname()[1]), name="reader"),
             asyncio.create_task(gatherer(event), name="gatherer"),
             asyncio.create_task(consumer(queue), name="consumer")]
    await asyncio.sleep(0.3)
    await asyncio.create_task(cpu(args.seconds, [t.get_name() for t in tasks]), name="cpu")


asyncio.run(main())
