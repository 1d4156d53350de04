"""A WebSocket server that takes uploads the way deployed AllSpark servers
do (shared/DESIGN.md): clientConfig on connect, clientInfo stored, upload
metadata opens the file, the next binary message is written and earns
{"status":"success"}; messages up to 300 MB. Compression off so both
clients send the same bytes.

For the benchmark it prints one JSON line per finished upload: client,
file, bytes, the time from the metadata to the end of the binary message,
and the time the metadata arrived.

    python bench/upload_server.py PORT UPLOAD_DIR
"""
import asyncio
import json
import os
import sys
import time

import websockets


async def handler(ws):
    name, metadata, handle, started = "?", None, None, 0.0
    await ws.send(json.dumps({"type": "clientConfig", "config": {"videoFormat": "mp4"}}))
    async for message in ws:
        if isinstance(message, str):
            data = json.loads(message)
            if data.get("type") == "clientInfo":
                name = data.get("clientName", "?")
            elif data.get("type") == "upload":
                metadata, started = data, time.time()
                handle = open(os.path.join(sys.argv[2], os.path.basename(data["filename"])), "wb")
            else:
                await ws.send(json.dumps({"status": "error", "message": "Unknown message type"}))
        else:
            if handle is None:
                await ws.send(json.dumps({"status": "error", "message": "Metadata not received yet"}))
                continue
            received = time.time()
            handle.write(message)
            handle.close()
            handle = None
            print(json.dumps({"client": name, "file": metadata["filename"], "bytes": len(message),
                              "declared": metadata.get("filesize"), "seconds": received - started,
                              "metadata_at": started}), flush=True)
            await ws.send(json.dumps({"status": "success", "message": "Video uploaded successfully"}))


async def main():
    async with websockets.serve(handler, "127.0.0.1", int(sys.argv[1]), max_size=314572800, compression=None):
        await asyncio.Future()

asyncio.run(main())
