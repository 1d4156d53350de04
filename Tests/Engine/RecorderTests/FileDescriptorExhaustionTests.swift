import XCTest
import RecorderCore
import RecorderTestSupport

/// Issue 21: with file descriptors exhausted (chunk creation failing) the
/// recorder once deadlocked between `FramePath.unblock` and a keyframe
/// request on the frame path, and ignored SIGTERM. These tests run the real
/// executable and take its descriptors away with prlimit(1) while it records.
final class FileDescriptorExhaustionTests: XCTestCase {
    let smallAndFast = ["--set", "privacy.face_blur=false", "--set", "server.discovery=false",
                        "--set", "pipeline.vars.width=320", "--set", "pipeline.vars.height=240",
                        "--set", "pipeline.vars.bitrate_kbps=500"]

    /// The executable, its output going to a file that can be read while it runs.
    final class Service {
        let process = Process()
        let scratch = TemporaryDirectory("allspark-fd")
        var logFile: URL { scratch.file("log.txt") }
        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: recorderExecutable)
            process.arguments = arguments
            FileManager.default.createFile(atPath: scratch.file("log.txt").path, contents: nil)
            let handle = try FileHandle(forWritingTo: scratch.file("log.txt"))
            process.standardOutput = handle
            process.standardError = handle
            try process.run()
            try handle.close()
        }
        var pid: Int32 { process.processIdentifier }
        var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
        var openDescriptors: Int { ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count }
        /// Sets the soft limit of open files (the hard limit stays).
        func limitDescriptors(to soft: Int) throws {
            let result = try runTool("prlimit", ["--pid", "\(pid)", "--nofile=\(soft):"])
            XCTAssertEqual(result.status, 0, result.output)
        }
        /// Waits for exit; nil when it did not exit in time (then it is killed).
        func exitStatus(within seconds: Double) -> Int32? {
            let deadline = Date().addingTimeInterval(seconds)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            guard !process.isRunning else {
                kill(pid, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            return process.terminationStatus
        }
    }

    func waitFor(_ seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(100_000)
        }
        return condition()
    }

    func chunks(in storage: TemporaryDirectory) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: storage.path)) ?? []).filter { $0.hasPrefix("chunk_") }.sorted()
    }

    func startRecording(_ storage: TemporaryDirectory) throws -> Service {
        let service = try Service(["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                                   "--set", "recording.chunk_duration_ms=1000"] + smallAndFast)
        XCTAssertTrue(waitFor(30) { chunks(in: storage).count >= 1 }, "recording started: \(service.log)")
        return service
    }

    /// Takes every free descriptor away, then waits until the recorder has noticed.
    func exhaustDescriptors(_ service: Service) throws {
        // Below what is open now: the descriptors a finished chunk gives back are not enough for the next one.
        try service.limitDescriptors(to: service.openDescriptors - 4)
        XCTAssertTrue(waitFor(20) { service.log.contains("cannot create a chunk file") },
                      "chunk creation failed for lack of descriptors: \(service.log)")
    }

    func testRecoversWhenDescriptorsReturnAndStopsOnSIGTERM() throws {
        let storage = TemporaryDirectory()
        let service = try startRecording(storage)
        try exhaustDescriptors(service)
        // Several failures and retries without descriptors.
        sleep(4)
        let before = Set(chunks(in: storage))
        try service.limitDescriptors(to: 1024)
        XCTAssertTrue(waitFor(20) { Set(chunks(in: storage)).subtracting(before).count >= 2 },
                      "recording resumed once descriptors were free again: \(service.log)")
        kill(service.pid, SIGTERM)
        let status = service.exitStatus(within: 20)
        XCTAssertEqual(status, 0, "SIGTERM stops the recorder: \(service.log)")
    }

    func testAnswersSIGTERMWhileDescriptorsAreExhausted() throws {
        // At a few moments of the failure and retry cycle. The three recorders are separate
        // processes with their own folders, so they run side by side (each SIGTERM is timed
        // from its own recorder's failure), not one after another.
        let waits = [0.0, 0.7, 2.5]
        let storages = waits.map { _ in TemporaryDirectory() }
        let services = try storages.map { storage in
            try Service(["run", "--config", repoPath("config/demo.toml"), "--set", "recording.storage_dir=\(storage.path)",
                         "--set", "recording.chunk_duration_ms=1000"] + smallAndFast)
        }
        for (service, storage) in zip(services, storages) {
            XCTAssertTrue(waitFor(30) { chunks(in: storage).count >= 1 }, "recording started: \(service.log)")
        }
        for service in services { try service.limitDescriptors(to: service.openDescriptors - 4) }
        var failedAt = [Date?](repeating: nil, count: waits.count), signalled = [Bool](repeating: false, count: waits.count)
        let deadline = Date().addingTimeInterval(20 + waits.max()!)
        while signalled.contains(false), Date() < deadline {
            for (i, service) in services.enumerated() where !signalled[i] {
                if failedAt[i] == nil, service.log.contains("cannot create a chunk file") { failedAt[i] = Date() }
                if let failed = failedAt[i], Date() >= failed.addingTimeInterval(waits[i]) {
                    kill(service.pid, SIGTERM)
                    signalled[i] = true
                }
            }
            usleep(20_000)
        }
        for (i, service) in services.enumerated() {
            XCTAssertNotNil(failedAt[i], "chunk creation failed for lack of descriptors: \(service.log)")
            let status = service.exitStatus(within: 20)
            XCTAssertNotNil(status, "SIGTERM \(waits[i]) s after the failure stops the recorder: \(service.log)")
        }
    }
}
