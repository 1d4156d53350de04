// gst-rtsp-server (Debian's libgstrtspserver-1.0-dev), for the privacy-safe RTSP stream.
#ifndef ALLSPARK_CRTSPSERVER_SHIM_H
#define ALLSPARK_CRTSPSERVER_SHIM_H
#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/rtsp-server/rtsp-server.h>
#endif
