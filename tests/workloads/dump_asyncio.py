"""An asyncio event loop idle in epoll_wait with a listening socket and one
connection open; the truth file names the server's and the connection's
addresses once they exist."""
import asyncio

from common import parse, write_truth

args = parse()


async def handle(reader, writer):
    await reader.read(1)


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname())
    await asyncio.sleep(0.2)
    write_truth(args, {"listen": "%s:%d" % server.sockets[0].getsockname(),
                       "client": "%s:%d" % writer.get_extra_info("sockname")})
    await asyncio.sleep(args.seconds)


asyncio.run(main())
