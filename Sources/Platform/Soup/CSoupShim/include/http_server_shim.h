// The C half of the console's HTTP server (SoupSupport.HTTPServer): what needs
// GIO callbacks or GObject signals with return values, kept out of Swift.
//
// Why the server accepts connections itself instead of soup_server_listen():
// it must count and bound connections when they arrive (before libsoup reads a
// byte), cut the ones that stall, and answer a refused one with a clear 503.
// Accepted connections are handed to libsoup with soup_server_accept_iostream.
//
// Everything here runs on the thread of the default GLib main context.
#ifndef ALLSPARK_HTTP_SERVER_SHIM_H
#define ALLSPARK_HTTP_SERVER_SHIM_H

#include <libsoup/soup.h>

G_BEGIN_DECLS

/// A new connection: `connection` is borrowed (take a reference to keep it).
typedef void (*AsIncomingFn)(GSocketConnection *connection, gpointer user_data);

/// Listens on `host` (an IP address) and `port` (0: any free one) and calls
/// `incoming` for every accepted connection. `bound_port` gets the port.
/// NULL and `error` when the address is not an IP address or is taken.
/// Free with as_http_listener_stop.
GSocketService *as_http_listen(const char *host, guint port, guint *bound_port, AsIncomingFn incoming,
                               gpointer user_data, GDestroyNotify destroy, GError **error);

/// Stops listening and drops the listener.
void as_http_listener_stop(GSocketService *service);

typedef void (*AsClosedFn)(gpointer user_data);

/// Writes `answer` (a whole HTTP response) on `stream`, which nothing else
/// reads or writes any more, then closes it. In between, what the client
/// still sends is read and dropped for at most `linger_ms` and `linger_bytes`,
/// so that closing does not turn into a reset that could destroy the answer
/// before the client read it (RFC 9112 section 9.6). With `socket` (a plain
/// TCP connection) the write side is shut first, so the client sees the end.
/// `closed` runs once the stream is closed (may be NULL).
void as_http_answer_and_close(GIOStream *stream, GSocket *socket, GBytes *answer, guint linger_ms,
                              gsize linger_bytes, AsClosedFn closed, gpointer user_data);

G_END_DECLS

#endif
