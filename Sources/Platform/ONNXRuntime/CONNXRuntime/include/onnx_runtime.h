/*
 * CONNXRuntime: one ONNX model run by ONNX Runtime (loaded at run time),
 * behind a plain C interface. See the notes at the top of onnx_runtime.cpp.
 *
 * Threading: an aort_session may be run from several threads at once
 * (ONNX Runtime's sessions are thread-safe for Run); create and free it on
 * one thread, with no run under way.
 */
#ifndef ALLSPARK_ONNX_RUNTIME_H
#define ALLSPARK_ONNX_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aort_session aort_session;

/* Loads ONNX Runtime from library_path (once per process: a later call
   naming another library is an error) and the model at model_path, for
   inference on the calling thread only (no thread pool of its own), with
   every graph optimisation on. Returns NULL on failure, with the reason in
   err (always NUL-terminated when err_len > 0). */
aort_session *aort_session_create(const char *library_path, const char *model_path, char *err,
                                  size_t err_len);

/* One float32 input tensor `input` of shape input_shape[0..input_rank),
   and n_outputs float32 outputs written straight into the caller's buffers
   outputs[i], each of shape output_shapes[i][0..output_ranks[i]) (the
   shapes must be what the model produces for this input, else an error).
   Returns 0, or -1 with the reason in err. */
int aort_session_run(aort_session *session, const char *input_name, const float *input,
                     const int64_t *input_shape, size_t input_rank, size_t n_outputs,
                     const char *const *output_names, float *const *outputs,
                     const int64_t *const *output_shapes, const size_t *output_ranks, char *err,
                     size_t err_len);

/* Frees a session (NULL is fine). */
void aort_session_free(aort_session *session);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ALLSPARK_ONNX_RUNTIME_H */
