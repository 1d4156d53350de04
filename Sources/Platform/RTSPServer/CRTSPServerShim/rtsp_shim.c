// See rtsp_shim.h. The stream is one shared media for every client:
//   appsrc name=videosrc ! h264parse (SPS/PPS in every keyframe AU) ! rtph264pay name=pay0
// fed by as_rtsp_push_video with the recording's own H.264 (no second encode).
#include "rtsp_shim.h"

#include <gst/app/gstappsrc.h>
#include <gst/rtsp-server/rtsp-server.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

// MARK: The credential check: a GstRTSPAuth subclass

typedef struct {
    GstRTSPAuth parent;
    AsRtspServer *owner;
} AsRtspAuth;

typedef struct {
    GstRTSPAuthClass parent_class;
} AsRtspAuthClass;

GType as_rtsp_auth_get_type(void);
G_DEFINE_TYPE(AsRtspAuth, as_rtsp_auth, GST_TYPE_RTSP_AUTH)

/// A stream's appsrc in the media being served, and how its timestamps are moved.
typedef struct {
    GstElement *appsrc;
    GstRTSPMedia *media;
    /// Nothing pushed yet, or frames were dropped: wait for a keyframe.
    gboolean need_key;
    gboolean have_offset;
    /// Added to the recording's clock times: the media's running time at the first frame minus its clock time.
    gint64 offset;
    /// The media running time of the last frame sent: timestamps only go forward.
    gboolean have_last;
    gint64 last;
    GstCaps *caps;
} Feed;

typedef struct {
    char address[64];
    gint64 connected_us;
    gint64 connected_mono;
    gboolean refused;
    gboolean has_session;
    /// Since when its socket's send queue has stayed full (0: it is not): a player that does not read.
    gint64 full_since;
} ClientRecord;

struct AsRtspServer {
    GMainContext *context;
    GMainLoop *loop;
    GThread *thread;
    GstRTSPServer *server;
    GstRTSPMediaFactory *factory;
    AsRtspAuth *auth;
    GSource *listener;
    GSource *janitor;
    AsRtspCheckFn check;
    gpointer user_data;
    guint max_clients, max_per_address, session_timeout_s, idle_timeout_s;
    /// Guards feeds, the counters and the client table (the push runs on a streaming thread).
    GMutex lock;
    GPtrArray *feeds;
    GHashTable *clients; // GstRTSPClient* → ClientRecord*
    guint64 refused, frames, bytes, dropped, stalled;
};

/// The most a media's input may hold before frames are dropped for it (a few seconds of video).
#define AS_FEED_MAX_BYTES (4 * 1024 * 1024)
#define AS_REALM "allspark-recorder"

static void send_status(GstRTSPContext *ctx, GstRTSPStatusCode code, const char *header_name, const char *header_value) {
    GstRTSPMessage response = {0};
    gst_rtsp_message_init_response(&response, code, gst_rtsp_status_as_text(code), ctx->request);
    if (header_name) gst_rtsp_message_add_header_by_name(&response, header_name, header_value);
    gst_rtsp_client_send_message(ctx->client, ctx->session, &response);
    gst_rtsp_message_unset(&response);
}

static gboolean as_rtsp_auth_check(GstRTSPAuth *auth, GstRTSPContext *ctx, const gchar *check) {
    AsRtspAuth *self = (AsRtspAuth *)auth;
    AsRtspServer *owner = self->owner;
    if (!owner) return FALSE;
    if (g_str_equal(check, GST_RTSP_AUTH_CHECK_CONNECT)) {
        // The parent sets up TLS on the connection when a certificate is set.
        return GST_RTSP_AUTH_CLASS(as_rtsp_auth_parent_class)->check(auth, ctx, check);
    }
    if (g_str_equal(check, GST_RTSP_AUTH_CHECK_URL)) {
        if (!ctx->client || !ctx->request) return FALSE;
        g_mutex_lock(&owner->lock);
        ClientRecord *record = g_hash_table_lookup(owner->clients, ctx->client);
        gboolean refused = record && record->refused;
        char address[64] = "";
        if (record) g_strlcpy(address, record->address, sizeof address);
        g_mutex_unlock(&owner->lock);
        if (refused) {
            // Over the cap: a clear refusal instead of a stream that never starts.
            send_status(ctx, GST_RTSP_STS_SERVICE_UNAVAILABLE, "X-Allspark-Reason", "too many clients");
            return FALSE;
        }
        if (!owner->check) return TRUE;
        gchar *authorization = NULL;
        gst_rtsp_message_get_header(ctx->request, GST_RTSP_HDR_AUTHORIZATION, &authorization, 0);
        int retry_after = 0;
        AsRtspAuthVerdict verdict = owner->check(authorization, address, &retry_after, owner->user_data);
        if (verdict == AS_RTSP_AUTH_OK) return TRUE;
        if (verdict == AS_RTSP_AUTH_THROTTLED) {
            char seconds[16];
            g_snprintf(seconds, sizeof seconds, "%d", retry_after > 0 ? retry_after : 1);
            send_status(ctx, GST_RTSP_STS_SERVICE_UNAVAILABLE, "Retry-After", seconds);
        } else {
            send_status(ctx, GST_RTSP_STS_UNAUTHORIZED, "WWW-Authenticate", "Basic realm=\"" AS_REALM "\"");
        }
        return FALSE;
    }
    // The URL check above proved every request: the one mount may be used.
    if (g_str_has_prefix(check, "auth.check.media.factory.")) return TRUE;
    // Clients may not choose multicast destinations.
    return FALSE;
}

