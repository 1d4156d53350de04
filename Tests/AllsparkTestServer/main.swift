// allspark-test-server: a real libsoup AllSpark server (SoupSupport's
// WebSocketServer on 127.0.0.1) as a process of its own, so that tests can
// run it inside a network namespace next to the recorder they start there
// (the test process itself stays outside). Test-only; not installed.
//
//   allspark-test-server [--name NAME]      (listens on a free port)
//
// Prints one line per event on stdout, flushed at once:
//   listening 127.0.0.1:<port>
//   connected
//   received <text message>
//   closed
// SIGTERM or SIGINT stops it.
import Foundation
import GLibSupport
import SoupSupport

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

var name = "allspark-test-server"
var arguments = CommandLine.arguments.dropFirst()
while let option = arguments.popFirst() {
    switch option {
    case "--name": name = arguments.popFirst() ?? name
    default:
        FileHandle.standardError.write(Data("usage: allspark-test-server [--name NAME]\n".utf8))
        exit(2)
    }
}

let loop = MainLoop()
let server: WebSocketServer
do {
    server = try WebSocketServer()
} catch {
    FileHandle.standardError.write(Data("allspark-test-server: cannot listen: \(error)\n".utf8))
    exit(1)
}
let started = Date()
server.handleJSON(path: "/api/health") {
    #"{"status":"ok","timestamp":\#(Date().timeIntervalSince1970),"uptime":\#(Date().timeIntervalSince(started)),"protocols":["ws"],"name":"\#(name)"}"#
}
var sockets: [WebSocket] = []
server.onConnection = { socket in
    sockets.append(socket)
    say("connected")
    socket.onEvents(message: { message in
        switch message {
        case .text(let text): say("received \(text)")
        case .binary(let data): say("received \(data.count) bytes")
        }
    }, closed: { [weak socket] _, _ in
        sockets.removeAll { $0 === socket }
        say("closed")
    })
}
say("listening 127.0.0.1:\(server.port)")
let signals = [SIGTERM, SIGINT].map { MainLoop.onSignal($0) { loop.quit() } }
loop.run()
_ = signals
server.stop()
