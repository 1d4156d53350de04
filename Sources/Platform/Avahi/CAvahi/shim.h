// Avahi client with the GLib poll adapter (discovery of _allspark._tcp).
#ifndef ALLSPARK_CAVAHI_SHIM_H
#define ALLSPARK_CAVAHI_SHIM_H
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-glib/glib-watch.h>
#endif