static void as_rtsp_auth_class_init(AsRtspAuthClass *klass) {
    GST_RTSP_AUTH_CLASS(klass)->check = as_rtsp_auth_check;
}

static void as_rtsp_auth_init(AsRtspAuth *self) { (void)self; }

// MARK: Feeding the media

static void feed_free(Feed *feed) {
    gst_object_unref(feed->appsrc);
    if (feed->caps) gst_caps_unref(feed->caps);
    g_free(feed);
}

static void media_unprepared(GstRTSPMedia *media, AsRtspServer *server) {
    g_mutex_lock(&server->lock);
    for (guint i = 0; i < server->feeds->len; i++) {
        Feed *feed = g_ptr_array_index(server->feeds, i);
        if (feed->media == media) { g_ptr_array_remove_index(server->feeds, i); feed_free(feed); break; }
    }
    g_mutex_unlock(&server->lock);
}

/// The media's sinks (made per transport, later) send what arrives at once: the privacy stage hands
/// frames on in bursts, and a sink that waited for each frame's time would hold the later ones back.
static void media_element_added(GstBin *pipeline, GstBin *bin, GstElement *element, gpointer data) {
    (void)pipeline; (void)bin; (void)data;
    if (GST_OBJECT_FLAG_IS_SET(element, GST_ELEMENT_FLAG_SINK) &&
        g_object_class_find_property(G_OBJECT_GET_CLASS(element), "sync")) {
        g_object_set(element, "sync", FALSE, NULL);
    }
}

static void unsync_sink(const GValue *item, gpointer data) {
    (void)data;
    GstElement *sink = g_value_get_object(item);
    if (g_object_class_find_property(G_OBJECT_GET_CLASS(sink), "sync")) {
        gboolean sync = FALSE;
        g_object_get(sink, "sync", &sync, NULL);
        if (sync) g_object_set(sink, "sync", FALSE, NULL);
    }
}

/// Every sink of the media's pipeline sends at once (gst-rtsp-server may set `sync` after adding them).
static void unsync_media(GstElement *appsrc) {
    GstObject *bin = gst_object_get_parent(GST_OBJECT(appsrc));
    GstObject *pipeline = bin ? gst_object_get_parent(bin) : NULL;
    if (pipeline && GST_IS_BIN(pipeline)) {
        GstIterator *sinks = gst_bin_iterate_sinks(GST_BIN(pipeline));
        gst_iterator_foreach(sinks, unsync_sink, NULL);
        gst_iterator_free(sinks);
    }
    if (pipeline) gst_object_unref(pipeline);
    if (bin) gst_object_unref(bin);
}

static void media_configure(GstRTSPMediaFactory *factory, GstRTSPMedia *media, AsRtspServer *server) {
    (void)factory;
    GstElement *bin = gst_rtsp_media_get_element(media);
    GstObject *pipeline = gst_object_get_parent(GST_OBJECT(bin));
    if (pipeline) {
        g_signal_connect(pipeline, "deep-element-added", G_CALLBACK(media_element_added), NULL);
        gst_object_unref(pipeline);
    }
    GstElement *appsrc = gst_bin_get_by_name_recurse_up(GST_BIN(bin), "videosrc");
    gst_object_unref(bin);
    if (!appsrc) return;
    Feed *feed = g_new0(Feed, 1);
    feed->appsrc = appsrc;
    feed->media = media;
    feed->need_key = TRUE;
    g_signal_connect(media, "unprepared", G_CALLBACK(media_unprepared), server);
    g_mutex_lock(&server->lock);
    g_ptr_array_add(server->feeds, feed);
    g_mutex_unlock(&server->lock);
}

