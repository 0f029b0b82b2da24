"""A hostile target of test_forged_tasks.py: asyncio tasks, then a task list
forged from inside, and the loop never run again (time.sleep holds it) so
that only a reader from outside walks the forgery. Prints "ready" once forged.
  cycle  (3.14+) the second task's list node points at itself: a cycle that
         never comes back to the thread state's head;
  huge   (before 3.14) a million ints added to the set under the WeakSet of
         all tasks: a million entries that are no weak reference;
  refs   (before 3.14) 300,000 weak references to as many objects that are
         no task, in that set: more distinct addresses than a walk's set of
         those seen holds;
  names  nothing forged, but task names with terminal controls, newlines,
         ';' and a bidi override, one of them running (a CPU-bound task)."""
import asyncio
import ctypes
import sys
import time

mode = sys.argv[1]
TASK_NODE = 152  # 3.14 and 3.15: _AsyncioDebug.asyncio_task_object.task_node (Debian sid builds)


async def nap():
    await asyncio.sleep(3600)


def forge_cycle(tasks):
    node = id(tasks[1]) + TASK_NODE
    nxt = ctypes.c_uint64.from_address(node)
    # check the node really is one: it links to a neighbour's node or a head
    prv = ctypes.c_uint64.from_address(node + 8).value
    if ctypes.c_uint64.from_address(prv).value != node:
        print("bad offset", flush=True)
        sys.exit(1)
    nxt.value = node


def forge_huge():
    import asyncio.tasks as t
    holder = getattr(t, "_all_tasks", None) or t._scheduled_tasks
    holder.data.update(range(1_000_000))


class NoTask:
    pass


KEEP = []


def forge_refs():
    import asyncio.tasks as t
    import weakref
    holder = getattr(t, "_all_tasks", None) or t._scheduled_tasks
    KEEP.extend(NoTask() for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 300_000))
    holder.data.update(weakref.ref(o) for o in KEEP)


NAMES = ["a;b\nc\x1b[31mred\u202eevil", "x;y\nz\x1b]0;title\x07"]


def burn():
    while True:
        pass


async def spin():
    print("ready", flush=True)
    burn()


async def names():
    asyncio.create_task(nap(), name=NAMES[0])
    await asyncio.sleep(0.1)
    await asyncio.create_task(spin(), name=NAMES[1])


async def main():
    if mode == "names":
        return await names()
    tasks = [asyncio.create_task(nap(), name=f"nap-{i}") for i in range(3)]
    await asyncio.sleep(0.1)
    {"cycle": lambda: forge_cycle(tasks), "huge": forge_huge, "refs": forge_refs}[mode]()
    print("ready", flush=True)
    time.sleep(3600)


asyncio.run(main())
