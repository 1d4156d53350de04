#!/usr/bin/python3
"""An RTSP camera for the tests: gst-rtsp-server (Debian's
gir1.2-gst-rtsp-server-1.0 with python3-gi) serving a moving test picture in
H.264 and a tone in A-law at rtsp://127.0.0.1:PORT/cam, with HTTP-style Basic
credentials when a user is given. Prints "ready" once it listens.

    rtsp_test_server.py PORT [USER PASSWORD]
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import GLib, Gst, GstRtspServer  # noqa: E402

Gst.init(None)
port = sys.argv[1]
user, password = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else (None, None)

server = GstRtspServer.RTSPServer()
server.set_address("127.0.0.1")
server.set_service(port)
factory = GstRtspServer.RTSPMediaFactory()
factory.set_launch(
    "( videotestsrc is-live=true pattern=ball ! video/x-raw,width=320,height=240,framerate=15/1"
    " ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 ! rtph264pay name=pay0 pt=96"
    "  audiotestsrc is-live=true ! audio/x-raw,rate=8000,channels=1 ! alawenc ! rtppcmapay name=pay1 pt=8 )")
factory.set_shared(True)
if user:
    auth = GstRtspServer.RTSPAuth()
    token = GstRtspServer.RTSPToken()
    token.set_string(GstRtspServer.RTSP_TOKEN_MEDIA_FACTORY_ROLE, "camera-user")
    auth.add_basic(GstRtspServer.RTSPAuth.make_basic(user, password), token)
    server.set_auth(auth)
    permissions = GstRtspServer.RTSPPermissions()
    permissions.add_role_from_structure(Gst.Structure.new_from_string(
        "camera-user, media.factory.access=(boolean)true, media.factory.construct=(boolean)true"))
    factory.set_permissions(permissions)
server.get_mount_points().add_factory("/cam", factory)
if server.attach(None) == 0:
    sys.exit(f"cannot listen on 127.0.0.1:{port}")
print("ready", flush=True)
GLib.MainLoop().run()