int as_rtsp_is_watched(AsRtspServer *server) {
    g_mutex_lock(&server->lock);
    gboolean watched = server->feeds->len > 0;
    g_mutex_unlock(&server->lock);
    return watched;
}

/// `time` (a timestamp in `segment`) as clock time: the pipeline's base time plus its running time.
static GstClockTime clock_time(const GstSegment *segment, GstClockTime base, GstClockTime time) {
    if (!GST_CLOCK_TIME_IS_VALID(time)) return GST_CLOCK_TIME_NONE;
    GstClockTime running = segment ? gst_segment_to_running_time(segment, GST_FORMAT_TIME, time) : time;
    return GST_CLOCK_TIME_IS_VALID(running) ? base + running : GST_CLOCK_TIME_NONE;
}

void as_rtsp_push_video(AsRtspServer *server, void *buffer_pointer, void *pad_pointer) {
    GstBuffer *buffer = buffer_pointer;
    GstPad *pad = GST_PAD(pad_pointer);
    gboolean key = !GST_BUFFER_FLAG_IS_SET(buffer, GST_BUFFER_FLAG_DELTA_UNIT);
    // Timestamps as the recording's clock times (the monotonic clock): they keep going forward when
    // the recording restarts its pipeline (whose timestamps start again), as a player needs.
    GstElement *recording = gst_pad_get_parent_element(pad);
    GstClockTime recording_base = recording ? gst_element_get_base_time(recording) : 0;
    if (recording) gst_object_unref(recording);
    GstEvent *segment_event = gst_pad_get_sticky_event(pad, GST_EVENT_SEGMENT, 0);
    const GstSegment *segment = NULL;
    if (segment_event) gst_event_parse_segment(segment_event, &segment);
    GstClockTime pts = clock_time(segment, recording_base, GST_BUFFER_PTS(buffer));
    GstClockTime dts = clock_time(segment, recording_base, GST_BUFFER_DTS(buffer));
    if (segment_event) gst_event_unref(segment_event);
    GstClockTime stamp = GST_CLOCK_TIME_IS_VALID(dts) ? dts : pts;
    GstCaps *caps = gst_pad_get_current_caps(pad);
    gboolean taken = FALSE;
    g_mutex_lock(&server->lock);
    for (guint i = 0; i < server->feeds->len; i++) {
        Feed *feed = g_ptr_array_index(server->feeds, i);
        if (feed->need_key && !key) continue;
        if (!GST_CLOCK_TIME_IS_VALID(stamp)) continue;
        if (gst_app_src_get_current_level_bytes(GST_APP_SRC(feed->appsrc)) > AS_FEED_MAX_BYTES) {
            // The media does not read: drop, and start again at a keyframe (no broken pictures).
            server->dropped++;
            feed->need_key = TRUE;
            continue;
        }
        if (caps && (!feed->caps || !gst_caps_is_equal(feed->caps, caps))) {
            gst_caps_replace(&feed->caps, caps);
            gst_app_src_set_caps(GST_APP_SRC(feed->appsrc), caps);
        }
        if (!feed->have_offset) {
            // The first frame is stamped with the media's running time now; the next keep their spacing
            // (the capture's). The media's sinks do not wait for timestamps (media_element_added).
            GstClock *clock = gst_element_get_clock(feed->appsrc);
            GstClockTime now = clock ? gst_clock_get_time(clock) - gst_element_get_base_time(feed->appsrc) : 0;
            if (clock) gst_object_unref(clock);
            feed->offset = (gint64)now - (gint64)stamp;
            feed->have_offset = TRUE;
        }
        // Not after the last frame sent (a clock that went back: never with the monotonic clock): not sent.
        gint64 at = (gint64)stamp + feed->offset;
        if (feed->have_last && at <= feed->last) { feed->need_key = TRUE; continue; }
        GstBuffer *copy = gst_buffer_copy(buffer);
        GST_BUFFER_PTS(copy) = GST_CLOCK_TIME_IS_VALID(pts) && (gint64)pts + feed->offset >= 0 ? (GstClockTime)((gint64)pts + feed->offset) : GST_CLOCK_TIME_NONE;
        GST_BUFFER_DTS(copy) = GST_CLOCK_TIME_IS_VALID(dts) && (gint64)dts + feed->offset >= 0 ? (GstClockTime)((gint64)dts + feed->offset) : GST_CLOCK_TIME_NONE;
        feed->last = at;
        feed->have_last = TRUE;
        if (key) unsync_media(feed->appsrc);
        feed->need_key = FALSE;
        gst_app_src_push_buffer(GST_APP_SRC(feed->appsrc), copy);
        taken = TRUE;
    }
    if (taken) {
        server->frames++;
        server->bytes += gst_buffer_get_size(buffer);
    }
    g_mutex_unlock(&server->lock);
    if (caps) gst_caps_unref(caps);
}

