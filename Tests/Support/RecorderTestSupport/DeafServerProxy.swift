import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP proxy in front of an `AllSparkTestServer` that can make it
/// deaf the way a real server is after SIGTERM: it stops reading its open
/// connections (no pongs, no replies, no close frame) and stops listening,
/// while the sockets stay open.
///
/// Why a proxy: SoupServer has no way to stop reading a WebSocket (libsoup
/// reads from its own input source and answers pings by itself), and a real
/// aiohttp server stops reading at the socket. The proxy does exactly that:
/// `goDeaf()` freezes both directions of every open connection (the proxy
/// reads nothing more from the client, so the client's socket buffers fill
/// as they would against the deaf server, and forwards nothing from the
/// server). At most one read already under way when it freezes is held, not
/// forwarded. Connections made while deaf are closed at once (the port of a
/// server that has stopped listening) until `replace(with:)` points the
/// proxy at a new server, as the replacement coming up on the same port.
/// `stop()` cuts everything, as the old server does when its grace ends.
///
/// Threading: a thread accepts, two threads per connection copy bytes; the
/// public methods may be called from any thread (one lock guards the state).
public final class DeafServerProxy {
    public private(set) var port: Int = 0
    public var address: String { "127.0.0.1:\(port)" }

    private let condition = NSCondition()
    private var upstreamPort: Int?
    private var listener: Int32 = -1
    private var stopped = false
    /// Open connections: the client's and the server's socket, and whether they are frozen.
    private final class Pair {
        let client: Int32
        let server: Int32
        var frozen = false
        var closed = false
        /// Copying threads still running: the last one closes the sockets (never under a read).
        var threadsLeft = 2
        init(client: Int32, server: Int32) { self.client = client; self.server = server }
    }
    private var pairs: [Pair] = []
    /// Bytes from clients still to forward before going deaf (`goDeaf(afterClientBytes:)`).
    private var clientBytesBeforeDeaf: Int?

    /// Listens on a free loopback port and forwards to `upstreamPort` on loopback.
    public init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw NSError(domain: "DeafServerProxy", code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "cannot listen: \(String(cString: strerror(errno)))"])
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [weak self] in self?.acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// The server stops reading: every open connection freezes both ways, new ones are refused.
    public func goDeaf() {
        condition.lock()
        freezeAll()
        condition.unlock()
    }

    /// With the lock held.
    private func freezeAll() {
        clientBytesBeforeDeaf = nil
        upstreamPort = nil
        for pair in pairs { pair.frozen = true }
    }

    /// Goes deaf once `count` more bytes from clients have been forwarded (say, in the middle
    /// of a file being uploaded, at a byte the test chooses rather than when a callback runs).
    public func goDeaf(afterClientBytes count: Int) {
        condition.lock()
        clientBytesBeforeDeaf = count
        condition.unlock()
    }

    /// A new server is up: new connections go to it (the frozen ones stay frozen).
    public func replace(with upstreamPort: Int) {
        condition.lock()
        self.upstreamPort = upstreamPort
        condition.unlock()
    }

    /// Cuts every connection and stops listening.
    public func stop() {
        condition.lock()
        let wasStopped = stopped
        stopped = true
        let open = pairs
        pairs.removeAll()
        condition.broadcast()
        condition.unlock()
        guard !wasStopped else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        for pair in open { closePair(pair) }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                break
            }
            condition.lock()
            let target = stopped ? nil : upstreamPort
            condition.unlock()
            guard let target, let server = connect(to: target) else {
                close(client)
                continue
            }
            let pair = Pair(client: client, server: server)
            condition.lock()
            pairs.append(pair)
            condition.unlock()
            Thread { [weak self] in self?.copy(from: client, to: server, pair, fromClient: true) }.start()
            Thread { [weak self] in self?.copy(from: server, to: client, pair, fromClient: false) }.start()
        }
        close(listener)
    }

    private func connect(to port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: UInt16(port))
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Waits while the pair is frozen; false once it is closed.
    private func waitWhileFrozen(_ pair: Pair) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while pair.frozen && !pair.closed && !stopped { condition.wait() }
        return !pair.closed && !stopped
    }

    /// How much of `count` bytes read from a client may still go through; freezes everything
    /// once the budget set by `goDeaf(afterClientBytes:)` is spent.
    /// `counted`: the bytes were measured against the budget (they go through even though
    /// spending it froze the pair).
    private func forwardable(_ count: Int) -> (allowed: Int, counted: Bool) {
        condition.lock()
        defer { condition.unlock() }
        guard let budget = clientBytesBeforeDeaf else { return (count, false) }
        let allowed = min(count, budget)
        clientBytesBeforeDeaf = budget - allowed
        if budget - allowed == 0 { freezeAll() }
        return (allowed, true)
    }

    private func copy(from source: Int32, to destination: Int32, _ pair: Pair, fromClient: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        loop: while waitWhileFrozen(pair) {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            let (through, counted) = fromClient ? forwardable(count) : (count, false)
            // Bytes before the deaf point go through; a read just as it froze, and the rest of a
            // read past the deaf point, are never forwarded (a deaf server would not have read them).
            if !counted {
                guard waitWhileFrozen(pair) else { break }
            }
            var sent = 0
            while sent < through {
                let n = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + sent, through - sent) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { break loop }
                sent += n
            }
        }
        // One side ended (or the proxy stopped): end the other, as a relay does.
        closePair(pair)
        condition.lock()
        pair.threadsLeft -= 1
        let last = pair.threadsLeft == 0
        condition.unlock()
        if last {
            close(pair.client)
            close(pair.server)
        }
    }

    /// Ends both directions; blocked reads return and their threads finish.
    private func closePair(_ pair: Pair) {
        condition.lock()
        let already = pair.closed
        pair.closed = true
        pairs.removeAll { $0 === pair }
        condition.broadcast()
        condition.unlock()
        guard !already else { return }
        shutdown(pair.client, Int32(SHUT_RDWR))
        shutdown(pair.server, Int32(SHUT_RDWR))
    }
}
