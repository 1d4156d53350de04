// See include/soup_shim.h for what this is and why.
#include "soup_shim.h"

#include <string.h>

#define WEBSOCKET_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define FILE_PIECE (1024 * 1024)

// ---------------------------------------------------------------------------
// The gate: a pollable filter output stream between libsoup and the socket.

#define AS_TYPE_GATED_OUTPUT_STREAM (as_gated_output_stream_get_type())
G_DECLARE_FINAL_TYPE(AsGatedOutputStream, as_gated_output_stream, AS, GATED_OUTPUT_STREAM, GFilterOutputStream)

struct _AsGatedOutputStream {
    GFilterOutputStream parent;
    GIOStream *connection;       // the socket or TLS connection; closed together with this stream
    gboolean shut;               // a file is being streamed: libsoup must wait
    gboolean last_write_partial; // libsoup has a frame half written
    GPtrArray *sources;          // sources handed to libsoup: outstanding ones mean it waits to write
    guint64 streamed;            // bytes of streamed frames the connection has taken so far (progress)
};

static void as_gated_pollable_init(GPollableOutputStreamInterface *iface);
G_DEFINE_TYPE_WITH_CODE(AsGatedOutputStream, as_gated_output_stream, G_TYPE_FILTER_OUTPUT_STREAM,
                        G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_OUTPUT_STREAM, as_gated_pollable_init))

static GPollableOutputStream *gate_base(AsGatedOutputStream *self) {
    return G_POLLABLE_OUTPUT_STREAM(g_filter_output_stream_get_base_stream(G_FILTER_OUTPUT_STREAM(self)));
}

static gboolean gate_can_poll(GPollableOutputStream *stream) {
    return g_pollable_output_stream_can_poll(gate_base(AS_GATED_OUTPUT_STREAM(stream)));
}

static gboolean gate_is_writable(GPollableOutputStream *stream) {
    AsGatedOutputStream *self = AS_GATED_OUTPUT_STREAM(stream);
    return !self->shut && g_pollable_output_stream_is_writable(gate_base(self));
}

static gssize gate_write_nonblocking(GPollableOutputStream *stream, const void *buffer, gsize count, GError **error) {
    AsGatedOutputStream *self = AS_GATED_OUTPUT_STREAM(stream);
    if (self->shut) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK, "a file is being streamed");
        return -1;
    }
    gssize written = g_pollable_output_stream_write_nonblocking(gate_base(self), buffer, count, NULL, error);
    // libsoup always asks to write the rest of its current frame: all of it written means a frame boundary.
    self->last_write_partial = written < 0 || (gsize)written < count;
    return written;
}

static GSource *gate_create_source(GPollableOutputStream *stream, GCancellable *cancellable) {
    AsGatedOutputStream *self = AS_GATED_OUTPUT_STREAM(stream);
    GSource *source;
    if (self->shut) {
        source = g_pollable_source_new(G_OBJECT(stream));   // made ready when the gate opens
    } else {
        GSource *base = g_pollable_output_stream_create_source(gate_base(self), cancellable);
        source = g_pollable_source_new_full(stream, base, cancellable);
        g_source_unref(base);
    }
    g_ptr_array_add(self->sources, g_source_ref(source));
    return source;
}

static void gate_forget_finished_sources(AsGatedOutputStream *self) {
    for (guint i = self->sources->len; i-- > 0;) {
        if (g_source_is_destroyed(g_ptr_array_index(self->sources, i))) g_ptr_array_remove_index_fast(self->sources, i);
    }
}

/// libsoup has no frame half written and is not waiting to write one.
static gboolean gate_libsoup_is_idle(AsGatedOutputStream *self) {
    gate_forget_finished_sources(self);
    return self->sources->len == 0 && !self->last_write_partial;
}

static void gate_open(AsGatedOutputStream *self) {
    self->shut = FALSE;
    gate_forget_finished_sources(self);
    for (guint i = 0; i < self->sources->len; i++) g_source_set_ready_time(g_ptr_array_index(self->sources, i), 0);
}

