import XCTest
import RecorderCore
import RecorderTestSupport
import Storage

/// The wall clock set back and forward while recording, on the test pattern
/// and a real RTSP camera, and a box that starts in 1970 and learns the time
/// later. libfaketime (Debian's `faketime`) sets the recorder's wall clock
/// from a file the test rewrites; the monotonic clock stays real
/// (`FAKETIME_DONT_FAKE_MONOTONIC`), as it does when NTP or `date -s` steps a clock.
extension ServiceProcessTests {
    /// The recorder's wall clock: real time plus the offset the test writes (seconds).
    final class FakeWallClock {
        static let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        let folder = TemporaryDirectory()
        var offsetFile: URL { folder.file("offset") }

        init(offset: Int64 = 0) throws {
            try XCTSkipUnless(FileManager.default.fileExists(atPath: Self.library),
                              "libfaketime is missing (scripts/setup --tests installs Debian's faketime)")
            set(offset)
        }

        func set(_ offset: Int64) {
            try? Data((offset >= 0 ? "+\(offset)" : "\(offset)").utf8).write(to: offsetFile, options: .atomic)
        }

        var environment: [String: String] {
            ["LD_PRELOAD": Self.library, "FAKETIME_TIMESTAMP_FILE": offsetFile.path,
             "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_CACHE_DURATION": "1"]
        }
    }

    static let hour: Int64 = 3600, day: Int64 = 86_400

    /// Steps (at seconds after the first chunk appeared, to an offset): back an hour, forward a day, forward three years.
    static let steps: [(after: Double, offset: Int64)] = [(4, -hour), (9, day), (14, 3 * 365 * day)]

