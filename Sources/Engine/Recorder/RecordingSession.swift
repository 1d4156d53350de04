import Foundation
import GLibSupport
import GStreamerSupport
import Logging
import RecorderCore
import Storage

/// One run of the pipeline, from PLAYING until it is stopped or fails.
///
/// Threading: created, started, stopped and fed bus messages on the main
/// loop thread; the frame path and chunk naming run on streaming threads
/// inside `FramePath` and `ChunkSink`; what can take seconds (the
/// processor's drain, closing it, probing and naming a closed chunk, its
/// companions) runs on `worker`, a serial queue, and reports back through
/// `MainLoop.post`.
final class RecordingSession {
    enum Failure {
        /// The source or another element failed (camera unplugged, file gone…).
        /// `inWriter`: the chunk sink itself failed, so its chunk is abandoned rather than finished.
        case pipelineError(element: String, message: String, inWriter: Bool)
        /// The chunk folder's file system is full.
        case diskFull(message: String)
        /// The source ended (a file source reached its end).
        case sourceEnded
        /// For `seconds` no frame reached blur_in nor the chunks: a frozen
        /// camera, a stalled stream, or (`everFlowed` false: none ever
        /// reached the chunks) a pipeline that never passed a frame on.
        case noFrames(seconds: Double, everFlowed: Bool)
    }

    let loaded: LoadedPipeline
    private let logger: Logger
    let framePath: FramePath
    private let chunkSink: ChunkSink
    private var busWatch: BusWatch?
    private var stopping = false
    private var reachedEnd = false
    private var stopCompletion: (() -> Void)?
    private var stopTimer: MainLoop.Source?
    private(set) var isRunning = false
    private let frameTimeout: Double
    private var watchdog: MainLoop.Source?
    private var startedUptimeNs: UInt64 = 0
    /// Set when the chunk sink itself failed (a read-only or vanished
    /// folder): its chunk can never be finished, so stopping does not wait for it.
    private var writerBroken = false
    private let worker: DispatchQueue
    /// The audio from `audio_in`, when the pipeline has an audio path.
    private let audio: AudioTrack?
    private let companions: CompanionWriter
    /// Hands the recorded H.264 to a network stream (the RTSP server), when there is one.
    private let streamTap: StreamTap?
    /// Finished chunks are reported in the order they started.
    private var reportOrder = ChunkReportOrder<FinishedChunk>()

    /// Runs on the main loop once a chunk and its companions are written.
    var onChunkFinished: ((FinishedChunk) -> Void)?
    var onFailure: ((Failure) -> Void)?
    /// A live container switch could not be made (see `ChunkSink.onSwitchFailed`).
    var onSwitchFailed: ((String) -> Void)? {
        get { chunkSink.onSwitchFailed }
        set { chunkSink.onSwitchFailed = newValue }
    }
    /// Measures a closed chunk's file when it must be checked (on the worker).
    var probe: @Sendable (URL) -> Double? {
        get { chunkSink.probe }
        set { chunkSink.probe = newValue }
    }
    /// Runs on the main loop when the first frame reaches the chunks.
    var onFirstFrame: (() -> Void)? {
        get { chunkSink.onFirstFrame }
        set { chunkSink.onFirstFrame = newValue }
    }

    /// - Parameter worker: a serial queue for the slow steps of stopping.
    init(loaded: LoadedPipeline, storage: URL, settings: ChunkSettings, companions: CompanionSettings = .init(),
         frameTimeout: Double, processor: FrameProcessor, preview: PreviewTap? = nil, qrScanner: QRScanner? = nil,
         streamTap: StreamTap? = nil, wallClock: WallClock, worker: DispatchQueue, logger: Logger) {
        self.streamTap = streamTap
        self.loaded = loaded
        self.logger = logger
        self.frameTimeout = frameTimeout
        self.worker = worker
        let framePath = FramePath(sink: loaded.captureSink, source: loaded.processedSource, processor: processor)
        framePath.preview = preview
        framePath.qrScanner = qrScanner
        self.framePath = framePath
        let audio = loaded.audioSink.map { _ in AudioTrack() }
        self.audio = audio
        self.companions = CompanionWriter(folder: StorageFolder(storage), audio: audio, logger: logger)
        chunkSink = ChunkSink(pipeline: loaded.pipeline, element: loaded.chunkSink, storage: storage, settings: settings,
                              companions: companions, audio: audio, wallClock: wallClock, logger: logger,
                              frameStatistics: { framePath.statistics })
        framePath.chunkCuts = chunkSink.cuts
    }

    /// The companions of chunks opened from now on.
    func setCompanions(_ settings: CompanionSettings) { chunkSink.setCompanions(settings) }