static gboolean gate_close_fn(GOutputStream *stream, GCancellable *cancellable, GError **error) {
    AsGatedOutputStream *self = AS_GATED_OUTPUT_STREAM(stream);
    gboolean ok = G_OUTPUT_STREAM_CLASS(as_gated_output_stream_parent_class)->close_fn(stream, cancellable, error);
    // libsoup closes the I/O stream it was given; the connection underneath must close too.
    if (self->connection && !g_io_stream_is_closed(self->connection)) g_io_stream_close(self->connection, NULL, NULL);
    return ok;
}

static void gate_finalize(GObject *object) {
    AsGatedOutputStream *self = AS_GATED_OUTPUT_STREAM(object);
    g_ptr_array_unref(self->sources);
    g_clear_object(&self->connection);
    G_OBJECT_CLASS(as_gated_output_stream_parent_class)->finalize(object);
}

static void as_gated_output_stream_class_init(AsGatedOutputStreamClass *klass) {
    G_OBJECT_CLASS(klass)->finalize = gate_finalize;
    G_OUTPUT_STREAM_CLASS(klass)->close_fn = gate_close_fn;
}

static void as_gated_output_stream_init(AsGatedOutputStream *self) {
    self->sources = g_ptr_array_new_with_free_func((GDestroyNotify)g_source_unref);
}

static void as_gated_pollable_init(GPollableOutputStreamInterface *iface) {
    iface->can_poll = gate_can_poll;
    iface->is_writable = gate_is_writable;
    iface->create_source = gate_create_source;
    iface->write_nonblocking = gate_write_nonblocking;
}

static AsGatedOutputStream *gate_of(SoupWebsocketConnection *connection) {
    GIOStream *io = soup_websocket_connection_get_io_stream(connection);
    GOutputStream *out = io ? g_io_stream_get_output_stream(io) : NULL;
    return out && G_TYPE_CHECK_INSTANCE_TYPE(out, AS_TYPE_GATED_OUTPUT_STREAM) ? AS_GATED_OUTPUT_STREAM(out) : NULL;
}

gboolean as_websocket_can_stream(SoupWebsocketConnection *connection) { return gate_of(connection) != NULL; }

char *as_websocket_local_address(SoupWebsocketConnection *connection) {
    AsGatedOutputStream *gate = gate_of(connection);
    if (!gate) return NULL;
    GIOStream *io = g_object_ref(gate->connection);
    if (G_IS_TLS_CONNECTION(io)) {
        GIOStream *base = NULL;
        g_object_get(io, "base-io-stream", &base, NULL);   // a new reference
        g_object_unref(io);
        io = base;
    }
    char *text = NULL;
    if (io && G_IS_SOCKET_CONNECTION(io)) {
        GSocketAddress *address = g_socket_connection_get_local_address(G_SOCKET_CONNECTION(io), NULL);
        if (address && G_IS_INET_SOCKET_ADDRESS(address))
            text = g_inet_address_to_string(g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address)));
        if (address) g_object_unref(address);
    }
    if (io) g_object_unref(io);
    return text;
}

guint64 as_websocket_streamed_bytes(SoupWebsocketConnection *connection) {
    AsGatedOutputStream *gate = gate_of(connection);
    return gate ? gate->streamed : 0;
}

// ---------------------------------------------------------------------------
// The HTTP upgrade (RFC 6455 section 4), blocking, in a worker thread.

typedef struct {
    char *url;
    gboolean accept_any_certificate;
    guint timeout;
    GCancellable *cancellable;   // cancelled at the deadline: it bounds the whole handshake, not each read
    GSource *deadline;           // the deadline's timeout on the main context
    AsConnectDone done;
    gpointer user_data;
} ConnectRequest;

static void connect_request_free(ConnectRequest *request) {
    g_free(request->url);
    g_object_unref(request->cancellable);
    if (request->deadline) {
        g_source_destroy(request->deadline);
        g_source_unref(request->deadline);
    }
    g_free(request);
}

static gboolean handshake_deadline_passed(gpointer data) {
    ConnectRequest *request = data;
    g_cancellable_cancel(request->cancellable);
    return G_SOURCE_REMOVE;
}

static gboolean accept_certificate(GTlsConnection *connection, GTlsCertificate *certificate,
                                   GTlsCertificateFlags errors, gpointer data) {
    return TRUE;
}

