// GLib and GObject: the main loop every other library here (GStreamer's
// bus, libsoup, Avahi's GLib poll) is driven by.
#ifndef ALLSPARK_CGLIB_SHIM_H
#define ALLSPARK_CGLIB_SHIM_H
#include <glib.h>
#include <glib-object.h>
#include <glib-unix.h>
#endif