    /// Starts the pipeline. On failure the pipeline is back in NULL and the
    /// processor is closed on the worker (its threads end): a retry makes new ones.
    func start() throws {
        MainLoop.preconditionOnLoop()
        do {
            try play()
        } catch {
            worker.async { [framePath] in framePath.detach() }
            throw error
        }
    }

    private func play() throws {
        try chunkSink.install()
        if let streamTap, let output = chunkSink.encodedOutput { streamTap.attach(to: output) }
        framePath.start()
        if let audio, let sink = loaded.audioSink {
            audio.attach(to: sink, baseTime: { [pipeline = loaded.pipeline] in pipeline.baseTime })
            // The pipeline's end of stream needs every sink's: a live audio
            // source never ends, so when the video ends the audio path ends with it.
            framePath.onCaptureEnded = { _ = sink.element.staticPad("sink")?.sendEndOfStream() }
        }
        // A sink that waits for a first frame before the pipeline plays
        // would wait forever: in a live pipeline frames only come once it plays.
        for sink in loaded.extraSinks { sink.stopWaitingForPreroll() }
        loaded.pipeline.useMonotonicClock()
        busWatch = loaded.pipeline.watchBus { [weak self] message in self?.handle(message) }
        isRunning = true
        guard loaded.pipeline.setState(.playing) else {
            let reason = loaded.pipeline.takeError() ?? "no reason given"
            isRunning = false
            busWatch?.remove()
            loaded.pipeline.setState(.null)
            throw GStreamerError("the pipeline \(loaded.template.file) could not start: \(reason)")
        }
        startedUptimeNs = DispatchTime.now().uptimeNanoseconds
        watchdog = MainLoop.every(min(1, frameTimeout / 4)) { [weak self] in self?.checkFrames() ?? false }
    }

    /// The frame watchdog: a source that stops sending frames without an
    /// error (a hung USB camera, an RTSP sender gone quiet) is noticed here.
    private func checkFrames() -> Bool {
        // Returning false removes the timer: forget it so nothing cancels it twice.
        guard isRunning, !stopping else { watchdog = nil; return false }
        // Silent only when neither end moves: frames still captured while
        // none reach the chunks yet is an encoder filling its look-ahead
        // (a stuck encoder soon stops capture too, by back-pressure).
        let recorded = chunkSink.lastFrameUptime
        let latest = [recorded, framePath.lastCaptureUptime, startedUptimeNs].compactMap { $0 }.max() ?? startedUptimeNs
        let silentNs = DispatchTime.now().uptimeNanoseconds - latest
        guard Double(silentNs) / 1e9 >= frameTimeout else { return true }
        watchdog = nil
        onFailure?(.noFrames(seconds: frameTimeout, everFlowed: recorded != nil))
        return false
    }

    private func handle(_ message: BusMessage) {
        switch message.kind {
        case .element:
            switch chunkSink.handle(message) {
            case .finished(let closing)?:
                finished(closing)
            case .cannotCreate(let text, let noSpaceLeft)?:
                writerFailed(message: text, noSpaceLeft: noSpaceLeft)
            case nil:
                break
            }
            if stopping, chunkSink.isFinished { finishStop() }
            if stopping, writerBroken, chunkSink.finishingCount == 0 { abandonChunk() }
        case .error(let rawText, let rawDebug, let noSpaceLeft):
            // GStreamer's words may quote a property's value: never a credential.
            let text = loaded.template.redacted(rawText), debug = rawDebug.map(loaded.template.redacted)
            chunkSink.verifyBeforeFinalizing = true
            logger.debug("GStreamer debug for \(message.sourceName): \(debug ?? "-")")
            if chunkSink.isWriter(message) { writerBroken = true }
            guard !stopping else {
                logger.warning("error while stopping, from \(message.sourceName): \(text)")
                if writerBroken { abandonChunkSoon() }
                return
            }
            let described = text + BusMessage.detail(debug)
            onFailure?(noSpaceLeft ? .diskFull(message: described) : .pipelineError(element: message.sourceName, message: described, inWriter: writerBroken))
        case .warning(let text):
            logger.warning("\(message.sourceName): \(loaded.template.redacted(text))")
        case .endOfStream:
            // Every sink is done: the capture chain ended and its last chunk is closed.
            reachedEnd = true
            if stopping { finishStop() } else { onFailure?(.sourceEnded) }
        default:
            break
        }
    }