// MARK: Clients

static void client_closed(GstRTSPClient *client, AsRtspServer *server) {
    g_mutex_lock(&server->lock);
    g_hash_table_remove(server->clients, client);
    g_mutex_unlock(&server->lock);
}

static void client_new_session(GstRTSPClient *client, GstRTSPSession *session, AsRtspServer *server) {
    if (server->session_timeout_s > 0) gst_rtsp_session_set_timeout(session, server->session_timeout_s);
    g_mutex_lock(&server->lock);
    ClientRecord *record = g_hash_table_lookup(server->clients, client);
    if (record) record->has_session = TRUE;
    g_mutex_unlock(&server->lock);
}

static void client_connected(GstRTSPServer *rtsp, GstRTSPClient *client, AsRtspServer *server) {
    (void)rtsp;
    ClientRecord *record = g_new0(ClientRecord, 1);
    GstRTSPConnection *connection = gst_rtsp_client_get_connection(client);
    const gchar *ip = connection ? gst_rtsp_connection_get_ip(connection) : NULL;
    g_strlcpy(record->address, ip ? ip : "?", sizeof record->address);
    record->connected_us = g_get_real_time();
    record->connected_mono = g_get_monotonic_time();
    // A client that does not read loses its own packets, never the others' (the default, said here on purpose).
    g_object_set(client, "drop-backlog", TRUE, NULL);
    // A session that timed out closes its connection at once (a stalled player holds no socket).
    g_object_set(client, "post-session-timeout", 0, NULL);
    g_mutex_lock(&server->lock);
    guint total = 0, same = 0;
    GHashTableIter iter;
    gpointer value;
    g_hash_table_iter_init(&iter, server->clients);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        ClientRecord *other = value;
        if (other->refused) continue;
        total++;
        if (strcmp(other->address, record->address) == 0) same++;
    }
    if ((server->max_clients && total >= server->max_clients) ||
        (server->max_per_address && same >= server->max_per_address)) {
        record->refused = TRUE;
        server->refused++;
    }
    g_hash_table_insert(server->clients, client, record);
    g_mutex_unlock(&server->lock);
    g_signal_connect(client, "closed", G_CALLBACK(client_closed), server);
    g_signal_connect(client, "new-session", G_CALLBACK(client_new_session), server);
}

/// True when the client's socket holds 64 KiB or more not yet taken by the player: more than a
/// healthy player has in flight (4 Mbit/s over a 50 ms round trip is 25 KiB), what a player that
/// stopped reading soon holds for good. gst-rtsp-server drops what does not fit and counts every
/// send as a keep-alive, so without this such a session would never time out.
static gboolean send_queue_full(GstRTSPClient *client) {
    GstRTSPConnection *connection = gst_rtsp_client_get_connection(client);
    GSocket *socket = connection ? gst_rtsp_connection_get_write_socket(connection) : NULL;
    if (!socket) return FALSE;
    int fd = g_socket_get_fd(socket), queued = 0, size = 0;
    socklen_t length = sizeof size;
    if (ioctl(fd, SIOCOUTQ, &queued) != 0 || getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, &length) != 0) return FALSE;
    return queued >= MIN(64 * 1024, size / 2);
}

static GstRTSPFilterResult close_stale(GstRTSPServer *rtsp, GstRTSPClient *client, gpointer user_data) {
    (void)rtsp;
    AsRtspServer *server = user_data;
    gint64 now = g_get_monotonic_time();
    gboolean close = FALSE;
    gboolean full = send_queue_full(client);
    g_mutex_lock(&server->lock);
    ClientRecord *record = g_hash_table_lookup(server->clients, client);
    if (record) {
        if (!full) record->full_since = 0;
        else if (!record->full_since) record->full_since = now;
        // A player that has not read for the session timeout is closed, as a quiet one's session ends.
        if (record->full_since && server->session_timeout_s > 0 &&
            now - record->full_since > (gint64)server->session_timeout_s * G_USEC_PER_SEC) {
            close = TRUE;
            server->stalled++;
        }
        gint64 age = now - record->connected_mono;
        // A refused client had 2 s to read its 503; an idle one its idle timeout to start a session.
        if (record->refused && age > 2 * G_USEC_PER_SEC) close = TRUE;
        if (!record->has_session && server->idle_timeout_s > 0 && age > (gint64)server->idle_timeout_s * G_USEC_PER_SEC)
            close = TRUE;
    }
    g_mutex_unlock(&server->lock);
    if (close) gst_rtsp_client_close(client);
    return GST_RTSP_FILTER_KEEP;
}

