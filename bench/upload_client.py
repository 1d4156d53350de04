"""The reference: a Python `websockets` client uploading one file to an
AllSpark server the usual way (metadata, then the file read into memory
and sent as one binary message), waiting for the reply.

    python bench/upload_client.py ws://127.0.0.1:PORT/ FILE
"""
import asyncio
import json
import os
import sys

import websockets


async def main(url, path):
    async with websockets.connect(url, max_size=None, compression=None) as ws:
        await ws.send(json.dumps({"type": "clientInfo", "clientName": "python-websockets"}))
        await ws.send(json.dumps({"type": "upload", "filename": os.path.basename(path),
                                  "filesize": os.path.getsize(path), "mimetype": "video/mp4"}))
        with open(path, "rb") as f:
            await ws.send(f.read())
        while True:
            reply = json.loads(await ws.recv())
            if "status" in reply:
                sys.exit(0 if reply["status"] == "success" else 1)

asyncio.run(main(sys.argv[1], sys.argv[2]))