static void on_socket_client_event(GSocketClient *client, GSocketClientEvent event, GSocketConnectable *connectable,
                                   GIOStream *connection, gpointer accept_any) {
    if (event == G_SOCKET_CLIENT_TLS_HANDSHAKING && GPOINTER_TO_INT(accept_any))
        g_signal_connect(connection, "accept-certificate", G_CALLBACK(accept_certificate), NULL);
}

static char *expected_accept(const char *key) {
    char *joined = g_strconcat(key, WEBSOCKET_GUID, NULL);
    guint8 digest[20];
    gsize length = sizeof digest;
    GChecksum *sha1 = g_checksum_new(G_CHECKSUM_SHA1);
    g_checksum_update(sha1, (const guchar *)joined, strlen(joined));
    g_checksum_get_digest(sha1, digest, &length);
    g_checksum_free(sha1);
    g_free(joined);
    return g_base64_encode(digest, length);
}

/// The value of `name` in an HTTP response head (case-insensitive), or NULL.
static char *header_value(const char *head, const char *name) {
    char **lines = g_strsplit(head, "\r\n", -1);
    char *value = NULL;
    size_t name_length = strlen(name);
    for (char **line = lines + 1; *line && !value; line++) {
        if (g_ascii_strncasecmp(*line, name, name_length) == 0 && (*line)[name_length] == ':')
            value = g_strstrip(g_strdup(*line + name_length + 1));
    }
    g_strfreev(lines);
    return value;
}

static GIOStream *upgrade(ConnectRequest *request, GCancellable *cancellable, GError **error) {
    GUri *uri = g_uri_parse(request->url, G_URI_FLAGS_NONE, error);
    if (!uri) return NULL;
    gboolean tls = g_ascii_strcasecmp(g_uri_get_scheme(uri), "wss") == 0;
    int port = g_uri_get_port(uri) > 0 ? g_uri_get_port(uri) : (tls ? 443 : 80);
    const char *host = g_uri_get_host(uri);
    const char *path = g_uri_get_path(uri) && *g_uri_get_path(uri) ? g_uri_get_path(uri) : "/";
    const char *query = g_uri_get_query(uri);

    GSocketClient *client = g_socket_client_new();
    g_socket_client_set_tls(client, tls);
    g_socket_client_set_timeout(client, request->timeout);
    g_signal_connect(client, "event", G_CALLBACK(on_socket_client_event), GINT_TO_POINTER(request->accept_any_certificate));
    GSocketConnectable *address = g_network_address_new(host, (guint16)port);
    GSocketConnection *connection = g_socket_client_connect(client, address, cancellable, error);
    g_object_unref(address);
    g_object_unref(client);
    if (!connection) {
        g_uri_unref(uri);
        return NULL;
    }

    guint8 nonce[16];
    for (size_t i = 0; i < sizeof nonce; i++) nonce[i] = (guint8)g_random_int_range(0, 256);
    char *key = g_base64_encode(nonce, sizeof nonce);
    char *authority = strchr(host, ':') ? g_strdup_printf("[%s]:%d", host, port) : g_strdup_printf("%s:%d", host, port);
    char *head = g_strdup_printf("GET %s%s%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nUser-Agent: allspark-recorder\r\n\r\n",
                                 path, query ? "?" : "", query ? query : "", authority, key);
    g_free(authority);
    g_uri_unref(uri);
    gboolean ok = g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(connection)), head, strlen(head),
                                            NULL, cancellable, error);
    g_free(head);

    // Byte by byte: whatever follows the head (the server's first message) must stay in the stream for libsoup.
    GString *response = g_string_new(NULL);
    GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(connection));
    while (ok && !g_str_has_suffix(response->str, "\r\n\r\n")) {
        char c;
        gssize n = g_input_stream_read(in, &c, 1, cancellable, error);
        if (n <= 0) {
            if (n == 0) g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, "the server closed the connection during the WebSocket handshake");
            ok = FALSE;
        } else if (response->len > 16384) {
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "the server's handshake answer is too long");
            ok = FALSE;
        } else {
            g_string_append_c(response, c);
        }
    }
    if (ok) {
        char *accept = header_value(response->str, "Sec-WebSocket-Accept");
        char *expected = expected_accept(key);
        if (!g_str_has_prefix(response->str, "HTTP/1.1 101")) {
            char *status = g_strndup(response->str, strcspn(response->str, "\r\n"));
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "the server did not accept the WebSocket (%s)", status);
            g_free(status);
            ok = FALSE;
        } else if (!accept || strcmp(accept, expected) != 0) {
            g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "the server's Sec-WebSocket-Accept is wrong");
            ok = FALSE;
        }
        g_free(accept);
        g_free(expected);
    }
    g_string_free(response, TRUE);
    g_free(key);
    if (!ok) {
        g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
        g_object_unref(connection);
        return NULL;
    }
    // Blocking I/O was bounded by the timeout; libsoup uses non-blocking I/O and its own pings from here.
    g_socket_set_timeout(g_socket_connection_get_socket(connection), 0);
    return G_IO_STREAM(connection);
}

