import Foundation
@_exported import ClockTesting
import GLibSupport
import GStreamerSupport
import Recorder
import RecorderCore

/// The repository root (for shipped pipelines and configs).
public let repositoryRoot: URL = {
    var url = URL(fileURLWithPath: #filePath)
    while url.path != "/" {
        url.deleteLastPathComponent()
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
    }
    fatalError("Package.swift not found above \(#filePath)")
}()

public func repoPath(_ relative: String) -> String { repositoryRoot.appendingPathComponent(relative).path }

/// A fresh folder under the system temp dir, removed on deinit.
public final class TemporaryDirectory {
    public let url: URL
    public init(_ prefix: String = "allspark-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        FoldersLeftAtExit.add(url)
    }
    public var path: String { url.path }
    public func file(_ name: String) -> URL { url.appendingPathComponent(name) }
    deinit {
        try? FileManager.default.removeItem(at: url)
        FoldersLeftAtExit.remove(url)
    }
}

/// XCTest keeps every test case (and so the folders its properties hold) alive
/// until the process exits, and side by side each test is a process of its own:
/// what no deinit removed is removed at exit (a chromium profile is megabytes).
private enum FoldersLeftAtExit {
    private static let lock = NSLock()
    private static var folders: Set<URL> = []
    private static let removeAtExit: Void = { atexit { FoldersLeftAtExit.removeAll() } }()

    static func add(_ url: URL) {
        _ = removeAtExit
        lock.lock(); defer { lock.unlock() }
        folders.insert(url)
    }

    static func remove(_ url: URL) {
        lock.lock(); defer { lock.unlock() }
        folders.remove(url)
    }

    private static func removeAll() {
        lock.lock()
        let left = folders
        folders = []
        lock.unlock()
        for url in left { try? FileManager.default.removeItem(at: url) }
    }
}

/// The demo config pointed at `storage`, small and fast for tests, with
/// blurring explicitly off (this is the recording core's test, not the privacy stage's).
public func testConfig(storage: String, extra: [String] = []) throws -> RecorderConfig {
    try ConfigLoader.load(file: repoPath("config/demo.toml"), overrides: [
        "recording.storage_dir=\(storage)",
        "recording.chunk_duration_ms=2000",
        "privacy.face_blur=false",
        "pipeline.vars.width=320",
        "pipeline.vars.height=240",
        "pipeline.vars.bitrate_kbps=500",
    ] + extra)
}

/// Runs a shell tool and returns its exit status and combined output.
@discardableResult
public func runTool(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
    process.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// What `gst-discoverer-1.0` says about a file.
public struct DiscovererReport {
    public var duration: Double?
    public var container: String
    public var output: String
}

public func discover(_ file: URL) throws -> DiscovererReport {
    let (_, output) = try runTool("gst-discoverer-1.0", ["-v", file.path])
    var duration: Double?
    for line in output.split(separator: "\n") where line.contains("Duration:") {
        // "Duration: 0:00:02.000000000"
        let value = line.split(separator: " ").last.map(String.init) ?? ""
        let parts = value.split(separator: ":").compactMap { Double($0) }
        if parts.count == 3 { duration = parts[0] * 3600 + parts[1] * 60 + parts[2] }
    }
    let container = output.split(separator: "\n").first { $0.contains("container") }.map(String.init) ?? ""
    return DiscovererReport(duration: duration, container: container, output: output)
}

/// Counts the video frames in a recorded chunk with a real demuxing pipeline.
public func countFrames(in file: URL) throws -> Int {
    let pipeline = try Pipeline.parse("filesrc location=\"\(file.path)\" ! qtdemux ! appsink name=count sync=false")
    guard let element = pipeline.element(named: "count"), let sink = AppSink(element) else {
        throw GStreamerError("no appsink")
    }
    let lock = NSLock()
    var frames = 0
    sink.setHandlers(onSample: { _ in lock.withLock { frames += 1 }; return true }, onEndOfStream: {})
    defer { sink.clearHandlers() }
    do {
        try pipeline.playToEnd(timeoutSeconds: 30)
    } catch {
        throw GStreamerError("counting frames in \(file.lastPathComponent): \(error)")
    }
    return lock.withLock { frames }
}

/// Runs the default main loop for `seconds`, running `actions` at their offsets.
public func runMainLoop(seconds: Double, actions: [(at: Double, run: () -> Void)] = []) {
    let loop = MainLoop()
    for action in actions { MainLoop.after(action.at, action.run) }
    loop.run(forAtMost: seconds)
}

/// Stops a recorder and waits for the last chunk to be finished.
public func stopAndWait(_ recorder: Recorder, timeout: Double = 20) -> Bool {
    let loop = MainLoop()
    var done = false
    recorder.stop { done = true; loop.quit() }
    if !done { loop.run(forAtMost: timeout) }
    return done
}

/// The built executable (debug build next to the test bundle).
public var recorderExecutable: String {
    let bundle = Bundle.main.bundleURL
    for candidate in [bundle.appendingPathComponent("allspark-recorder"),
                      bundle.deletingLastPathComponent().appendingPathComponent("allspark-recorder"),
                      repositoryRoot.appendingPathComponent(".build/debug/allspark-recorder")] {
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
    }
    return repositoryRoot.appendingPathComponent(".build/debug/allspark-recorder").path
}

/// Runs the main loop until `condition` holds or `seconds` pass; returns the condition.
@discardableResult
public func waitOnMainLoop(_ seconds: Double, until condition: @escaping () -> Bool) -> Bool {
    let loop = MainLoop()
    let poll = MainLoop.every(0.05) { if condition() { loop.quit(); return false }; return true }
    loop.run(forAtMost: seconds)
    poll.cancel()
    return condition()
}

/// Runs the main loop until `condition` holds or `seconds` of real time pass, with the parts under
/// test on `clock`: whenever the loop has nothing ready (no bus message, no posted work), the clock
/// jumps to its next timer. So a retry backoff or a grace period costs no real time, while frames,
/// files and sockets go at their own pace. Only for parts whose timers only wait: one that measures
/// real silence (a keep-alive watchdog) would fire early.
@discardableResult
public func waitOnMainLoop(_ seconds: Double, skipping clock: TestClock, until condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    clock.run()
    while !condition(), Date() < deadline {
        if MainLoop.iterate(mayBlock: false) { continue }
        if clock.advanceToNextTimer() { continue }
        // Nothing ready and no virtual timer: wait for the next real event, at most 50 ms.
        let wake = MainLoop.after(0.05) {}
        MainLoop.iterate(mayBlock: true)
        wake.cancel()
    }
    return condition()
}

/// Runs a command while the main loop keeps serving in-process servers; returns its status and output.
public func runWhileServing(_ executable: String, _ arguments: [String], timeout: Double = 60) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let scratch = TemporaryDirectory()
    let output = scratch.file("output.txt")
    _ = FileManager.default.createFile(atPath: output.path, contents: nil)
    let handle = try FileHandle(forWritingTo: output)
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    waitOnMainLoop(timeout) { !process.isRunning }
    if process.isRunning { process.terminate() }
    process.waitUntilExit()
    try handle.close()
    return (process.terminationStatus, (try? String(contentsOf: output, encoding: .utf8)) ?? "")
}
