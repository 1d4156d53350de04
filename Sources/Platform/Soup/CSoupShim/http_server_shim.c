// See include/http_server_shim.h for what this is and why.
#include "http_server_shim.h"

typedef struct {
    AsIncomingFn incoming;
    gpointer user_data;
    GDestroyNotify destroy;
} Listener;

static void listener_free(gpointer data, GClosure *closure) {
    Listener *listener = data;
    if (listener->destroy) listener->destroy(listener->user_data);
    g_free(listener);
}

static gboolean on_incoming(GSocketService *service, GSocketConnection *connection, GObject *source, gpointer data) {
    Listener *listener = data;
    listener->incoming(connection, listener->user_data);
    return TRUE;   // handled: no other handler runs
}

GSocketService *as_http_listen(const char *host, guint port, guint *bound_port, AsIncomingFn incoming,
                               gpointer user_data, GDestroyNotify destroy, GError **error) {
    GInetAddress *inet = g_inet_address_new_from_string(host);
    if (!inet) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "\"%s\" is not an IP address to listen on", host);
        if (destroy) destroy(user_data);
        return NULL;
    }
    GSocketAddress *address = g_inet_socket_address_new(inet, (guint16)port);
    g_object_unref(inet);
    GSocketService *service = g_socket_service_new();
    // GIO's default backlog (10) drops the SYNs of a burst, and clients wait seconds to retry;
    // the server's own caps decide who is served, not the kernel's queue.
    g_socket_listener_set_backlog(G_SOCKET_LISTENER(service), 256);
    GSocketAddress *effective = NULL;
    gboolean ok = g_socket_listener_add_address(G_SOCKET_LISTENER(service), address, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, &effective, error);
    g_object_unref(address);
    if (!ok) {
        g_object_unref(service);
        if (destroy) destroy(user_data);
        return NULL;
    }
    if (bound_port) *bound_port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(effective));
    g_object_unref(effective);
    Listener *listener = g_new0(Listener, 1);
    listener->incoming = incoming;
    listener->user_data = user_data;
    listener->destroy = destroy;
    g_signal_connect_data(service, "incoming", G_CALLBACK(on_incoming), listener, listener_free, 0);
    g_socket_service_start(service);
    return service;
}

void as_http_listener_stop(GSocketService *service) {
    g_socket_service_stop(service);
    g_socket_listener_close(G_SOCKET_LISTENER(service));
    g_signal_handlers_disconnect_matched(service, G_SIGNAL_MATCH_FUNC, 0, 0, NULL, on_incoming, NULL);
    g_object_unref(service);
}

// ---------------------------------------------------------------------------
// Answer, linger, close.

typedef struct {
    GIOStream *stream;
    GSocket *socket;
    GBytes *answer;
    GCancellable *cancellable;   // cancelled when lingering has lasted long enough
    guint timer;
    gsize linger_left;
    guint8 buffer[16384];
    AsClosedFn closed;
    gpointer user_data;
} Answer;

static void answer_closed(GObject *source, GAsyncResult *result, gpointer data) {
    Answer *answer = data;
    g_io_stream_close_finish(answer->stream, result, NULL);
    if (answer->timer) g_source_remove(answer->timer);
    if (answer->closed) answer->closed(answer->user_data);
    g_object_unref(answer->stream);
    if (answer->socket) g_object_unref(answer->socket);
    g_bytes_unref(answer->answer);
    g_object_unref(answer->cancellable);
    g_free(answer);
}

static void answer_close(Answer *answer) {
    // Not cancellable: the close itself must happen (a cancelled close leaves the fd open until finalize).
    g_io_stream_close_async(answer->stream, G_PRIORITY_DEFAULT, NULL, answer_closed, answer);
}

static gboolean linger_over(gpointer data) {
    Answer *answer = data;
    answer->timer = 0;
    g_cancellable_cancel(answer->cancellable);
    return G_SOURCE_REMOVE;
}

static void dropped(GObject *source, GAsyncResult *result, gpointer data) {
    Answer *answer = data;
    gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), result, NULL);
    if (n <= 0 || (gsize)n >= answer->linger_left) {
        answer_close(answer);   // the client finished (or failed), or sent too much to wait for
        return;
    }
    answer->linger_left -= (gsize)n;
    g_input_stream_read_async(g_io_stream_get_input_stream(answer->stream), answer->buffer, sizeof answer->buffer,
                              G_PRIORITY_DEFAULT, answer->cancellable, dropped, answer);
}

static void answer_written(GObject *source, GAsyncResult *result, gpointer data) {
    Answer *answer = data;
    if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, NULL)) {
        answer_close(answer);
        return;
    }
    if (answer->socket) g_socket_shutdown(answer->socket, FALSE, TRUE, NULL);
    g_input_stream_read_async(g_io_stream_get_input_stream(answer->stream), answer->buffer, sizeof answer->buffer,
                              G_PRIORITY_DEFAULT, answer->cancellable, dropped, answer);
}

void as_http_answer_and_close(GIOStream *stream, GSocket *socket, GBytes *bytes, guint linger_ms,
                              gsize linger_bytes, AsClosedFn closed, gpointer user_data) {
    Answer *answer = g_new0(Answer, 1);
    answer->stream = g_object_ref(stream);
    answer->socket = socket ? g_object_ref(socket) : NULL;
    answer->answer = g_bytes_ref(bytes);
    answer->cancellable = g_cancellable_new();
    answer->linger_left = linger_bytes;
    answer->closed = closed;
    answer->user_data = user_data;
    // One deadline for the whole exchange: a client that reads nothing cannot hold the write open either.
    answer->timer = g_timeout_add(linger_ms, linger_over, answer);
    gsize length = 0;
    const void *data = g_bytes_get_data(bytes, &length);
    g_output_stream_write_all_async(g_io_stream_get_output_stream(stream), data, length, G_PRIORITY_DEFAULT,
                                    answer->cancellable, answer_written, answer);
}
