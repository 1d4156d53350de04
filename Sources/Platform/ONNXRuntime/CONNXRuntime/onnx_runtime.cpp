// CONNXRuntime: ONNX Runtime's C API, loaded at run time, C interface.
//
// Design notes
// ------------
// * Why: CenterFace through OpenCV 4.6's DNN module (Debian 12) costs 2.3 to
//   4.8 times what the same model costs in ONNX Runtime 1.32 on one core
//   (measured here: 96x96 5.7 vs 1.2 ms, 640x352 77 vs 32 ms, 736x608 145
//   vs 63 ms), and the network is nearly all of the privacy stage's time.
// * Where it comes from: the MIT-licensed `libonnxruntime.so.1.32.0` that
//   the PyPI wheel `onnxruntime` ships beside its Python extension
//   (scripts/fetch-face-model fetches the wheel for x86_64 or aarch64,
//   checks the library's sha256 and installs it with the models). Debian 12
//   has no ONNX Runtime. The library's only exported entry point is
//   OrtGetApiBase; everything else is a table of function pointers.
// * Declarations: the C API is an ABI that only grows (functions are
//   appended, never moved), so this file declares the few functions it
//   calls by their slot in OrtApi as of API version 13 (ONNX Runtime 1.13,
//   the version asked for), with their documented signatures, instead of
//   depending on a header no Debian package ships.
// * The model must have dynamic input and output sizes and its weights must
//   not be listed as graph inputs (else they are not constant-folded and
//   inference is as slow as OpenCV's): fetch-face-model writes such a copy.
// * Threads: intra- and inter-op thread counts of 1, so a session runs on
//   the calling thread only and creates no pool; the stage runs one
//   detection thread per core already.
// * Memory: the session's CPU arena is on, the memory-pattern planner off.
//   Without the arena every layer's activations were fresh mallocs, and the
//   large ones fresh mmaps (the stage maps big blocks on their own, see
//   afd_limit_heap_growth): the offline `blur` of the crowd clip spent 11.5
//   of its 29 CPU seconds in the kernel, faulting pages in (14.7 s wall;
//   8.9 s with the arena, at the same peak RSS). The arena keeps what the
//   largest runs in flight need. The planner plans for one input shape;
//   inputs here change from run to run (whole frame, tiles, follow squares).
// * Telemetry off: ONNX Runtime 1.32's official builds collect telemetry on
//   Linux too (1DS: a persistent device id and an event cache under the
//   user's ~/.cache/Microsoft/DeveloperTools/.onnxruntime, uploaded to
//   mobile.events.data.microsoft.com; process path, OS, CPU, sessions). A
//   privacy camera must not: ORT_DISABLE_TELEMETRY=1, which the library reads
//   when it initialises, is in the environment the units and scripts start the
//   binary with, and `load` sets it just before the library is opened where it
//   is missing (a user running the binary by hand); the environment's telemetry
//   events are disabled through the API as well. Nothing here changes the
//   environment before main: a constructor's setenv moves `environ`, and the
//   static Swift runtime finds argv next to it, so the binary lost its arguments.
// * Nothing throws across the C boundary.

#include "onnx_runtime.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace {

struct OrtStatus;
struct OrtEnv;
struct OrtSession;
struct OrtSessionOptions;
struct OrtMemoryInfo;
struct OrtValue;
struct OrtRunOptions;

// Enumerations, as the C API defines them.
constexpr int kLoggingLevelError = 3;     // ORT_LOGGING_LEVEL_ERROR
constexpr int kExecutionSequential = 0;   // ORT_SEQUENTIAL
constexpr int kGraphOptimizationAll = 99; // ORT_ENABLE_ALL
constexpr int kDeviceAllocator = 0;       // OrtDeviceAllocator
constexpr int kMemTypeDefault = 0;        // OrtMemTypeDefault
constexpr int kElementFloat = 1;          // ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT
constexpr uint32_t kApiVersion = 13;

struct OrtApiBase {
    const void *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)();
};

// The OrtApi slots called here (index into the table of function pointers).
enum Slot : size_t {
    kGetErrorMessage = 2,
    kCreateEnv = 3,
    kDisableTelemetryEvents = 6,
    kCreateSession = 7,
    kRun = 9,
    kCreateSessionOptions = 10,
    kSetSessionExecutionMode = 13,
    kDisableMemPattern = 17,
    kSetSessionLogSeverityLevel = 22,
    kSetSessionGraphOptimizationLevel = 23,
    kSetIntraOpNumThreads = 24,
    kSetInterOpNumThreads = 25,
    kCreateTensorWithDataAsOrtValue = 49,
    kCreateCpuMemoryInfo = 69,
    kReleaseStatus = 93,
    kReleaseMemoryInfo = 94,
    kReleaseSession = 95,
    kReleaseValue = 96,
    kReleaseSessionOptions = 100,
};

