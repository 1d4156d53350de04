// The few GStreamer/GLib macros Swift cannot import, as static inline
// functions. Nothing else belongs here: typed Swift lives in GStreamerSupport.
#ifndef ALLSPARK_CGSTREAMER_SHIM_H
#define ALLSPARK_CGSTREAMER_SHIM_H

#include <gst/gst.h>
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>
#include <gst/video/video.h>
#include <gst/pbutils/pbutils.h>
#include <glib-unix.h>

static inline GstMessageType cgst_message_type(GstMessage *m) { return GST_MESSAGE_TYPE(m); }
static inline GstObject *cgst_message_src(GstMessage *m) { return GST_MESSAGE_SRC(m); }
static inline GstClockTime cgst_buffer_pts(GstBuffer *b) { return GST_BUFFER_PTS(b); }
static inline GstClockTime cgst_buffer_duration(GstBuffer *b) { return GST_BUFFER_DURATION(b); }
static inline GstClockTime cgst_buffer_dts(GstBuffer *b) { return GST_BUFFER_DTS(b); }
static inline void cgst_buffer_set_times(GstBuffer *b, GstClockTime pts, GstClockTime dts) { GST_BUFFER_PTS(b) = pts; GST_BUFFER_DTS(b) = dts; }
static inline gboolean cgst_buffer_is_delta(GstBuffer *b) { return GST_BUFFER_FLAG_IS_SET(b, GST_BUFFER_FLAG_DELTA_UNIT); }
static inline GstBuffer *cgst_buffer_ref(GstBuffer *b) { return gst_buffer_ref(b); }
static inline void cgst_buffer_unref(GstBuffer *b) { gst_buffer_unref(b); }
static inline GstBuffer *cgst_buffer_make_writable(GstBuffer *b) { return gst_buffer_make_writable(b); }
static inline void cgst_sample_unref(GstSample *s) { gst_sample_unref(s); }
static inline void cgst_message_unref(GstMessage *m) { gst_message_unref(m); }
static inline void cgst_caps_unref(GstCaps *c) { gst_caps_unref(c); }
static inline void cgst_event_unref(GstEvent *e) { gst_event_unref(e); }
static inline GstClockTime cgst_clock_time_none(void) { return GST_CLOCK_TIME_NONE; }
static inline gboolean cgst_clock_time_is_valid(GstClockTime t) { return GST_CLOCK_TIME_IS_VALID(t); }
static inline GstEvent *cgst_pad_probe_info_event(GstPadProbeInfo *i) { return GST_PAD_PROBE_INFO_EVENT(i); }
static inline GstBuffer *cgst_pad_probe_info_buffer(GstPadProbeInfo *i) { return GST_PAD_PROBE_INFO_BUFFER(i); }
static inline GstEventType cgst_event_type(GstEvent *e) { return GST_EVENT_TYPE(e); }
static inline GType cgst_type_app_sink(void) { return GST_TYPE_APP_SINK; }
static inline GType cgst_type_app_src(void) { return GST_TYPE_APP_SRC; }
static inline GType cgst_type_bin(void) { return GST_TYPE_BIN; }
static inline gboolean cgst_is_type(gpointer obj, GType t) { return G_TYPE_CHECK_INSTANCE_TYPE(obj, t); }
static inline const gchar *cgst_object_name(gpointer obj) { return GST_OBJECT_NAME(obj); }
static inline GType cgst_type_pad(void) { return GST_TYPE_PAD; }
static inline GType cgst_type_element(void) { return GST_TYPE_ELEMENT; }
static inline GType cgst_type_ghost_pad(void) { return GST_TYPE_GHOST_PAD; }
static inline GList *cgst_element_pad_templates(GstElement *e) { return gst_element_class_get_pad_template_list(GST_ELEMENT_GET_CLASS(e)); }

/* GstVideoFrame fields are fixed-size arrays, which Swift imports as tuples. */
static inline guint8 *cgst_video_frame_plane(GstVideoFrame *f, guint i) { return (guint8 *)GST_VIDEO_FRAME_PLANE_DATA(f, i); }
static inline gint cgst_video_frame_stride(GstVideoFrame *f, guint i) { return GST_VIDEO_FRAME_PLANE_STRIDE(f, i); }
static inline GstVideoFormat cgst_video_frame_format(GstVideoFrame *f) { return GST_VIDEO_FRAME_FORMAT(f); }
static inline gint cgst_video_frame_width(GstVideoFrame *f) { return GST_VIDEO_FRAME_WIDTH(f); }
static inline gint cgst_video_frame_height(GstVideoFrame *f) { return GST_VIDEO_FRAME_HEIGHT(f); }
static inline gboolean cgst_buffer_is_writable(GstBuffer *b) { return gst_buffer_is_writable(b); }

/* g_signal_connect is a macro over g_signal_connect_data. */
static inline gulong cgst_signal_connect(gpointer instance, const gchar *signal, GCallback cb, gpointer data) {
    return g_signal_connect_data(instance, signal, cb, data, NULL, (GConnectFlags)0);
}

/* g_signal_emit_by_name is variadic, which Swift cannot call. */
static inline void cgst_splitmux_split_at_running_time(GstElement *splitmux, GstClockTime running_time) {
    g_signal_emit_by_name(splitmux, "split-at-running-time", running_time);
}

#endif