static void upgrade_in_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable) {
    GError *error = NULL;
    GIOStream *connection = upgrade(task_data, cancellable, &error);
    if (connection) g_task_return_pointer(task, connection, g_object_unref);
    else g_task_return_error(task, error);
}

static void upgrade_finished(GObject *source, GAsyncResult *result, gpointer data) {
    ConnectRequest *request = data;
    GError *error = NULL;
    g_source_destroy(request->deadline);
    // A cancelled task reports cancellation even when the worker got a connection just in time (it is freed).
    GIOStream *connection = g_task_propagate_pointer(G_TASK(result), &error);
    if (!connection && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_clear_error(&error);
        g_set_error(&error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                    "no WebSocket connection within %u s (connect, TLS and HTTP upgrade together)", request->timeout);
    }
    if (!connection) {
        request->done(NULL, error, request->user_data);
        g_error_free(error);
        return;
    }
    AsGatedOutputStream *gate = g_object_new(AS_TYPE_GATED_OUTPUT_STREAM,
                                             "base-stream", g_io_stream_get_output_stream(connection),
                                             "close-base-stream", TRUE, NULL);
    gate->connection = g_object_ref(connection);
    GIOStream *io = g_simple_io_stream_new(g_io_stream_get_input_stream(connection), G_OUTPUT_STREAM(gate));
    GUri *uri = g_uri_parse(request->url, G_URI_FLAGS_NONE, NULL);
    SoupWebsocketConnection *websocket = soup_websocket_connection_new(io, uri, SOUP_WEBSOCKET_CONNECTION_CLIENT,
                                                                       NULL, NULL, NULL);
    g_uri_unref(uri);
    g_object_unref(io);
    g_object_unref(gate);
    g_object_unref(connection);
    request->done(websocket, NULL, request->user_data);
}

void as_websocket_connect_async(const char *url, gboolean accept_any_certificate, guint timeout_seconds,
                                AsConnectDone done, gpointer user_data) {
    ConnectRequest *request = g_new0(ConnectRequest, 1);
    request->url = g_strdup(url);
    request->accept_any_certificate = accept_any_certificate;
    request->timeout = timeout_seconds;
    request->done = done;
    request->user_data = user_data;
    // The per-read timeout alone lets a server that trickles its answer hold the handshake forever.
    request->cancellable = g_cancellable_new();
    request->deadline = g_timeout_source_new_seconds(timeout_seconds);
    g_source_set_callback(request->deadline, handshake_deadline_passed, request, NULL);
    g_source_attach(request->deadline, g_main_context_get_thread_default());
    GTask *task = g_task_new(NULL, request->cancellable, upgrade_finished, request);
    g_task_set_task_data(task, request, (GDestroyNotify)connect_request_free);
    g_task_run_in_thread(task, upgrade_in_thread);
    g_object_unref(task);
}

// ---------------------------------------------------------------------------
// Streaming a file as one masked binary frame.

typedef struct {
    SoupWebsocketConnection *websocket;
    AsGatedOutputStream *gate;
    GOutputStream *out;        // the connection's own output, below the gate
    GInputStream *file;
    goffset remaining;         // payload bytes still to write
    goffset offset;            // payload bytes written (for the mask position)
    guint8 mask[4];
    guint8 header[14 + 125];   // a file frame's header, or a whole ping frame (payload ≤ 125 bytes)
    gsize header_length;
    guint8 *buffer;
    gsize buffer_length;       // bytes of the current piece in `buffer`
    gsize buffer_written;      // of which the connection has taken so many
    gboolean started;          // bytes of the frame are on the wire: an error leaves it unfinishable
    const char *early_error;   // why it could not begin
    AsSendDone done;
    gpointer user_data;
} FileSend;

