/*
 * CYuNet: YuNet face detection from libfacedetection (Shiqi Yu, 3-clause
 * BSD), loaded at run time, behind a plain C interface for Swift. See the
 * notes at the top of yunet.cpp.
 *
 * Threading: a yunet_detector is NOT thread-safe; use one per thread.
 * Detectors on different threads may run side by side.
 */
#ifndef ALLSPARK_YUNET_H
#define ALLSPARK_YUNET_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct yunet_detector yunet_detector;

/* One detection in source-frame pixels; score 0..1. */
typedef struct {
    float x, y, width, height, score;
} yunet_face;

/* Loads libfacedetection from library_path (once per process; later calls
   must name the same file) with the OpenMP runtime it was built against,
   gomp_path (NULL: found by the dynamic loader), and makes a detector.
   Returns NULL with the reason in err on failure. */
yunet_detector *yunet_create(const char *library_path, const char *gomp_path, char *err, size_t err_len);
void yunet_free(yunet_detector *d);

/* Faces on an 8-bit luma plane within roi (clipped to the frame), the ROI
   brought to input_width x input_height: stretched, or (keep_aspect) scaled
   uniformly into the top-left corner with the rest filled with its mean,
   faces centred in the filler dropped. threshold: 0..1. Returns the number
   of faces written (highest score first) or -1 with the reason in err. */
int yunet_detect_gray(yunet_detector *d, const uint8_t *luma, int width, int height, int stride,
                      int roi_x, int roi_y, int roi_w, int roi_h, int input_width, int input_height,
                      int keep_aspect, float threshold, yunet_face *out, int max_faces,
                      char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
