#!/usr/bin/env python3
"""delay_proxy.py LISTEN_PORT TARGET_PORT DELAY_MS: a loopback TCP proxy that
holds every chunk DELAY_MS before passing it on (both directions, order kept),
so a local redis-server behaves like one a network round trip of 2 x DELAY_MS
away.  For bench/redlock/run.sh --latency."""
import asyncio
import sys

listen_port, target_port, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000


async def pipe(reader, writer):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def sender():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.ensure_future(sender())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((loop.time() + delay, data))
    finally:
        queue.put_nowait((0, None))
        await task


async def handle(client_r, client_w):
    try:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", target_port)
    except OSError:
        client_w.close()
        return
    await asyncio.gather(pipe(client_r, server_w), pipe(server_r, client_w),
                         return_exceptions=True)


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


asyncio.run(main())
