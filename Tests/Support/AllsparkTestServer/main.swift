// allspark-test-server: the project's AllSpark test server (RecorderTestSupport's
// AllSparkTestServer: a real libsoup SoupServer on 127.0.0.1 that behaves
// like the deployed servers) as a process of its own, so that tests can run
// it inside a network namespace next to the recorder they start there (the
// test process itself stays outside). Test-only; not installed.
//
//   allspark-test-server [--old]      (listens on a free port; --old: an old-generation server)
//
// Prints one line per event on stdout, written at once:
//   listening 127.0.0.1:<port>
//   uploads <folder>         where uploads land (removed when it stops)
//   connections <n>          whenever the number of open WebSockets changes
//   received <text message>  each text message from a client, in order
// SIGTERM or SIGINT stops it.
import Foundation
import GLibSupport
import RecorderTestSupport

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

var generation = AllSparkTestServer.Generation.new
for option in CommandLine.arguments.dropFirst() {
    switch option {
    case "--old": generation = .old
    default:
        FileHandle.standardError.write(Data("usage: allspark-test-server [--old]\n".utf8))
        exit(2)
    }
}

let loop = MainLoop()
let server: AllSparkTestServer
do {
    server = try AllSparkTestServer(generation: generation)
} catch {
    FileHandle.standardError.write(Data("allspark-test-server: cannot listen: \(error)\n".utf8))
    exit(1)
}
// Before saying where it listens: a signal sent right after that line still stops it cleanly.
let signals = [SIGTERM, SIGINT].map { MainLoop.onSignal($0) { loop.quit() } }
say("listening \(server.address)")
say("uploads \(server.uploadDirectory.path)")
// The server keeps what it saw; report what is new, on the main loop that serves it.
var printedTexts = 0
var connections = 0
let reporter = MainLoop.every(0.02) {
    for text in server.texts.dropFirst(printedTexts) { say("received \(text)") }
    printedTexts = server.texts.count
    if server.connections.count != connections {
        connections = server.connections.count
        say("connections \(connections)")
    }
    return true
}
loop.run()
_ = (signals, reporter)
server.kill()
// A global's deinit never runs at exit: the upload folder would stay in /tmp.
try? FileManager.default.removeItem(at: server.uploadDirectory.url)