static void send_finish(FileSend *send, const char *error_message) {
    if (send->gate && send->gate->shut) gate_open(send->gate);
    if (error_message && send->started) {
        // Half a frame was sent: nothing can follow it on this connection.
        g_io_stream_close(send->gate->connection, NULL, NULL);
    }
    if (send->done) send->done(error_message == NULL, error_message, send->user_data);
    if (send->file) g_object_unref(send->file);
    if (send->gate) g_object_unref(send->gate);
    g_object_unref(send->websocket);
    g_free(send->buffer);
    g_free(send);
}

static void send_fail(FileSend *send, const char *what, GError *error) {
    char *message = g_strdup_printf("%s: %s", what, error ? error->message : "failed");
    send_finish(send, message);
    g_free(message);
    if (error) g_error_free(error);
}

static void mask_in_place(guint8 *data, gsize length, const guint8 mask[4], goffset offset) {
    guint8 rotated[8];
    for (int i = 0; i < 8; i++) rotated[i] = mask[(offset + i) & 3];
    guint64 pattern;
    memcpy(&pattern, rotated, 8);
    gsize i = 0;
    for (; i + 8 <= length; i += 8) {
        guint64 word;
        memcpy(&word, data + i, 8);
        word ^= pattern;
        memcpy(data + i, &word, 8);
    }
    for (; i < length; i++) data[i] ^= mask[(offset + i) & 3];
}

static void send_next_piece(FileSend *send);
static void write_rest_of_piece(FileSend *send);

// Pieces are written with plain (possibly partial) writes, not write_all, so that every
// bit the socket takes is counted as progress as it happens: the link tells a slow peer
// (still taking bytes) from a deaf one (taking none) while a file is going out.
static void piece_written(GObject *source, GAsyncResult *result, gpointer data) {
    FileSend *send = data;
    GError *error = NULL;
    gssize written = g_output_stream_write_finish(G_OUTPUT_STREAM(source), result, &error);
    if (written < 0) {
        send_fail(send, "the connection failed while sending the file", error);
        return;
    }
    send->gate->streamed += (guint64)written;
    send->buffer_written += (gsize)written;
    if (send->buffer_written < send->buffer_length) {
        write_rest_of_piece(send);
        return;
    }
    if (send->remaining == 0) {
        send_finish(send, NULL);
        return;
    }
    send_next_piece(send);
}

static void write_rest_of_piece(FileSend *send) {
    g_output_stream_write_async(send->out, send->buffer + send->buffer_written, send->buffer_length - send->buffer_written,
                                G_PRIORITY_DEFAULT, NULL, piece_written, send);
}

static void piece_read(GObject *source, GAsyncResult *result, gpointer data) {
    FileSend *send = data;
    GError *error = NULL;
    gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), result, &error);
    if (n <= 0) {
        send_fail(send, n == 0 ? "the file is shorter than when the upload began" : "cannot read the file", error);
        return;
    }
    mask_in_place(send->buffer, (gsize)n, send->mask, send->offset);
    send->offset += n;
    send->remaining -= n;
    send->buffer_length = (gsize)n;
    send->buffer_written = 0;
    write_rest_of_piece(send);
}

static void send_next_piece(FileSend *send) {
    gsize piece = send->remaining < FILE_PIECE ? (gsize)send->remaining : FILE_PIECE;
    g_input_stream_read_async(send->file, send->buffer, piece, G_PRIORITY_DEFAULT, NULL, piece_read, send);
}

static void header_written(GObject *source, GAsyncResult *result, gpointer data) {
    FileSend *send = data;
    GError *error = NULL;
    if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, &error)) {
        send_fail(send, "the connection failed while sending the file", error);
        return;
    }
    send->gate->streamed += send->header_length;
    if (send->remaining == 0) send_finish(send, NULL);
    else send_next_piece(send);
}

