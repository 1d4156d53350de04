import Foundation
import GLibSupport
import Recorder
import SoupSupport

// The live picture: MJPEG over HTTP (multipart/x-mixed-replace, as
// mjpg-streamer serves it, so browsers, VLC and MJPEG clients play it) and a
// still. Pictures come from the recorder's PreviewTap, after the privacy stage.
extension Console {
    static let boundary = "allsparkframe"
    static let maximumViewers = 10

    /// The preview of a recorder that runs (or waits for its source); nil when it is stopped.
    private var runningPreview: PreviewTap? {
        guard let recorder = service.recorder, recorder.state != .stopped, recorder.state != .stopping else { return nil }
        return recorder.preview
    }

    func previewStream() -> HTTPResponse {
        guard let preview = runningPreview else { return error(503, "not_recording", "the recorder is not running") }
        guard preview.watcherCount < Self.maximumViewers else {
            // Said in the answer (and docs/operations-network.md): the page can show why instead of a blank picture.
            return error(503, "too_many_viewers", "at most \(Self.maximumViewers) live viewers at once; try again when one leaves",
                         headers: [("Retry-After", "10")])
        }
        return HTTPResponse(status: 200, headers: [
            ("Content-Type", "multipart/x-mixed-replace; boundary=\(Self.boundary)"),
            ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no"),
        ], body: .stream { [weak self] stream in
            guard let self else { return stream.finish() }
            self.previewStreamsServed += 1
            let token: PreviewTap.Token
            do {
                token = try preview.watch { picture in
                    // A viewer still taking the last picture skips this one: it never holds anything up.
                    guard stream.isReady else { return }
                    var part = Data("--\(Self.boundary)\r\nContent-Type: image/jpeg\r\nContent-Length: \(picture.count)\r\n\r\n".utf8)
                    part.append(picture)
                    part.append(Data("\r\n".utf8))
                    stream.write(part)
                }
            } catch {
                self.logger.error("console: the preview cannot start: \(error)")
                return stream.finish()
            }
            stream.onClose = { preview.stopWatching(token) }
        })
    }

    /// One picture: the latest if it is fresh, else the next one made (within a few seconds).
    func snapshot() -> HTTPResponse {
        guard let preview = runningPreview else { return error(503, "not_recording", "the recorder is not running") }
        let noPicture = Self.errorBody("not_recording", "no picture came from the recorder in time")
        return HTTPResponse(status: 200, headers: [("Content-Type", "image/jpeg"), ("Cache-Control", "no-store")],
                            body: .stream { [weak self] stream in
            var token: PreviewTap.Token?
            var timer: LoopTimer?
            let done = {
                timer?.cancel()
                if let token { preview.stopWatching(token) }
                token = nil
                stream.fail(status: 503, contentType: "application/json", body: noPicture)   // a picture was written: finishes as it is
            }
            do {
                token = try preview.watch { picture in
                    guard token != nil else { return }
                    stream.write(picture)
                    done()
                }
            } catch {
                self?.logger.error("console: the preview cannot start: \(error)")
                return stream.finish()
            }
            timer = self?.service.clock.after(5) { done() }
            stream.onClose = { done() }
        })
    }
}
