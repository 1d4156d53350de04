// libsoup 3 (WebSocket client and the in-process test server).
#ifndef ALLSPARK_CSOUP_SHIM_H
#define ALLSPARK_CSOUP_SHIM_H
#include <libsoup/soup.h>
#endif