static gboolean send_when_libsoup_is_idle(gpointer data) {
    FileSend *send = data;
    if (soup_websocket_connection_get_state(send->websocket) != SOUP_WEBSOCKET_STATE_OPEN) {
        send_finish(send, "the connection closed before the file could be sent");
        return G_SOURCE_REMOVE;
    }
    // libsoup's frame first (e.g. the upload metadata), and one streamed file at a time.
    if (send->gate->shut || !gate_libsoup_is_idle(send->gate)) return G_SOURCE_CONTINUE;
    send->gate->shut = TRUE;
    send->started = TRUE;
    g_output_stream_write_all_async(send->out, send->header, send->header_length, G_PRIORITY_DEFAULT, NULL,
                                    header_written, send);
    return G_SOURCE_REMOVE;
}

static gboolean report_early_failure(gpointer data) {
    FileSend *send = data;
    send_finish(send, send->early_error);
    return G_SOURCE_REMOVE;
}

void as_websocket_send_file(SoupWebsocketConnection *connection, const char *path, AsSendDone done, gpointer user_data) {
    FileSend *send = g_new0(FileSend, 1);
    send->websocket = g_object_ref(connection);
    send->done = done;
    send->user_data = user_data;
    AsGatedOutputStream *gate = gate_of(connection);
    GFile *file = g_file_new_for_path(path);
    GFileInputStream *stream = gate ? g_file_read(file, NULL, NULL) : NULL;
    GFileInfo *info = stream ? g_file_input_stream_query_info(stream, G_FILE_ATTRIBUTE_STANDARD_SIZE, NULL, NULL) : NULL;
    g_object_unref(file);
    send->gate = gate ? g_object_ref(gate) : NULL;
    if (!gate || !info) {
        if (stream) g_object_unref(stream);
        send->early_error = gate ? "cannot open the file" : "this connection cannot stream files";
        g_idle_add(report_early_failure, send);
        return;
    }
    send->file = G_INPUT_STREAM(stream);
    send->remaining = g_file_info_get_size(info);
    g_object_unref(info);
    send->out = g_io_stream_get_output_stream(gate->connection);
    send->buffer = g_malloc(FILE_PIECE);
    guint32 mask = g_random_int();
    memcpy(send->mask, &mask, 4);

    // FIN + binary, then the payload length with the mask bit (a client must mask), then the mask.
    guint64 length = (guint64)send->remaining;
    gsize at = 0;
    send->header[at++] = 0x82;
    if (length < 126) {
        send->header[at++] = 0x80 | (guint8)length;
    } else if (length < 65536) {
        send->header[at++] = 0x80 | 126;
        send->header[at++] = (guint8)(length >> 8);
        send->header[at++] = (guint8)length;
    } else {
        send->header[at++] = 0x80 | 127;
        for (int shift = 56; shift >= 0; shift -= 8) send->header[at++] = (guint8)(length >> shift);
    }
    memcpy(send->header + at, send->mask, 4);
    send->header_length = at + 4;
    // Polled rather than signalled: libsoup says nothing when its queue drains. Within a millisecond or
    // two, normally; longer only while a big frame of its own is still going out.
    g_timeout_add(1, send_when_libsoup_is_idle, send);
}

void as_websocket_send_ping(SoupWebsocketConnection *connection, const guint8 *payload, gsize length) {
    AsGatedOutputStream *gate = gate_of(connection);
    if (!gate || length > 125) return;
    FileSend *send = g_new0(FileSend, 1);
    send->websocket = g_object_ref(connection);
    send->gate = g_object_ref(gate);
    send->out = g_io_stream_get_output_stream(gate->connection);
    guint32 mask = g_random_int();
    memcpy(send->mask, &mask, 4);
    // FIN + ping, the length with the mask bit, the mask, the masked payload: written whole, like a file's header.
    send->header[0] = 0x89;
    send->header[1] = 0x80 | (guint8)length;
    memcpy(send->header + 2, send->mask, 4);
    memcpy(send->header + 6, payload, length);
    mask_in_place(send->header + 6, length, send->mask, 0);
    send->header_length = 6 + length;
    g_timeout_add(1, send_when_libsoup_is_idle, send);
}

const char *as_websocket_pong_text(gconstpointer payload) {
    // libsoup 3.2 emits "pong" with a GByteArray although the signal is declared with a GBytes;
    // later versions pass a GBytes. Both start with the pointer to the data, and libsoup
    // NUL-terminates that copy in both, so it reads as text either way.
    return payload ? *(const char *const *)payload : NULL;
}
