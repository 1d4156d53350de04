import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A bare RTSP client over one TCP connection, for what real players do not
/// do on purpose: stall after PLAY without reading, read the status line of
/// a refusal, count as one more client.
final class RawRTSPClient {
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    private let fd: Int32
    private var cseq = 0
    /// Bytes read past the last response (interleaved data).
    private var pending = Data()

    /// Connects to 127.0.0.1:`port`; `receiveBuffer` shrinks the socket's receive buffer (a stalled reader fills it soon).
    init(port: Int, receiveBuffer: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { Glibc.close(fd); throw POSIXError(.ECONNREFUSED) }
    }

    deinit { Glibc.close(fd) }

    static func basic(_ user: String, _ password: String) -> String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    /// Sends one request and reads its response (interleaved data before it is skipped).
    func request(_ method: String, _ url: String, headers: [String: String] = [:]) throws -> Response {
        cseq += 1
        var text = "\(method) \(url) RTSP/1.0\r\nCSeq: \(cseq)\r\nUser-Agent: raw-test\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        let bytes = Array(text.utf8)
        guard send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw POSIXError(.EPIPE) }
        return try readResponse()
    }

    private func readMore() throws {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { throw POSIXError(.ETIMEDOUT) }
        pending.append(contentsOf: buffer[0..<n])
    }

    private func readResponse() throws -> Response {
        while true {
            // Interleaved packets: '$', channel, 2-byte length.
            while pending.first == 0x24 {
                while pending.count < 4 { try readMore() }
                let length = Int(pending[pending.startIndex + 2]) << 8 | Int(pending[pending.startIndex + 3])
                while pending.count < 4 + length { try readMore() }
                pending.removeFirst(4 + length)
            }
            if let end = pending.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: pending[pending.startIndex..<end.lowerBound], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                var headers: [String: String] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
                let length = Int(headers["content-length"] ?? "0") ?? 0
                while pending.count < pending.distance(from: pending.startIndex, to: end.upperBound) + length { try readMore() }
                let bodyStart = end.upperBound
                let body = String(decoding: pending[bodyStart..<pending.index(bodyStart, offsetBy: length)], as: UTF8.self)
                pending.removeFirst(pending.distance(from: pending.startIndex, to: bodyStart) + length)
                return Response(status: statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0, headers: headers, body: body)
            }
            try readMore()
        }
    }

    /// OPTIONS, DESCRIBE, SETUP over TCP interleaved and PLAY: the stream then flows into this socket.
    /// Returns PLAY's status.
    func play(_ url: String, authorization: String) throws -> Int {
        let auth = ["Authorization": authorization]
        _ = try request("OPTIONS", url, headers: auth)
        let described = try request("DESCRIBE", url, headers: auth.merging(["Accept": "application/sdp"]) { a, _ in a })
        guard described.status == 200 else { return described.status }
        let control = described.body.components(separatedBy: "\r\n").first { $0.hasPrefix("a=control:") && $0 != "a=control:*" }
            .map { String($0.dropFirst("a=control:".count)) } ?? "stream=0"
        let track = control.hasPrefix("rtsp") ? control : url + "/" + control
        let setup = try request("SETUP", track, headers: auth.merging(["Transport": "RTP/AVP/TCP;unicast;interleaved=0-1"]) { a, _ in a })
        guard setup.status == 200, let session = setup.headers["session"]?.split(separator: ";").first else { return setup.status }
        return try request("PLAY", url, headers: auth.merging(["Session": String(session), "Range": "npt=0-"]) { a, _ in a }).status
    }
}

/// A TCP port that was free a moment ago on 127.0.0.1.
func freeLocalPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { Glibc.close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
