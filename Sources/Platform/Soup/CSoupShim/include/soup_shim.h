// The one piece of libsoup use that needs C: a client WebSocket whose big
// binary messages are streamed from a file in small pieces instead of being
// copied whole into one frame (libsoup 3's send_message does that: a 200 MB
// upload would cost 200 MB of memory).
//
// How: the HTTP upgrade is done here over GIO (GSocketClient, TLS from
// glib-networking), and libsoup's SoupWebsocketConnection runs the protocol
// (framing, pings, close) over an I/O stream whose output passes through a
// *gate*. To stream a file, the gate waits until libsoup has no frame half
// written, closes (libsoup's writes then see "would block" and wait), writes
// one masked binary frame straight to the socket, and opens again.
//
// Everything here runs on the thread of the default GLib main context,
// except the blocking handshake, which runs in a GTask worker thread.
#ifndef ALLSPARK_SOUP_SHIM_H
#define ALLSPARK_SOUP_SHIM_H

#include <libsoup/soup.h>
// The HTTP server's C half, exported with this module.
#include "http_server_shim.h"

G_BEGIN_DECLS

typedef void (*AsConnectDone)(SoupWebsocketConnection *connection, GError *error, gpointer user_data);

/// Opens a client WebSocket to `url` (ws:// or wss://). With
/// `accept_any_certificate`, self-signed certificates are accepted.
/// `timeout_seconds` bounds each read and also the whole handshake
/// (connect, TLS and HTTP upgrade together).
/// `done` gets a new reference to the connection, or an error.
void as_websocket_connect_async(const char *url, gboolean accept_any_certificate, guint timeout_seconds,
                                AsConnectDone done, gpointer user_data);

/// True if `connection` was opened by as_websocket_connect_async (it can stream files).
gboolean as_websocket_can_stream(SoupWebsocketConnection *connection);

/// Bytes of streamed frames (files, pings) the connection has taken so far: grows while a
/// file goes out to a peer that reads, stops when the peer (or the path to it) stops.
guint64 as_websocket_streamed_bytes(SoupWebsocketConnection *connection);

/// This side's IP address on the connection (the interface it goes out by), or NULL;
/// free with g_free. Only connections opened by as_websocket_connect_async.
char *as_websocket_local_address(SoupWebsocketConnection *connection);

typedef void (*AsSendDone)(gboolean ok, const char *error_message, gpointer user_data);

/// Sends the file at `path` as one binary message, read and written 1 MiB
/// at a time. On a failure after the first byte the frame cannot be
/// finished, so the connection is closed (the peer sees it drop). `done`
/// runs once, on the main context.
void as_websocket_send_file(SoupWebsocketConnection *connection, const char *path, AsSendDone done, gpointer user_data);

/// Sends a ping with `payload` (at most 125 bytes) through the gate, after
/// every frame already queued or being streamed. libsoup 3 has no call for
/// it; the peer's pong comes back as libsoup's "pong" signal. Servers that
/// answer in order send it after their replies to everything before it.
void as_websocket_send_ping(SoupWebsocketConnection *connection, const guint8 *payload, gsize length);

/// The payload of libsoup's "pong" signal as NUL-terminated text, whichever
/// type this libsoup passes (a GByteArray in 3.2, a GBytes later).
const char *as_websocket_pong_text(gconstpointer payload);

G_END_DECLS

#endif
