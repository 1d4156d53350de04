import XCTest
import Foundation
import GLibSupport
import RecorderTestSupport
import SoupSupport
#if canImport(Glibc)
import Glibc
#endif

/// SoupSupport's HTTP server on its own: what the console relies on below its routes.
final class HTTPServerTests: XCTestCase {
    /// A connected loopback socket to `port` with a request already sent.
    private func ask(_ port: Int, _ request: String) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        return fd
    }

    func testAClientThatLeavesALongAnswerEndsItAtOnceEvenBetweenPieces() throws {
        let server = try HTTPServer(host: "127.0.0.1", port: 0)
        var started = 0, closed = 0
        var streams: [HTTPStream] = []
        server.serve { _ in
            HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")], body: .stream { stream in
                started += 1
                streams.append(stream)   // like a live view waiting for its next picture: nothing to write yet
                stream.onClose = { closed += 1 }
            })
        }
        let fds = (0..<3).map { _ in ask(server.port, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n") }
        XCTAssertTrue(waitOnMainLoop(10) { started == 3 })
        close(fds[0])
        RawReset.reset(fds[1])
        XCTAssertTrue(waitOnMainLoop(10) { closed == 2 }, "both answers ended when their clients left (closed \(closed))")
        streams.removeAll()
        XCTAssertTrue(waitOnMainLoop(10) { server.answersInProgress == 1 }, "the server let go of the ended answers, though their handler set onClose")
        XCTAssertEqual(server.openConnections, 1, "the third client is still there")
        close(fds[2])
        XCTAssertTrue(waitOnMainLoop(10) { server.openConnections == 0 })
        server.stop()
    }

    func testAnAnswerFromLaterKeepsTheLoopFreeMeanwhile() throws {
        let server = try HTTPServer(host: "127.0.0.1", port: 0)
        server.serveLater { request, respond in
            if request.path == "/slow" {
                // Work off the loop, answer back on it.
                DispatchQueue.global().async { usleep(300_000); MainLoop.post { respond(.text(200, "slow\n")) } }
            } else {
                respond(.text(200, "fast\n"))
            }
        }
        let slow = try runWhileServing("/usr/bin/curl", ["-s", "http://127.0.0.1:\(server.port)/slow"])
        XCTAssertEqual(slow.output, "slow\n")
        let fast = try runWhileServing("/usr/bin/curl", ["-s", "-D", "-", "http://127.0.0.1:\(server.port)/fast"])
        XCTAssertTrue(fast.output.lowercased().contains("connection: close"), "no connection outlives its answer: \(fast.output)")
        server.stop()
    }
}

private enum RawReset {
    static func reset(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close(fd)
    }
}
