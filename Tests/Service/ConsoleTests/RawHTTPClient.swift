import Foundation
import GLibSupport
import RecorderTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A client on plain sockets, for what curl will not do: leave in the middle
/// of a request, reset instead of closing, come from 127.0.0.x, hold
/// connections open. Runs off the main loop (see `offLoop`).
struct RawHTTPClient {
    let port: Int

    /// A connected socket from `source` (any 127.0.0.0/8 address is this machine), or nil.
    func connect(from source: String? = nil, receiveTimeout: Double = 10) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: Int(receiveTimeout), tv_usec: Int(receiveTimeout.truncatingRemainder(dividingBy: 1) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard bound == 0 else { close(fd); return nil }
        }
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else { close(fd); return nil }
        return fd
    }

    @discardableResult
    static func send(_ fd: Int32, _ text: String) -> Bool { send(fd, Data(text.utf8)) }

    @discardableResult
    static func send(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let n = Glibc.send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard n > 0 else { return false }
                sent += n
            }
            return true
        }
    }

    /// One whole answer (head and a Content-Length body), or what came before the end or the receive timeout.
    /// The status of a streamed answer (a live view): its head only, up to the blank line.
    static func readStreamStatus(_ fd: Int32) -> Int {
        var head = Data()
        var byte: UInt8 = 0
        while !head.hasSuffix(Data("\r\n\r\n".utf8)), recv(fd, &byte, 1, 0) == 1 { head.append(byte) }
        return Int(String(decoding: head, as: UTF8.self).split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    static func readAnswer(_ fd: Int32) -> (status: Int, head: String, body: Data) {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let end = data.range(of: Data("\r\n\r\n".utf8)) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                if data.count - end.upperBound >= length {
                    let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
                    return (status, head, Data(data[end.upperBound...]))
                }
            }
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            data.append(buffer, count: n)
        }
        let head = String(decoding: data, as: UTF8.self)
        return (Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0, head, Data())
    }

    /// True when the server closed the connection (reads end) before the receive timeout.
    static func seesEnd(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    /// Closes with a reset (SO_LINGER 0) instead of a FIN.
    static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }
}

/// Runs `work` on another thread while the main loop serves; its result, or nil after `seconds`.
func offLoop<T>(_ seconds: Double = 120, _ work: @escaping () -> T) -> T? {
    var result: T?
    DispatchQueue.global().async {
        let value = work()
        MainLoop.post { result = value }
    }
    waitOnMainLoop(seconds) { result != nil }
    return result
}

/// Files this process has open now.
func openFiles() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// This process's resident memory, in bytes.
func residentBytes() -> Int {
    let fields = ((try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? "").split(separator: " ")
    return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

extension Data {
    func hasSuffix(_ suffix: Data) -> Bool { count >= suffix.count && self.suffix(suffix.count) == suffix }
}
