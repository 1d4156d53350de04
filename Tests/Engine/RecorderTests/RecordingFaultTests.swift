import GLibSupport
import XCTest
import GStreamerSupport
import RecorderCore
import RecorderTestSupport
@testable import Recorder

/// Bad input on the recording side (issue 10): a frozen source, read-only
/// storage, a pipeline that records nothing, a branch around the privacy
/// stage. Real pipelines, real files checked with gst-discoverer-1.0.
final class RecordingFaultTests: XCTestCase {
    /// One frame at 30 fps.
    let frame = 1.0 / 30

    /// The shipped test pipeline with a `valve name=freeze` after the
    /// camera: closing it stops frames without any error, as a hung USB
    /// camera or a silent RTSP sender does.
    func freezablePipeline(_ dir: TemporaryDirectory, closed: Bool = false) throws -> String {
        try testPipeline(dir, beforeBlurIn: "valve name=freeze drop=\(closed)", name: "freezable.pipeline")
    }

    /// pipelines/test.pipeline with `element` between the source and blur_in.
    func testPipeline(_ dir: TemporaryDirectory, beforeBlurIn element: String, name: String) throws -> String {
        let file = dir.file(name)
        try String(contentsOfFile: repoPath("pipelines/test.pipeline"), encoding: .utf8)
            .replacingOccurrences(of: "  ! appsink name=blur_in", with: "  ! \(element)\n  ! appsink name=blur_in")
            .write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Runs the main loop with `actions` at their times until `condition` holds (checked from
    /// `notBefore` seconds on) or `seconds` pass; the actions not yet run are cancelled.
    @discardableResult
    func runMainLoop(atMost seconds: Double, actions: [(at: Double, run: () -> Void)], notBefore: Double,
                     until condition: @escaping () -> Bool) -> Bool {
        let started = Date()
        let timers = actions.map { MainLoop.after($0.at, $0.run) }
        defer { timers.forEach { $0.cancel() } }
        return waitOnMainLoop(seconds) { Date().timeIntervalSince(started) > notBefore && condition() }
    }

    func writePipeline(_ dir: TemporaryDirectory, _ text: String, name: String = "custom.pipeline") throws -> String {
        let file = dir.file(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Every catalogued chunk holds as much video as the catalog says.
    func assertCatalogMatchesMedia(_ recorder: Recorder, file: StaticString = #filePath, line: UInt = #line) throws {
        for chunk in recorder.catalog.all {
            let media = try XCTUnwrap(discover(recorder.catalog.url(of: chunk)).duration, "\(chunk.file) is playable", file: file, line: line)
            XCTAssertEqual(chunk.duration, media, accuracy: 2 * frame + 0.001,
                           "\(chunk.file): catalogued \(chunk.duration) s, the file holds \(media) s", file: file, line: line)
        }
    }

    // MARK: Item 3: a frozen source

    func testFrozenSourceEndsTheChunkAtItsLastFrameAndRestarts() throws {
        let storage = TemporaryDirectory()
        let pipelines = TemporaryDirectory()
        let config = try testConfig(storage: storage.path, extra: [
            "recording.pipeline=\(try freezablePipeline(pipelines))",
            "recording.chunk_duration_ms=4000", "recording.frame_timeout_s=2"])
        let recorder = try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
        try recorder.start()
        var valve: Element?
        var frozenAt = 0.0
        var states: [String] = []
        // Until a chunk recorded after the restart is finished (at most 14 s).
        runMainLoop(atMost: 14, actions: [
            (at: 2.5, run: {
                // Mid-chunk, the camera stops sending; it would come back 6 s later.
                valve = recorder.session?.loaded.pipeline.element(named: "freeze")
                frozenAt = Date().timeIntervalSince1970
                valve?.set("drop", true)
            }),
            (at: 8.5, run: { valve?.set("drop", false) }),
        ] + stride(from: 3.0, to: 14, by: 0.5).map { t in (at: t, run: { states.append("\(recorder.state)") }) },
                    notBefore: 8.6, until: { recorder.catalog.all.contains { $0.start > frozenAt } && states.last == "recording" })
        XCTAssertTrue(stopAndWait(recorder))

        try assertCatalogMatchesMedia(recorder)
        let chunks = recorder.catalog.all
        let beforeFreeze = try XCTUnwrap(chunks.last { $0.start < frozenAt }, "\(chunks.map(\.file))")
        XCTAssertEqual(beforeFreeze.end, frozenAt, accuracy: 0.5, "the chunk ends at the last frame before the freeze")
        let after = chunks.filter { $0.start > frozenAt }
        XCTAssertFalse(after.isEmpty, "recording resumed after the restart: \(chunks.map(\.file)); states \(states)")
        if let first = after.first {
            XCTAssertGreaterThanOrEqual(first.start, frozenAt + 2, "nothing is catalogued for the frozen time")
        }
        XCTAssertTrue(states.contains { $0.contains("to retry") }, "the source was restarted: \(states)")
        XCTAssertEqual(states.last, "recording")
    }

    // MARK: Item 4: read-only storage

    func testReadOnlyStorageAbandonsTheBrokenChunkAtOnce() throws {
        // A read-only file system cannot be remounted read-only while files
        // are open for writing (EBUSY), and the chunk being written always
        // is. So a read-only tmpfs is mounted over the storage folder: the
        // next chunk file cannot be created (EROFS), the chunk index cannot
        // be written, exactly as when the folder's disk turns read-only;
        // unmounting it makes the folder writable again.
        let storage = TemporaryDirectory("allspark-readonly")
        let probe = try runTool("mount", ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", storage.path])
        guard probe.status == 0 else { throw XCTSkip("cannot mount a tmpfs here (needs root): \(probe.output)") }
        XCTAssertEqual(try runTool("umount", [storage.path]).status, 0)

        let config = try testConfig(storage: storage.path)
        let recorder = try Recorder(config: config, makeProcessor: { _ in PassThroughProcessor() })
        try recorder.start()
        var readOnlyAt = 0.0, writableAt = 0.0
        var states: [(at: Double, state: String)] = []
        // Until a chunk recorded after the folder is writable again is finished (at most 15 s).
        runMainLoop(atMost: 15, actions: [
            (at: 3.0, run: {
                readOnlyAt = Date().timeIntervalSince1970
                XCTAssertEqual(try? runTool("mount", ["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", storage.path]).status, 0)
            }),
            (at: 7.0, run: {
                writableAt = Date().timeIntervalSince1970
                XCTAssertEqual(try? runTool("umount", [storage.path]).status, 0)
            }),
        ] + stride(from: 0.25, to: 15, by: 0.25).map { t in
            (at: t, run: { states.append((Date().timeIntervalSince1970, "\(recorder.state)")) })
        }, notBefore: 7.1, until: { recorder.catalog.all.contains { $0.start > writableAt } })
        XCTAssertTrue(stopAndWait(recorder))

        // The write error stops the pipeline at once rather than after the 10 s stop timeout.
        let retrying = states.first { $0.at > readOnlyAt && $0.state.contains("to retry") }
        XCTAssertNotNil(retrying, "the broken chunk was abandoned at once: \(states.map(\.state))")
        let chunks = recorder.catalog.all
        let resumed = chunks.first { $0.start > writableAt }
        XCTAssertNotNil(resumed, "recording resumed once the folder was writable: \(chunks.map(\.file)), \(states.map(\.state))")
        if let resumed {
            // At most the backoff (1 + 2 + 4 s over a 4 s window) beyond the fault, not 10 s more.
            XCTAssertLessThan(resumed.start - writableAt, 5, "video lost beyond the read-only window")
        }
        // A chunk complete before the fault (even one still being finalised
        // when the error came) is kept whole: only the broken one is abandoned.
        for chunk in chunks where chunk.start + 2.2 < readOnlyAt {
            XCTAssertEqual(chunk.duration, 2.0, accuracy: 2 * frame, "\(chunk.file) is whole")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: storage.path).filter { $0 != ChunkCatalog.indexFileName }
        XCTAssertFalse(names.contains { $0.hasSuffix(".partial") }, "the cut chunk was repaired or removed: \(names)")
        XCTAssertEqual(names.filter { $0.hasPrefix("chunk_") }.sorted(), chunks.map(\.file).sorted())
        try assertCatalogMatchesMedia(recorder)
    }

    // MARK: Item 9: recording nothing never looks like recording

    let smallAndFast = ["--set", "privacy.face_blur=false", "--set", "server.discovery=false",
                        "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240",
                        "--set", "pipeline.vars.bitrate_kbps=500"]

    func testASourceThatSendsNothingIsReportedAndATimedRunFails() throws {
        let storage = TemporaryDirectory()
        let pipelines = TemporaryDirectory()
        let silent = try freezablePipeline(pipelines, closed: true)
        let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"),
                                                   "--set", "recording.storage_dir=\(storage.path)",
                                                   "--set", "recording.pipeline=\(silent)",
                                                   "--set", "recording.frame_timeout_s=2", "--duration", "4"] + smallAndFast)
        XCTAssertNotEqual(run.status, 0, run.output)
        XCTAssertTrue(run.output.contains("Waiting for the source"), run.output)
        XCTAssertFalse(run.output.contains("Recording to"), run.output)
        XCTAssertFalse(run.output.contains("→ recording"), run.output)
        XCTAssertTrue(run.output.contains("recorded nothing in 4 s: no frame reached the chunks within 2 s"), run.output)

        // No camera at all: the source fails, and the run says why it recorded nothing.
        let noCamera = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"),
                                                        "--set", "recording.storage_dir=\(storage.path)",
                                                        "--set", "recording.pipeline=\(repoPath("pipelines/v4l2.pipeline"))",
                                                        "--set", "pipeline.vars.device=/dev/no-such-camera",
                                                        "--set", "pipeline.vars.framerate=30", "--duration", "3"] + smallAndFast)
        XCTAssertNotEqual(noCamera.status, 0, noCamera.output)
        XCTAssertTrue(noCamera.output.contains("Waiting for the source"), noCamera.output)
        XCTAssertFalse(noCamera.output.contains("Recording to"), noCamera.output)
        XCTAssertTrue(noCamera.output.contains("recorded nothing in 3 s: "), noCamera.output)
        XCTAssertTrue(noCamera.output.contains("Cannot identify device '/dev/no-such-camera'"), noCamera.output)
        XCTAssertEqual(try ChunkCatalog.readIndex(of: storage.url), [])
    }

    /// `--duration` is recording time: a source whose first frame comes late (here
    /// a queue that holds 2 s of frames back; in CI, a start that first checked
    /// thousands of files in the storage folder) still gets its seconds recorded.
    /// (A source that sends nothing within the duration fails the run: the test above.)
    func testATimedRunCountsFromTheFirstFrameRecorded() throws {
        let storage = TemporaryDirectory()
        let pipelines = TemporaryDirectory()
        let late = try testPipeline(pipelines, beforeBlurIn: "queue min-threshold-time=2000000000 max-size-time=0 max-size-buffers=0 max-size-bytes=0",
                                    name: "late.pipeline")
        let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"),
                                                   "--set", "recording.storage_dir=\(storage.path)",
                                                   "--set", "recording.pipeline=\(late)", "--set", "recording.frame_timeout_s=6",
                                                   "--duration", "3"] + smallAndFast)
        XCTAssertEqual(run.status, 0, run.output)
        let recorded = try ChunkCatalog.readIndex(of: storage.url).map(\.duration).reduce(0, +)
        // Counted from the start of the run, it would be about 1 s.
        XCTAssertGreaterThan(recorded, 2.5, "three seconds recorded after the first frame: \(run.output)")
    }

    func testExtraSinksAfterBlurOutRecordAsWell() throws {
        let storage = TemporaryDirectory()
        let pipelines = TemporaryDirectory()
        // Recording and also streaming what was blurred (to loopback) and a preview sink.
        let streaming = try writePipeline(pipelines, """
            videotestsrc is-live=true pattern=ball
              ! video/x-raw,format=I420,width=${width},height=${height},framerate=${framerate}/1
              ! appsink name=blur_in

            appsrc name=blur_out
              ! tee name=t
              ! queue
              ! videoconvert
              ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=${framerate} bitrate=${bitrate_kbps}
              ! h264parse
              ! splitmuxsink name=chunks
            t. ! queue ! videoconvert ! jpegenc ! rtpjpegpay ! udpsink host=127.0.0.1 port=5997
            t. ! queue ! fakesink
            """)
        let check = try runTool(recorderExecutable, ["check-pipeline", streaming, "--config", repoPath("config/demo.toml")])
        XCTAssertEqual(check.status, 0, check.output)
        let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"),
                                                   "--set", "recording.storage_dir=\(storage.path)",
                                                   "--set", "recording.pipeline=\(streaming)", "--duration", "4"] + smallAndFast)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertTrue(run.output.contains("Recording to \(storage.path)"), run.output)
        let chunks = try ChunkCatalog.readIndex(of: storage.url)
        XCTAssertFalse(chunks.isEmpty, run.output)
        var frames = 0
        for chunk in chunks { frames += try countFrames(in: storage.file(chunk.file)) }
        XCTAssertGreaterThan(frames, 60, "frames were recorded while also streaming: \(run.output)")
    }

    // MARK: Item 7: the privacy boundary on the graph

    func testABranchAroundThePrivacyStageIsRefusedByCheckPipelineAndRun() throws {
        let storage = TemporaryDirectory()
        let pipelines = TemporaryDirectory()
        // A tee before blur_in that also feeds the encoder: raw frames would be recorded.
        let leaky = try writePipeline(pipelines, """
            videotestsrc is-live=true pattern=ball
              ! video/x-raw,format=I420,width=${width},height=${height},framerate=${framerate}/1
              ! tee name=split
            split. ! queue ! appsink name=blur_in
            split. ! queue ! join.

            appsrc name=blur_out
              ! funnel name=join
              ! videoconvert
              ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=${framerate} bitrate=${bitrate_kbps}
              ! h264parse
              ! splitmuxsink name=chunks
            """)
        let check = try runTool(recorderExecutable, ["check-pipeline", leaky, "--config", repoPath("config/demo.toml"),
                                                     "--set", "privacy.face_blur=true"])
        XCTAssertNotEqual(check.status, 0, check.output)
        XCTAssertTrue(check.output.contains("\(leaky):3: privacy: 'chunks' gets frames from 'videotestsrc"), check.output)
        XCTAssertTrue(check.output.contains("remove the branch at 'split'"), check.output)

        let run = try runTool(recorderExecutable, ["run", "--config", repoPath("config/demo.toml"),
                                                   "--set", "recording.storage_dir=\(storage.path)",
                                                   "--set", "recording.pipeline=\(leaky)", "--set", "privacy.face_blur=true",
                                                   "--set", "server.discovery=false", "--duration", "3"])
        XCTAssertNotEqual(run.status, 0, run.output)
        XCTAssertTrue(run.output.contains("\(leaky):3: privacy:"), run.output)
        let recorded = try FileManager.default.contentsOfDirectory(atPath: storage.path).filter { $0.contains("chunk_") }
        XCTAssertEqual(recorded, [], "nothing was recorded")
    }
}