static gboolean janitor_tick(gpointer user_data) {
    AsRtspServer *server = user_data;
    GstRTSPSessionPool *pool = gst_rtsp_server_get_session_pool(server->server);
    // Sessions whose client stopped talking (no RTCP, no keep-alive) end here: their client is closed.
    gst_rtsp_session_pool_cleanup(pool);
    g_object_unref(pool);
    GList *list = gst_rtsp_server_client_filter(server->server, close_stale, server);
    g_list_free_full(list, g_object_unref);
    return G_SOURCE_CONTINUE;
}

// MARK: The server

void as_rtsp_free_text(char *text) { g_free(text); }

static void take_error(GError *error, char **text) {
    if (text) *text = g_strdup(error ? error->message : "unknown error");
    g_clear_error(&error);
}

AsRtspServer *as_rtsp_server_new(const char *host, unsigned port, const char *path, unsigned max_clients,
                                 unsigned max_per_address, unsigned session_timeout_s, unsigned idle_timeout_s,
                                 const char *certificate, const char *key, AsRtspCheckFn check,
                                 void *user_data, char **error) {
    AsRtspServer *server = g_new0(AsRtspServer, 1);
    server->context = g_main_context_new();
    server->loop = g_main_loop_new(server->context, FALSE);
    g_mutex_init(&server->lock);
    server->feeds = g_ptr_array_new();
    server->clients = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    server->check = check;
    server->user_data = user_data;
    server->max_clients = max_clients;
    server->max_per_address = max_per_address;
    server->session_timeout_s = session_timeout_s;
    server->idle_timeout_s = idle_timeout_s;

    server->server = gst_rtsp_server_new();
    gst_rtsp_server_set_address(server->server, host);
    char service[16];
    g_snprintf(service, sizeof service, "%u", port);
    gst_rtsp_server_set_service(server->server, service);
    if (max_clients) {
        GstRTSPSessionPool *pool = gst_rtsp_server_get_session_pool(server->server);
        gst_rtsp_session_pool_set_max_sessions(pool, max_clients);
        g_object_unref(pool);
    }

    server->auth = g_object_new(as_rtsp_auth_get_type(), NULL);
    server->auth->owner = server;
    if (certificate && key) {
        GError *failure = NULL;
        GTlsCertificate *tls = g_tls_certificate_new_from_files(certificate, key, &failure);
        if (!tls) {
            take_error(failure, error);
            as_rtsp_server_free(server);
            return NULL;
        }
        gst_rtsp_auth_set_tls_certificate(GST_RTSP_AUTH(server->auth), tls);
        g_object_unref(tls);
    }
    gst_rtsp_server_set_auth(server->server, GST_RTSP_AUTH(server->auth));

    server->factory = gst_rtsp_media_factory_new();
    gst_rtsp_media_factory_set_launch(server->factory,
        "( appsrc name=videosrc is-live=true format=time do-timestamp=false block=false "
        "! h264parse config-interval=-1 ! video/x-h264,stream-format=byte-stream,alignment=au "
        "! rtph264pay name=pay0 pt=96 config-interval=0 )");
    gst_rtsp_media_factory_set_shared(server->factory, TRUE);
    if (certificate && key) gst_rtsp_media_factory_set_profiles(server->factory, GST_RTSP_PROFILE_SAVP | GST_RTSP_PROFILE_AVP);
    g_signal_connect(server->factory, "media-configure", G_CALLBACK(media_configure), server);
    GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(server->server);
    gst_rtsp_mount_points_add_factory(mounts, path, g_object_ref(server->factory));
    g_object_unref(mounts);
    g_signal_connect(server->server, "client-connected", G_CALLBACK(client_connected), server);
    return server;
}

static gpointer run_loop(gpointer data) {
    AsRtspServer *server = data;
    g_main_context_push_thread_default(server->context);
    g_main_loop_run(server->loop);
    g_main_context_pop_thread_default(server->context);
    return NULL;
}