    /// Runs `service` through `steps`, then checks what it recorded: every frame, no gap and no
    /// burst, each step ending a chunk, the next named in the new time, each step logged.
    func assertRecordedThrough(_ steps: [(after: Double, offset: Int64)], clock: FakeWallClock, storage: TemporaryDirectory,
                               service: Service, seconds: Double, framesPerSecond: Double, chunkSeconds: Double,
                               file: StaticString = #filePath, line: UInt = #line) throws -> [ChunkRecord] {
        guard waitFor(30, until: { files(in: storage).contains { $0.hasPrefix(".chunk_") } }) else {
            service.signal(SIGKILL)
            XCTFail("recording did not start:\n\(service.finish().log)", file: file, line: line)
            return []
        }
        let started = Date()
        for step in steps {
            let wait = step.after - Date().timeIntervalSince(started)
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
            clock.set(step.offset)
        }
        let (status, log) = service.finish(timeout: seconds + 30)
        XCTAssertEqual(status, 0, log, file: file, line: line)
        let records = try ChunkCatalog.readIndex(of: storage.url).sorted(by: ChunkRecord.recordedBefore)
        XCTAssertFalse(records.isEmpty, log, file: file, line: line)

        // Every frame captured was recorded, and as many as the seconds recorded hold: no stall, no burst.
        let summary = try XCTUnwrap(log.range(of: #"stopped: [0-9]+ frames captured, [0-9]+ recorded"#, options: .regularExpression),
                                    log, file: file, line: line)
        let counts = log[summary].split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        let (captured, recorded) = (counts[0], counts[1])
        XCTAssertEqual(recorded, captured, file: file, line: line)
        XCTAssertGreaterThanOrEqual(Double(recorded), framesPerSecond * (seconds - 2), "nothing lost to a step:\n\(log)", file: file, line: line)
        XCTAssertLessThanOrEqual(Double(recorded), framesPerSecond * (seconds + 1), "no burst after a step:\n\(log)", file: file, line: line)
        let total = records.reduce(0) { $0 + $1.duration }
        XCTAssertEqual(total, Double(recorded) / framesPerSecond, accuracy: 1.0, "the chunks hold what was recorded", file: file, line: line)

        // Chunks follow each other without a gap; where the clock was stepped, by the step.
        var expected = [Double(steps[0].offset)]
        for (previous, next) in zip(steps, steps.dropFirst()) { expected.append(Double(next.offset - previous.offset)) }
        var found: [Double] = []
        for (previous, next) in zip(records, records.dropFirst()) {
            let gap = next.start - previous.end
            if abs(gap) > 1 { found.append(gap) } else {
                XCTAssertEqual(gap, 0, accuracy: 0.1, "\(previous.file) → \(next.file)", file: file, line: line)
            }
        }
        XCTAssertEqual(found.count, expected.count, "one jump in time per step: \(found)\n\(records.map(\.file))", file: file, line: line)
        for (gap, step) in zip(found, expected) {
            XCTAssertEqual(gap, step, accuracy: 1.5, "the next chunk is named in the new time", file: file, line: line)
        }
        for record in records {
            XCTAssertLessThanOrEqual(record.duration, chunkSeconds + 0.15, "\(record.file) spans no step", file: file, line: line)
            XCTAssertNotNil(try discover(storage.file(record.file)).duration, "\(record.file) plays", file: file, line: line)
        }
        XCTAssertEqual(Set(records.compactMap(\.sequence)).count, records.count, "each chunk has its place in recording order", file: file, line: line)
        for step in ["back 1 h 0 min", "forward 1 d 1 h 0 min", "forward 1094 d 0 h 0 min"].prefix(steps.count) {
            XCTAssertTrue(log.contains("the wall clock was set \(step)"), "the step is logged with its size: \(step)\n\(log)", file: file, line: line)
        }
        return records
    }

    func testTheTestPatternRecordsThroughStepsOfTheWallClockBackAndForward() throws {
        let clock = try FakeWallClock()
        let storage = TemporaryDirectory()
        let port = Int.random(in: 30_000..<40_000), password = "pw-\(UUID().uuidString.prefix(8))"
        let config = storage.url.deletingLastPathComponent().appendingPathComponent("\(storage.url.lastPathComponent).toml")
        defer { try? FileManager.default.removeItem(at: config) }
        try Data("""
            [recording]
            pipeline = "\(repoPath("pipelines/test.pipeline"))"
            storage_dir = "\(storage.path)"
            chunk_duration_ms = 2000
            [privacy]
            face_blur = false
            [server]
            discovery = false
            [console]
            listen = "127.0.0.1:\(port)"
            [pipeline.vars]
            width = 320
            height = 240
            framerate = 30
            bitrate_kbps = 500
            """.utf8).write(to: config)
        let set = Process()
        set.executableURL = URL(fileURLWithPath: recorderExecutable)
        set.arguments = ["set-password", "--config", config.path]
        let input = Pipe()
        set.standardInput = input
        try set.run()
        input.fileHandleForWriting.write(Data("\(password)\n".utf8))
        try input.fileHandleForWriting.close()
        set.waitUntilExit()
        XCTAssertEqual(set.terminationStatus, 0)

        let seconds = 20.0
        let service = try Service(["run", "--config", config.path, "--duration", "\(Int(seconds))"], environment: clock.environment)
        // The steps are counted in /metrics: read it once they are all made, before the run ends.
        var metrics = ""
        let reader = Thread {
            usleep(17_500_000)
            metrics = (try? runTool("curl", ["-s", "-u", "admin:\(password)", "http://127.0.0.1:\(port)/metrics"]).output) ?? ""
        }
        reader.start()
        _ = try assertRecordedThrough(Self.steps, clock: clock, storage: storage, service: service,
                                      seconds: seconds, framesPerSecond: 30, chunkSeconds: 2)
        XCTAssertTrue(metrics.contains("allspark_wall_clock_steps_total 3\n"), metrics)
    }

    func testAnRTSPCameraIsRecordedThroughStepsOfTheWallClockBackAndForward() throws {
        let clock = try FakeWallClock()
        let port = Int.random(in: 20_000..<30_000)
        let password = "pw-\(UUID().uuidString.prefix(8))"
        let camera = try RTSPCamera(port: port, user: "camera", password: password)
        defer { camera.kill() }
        let storage = TemporaryDirectory()
        let seconds = 20.0
        let service = try Service(["run", "--config", repoPath("config/default.toml"),
                                   "--set", "recording.pipeline=\(repoPath("pipelines/rtsp.pipeline"))",
                                   "--set", "recording.storage_dir=\(storage.path)", "--set", "recording.chunk_duration_ms=2000",
                                   "--set", "server.discovery=false", "--set", "console.enabled=false",
                                   "--set", "pipeline.vars.rtsp_url=rtsp://127.0.0.1:\(port)/cam", "--set", "pipeline.vars.rtsp_transport=tcp",
                                   "--set", "pipeline.vars.rtsp_user=camera", "--set", "pipeline.vars.rtsp_password=\(password)",
                                   "--set", "pipeline.vars.framerate=15", "--set", "pipeline.vars.bitrate_kbps=500",
                                   "--duration", "\(Int(seconds))"] + smallAndFast, environment: clock.environment)
        _ = try assertRecordedThrough(Self.steps, clock: clock, storage: storage, service: service,
                                      seconds: seconds, framesPerSecond: 15, chunkSeconds: 2)
    }

    /// A box without a real-time clock starts in 1970, with time sync not done: its chunks
    /// say so; once the clock is set and synchronised, the next chunk is named in the real
    /// time and trusted, and the log says when.
    func testABoxThatStartsIn1970MarksItsChunksUntilTheClockIsSynchronised() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let clock = try FakeWallClock(offset: 100 - now)   // 100 s after the epoch
        let sync = TemporaryDirectory()   // where the sync flag appears (timesyncd's /run/systemd/timesync)
        let flag = sync.file("synchronized")
        let storage = TemporaryDirectory()
        let service = try Service(["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                                   "--set", "recording.chunk_duration_ms=2000", "--set", "recording.clock_sync_flag=\(flag.path)",
                                   "--set", "console.enabled=false", "--duration", "10"] + smallAndFast,
                                  environment: clock.environment)
        guard waitFor(30, until: { files(in: storage).contains { $0.hasPrefix(".chunk_") } }) else {
            service.signal(SIGKILL)
            return XCTFail("recording did not start:\n\(service.finish().log)")
        }
        sleep(4)
        // Time sync sets the clock, then says it is synchronised.
        clock.set(0)
        sleep(1)
        try Data().write(to: flag)
        let (status, log) = service.finish(timeout: 40)
        XCTAssertEqual(status, 0, log)
        let records = try ChunkCatalog.readIndex(of: storage.url).sorted(by: ChunkRecord.recordedBefore)
        let early = records.filter { $0.start < 1_000_000 }, later = records.filter { $0.start > Double(now) - 60 }
        XCTAssertFalse(early.isEmpty, "chunks recorded in 1970: \(records.map(\.file))")
        XCTAssertGreaterThanOrEqual(later.count, 2, "chunks recorded after the clock was set: \(records.map(\.file))")
        XCTAssertEqual(early.count + later.count, records.count)
        XCTAssertEqual(Set(early.map(\.clockSynchronized)), [false], "chunks before time sync are marked")
        XCTAssertEqual(later.last?.clockSynchronized, true, "chunks after time sync are trusted")
        XCTAssertTrue(log.contains("the wall clock is not synchronised yet"), log)
        XCTAssertTrue(log.contains("the wall clock is synchronised now"), log)
        XCTAssertTrue(log.contains("the wall clock was set forward"), log)
        let listed = try runTool(recorderExecutable, ["chunks", "--storage", storage.path, "--json"])
        XCTAssertTrue(listed.output.contains("\"clockSynchronized\" : false"), listed.output)
        let table = try runTool(recorderExecutable, ["chunks", "--storage", storage.path])
        XCTAssertTrue(table.output.contains("clock not synchronised"), table.output)
        for record in records { XCTAssertNotNil(try discover(storage.file(record.file)).duration, "\(record.file) plays") }
    }
}

extension ServiceProcessTests {
    /// A library preloaded before main that sets an environment variable
    /// (libfaketime's constructor does) moves `environ`, next to which Swift's
    /// runtime looks for argv: the binary must still read its arguments.
    func testTheBinaryReadsItsArgumentsWhateverChangesTheEnvironmentBeforeMain() throws {
        let clock = try FakeWallClock()
        var environment = ProcessInfo.processInfo.environment.merging(clock.environment) { $1 }
        environment["ORT_DISABLE_TELEMETRY"] = nil
        let version = try runTool(recorderExecutable, ["--version"], environment: environment)
        XCTAssertEqual(version.status, 0, version.output)
        XCTAssertEqual(version.output.trimmingCharacters(in: .whitespacesAndNewlines), ProductVersion.current)
        let empty = TemporaryDirectory()
        let listed = try runTool(recorderExecutable, ["chunks", "--storage", empty.path], environment: environment)
        XCTAssertEqual(listed.status, 1, listed.output)
        XCTAssertTrue(listed.output.contains("no chunk index"), "the subcommand ran: \(listed.output)")
        XCTAssertFalse(listed.output.contains("OVERVIEW"), listed.output)
    }
}
