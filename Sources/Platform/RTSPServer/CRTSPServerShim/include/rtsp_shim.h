// The C half of the RTSP stream (RTSPServerSupport.RTSPStreamServer): what
// gst-rtsp-server only offers through GObject subclassing and signals with
// return values, kept out of Swift.
//
// Threads: the server, its clients and their media belong to a thread of
// their own ("allspark-rtsp", started by as_rtsp_server_start), which runs a
// GMainContext of its own: no client, no credential check (PBKDF2) and no
// slow reader ever runs on the service's main loop or a recording thread.
// as_rtsp_push_video runs on a recording streaming thread and only takes the
// server's mutex and hands buffers to appsrcs (which never block: a full one
// drops, the recording never waits for a client). as_rtsp_stats and
// as_rtsp_copy_clients are callable from any thread. new/start/free from one
// thread (the service's main loop).
//
// The header is plain C (no GStreamer types): GstBuffer and GstPad pointers
// cross it as `void *`, so the Swift boundary imports no second copy of them.
#ifndef ALLSPARK_RTSP_SHIM_H
#define ALLSPARK_RTSP_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct AsRtspServer AsRtspServer;

/// What the credential check says.
typedef enum {
    AS_RTSP_AUTH_OK = 0,
    /// No or wrong credentials: 401 with `WWW-Authenticate: Basic`.
    AS_RTSP_AUTH_WRONG = 1,
    /// Too many failed attempts: 503 with `Retry-After: retry_after`.
    AS_RTSP_AUTH_THROTTLED = 2,
} AsRtspAuthVerdict;

/// Checks an `Authorization` header (NULL when the request has none) from
/// `address`; may block the server's thread (PBKDF2), never the recording.
typedef AsRtspAuthVerdict (*AsRtspCheckFn)(const char *authorization, const char *address, int *retry_after,
                                           void *user_data);

typedef struct {
    /// Clients connected now (refused ones are not counted).
    unsigned clients;
    /// Clients refused since the start: over the cap, over the cap of their address.
    uint64_t refused;
    /// Frames and bytes of H.264 handed to the stream (once, whatever the number of clients).
    uint64_t frames;
    uint64_t bytes;
    /// Frames dropped because the stream could not take them (a media that does not read).
    uint64_t dropped;
    /// Players closed because they stopped reading for the session timeout.
    uint64_t stalled;
    /// Media pipelines being fed now (0 or 1: the media is shared).
    unsigned media;
} AsRtspStats;

typedef struct {
    char address[64];
    /// g_get_real_time() of the connection, microseconds since the epoch.
    int64_t connected_us;
} AsRtspClientInfo;

/// Makes the server for rtsp://host:port`path`. `max_clients` and
/// `max_per_address` bound the clients (0: no bound); `session_timeout_s`
/// ends sessions whose client stopped talking; `idle_timeout_s` closes
/// connections that have not started a session by then. With `certificate`
/// and `key` (PEM files) the server speaks RTSP over TLS only (rtsps://).
/// `check` is called on the server's thread; `user_data` must outlive the server.
/// NULL with `*error` (free with as_rtsp_free_text) when the TLS files cannot be read.
AsRtspServer *as_rtsp_server_new(const char *host, unsigned port, const char *path, unsigned max_clients,
                                 unsigned max_per_address, unsigned session_timeout_s, unsigned idle_timeout_s,
                                 const char *certificate, const char *key, AsRtspCheckFn check,
                                 void *user_data, char **error);

/// Starts listening and the server's thread; returns the port (the one asked,
/// or the one the system chose for port 0), 0 with `*error` when it cannot listen.
unsigned as_rtsp_server_start(AsRtspServer *server, char **error);

/// Hands one encoded frame (a GstBuffer of H.264, as the recording's parser
/// made it, passing `pad`, whose caps it has) to the stream. Never blocks;
/// callable from any thread; the buffer is not kept (its memory is shared).
void as_rtsp_push_video(AsRtspServer *server, void *buffer, void *pad);

/// True while a media is fed (someone watches): the tap can skip the call otherwise.
int as_rtsp_is_watched(AsRtspServer *server);

void as_rtsp_free_text(char *text);

void as_rtsp_stats(AsRtspServer *server, AsRtspStats *stats);

/// Copies up to `capacity` connected clients into `clients`; returns how many.
unsigned as_rtsp_copy_clients(AsRtspServer *server, AsRtspClientInfo *clients, unsigned capacity);

/// Stops listening, closes every client, ends the server's thread and frees the server.
void as_rtsp_server_free(AsRtspServer *server);

#ifdef __cplusplus
}
#endif

#endif