unsigned as_rtsp_server_start(AsRtspServer *server, char **error) {
    GError *failure = NULL;
    // Made here, on the caller's thread, before the server's thread runs: nothing else touches them yet.
    GSource *source = gst_rtsp_server_create_source(server->server, NULL, &failure);
    if (!source) { take_error(failure, error); return 0; }
    int port = gst_rtsp_server_get_bound_port(server->server);
    g_source_attach(source, server->context);
    server->listener = source;
    server->janitor = g_timeout_source_new(1000);
    g_source_set_callback(server->janitor, janitor_tick, server, NULL);
    g_source_attach(server->janitor, server->context);
    server->thread = g_thread_new("allspark-rtsp", run_loop, server);
    return port > 0 ? (unsigned)port : 0;
}

void as_rtsp_stats(AsRtspServer *server, AsRtspStats *stats) {
    memset(stats, 0, sizeof *stats);
    g_mutex_lock(&server->lock);
    GHashTableIter iter;
    gpointer value;
    g_hash_table_iter_init(&iter, server->clients);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        if (!((ClientRecord *)value)->refused) stats->clients++;
    }
    stats->refused = server->refused;
    stats->frames = server->frames;
    stats->bytes = server->bytes;
    stats->dropped = server->dropped;
    stats->stalled = server->stalled;
    stats->media = server->feeds->len;
    g_mutex_unlock(&server->lock);
}

unsigned as_rtsp_copy_clients(AsRtspServer *server, AsRtspClientInfo *clients, unsigned capacity) {
    unsigned n = 0;
    g_mutex_lock(&server->lock);
    GHashTableIter iter;
    gpointer value;
    g_hash_table_iter_init(&iter, server->clients);
    while (n < capacity && g_hash_table_iter_next(&iter, NULL, &value)) {
        ClientRecord *record = value;
        if (record->refused) continue;
        g_strlcpy(clients[n].address, record->address, sizeof clients[n].address);
        clients[n].connected_us = record->connected_us;
        n++;
    }
    g_mutex_unlock(&server->lock);
    return n;
}

static GstRTSPFilterResult remove_client(GstRTSPServer *rtsp, GstRTSPClient *client, gpointer user_data) {
    (void)rtsp;
    g_signal_handlers_disconnect_by_data(client, user_data);
    return GST_RTSP_FILTER_REMOVE;
}

/// On the server's thread: closes everything the thread owns, then ends its loop.
static gboolean tear_down(gpointer data) {
    AsRtspServer *server = data;
    if (server->janitor) { g_source_destroy(server->janitor); g_source_unref(server->janitor); server->janitor = NULL; }
    if (server->listener) { g_source_destroy(server->listener); g_source_unref(server->listener); server->listener = NULL; }
    if (server->server) {
        GList *removed = gst_rtsp_server_client_filter(server->server, remove_client, server);
        g_list_free_full(removed, g_object_unref);
        GstRTSPMountPoints *mounts = gst_rtsp_server_get_mount_points(server->server);
        g_object_unref(mounts);
        g_signal_handlers_disconnect_by_data(server->server, server);
    }
    // Let the closed clients' sources finish on this context.
    while (g_main_context_iteration(server->context, FALSE)) {}
    g_main_loop_quit(server->loop);
    return G_SOURCE_REMOVE;
}

void as_rtsp_server_free(AsRtspServer *server) {
    if (server->thread) {
        g_main_context_invoke(server->context, tear_down, server);
        g_thread_join(server->thread);
        server->thread = NULL;
    } else {
        tear_down(server);
    }
    if (server->factory) {
        g_signal_handlers_disconnect_by_data(server->factory, server);
        g_object_unref(server->factory);
    }
    g_mutex_lock(&server->lock);
    for (guint i = 0; i < server->feeds->len; i++) {
        Feed *feed = g_ptr_array_index(server->feeds, i);
        g_signal_handlers_disconnect_by_data(feed->media, server);
        feed_free(feed);
    }
    g_ptr_array_set_size(server->feeds, 0);
    g_mutex_unlock(&server->lock);
    if (server->auth) server->auth->owner = NULL;
    if (server->server) g_object_unref(server->server);
    if (server->auth) g_object_unref(server->auth);
    g_ptr_array_free(server->feeds, TRUE);
    g_hash_table_destroy(server->clients);
    g_mutex_clear(&server->lock);
    g_main_loop_unref(server->loop);
    g_main_context_unref(server->context);
    g_free(server);
}