struct Api {
    void *const *table = nullptr;
    template <typename Fn> Fn fn(Slot slot) const { return reinterpret_cast<Fn>(table[slot]); }

    const char *message(OrtStatus *s) const {
        return fn<const char *(*)(const OrtStatus *)>(kGetErrorMessage)(s);
    }
    void release(OrtStatus *s) const { fn<void (*)(OrtStatus *)>(kReleaseStatus)(s); }
    void release(OrtMemoryInfo *m) const { fn<void (*)(OrtMemoryInfo *)>(kReleaseMemoryInfo)(m); }
    void release(OrtSession *s) const { fn<void (*)(OrtSession *)>(kReleaseSession)(s); }
    void release(OrtValue *v) const { fn<void (*)(OrtValue *)>(kReleaseValue)(v); }
    void release(OrtSessionOptions *o) const { fn<void (*)(OrtSessionOptions *)>(kReleaseSessionOptions)(o); }
};

struct Runtime {
    std::once_flag once;
    std::string path, error, version;
    Api api;
    OrtEnv *env = nullptr;  // one per process, as ONNX Runtime wants; never released
};

Runtime &runtime() {
    static Runtime r;
    return r;
}

void set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (err == nullptr || err_len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

// A failed call's message (the status is released); empty on success.
std::string failure(const Api &api, OrtStatus *status) {
    if (status == nullptr) return {};
    std::string message = api.message(status);
    api.release(status);
    return message.empty() ? "unknown ONNX Runtime error" : message;
}

void load(Runtime &r, const char *library_path) {
    r.path = library_path;
    // Set once, under the loader's once-flag, only where the environment lacks it (see the design notes).
    const char *telemetry = getenv("ORT_DISABLE_TELEMETRY");
    if (telemetry == nullptr || std::strcmp(telemetry, "1") != 0) setenv("ORT_DISABLE_TELEMETRY", "1", 1);
    void *handle = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) { r.error = std::string("cannot load ") + library_path + ": " + dlerror(); return; }
    auto get_base = reinterpret_cast<const OrtApiBase *(*)()>(dlsym(handle, "OrtGetApiBase"));
    if (get_base == nullptr) { r.error = std::string(library_path) + " has no OrtGetApiBase: not ONNX Runtime?"; return; }
    const OrtApiBase *base = get_base();
    if (base == nullptr || base->GetApi == nullptr) { r.error = std::string(library_path) + ": OrtGetApiBase returned nothing"; return; }
    r.version = base->GetVersionString ? base->GetVersionString() : "?";
    r.api.table = static_cast<void *const *>(base->GetApi(kApiVersion));
    if (r.api.table == nullptr) {
        r.error = std::string(library_path) + " (ONNX Runtime " + r.version + ") does not offer C API version 13";
        return;
    }
    auto create_env = r.api.fn<OrtStatus *(*)(int, const char *, OrtEnv **)>(kCreateEnv);
    const std::string why = failure(r.api, create_env(kLoggingLevelError, "allspark", &r.env));
    if (!why.empty()) { r.error = "creating the ONNX Runtime environment: " + why; return; }
    const std::string quiet = failure(r.api, r.api.fn<OrtStatus *(*)(const OrtEnv *)>(kDisableTelemetryEvents)(r.env));
    if (!quiet.empty()) r.error = "turning ONNX Runtime's telemetry off: " + quiet;
}

}  // namespace

struct aort_session {
    const Api *api = nullptr;
    OrtSession *session = nullptr;
    OrtMemoryInfo *cpu = nullptr;
};

extern "C" void aort_session_free(aort_session *s) {
    if (s == nullptr) return;
    if (s->cpu) s->api->release(s->cpu);
    if (s->session) s->api->release(s->session);
    delete s;
}

