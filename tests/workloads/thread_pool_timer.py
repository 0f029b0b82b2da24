"""A service's shape: an asyncio loop doing 2 ms of CPU every 8 ms in the
main thread, beside a pool of four threads (pool-0..pool-3) each doing 1-4
ms of CPU then sleeping 1-13 ms, so the five share the CPUs in short runs.
The truth is each thread's time.thread_time(), by native id."""
import asyncio
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(__file__))
import common  # noqa: E402

POOL = 4


def spin(ms):
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def pool_worker(i, seconds, cpu):
    threading.current_thread().name = f"pool-{i}"
    start, stop = time.thread_time(), time.monotonic() + seconds
    while time.monotonic() < stop:
        spin(1 + i)
        time.sleep(0.003 * (POOL - i) + 0.001)
    cpu[threading.get_native_id()] = time.thread_time() - start


async def ticker(seconds):
    loop = asyncio.get_running_loop()
    stop = loop.time() + seconds
    while loop.time() < stop:
        spin(2)
        await asyncio.sleep(0.008)


def main():
    args = common.parse()
    cpu = {}
    start = time.thread_time()
    with ThreadPoolExecutor(POOL) as ex:
        futures = [ex.submit(pool_worker, i, args.seconds, cpu) for i in range(POOL)]
        asyncio.run(ticker(args.seconds))
        cpu[threading.get_native_id()] = time.thread_time() - start
        for f in futures:
            f.result()
    common.write_truth(args, {"cpu_s": {str(tid): s for tid, s in cpu.items()}})


if __name__ == "__main__":
    main()