    /// Names the chunk (probing its file first when it must be checked) and
    /// writes its companions on the worker (in chunk order: it is serial),
    /// then reports it with them on the main loop, oldest first (see
    /// `ChunkReportOrder`). The session stays alive until the report is
    /// made; a stop's completion, queued on the same worker later, comes after it.
    private func finished(_ closing: ChunkSink.Closing) {
        let startNs = closing.fragment.startClockNs
        reportOrder.closed(startNs: startNs)
        worker.async { [companions] in
            let chunk = closing.finalize().map { finished, job -> FinishedChunk in
                var chunk = finished
                chunk.companions = companions.write(job)
                return chunk
            }
            MainLoop.post { self.named(chunk, startNs: startNs) }
        }
    }

    private func named(_ chunk: FinishedChunk?, startNs: UInt64) {
        report(reportOrder.named(chunk, startNs: startNs, oldestOpenStartNs: oldestOpenStartClockNs))
    }

    /// While the pipeline runs, a chunk still open holds younger ones back; once it
    /// is stopped, what is still open is never closed (a broken writer, a stop that
    /// timed out) and the repair pass names it instead.
    private var oldestOpenStartClockNs: UInt64? { isRunning ? chunkSink.oldestOpenStartClockNs : nil }

    private func report(_ chunks: [FinishedChunk]) {
        for chunk in chunks { onChunkFinished?(chunk) }
    }

    /// The chunk sink could not create its next chunk's file: the same as a
    /// write error from the sink on the bus, which never comes for it.
    private func writerFailed(message: String, noSpaceLeft: Bool) {
        guard isRunning else { return }
        chunkSink.verifyBeforeFinalizing = true
        writerBroken = true
        guard !stopping else {
            logger.warning("error while stopping, from the chunk sink: \(message)")
            abandonChunkSoon()
            return
        }
        onFailure?(noSpaceLeft ? .diskFull(message: message)
                               : .pipelineError(element: PipelineTemplate.Contract.chunkSink, message: message, inWriter: true))
    }

    /// Finishes the chunk being written (every frame already accepted goes
    /// into it), then stops the pipeline. `completion` runs on the main loop.
    func stop(timeoutSeconds: Double = 10, completion: @escaping () -> Void) {
        MainLoop.preconditionOnLoop()
        guard isRunning else { completion(); return }
        if stopping {
            let previous = stopCompletion
            stopCompletion = { previous?(); completion() }
            return
        }
        stopping = true
        stopCompletion = completion
        watchdog?.cancel()
        if reachedEnd {
            finishStop()
            return
        }
        if writerBroken {
            abandonChunkSoon()
            return
        }
        chunkSink.markFinishing { [weak self] in
            guard let self, self.chunkSink.isFinished else { return }
            self.finishStop()
        }
        // The processor's drain can take seconds (face detection finishing its tail).
        worker.async { [framePath] in framePath.finish() }
        stopTimer = MainLoop.after(timeoutSeconds) { [weak self] in
            guard let self, self.isRunning else { return }
            self.logger.warning("the last chunk did not finish within \(Int(timeoutSeconds)) s; it will be repaired at the next start")
            self.finishStop()
        }
    }

    /// Abandons the broken chunk once the chunk before it, if still being
    /// finalised after a split, is closed (with its own file sink it may
    /// well finish), and after a short grace in any case.
    private func abandonChunkSoon() {
        guard chunkSink.finishingCount > 0 else { abandonChunk(); return }
        stopTimer?.cancel()
        stopTimer = MainLoop.after(2) { [weak self] in self?.abandonChunk() }
    }

    /// The chunk sink failed, so the end of stream can never reach its
    /// file: stop now instead of waiting for it. The partial file keeps
    /// what robust muxing wrote; the repair pass after the stop names it.
    private func abandonChunk() {
        guard isRunning else { return }
        logger.notice("stopping without finishing the chunk being written; the repair pass keeps what reached the disk")
        finishStop()
    }

    private func finishStop() {
        guard isRunning else { return }
        isRunning = false
        watchdog?.cancel()
        stopTimer?.cancel()
        busWatch?.remove()
        busWatch = nil
        // A drain still pushing into a full blur_out returns now, so the
        // pipeline's streaming threads can stop and the worker is not held.
        framePath.unblock()
        loaded.pipeline.setState(.null)
        report(reportOrder.release(oldestOpenStartNs: nil))
        // No more audio comes: a last chunk's cut takes what there is.
        audio?.end()
        loaded.audioSink?.clearHandlers()
        let completion = stopCompletion
        stopCompletion = nil
        // After the drain (same serial queue): closing the processor joins its threads.
        worker.async { [framePath] in
            framePath.detach()
            MainLoop.post { completion?() }
        }
    }

    /// Asks the chunk sink for new settings (see `ChunkSink.apply`).
    func apply(_ settings: ChunkSettings) throws { try chunkSink.apply(settings) }

    /// Where the chunk sink stands: what it writes and what is still queued.
    var chunkTimeline: ChunkTimeline { chunkSink.currentTimeline }
}