extern "C" aort_session *aort_session_create(const char *library_path, const char *model_path,
                                             char *err, size_t err_len) {
    if (err && err_len) err[0] = '\0';
    if (library_path == nullptr || library_path[0] == '\0') { set_err(err, err_len, "ONNX Runtime library path is empty"); return nullptr; }
    if (model_path == nullptr || model_path[0] == '\0') { set_err(err, err_len, "model path is empty"); return nullptr; }
    Runtime &r = runtime();
    try {
        std::call_once(r.once, [&] { load(r, library_path); });
        if (!r.error.empty()) { set_err(err, err_len, "%s", r.error.c_str()); return nullptr; }
        if (r.path != library_path) {
            set_err(err, err_len, "ONNX Runtime is already loaded from %s, not %s", r.path.c_str(), library_path);
            return nullptr;
        }
        const Api &api = r.api;
        OrtSessionOptions *options = nullptr;
        std::string why = failure(api, api.fn<OrtStatus *(*)(OrtSessionOptions **)>(kCreateSessionOptions)(&options));
        std::unique_ptr<OrtSessionOptions, void (*)(OrtSessionOptions *)> owned(options, [](OrtSessionOptions *o) {
            if (o) runtime().api.release(o);
        });
        using SetInt = OrtStatus *(*)(OrtSessionOptions *, int);
        using Set = OrtStatus *(*)(OrtSessionOptions *);
        if (why.empty()) why = failure(api, api.fn<SetInt>(kSetIntraOpNumThreads)(options, 1));
        if (why.empty()) why = failure(api, api.fn<SetInt>(kSetInterOpNumThreads)(options, 1));
        if (why.empty()) why = failure(api, api.fn<SetInt>(kSetSessionExecutionMode)(options, kExecutionSequential));
        if (why.empty()) why = failure(api, api.fn<SetInt>(kSetSessionGraphOptimizationLevel)(options, kGraphOptimizationAll));
        if (why.empty()) why = failure(api, api.fn<SetInt>(kSetSessionLogSeverityLevel)(options, kLoggingLevelError));
        if (why.empty()) why = failure(api, api.fn<Set>(kDisableMemPattern)(options));
        if (!why.empty()) { set_err(err, err_len, "ONNX Runtime session options: %s", why.c_str()); return nullptr; }

        auto s = std::make_unique<aort_session>();
        s->api = &api;
        why = failure(api, api.fn<OrtStatus *(*)(const OrtEnv *, const char *, const OrtSessionOptions *, OrtSession **)>(
                               kCreateSession)(r.env, model_path, options, &s->session));
        if (!why.empty()) {
            set_err(err, err_len, "ONNX Runtime %s cannot load %s: %s", r.version.c_str(), model_path, why.c_str());
            aort_session_free(s.release());
            return nullptr;
        }
        why = failure(api, api.fn<OrtStatus *(*)(int, int, OrtMemoryInfo **)>(kCreateCpuMemoryInfo)(
                               kDeviceAllocator, kMemTypeDefault, &s->cpu));
        if (!why.empty()) {
            set_err(err, err_len, "ONNX Runtime memory info: %s", why.c_str());
            aort_session_free(s.release());
            return nullptr;
        }
        return s.release();
    } catch (const std::exception &e) {
        set_err(err, err_len, "error loading ONNX Runtime: %s", e.what());
    } catch (...) {
        set_err(err, err_len, "unknown error loading ONNX Runtime");
    }
    return nullptr;
}

extern "C" int aort_session_run(aort_session *s, const char *input_name, const float *input,
                                const int64_t *input_shape, size_t input_rank, size_t n_outputs,
                                const char *const *output_names, float *const *outputs,
                                const int64_t *const *output_shapes, const size_t *output_ranks,
                                char *err, size_t err_len) {
    if (err && err_len) err[0] = '\0';
    if (s == nullptr || input_name == nullptr || input == nullptr || input_shape == nullptr ||
        (n_outputs > 0 && (output_names == nullptr || outputs == nullptr || output_shapes == nullptr ||
                           output_ranks == nullptr))) {
        set_err(err, err_len, "aort_session_run: invalid arguments");
        return -1;
    }
    const Api &api = *s->api;
    using CreateTensor = OrtStatus *(*)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int, OrtValue **);
    auto elements = [](const int64_t *shape, size_t rank) {
        size_t n = 1;
        for (size_t i = 0; i < rank; ++i) n *= (size_t)(shape[i] > 0 ? shape[i] : 0);
        return n;
    };
    try {
        std::vector<OrtValue *> values(1 + n_outputs, nullptr);
        struct Release {
            const Api &api;
            std::vector<OrtValue *> &values;
            ~Release() { for (auto *v : values) if (v) api.release(v); }
        } release{api, values};
        auto create = api.fn<CreateTensor>(kCreateTensorWithDataAsOrtValue);
        std::string why = failure(api, create(s->cpu, const_cast<float *>(input), elements(input_shape, input_rank) * sizeof(float),
                                              input_shape, input_rank, kElementFloat, &values[0]));
        for (size_t i = 0; why.empty() && i < n_outputs; ++i)
            why = failure(api, create(s->cpu, outputs[i], elements(output_shapes[i], output_ranks[i]) * sizeof(float),
                                      output_shapes[i], output_ranks[i], kElementFloat, &values[1 + i]));
        if (why.empty()) {
            using Run = OrtStatus *(*)(OrtSession *, const OrtRunOptions *, const char *const *, const OrtValue *const *,
                                       size_t, const char *const *, size_t, OrtValue **);
            const char *const inputs[1] = {input_name};
            why = failure(api, api.fn<Run>(kRun)(s->session, nullptr, inputs, values.data(), 1, output_names,
                                                n_outputs, values.data() + 1));
        }
        if (!why.empty()) { set_err(err, err_len, "ONNX Runtime: %s", why.c_str()); return -1; }
        return 0;
    } catch (const std::exception &e) {
        set_err(err, err_len, "ONNX Runtime run: %s", e.what());
    } catch (...) {
        set_err(err, err_len, "ONNX Runtime run: unknown error");
    }
    return -1;
}
